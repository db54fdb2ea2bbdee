// The work root is a per-deployment setting: only valid roots are accepted (wherever they come from), every
// work-area key derives from it, and it flows environment → validate → run context, the default for old runs.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import { inventoryTable } from '../../../../functions/core/formats/hive/inventory.js';
import { resolveEvent } from '../../../../functions/core/profiler/events.js';
import { normalizeRunInput, runContextSchema } from '../../../../functions/core/run-input.js';
import {
  parseTableConfigs,
  resolveTablePolicy,
  type TableConfig,
} from '../../../../functions/core/table-config.js';
import {
  DEFAULT_WORK_ROOT,
  fingerprintKey,
  itemsKey,
  journalManifestPrefix,
  maintenanceCursorKey,
  mayBeWorkArea,
  parsePlanKey,
  parseStagingKey,
  parseStoreJournalEntryKey,
  parseTrashKey,
  planKey,
  quarantinePrefix,
  stagingPrefix,
  storeJournalEntryKey,
  storeJournalFencesPrefix,
  tempPrefix,
  trashPrefix,
  workRootProblem,
  workRootsOverlap,
} from '../../../../functions/core/workflow/layout.js';
import { createValidateHandler } from '../../../../functions/handlers/validate.js';
import { parseEnv } from '../../../../functions/shared/env.js';
import { workflowEnvSchema } from '../../../../functions/shared/workflow-runtime.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';

/** The bytes of one small Parquet file. */
async function sampleParquet(): Promise<Uint8Array> {
  let first: Uint8Array | undefined;
  await writeSampleLake(
    async (_key, bytes) => {
      first ??= bytes;
    },
    { days: 1, batches: 1, minRows: 5, maxRows: 5, seed: 1, startDate: '2024-01-01' },
  );
  return first as Uint8Array;
}

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events/', partitionColumns: ['date'] },
]);

describe('workRootProblem', () => {
  it('accepts the default and any relative folder prefix whose first folder is hidden with "_"', () => {
    // Prepare
    const roots = [DEFAULT_WORK_ROOT, '_lake-compactor-b/', '_compactors/team.a/', '_x/'];
    // Act
    const problems = roots.map(workRootProblem);
    // Assess
    expect(problems).toEqual([undefined, undefined, undefined, undefined]);
  });

  it.each([
    ['', /is empty/],
    ['s3://lake/_work/', /is a URI/],
    ['/_work/', /starts with "\/"; use a relative key prefix, such as "_work\/"/],
    ['_work', /does not end with "\/"; write it as a folder: "_work\/"/],
    ['_work//x/', /empty folder/],
    ['_work/../x/', /"\." or "\.\." folder/],
    ['_work/*/', /the folder "\*"; use letters, digits/],
    ['_work/team a/', /the folder "team a"/],
    ['lake-compactor/', /must start with a folder whose name starts with "_"/],
    ['events/_work/', /must start with a folder whose name starts with "_"/],
    ['_temporary/', /belongs to writers/],
    ['_delta_log/', /belongs to writers/],
    [`_${'w'.repeat(200)}/`, /at most 128/],
  ])('refuses %j, saying what to write instead', (root, message) => {
    // Act
    const problem = workRootProblem(root);
    // Assess
    expect(problem).toMatch(message);
  });

  it('counts equal and nested roots as overlapping, siblings with a shared name start as not', () => {
    // Act
    const pairs = [
      workRootsOverlap('_lc/', '_lc/'),
      workRootsOverlap('_lc/', '_lc/b/'),
      workRootsOverlap('_lc/b/', '_lc/'),
      workRootsOverlap('_lc/', '_lc-b/'),
    ];
    // Assess
    expect(pairs).toEqual([true, true, true, false]);
  });
});

describe('work-area keys', () => {
  it('all derive from the given work root, and parse back only under it', () => {
    // Prepare
    const root = '_lake-compactor-b/';
    // Act
    const keys = [
      planKey(root, 'r1'),
      itemsKey(root, 'r1'),
      stagingPrefix(root, 'r1', 'g0001'),
      fingerprintKey(root, 'r1', 'g0001'),
      trashPrefix(root, 'r1'),
      journalManifestPrefix(root),
      storeJournalEntryKey(root, 'r1', 'g0001'),
      storeJournalFencesPrefix(root),
      quarantinePrefix(root),
      tempPrefix(root),
      maintenanceCursorKey(root, 'vacuum'),
    ];
    // Assess
    expect(keys.every((k) => k.startsWith(root))).toBe(true);
    expect(parsePlanKey(root, planKey(root, 'r1'))).toBe('r1');
    expect(parsePlanKey(root, itemsKey(root, 'r1'))).toBeUndefined();
    expect(parsePlanKey(DEFAULT_WORK_ROOT, planKey(root, 'r1'))).toBeUndefined();
    expect(parseStagingKey(root, `${stagingPrefix(root, 'r1', 'g0001')}part.parquet`)).toEqual({
      runId: 'r1',
      groupId: 'g0001',
    });
    expect(parseStagingKey(DEFAULT_WORK_ROOT, `${stagingPrefix(root, 'r1', 'g0001')}p`)).toBeUndefined();
    expect(parseTrashKey(root, `${trashPrefix(root, 'r1')}events/date=1/part.parquet`)).toEqual({
      runId: 'r1',
      inputKey: 'events/date=1/part.parquet',
    });
    expect(parseTrashKey(DEFAULT_WORK_ROOT, `${trashPrefix(root, 'r1')}events/x`)).toBeUndefined();
    expect(parseStoreJournalEntryKey(root, storeJournalEntryKey(root, 'r1', 'g0001'))).toEqual({
      runId: 'r1',
      groupId: 'g0001',
    });
    expect(
      parseStoreJournalEntryKey(DEFAULT_WORK_ROOT, storeJournalEntryKey(root, 'r1', 'g0001')),
    ).toBeUndefined();
  });

  it('treat hidden top-level folders of a bucket as possible work areas, but not the writers’ own', () => {
    // Act
    const verdicts = [
      '_lake-compactor/staging/r/g/p',
      '_lake-compactor-b/trash/r/k',
      '.hidden/x',
      '_temporary/0/part.parquet',
      '.spark-staging-1/x',
      '_delta_log/0.json',
      'events/date=1/part.parquet',
      '_SUCCESS',
    ].map(mayBeWorkArea);
    // Assess
    expect(verdicts).toEqual([true, true, true, false, false, false, false, false]);
  });
});

