// The words an operator trusts — `--help` of plan, compact, settle and vacuum, the README and docs/*.md — state
// defaults, retire modes and resource names; each statement is checked here against the code's own constant, so a
// default changed in code (or a sentence changed in a doc) fails this test until both say the same again. Every
// claim must also be found at least once: a sentence rephrased out of the pattern's reach fails instead of passing
// unchecked.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { ICEBERG_DEFAULT_TARGET_BYTES } from '../../functions/core/formats/iceberg/rewrite-options.js';
import { MIN_RETENTION_HOURS, vacuumInputSchema } from '../../functions/core/maintenance/vacuum.js';
import { DEFAULT_PLAN_OPTIONS } from '../../functions/core/planning.js';
import {
  DEFAULT_MAX_GROUP_MIB,
  DEFAULT_TARGET_FILE_SIZE_MIB,
} from '../../functions/core/planning-choices.js';
import { DEFAULT_POLICY } from '../../functions/core/policy.js';
import { retireModeOf } from '../../functions/core/run-input.js';
import { STACK_OUTPUT_KEYS } from '../../functions/core/stack-output-keys.js';
import { CODECS, DEFAULT_CODEC } from '../../functions/ports/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';

const MiB = 1024 * 1024;
const ROOT = join(import.meta.dirname, '..', '..');
const VACUUM_DEFAULTS = vacuumInputSchema.parse({});

/** One line per text, whitespace collapsed: commander wraps help, Markdown wraps paragraphs. */
const flat = (text: string): string => text.replace(/\s+/g, ' ');

async function help(command: string): Promise<string> {
  const io = captureIo();
  expect(await run([command, '--help'], io)).toBe(0);
  return flat(io.stdout.join('\n'));
}

const docs: readonly { readonly name: string; readonly text: string }[] = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((n) => n.endsWith('.md'))
    .map((n) => `docs/${n}`),
].map((name) => ({ name, text: flat(readFileSync(join(ROOT, name), 'utf8')) }));

/** Every capture of `pattern` (its groups joined by "/") in the docs, with where it was found. */
function inDocs(pattern: RegExp): { where: string; value: string }[] {
  return docs.flatMap(({ name, text }) =>
    [...text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))].map((m) => ({
      where: `${name}: …${m[0]}…`,
      value: m.slice(1).join('/'),
    })),
  );
}

/** The first capture of `pattern` in `text`, failing when the statement is not there at all. */
function stated(text: string, pattern: RegExp): string {
  const match = pattern.exec(text);
  expect(match, `no match of ${pattern} in the help`).not.toBeNull();
  return match?.slice(1).join('/') ?? '';
}

describe('the planner and the policy agree on their defaults', () => {
  it('plans with the policy’s target, fewest files and small-file ratio, and the run’s default group cap', () => {
    // Assess
    expect({
      targetFileSizeBytes: DEFAULT_PLAN_OPTIONS.targetFileSizeBytes,
      minInputFiles: DEFAULT_PLAN_OPTIONS.minInputFiles,
      smallFileRatio: DEFAULT_PLAN_OPTIONS.smallFileRatio,
      maxGroupBytes: DEFAULT_PLAN_OPTIONS.maxGroupBytes,
    }).toEqual({
      targetFileSizeBytes: DEFAULT_POLICY.targetFileSizeBytes,
      minInputFiles: DEFAULT_POLICY.minInputFiles,
      smallFileRatio: DEFAULT_POLICY.smallFileSizeRatio,
      maxGroupBytes: DEFAULT_MAX_GROUP_MIB * MiB,
    });
  });
});

