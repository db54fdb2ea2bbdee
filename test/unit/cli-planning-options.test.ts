// `plan` and `compact` take one set of planning flags (--target-mb, --min-input-files, --max-group-mb), parsed by one
// function: the same flags plan the same groups in both, a value out of range is refused by both with a message
// naming the flag (never a field of the planner's options) and exit 2 before anything is written, and the console
// input refuses the same values in its own field names.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { InvalidInputError } from '../../functions/core/errors.js';
import type { PartitionPlan, PlanSet } from '../../functions/core/planning.js';
import { normalizeRunInput } from '../../functions/core/run-input.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

let root: string;
let table: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-planning-options-'));
  await writeSampleLake(localFolderSink(root), { days: 3, batches: 6, seed: 11, startDate: '2024-01-01' });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** What decides a partition's compaction: its options, each group's files, and every skip with its reason. */
function decisions(plan: PartitionPlan) {
  return {
    partition: plan.partition,
    options: plan.options,
    groups: plan.groups.map((g) => ({ groupId: g.groupId, files: g.files.map((f) => f.key) })),
    skipped: plan.skipped.map((s) => [s.key, s.reason]),
  };
}

/** The plans a real compact recorded in the folder's work root (one per partition that had a group). */
async function recordedPlans(): Promise<PartitionPlan[]> {
  const folder = join(table, '_lake-compactor', 'plans');
  const names = (await readdir(folder)).filter((n) => n.endsWith('.json') && !n.endsWith('.items.json'));
  const plans = await Promise.all(
    names.map(async (n) => JSON.parse(await readFile(join(folder, n), 'utf8')) as PartitionPlan),
  );
  return plans.sort((a, b) => a.partition.localeCompare(b.partition));
}

describe('plan and compact share their planning flags', () => {
  it('plans the same groups in plan --json and in the plan compact records, given the same flags', async () => {
    // Prepare: a small target and group cap so each partition's six files split into two groups of three, which
    // only holds if both commands read every flag the same way.
    const flags = ['--target-mb', '0.03', '--max-group-mb', '0.06', '--min-input-files', '3'];
    const planIo = captureIo();
    const compactIo = captureIo();

    // Act
    const planCode = await run(['plan', table, '--json', ...flags], planIo);
    const compactCode = await run(['compact', table, ...flags], compactIo);

    // Assess
    expect([planCode, compactCode]).toEqual([0, 0]);
    const planned = (JSON.parse(planIo.stdout.join('\n')) as PlanSet).partitions.map(decisions);
    expect(planned.map((p) => p.groups.length)).toEqual([2, 2, 2]);
    expect((await recordedPlans()).map(decisions)).toEqual(planned);
  });

  it('accepts a target above 1 GiB without a group cap in both, raising the cap to twice the target', async () => {
    // Prepare
    const planIo = captureIo();
    const compactIo = captureIo();

    // Act
    const planCode = await run(['plan', table, '--json', '--target-mb', '1025'], planIo);
    const compactCode = await run(['compact', table, '--target-mb', '1025'], compactIo);

    // Assess
    expect([planCode, compactCode]).toEqual([0, 0]);
    const planned = (JSON.parse(planIo.stdout.join('\n')) as PlanSet).partitions.map(decisions);
    expect(planned[0]?.options).toMatchObject({ maxGroupBytes: 2 * 1025 * 1024 * 1024 });
    expect((await recordedPlans()).map(decisions)).toEqual(planned);
  });

  const INTERNAL_NAMES = /maxGroupBytes|targetFileSizeBytes|minInputFiles|maxGroupMB|targetFileSizeMB/;

  it.each<[string, string[], string]>([
    [
      'a group cap under twice the target',
      ['--target-mb', '64', '--max-group-mb', '100'],
      '--max-group-mb must be at least 2 × --target-mb (128)',
    ],
    [
      'a group cap under twice the default target',
      ['--max-group-mb', '100'],
      '--max-group-mb must be at least 2 × --target-mb (256; --target-mb is 128 unless given)',
    ],
    [
      'a target over the S3 single-copy limit',
      ['--target-mb', '6000'],
      '--target-mb must be at most 5120 MiB',
    ],
    ['a target of zero', ['--target-mb', '0'], '--target-mb must be more than 0 MiB, got 0'],
    [
      'a group cap over 10 GiB',
      ['--max-group-mb', '20000'],
      '--max-group-mb must be at most 10240 MiB per group',
    ],
    ['one input file', ['--min-input-files', '1'], '--min-input-files must be at least 2'],
    [
      'a fraction of a file',
      ['--min-input-files', '2.5'],
      '--min-input-files must be a whole number of files, got 2.5',
    ],
  ])(
    'refuses %s in plan and compact alike: exit 2, the flag named, nothing written',
    async (_, flags, message) => {
      // Prepare
      const before = await folderSnapshot(root);
      const outcomes: { code: number; stderr: string }[] = [];

      // Act
      for (const command of ['plan', 'compact']) {
        const io = captureIo();
        const code = await run([command, table, ...flags], io);
        outcomes.push({ code, stderr: io.stderr.join('\n') });
      }

      // Assess
      for (const { code, stderr } of outcomes) {
        expect(code).toBe(2);
        expect(stderr).toContain(message);
        expect(stderr).not.toMatch(INTERNAL_NAMES);
      }
      expect(outcomes[0]?.stderr).toBe(outcomes[1]?.stderr);
      expect(await folderSnapshot(root)).toEqual(before);
    },
  );
});

describe('the console input takes the same planning choices', () => {
  const tables = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events/', partitionColumns: ['date'] },
  ]);
  const options = { executionName: 'run-1', startedAt: 1_700_000_000_000 };

  function problems(raw: object): string[] {
    try {
      normalizeRunInput({ table: 'events', partition: 'date=1', ...raw }, tables, options);
    } catch (err) {
      if (err instanceof InvalidInputError) return [...err.issues];
      throw err;
    }
    return [];
  }

  it('refuses the values the CLI refuses, naming its own fields', () => {
    // Act
    const found = [
      problems({ minInputFiles: 1 }),
      problems({ targetFileSizeMB: 6000 }),
      problems({ maxGroupMB: 100 }),
    ];

    // Assess
    expect(found).toEqual([
      ['minInputFiles: minInputFiles must be at least 2 (a group merges two files or more), got 1'],
      ['targetFileSizeMB: targetFileSizeMB must be at most 5120 MiB (the S3 single-copy limit), got 6000'],
      [
        'maxGroupMB: maxGroupMB must be at least 2 × targetFileSizeMB (256; targetFileSizeMB is 128 unless given), so a group can hold more than one output file; got 100',
      ],
    ]);
  });

  it('plans with its minInputFiles, as --min-input-files does', () => {
    // Act
    const normalized = normalizeRunInput(
      { table: 'events', partition: 'date=1', minInputFiles: 3 },
      tables,
      options,
    );

    // Assess
    expect(normalized.mode === 'single' && normalized.run.minInputFiles).toBe(3);
  });
});