describe('readers of a bucket-root table', () => {
  it('leave every object under any valid work root alone: the planner’s inventory and the profiler ignore them', async () => {
    // Prepare: a table at the bucket root, and objects of two deployments' work roots beside its data
    const root = parseTableConfigs([{ name: 'all', bucket: 'lake', prefix: '' }]);
    const store = new MemoryObjectStore();
    const bytes = await sampleParquet();
    const work = [
      `${stagingPrefix(DEFAULT_WORK_ROOT, 'r1', 'g0001')}part-r1-0001-00000.zstd.parquet`,
      `${trashPrefix('_compactors/team-b/', 'r2')}date=2024-01-01/part-0.parquet`,
    ];
    for (const key of [...work, 'date=2024-01-01/part-1.parquet']) await store.put(key, bytes);

    // Act
    const inventory = await inventoryTable(store, '', { now: 0 });
    const events = work.map((key) =>
      resolveEvent(root, new Map([['all', resolveTablePolicy(root[0] as TableConfig)]]), {
        bucket: 'lake',
        key,
        kind: 'created',
        size: bytes.byteLength,
        sequencer: '1',
        eventTime: 0,
        eventName: 'ObjectCreated:Put',
      }),
    );

    // Assess
    expect(inventory.partitions.flatMap((p) => p.files.map((f) => f.key))).toEqual([
      'date=2024-01-01/part-1.parquet',
    ]);
    expect(inventory.ignored.map((i) => i.key).sort()).toEqual([...work].sort());
    expect(events.map((e) => e.kind)).toEqual(['ignored', 'ignored']);
  });
});

describe('the work root in the workflow', () => {
  it('reaches the run context from the environment through the validate step', async () => {
    // Prepare
    const env = parseEnv(workflowEnvSchema, { TABLE_NAME: 'state', WORK_ROOT: '_lake-compactor-b/' });
    const validate = createValidateHandler({ tables, env });
    // Act
    const result = await validate({
      input: { table: 'events', partition: 'date=2024-01-15' },
      execution: { name: 'run-1', startTime: '2026-01-01T00:00:00Z' },
      stateMachineArn: 'arn:aws:states:us-east-1:111111111111:stateMachine:compact',
    });
    // Assess
    expect(result).toMatchObject({ mode: 'single', run: { workRoot: '_lake-compactor-b/' } });
  });

  it('defaults to _lake-compactor/ when the environment names none, and fails the cold start on an invalid one', () => {
    // Act
    const env = parseEnv(workflowEnvSchema, { TABLE_NAME: 'state' });
    let refused: unknown;
    try {
      parseEnv(workflowEnvSchema, { TABLE_NAME: 'state', WORK_ROOT: 'work' });
    } catch (err) {
      refused = err;
    }
    // Assess
    expect(env.WORK_ROOT).toBe(DEFAULT_WORK_ROOT);
    expect(refused).toBeInstanceOf(InvalidInputError);
    expect((refused as InvalidInputError).issues).toEqual([
      expect.stringMatching(/^WORK_ROOT: work root "work" does not end with "\/"/),
    ]);
  });

  it('gives a run context from before work roots (an in-flight execution) the default, and keeps a recorded one', () => {
    // Prepare: a context as validate wrote it before the work root was recorded
    const normalized = normalizeRunInput({ table: 'events', partition: 'date=2024-01-15' }, tables, {
      executionName: 'run-1',
      startedAt: 1,
      workRoot: '_lake-compactor-b/',
    });
    if (normalized.mode !== 'single') throw new Error('expected one partition');
    const { workRoot: recorded, ...old } = normalized.run;

    // Act
    const fromOld = runContextSchema.parse(old);
    const fromNew = runContextSchema.parse(normalized.run);
    const tampered = runContextSchema.safeParse({ ...old, workRoot: 'events/' });

    // Assess
    expect(recorded).toBe('_lake-compactor-b/');
    expect(fromOld.workRoot).toBe(DEFAULT_WORK_ROOT);
    expect(fromNew.workRoot).toBe('_lake-compactor-b/');
    expect(tampered.success).toBe(false);
  });
});