describe('--help states the defaults and retire modes of the code', () => {
  it.each(['plan', 'compact'])('%s --help: the planning flags’ defaults', async (command) => {
    // Act
    const text = await help(command);

    // Assess
    expect(
      stated(
        text,
        /--target-mb <n> target file size in MiB \(default: (\d+); Apache Iceberg: .*? else (\d+)\)/,
      ),
    ).toBe(`${DEFAULT_TARGET_FILE_SIZE_MIB}/${ICEBERG_DEFAULT_TARGET_BYTES / MiB}`);
    expect(stated(text, /--min-input-files <n> .*?\(default: (\d+);/)).toBe(
      String(DEFAULT_POLICY.minInputFiles),
    );
    expect(stated(text, /--max-group-mb <n> .*?\(default: (\d+),/)).toBe(String(DEFAULT_MAX_GROUP_MIB));
  });

  it('compact --help: the codec’s default and the retire mode of a bin-pack and of a sort on a Parquet table', async () => {
    // Act
    const text = await help('compact');

    // Assess
    expect(stated(text, /--codec <codec> output compression \(choices: (.*?), default: "(\w+)"\)/)).toBe(
      `${CODECS.map((c) => `"${c}"`).join(', ')}/${DEFAULT_CODEC}`,
    );
    // What the help says a bin-pack and a sort do with a Parquet table's inputs, as the retire mode it describes.
    expect(retireModeOf(false, 'parquet', 'binpack')).toBe('delete-rebuild');
    expect(text).toContain(
      'Hive-style Parquet (--format parquet): a bin-pack deletes its inputs once the outputs are in',
    );
    expect(retireModeOf(false, 'parquet', 'sort')).toBe('trash');
    expect(retireModeOf(false, 'parquet', 'zorder')).toBe('trash');
    expect(text).toContain('a sort or z-order first copies them to _lake-compactor/trash/<run>/');
  });

  it('settle --help: inputs deleted, or copied to the trash first only by a sort or z-order', async () => {
    // Act
    const text = await help('settle');

    // Assess
    expect(retireModeOf(false, 'parquet', 'binpack')).not.toBe('trash');
    expect(text).toContain('inputs retired: deleted, or copied to the trash first by a sort or z-order');
  });

  it('vacuum --help: the retention, debris and abandoned-staging defaults of the vacuum input', async () => {
    // Act
    const text = await help('vacuum');

    // Assess
    expect(stated(text, /--retention-hours <h> .*?\(default and minimum (\d+) /)).toBe(
      String(MIN_RETENTION_HOURS),
    );
    expect(VACUUM_DEFAULTS.retentionHours).toBe(MIN_RETENTION_HOURS);
    expect(stated(text, /--debris-age-hours <h> .*?\(default: (\d+)\)/)).toBe(
      String(VACUUM_DEFAULTS.debrisAgeHours),
    );
    expect(stated(text, /--abandoned-after-hours <h> .*?\(default: (\d+)\)/)).toBe(
      String(VACUUM_DEFAULTS.abandonedAfterHours),
    );
  });

  it.each(['plan', 'compact', 'settle', 'vacuum'])(
    '%s --help never says inputs are moved to the trash',
    async (command) => {
      // Act
      const text = await help(command);

      // Assess: inputs are deleted (versioned, or rebuilt on undo) or copied; "moved" promised a copy that a
      // bin-pack never makes.
      expect(text).not.toMatch(/moved to `?_lake-compactor\/trash/i);
    },
  );
});

describe('README.md and docs/*.md state the defaults, retire modes and output names of the code', () => {
  it.each<[string, RegExp, string]>([
    ['the target size', /target file size (\d+) MiB/, String(DEFAULT_TARGET_FILE_SIZE_MIB)],
    ['the target size', /the (\d+) MiB (?:policy )?target/, String(DEFAULT_TARGET_FILE_SIZE_MIB)],
    [
      'the target size and codec of a table',
      /targetFileSizeMB` \/ `codec` — .*? Default: (\d+) \/ `(\w+)`/,
      `${DEFAULT_TARGET_FILE_SIZE_MIB}/${DEFAULT_CODEC}`,
    ],
    ['the codecs', /`codec` \(`(\w+)` \| `(\w+)`\)/, CODECS.join('/')],
    ['the fewest input files', /`minInputFiles` \(?(\d+)\)?/, String(DEFAULT_POLICY.minInputFiles)],
    ['the CLI’s target', /\[--target-mb (\d+)\]/, String(DEFAULT_TARGET_FILE_SIZE_MIB)],
    ['the CLI’s fewest input files', /\[--min-input-files (\d+)\]/, String(DEFAULT_POLICY.minInputFiles)],
    ['the CLI’s group cap', /\[--max-group-mb (\d+)\]/, String(DEFAULT_MAX_GROUP_MIB)],
    [
      'the run’s group cap',
      /`maxGroupMB` of the run, (\d+) GiB by default/,
      String(DEFAULT_MAX_GROUP_MIB / 1024),
    ],
    [
      'Iceberg’s target',
      /else (\d+) = (\d+) MiB/,
      `${ICEBERG_DEFAULT_TARGET_BYTES}/${ICEBERG_DEFAULT_TARGET_BYTES / MiB}`,
    ],
    [
      'the quiet wait and cooldown',
      /`quietMinutes` (\d+), cooldown (\d+) min/,
      `${DEFAULT_POLICY.quietMinutes}/${DEFAULT_POLICY.cooldownMinutes}`,
    ],
    ['the vacuum retention', /retention \(default (\d+) h/, String(MIN_RETENTION_HOURS)],
    ['the vacuum retention', /retention \(default (\d+) h → 7 days/, String(MIN_RETENTION_HOURS)],
    [
      'the retire mode of a Parquet bin-pack',
      /bin-pack run of a Hive-style Parquet table uses `([a-z-]+)`/,
      retireModeOf(false, 'parquet', 'binpack'),
    ],
    [
      'the retire mode of a Parquet sort',
      /Parquet table uses `[a-z-]+` and a sort or z-order run `([a-z-]+)`/,
      retireModeOf(false, 'parquet', 'sort'),
    ],
    [
      'the retire mode of a Parquet sort',
      /a sort or z-order run `([a-z-]+)`/,
      retireModeOf(false, 'parquet', 'zorder'),
    ],
  ])('%s: %s', (_, pattern, expected) => {
    // Act
    const found = inDocs(pattern);

    // Assess
    expect(found.length, `no statement matches ${pattern}`).toBeGreaterThan(0);
    for (const { where, value } of found) expect(value, where).toBe(expected);
  });

  it('never says inputs are moved to the trash (a bin-pack keeps no copy; a sort copies)', () => {
    // Act
    const found = inDocs(/(moved to `?(?:\.\/lake\/events\/)?_lake-compactor\/trash)/i);

    // Assess
    expect(found).toEqual([]);
  });

  /** Placeholders of the local emulation's commands (a logical id), which no deployed stack outputs. */
  const LOCAL_PLACEHOLDERS = new Set(['StateMachineLogicalIdOrName']);

  it('names only outputs the stack defines, never a guessed resource name', () => {
    // Prepare: the outputs infra/app.ts declares, by the shared keys it declares them with (typed there so each is an
    // output; test/unit/cli-stack.test.ts checks the synthesized template against them).
    const declared = new Set<string>(Object.values(STACK_OUTPUT_KEYS));

    // Act
    const named = inDocs(/[`<]([A-Z][A-Za-z]+(?:Name|Arn|Url))[`>]/);
    const guessed = inDocs(/(--state-table LakeCompactor-\w+)/);

    // Assess
    expect(declared.size).toBeGreaterThan(5);
    expect(named.length).toBeGreaterThan(0);
    for (const { where, value } of named)
      expect(declared.has(value) || LOCAL_PLACEHOLDERS.has(value), where).toBe(true);
    expect(guessed).toEqual([]);
  });
});
