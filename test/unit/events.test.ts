// The console input examples in events/ against the schemas their entry points parse them with: the state machine's
// run input (composed with every format's run-input fields), the vacuum input (composed with every format's
// maintenance options), the tiering input and the sweep's (a sweep now, or a table's reconcile). An example a schema
// change made stale fails here, a file no entry point reads fails here, and a format's console field without an
// example fails here (issue #27 item 4).
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FORMAT_RUN_INPUT_NAMES, FORMAT_VACUUM_OPTIONS } from '../../functions/core/formats/index.js';
import { parseTieringRequest } from '../../functions/core/maintenance/tiering.js';
import { parseVacuumRequest } from '../../functions/core/maintenance/vacuum.js';
import { runInputSchema } from '../../functions/core/run-input.js';
import { sweepInputSchema } from '../../functions/handlers/sweep.js';

const EVENTS = new URL('../../events/', import.meta.url);

/** An entry point's reading of a console input: its problems, none when it is valid. */
type Check = (input: unknown) => string[];

/** Problems a parse function that throws reports (the maintenance handlers' own parse, with its gates). */
function throwing(parse: (input: unknown) => unknown): Check {
  return (input) => {
    try {
      parse(input);
      return [];
    } catch (err) {
      return [(err as Error).message];
    }
  };
}

/**
 * Which entry point reads which examples (by file name prefix), how it checks them, and the fields of its input the
 * registered formats declare (taken from the registry, as the schemas compose them).
 */
const ENTRY_POINTS: readonly {
  readonly prefix: string;
  readonly entry: string;
  readonly check: Check;
  readonly formatFields: readonly string[];
}[] = [
  {
    prefix: 'workflow-',
    entry: 'the state machine (its validate step)',
    check: (input) => {
      const parsed = runInputSchema.safeParse(input);
      return parsed.success
        ? []
        : parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`);
    },
    formatFields: FORMAT_RUN_INPUT_NAMES,
  },
  {
    prefix: 'vacuum-',
    entry: 'the vacuum function',
    check: throwing(parseVacuumRequest),
    formatFields: Object.keys(FORMAT_VACUUM_OPTIONS),
  },
  {
    prefix: 'sweep-',
    entry: 'the sweep function',
    check: (input) => {
      const parsed = sweepInputSchema.safeParse(input);
      return parsed.success
        ? []
        : parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`);
    },
    formatFields: [],
  },
  {
    prefix: 'tiering-',
    entry: 'the tiering function',
    check: throwing(parseTieringRequest),
    formatFields: [],
  },
];

/** Every example in events/, by file name. */
function examples(): [string, unknown][] {
  return readdirSync(EVENTS)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => [f, JSON.parse(readFileSync(new URL(f, EVENTS), 'utf8')) as unknown]);
}

/** The problems of each example with the entry point that reads it (or that none does). */
function staleExamples(files: readonly (readonly [string, unknown])[]): string[] {
  return files.flatMap(([file, input]) => {
    const readers = ENTRY_POINTS.filter((e) => file.startsWith(e.prefix));
    if (readers.length !== 1) return [`${file}: read by ${readers.length} entry points, expected one`];
    const [reader] = readers as [(typeof ENTRY_POINTS)[number]];
    return reader.check(input).map((problem) => `${file} (${reader.entry}): ${problem}`);
  });
}

describe('events/ console input examples', () => {
  it('the stale-example check catches a renamed field, a retired format option and a file no entry point reads', () => {
    // Prepare
    const stale: [string, unknown][] = [
      ['workflow-renamed.json', { table: 'events', partition: 'date=2024-01-15', sortColumn: 'event_time' }],
      ['vacuum-retired-option.json', { dryRun: true, hudiRetentionHours: 168 }],
      ['compact-unknown.json', { table: 'events' }],
    ];

    // Act
    const problems = staleExamples(stale);

    // Assess
    expect(problems).toEqual([
      expect.stringMatching(/^workflow-renamed\.json \(the state machine .*\): .*sortColumn/s),
      expect.stringMatching(/^vacuum-retired-option\.json \(the vacuum function\): .*hudiRetentionHours/s),
      'compact-unknown.json: read by 0 entry points, expected one',
    ]);
  });

  it('every example is valid input of the one entry point that reads it, with the schema it parses it with', () => {
    // Prepare
    const files = examples();

    // Act
    const problems = staleExamples(files);

    // Assess
    // The folder was found and holds examples of every entry point.
    for (const { prefix } of ENTRY_POINTS) expect(files.some(([f]) => f.startsWith(prefix))).toBe(true);
    expect(problems).toEqual([]);
  });

  it("every registered format's console fields have an example of their own", () => {
    // Prepare
    const files = examples();

    // Act
    const missing = ENTRY_POINTS.flatMap(({ prefix, formatFields }) => {
      const used = new Set(
        files
          .filter(([f]) => f.startsWith(prefix))
          .flatMap(([, input]) => Object.keys(input as Record<string, unknown>)),
      );
      return formatFields.filter((field) => !used.has(field)).map((field) => `${prefix}*.json: ${field}`);
    });

    // Assess
    // The registry declares some (the Delta and Iceberg run and vacuum options), so the check is not vacuous.
    expect(ENTRY_POINTS.flatMap((e) => e.formatFields).length).toBeGreaterThan(2);
    expect(missing).toEqual([]);
  });
});
