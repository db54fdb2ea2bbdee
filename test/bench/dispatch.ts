// What `npm run bench` runs, decided from its arguments alone: the registered suites, each with its usage line, and
// the reading of `npm run bench -- [<suite> …] [flags]` — `--help` (or `-h`) prints the usage and runs nothing, since
// a whole benchmark run takes the machine for many minutes.

/** A suite module exports `run(flags)`. */
export interface BenchSuite {
  run(flags: readonly string[]): Promise<unknown>;
}

/** One registered suite: its module, loaded only when it runs, and its flags as `--help` shows them. */
interface SuiteEntry {
  readonly load: () => Promise<BenchSuite>;
  readonly usage: string;
}

/** The suites, in the order a bare `npm run bench` runs them; register new ones here. */
export const SUITES: Readonly<Record<string, SuiteEntry>> = {
  rewrite: {
    load: () => import('./rewrite.js'),
    usage: '[--scale 1] [--sets B,C] [--repeat 1] [--tsx]   rewrite engine vs DuckDB COPY (sets B, C, D)',
  },
  profiler: {
    load: () => import('./profiler.js'),
    usage:
      '[--events 5000] [--partitions 20] [--batch N] [--concurrency 4] [--duplicates 0.05]   profiler on DynamoDB Local',
  },
  delta: {
    load: () => import('./delta.js'),
    usage: '[--files 2000] [--rows 20000] [--append-rows 1000]   OPTIMIZE beside an appending writer',
  },
  iceberg: {
    load: () => import('./iceberg.js'),
    usage:
      '[--files 2000] [--rows 20000] [--append-rows 1000]   rewrite_data_files beside an appending writer',
  },
  hudi: {
    load: () => import('./hudi.js'),
    usage:
      '[--scale 1] [--files 2000] [--rows 20000] [--append-rows 1000] [--only cow|mor]   clustering and MoR compaction',
  },
  's3-client': {
    load: () => import('./s3-client.js'),
    usage: '[--objects 2000] [--size 8192] [--inflight 16] [--repeat 7]   AWS SDK CPU per request',
  },
  'cli-startup': {
    load: () => import('./cli-startup.js'),
    usage: '[--runs 9]   lake-compactor start-up times',
  },
};

/** What the arguments ask for: the usage, or suites to run with the flags handed to each. */
export type BenchCommand =
  | { readonly kind: 'help'; readonly text: string }
  | { readonly kind: 'run'; readonly suites: readonly string[]; readonly flags: readonly string[] };

/**
 * The usage of `suites` (every suite when none is named): how to call the dispatcher, then one line per suite.
 */
export function benchUsage(suites: readonly string[] = []): string {
  const names = suites.length > 0 ? suites : Object.keys(SUITES);
  return [
    'usage: npm run bench -- [<suite> …] [flags]',
    '  Runs the named suites (every suite when none is named), each with the flags given; a full run takes many minutes',
    '  of a whole machine (docs/benchmarks.md). Suites and their flags (defaults shown):',
    ...names.map((name) => `  ${name} ${SUITES[name]?.usage ?? ''}`.trimEnd()),
  ].join('\n');
}

/**
 * The command `argv` (the arguments after `npm run bench --`) spells: the usage for `--help`/`-h` (of the suites
 * named, if any), else the suites to run (every one when none is named) and the flags for them.
 * @throws Error naming an unknown suite and the known ones.
 */
export function benchCommand(argv: readonly string[]): BenchCommand {
  const names = argv.filter((a, i) => !a.startsWith('-') && (i === 0 || !argv[i - 1]?.startsWith('--')));
  const flags = argv.filter((a) => !names.includes(a));
  const unknown = names.filter((n) => !(n in SUITES));
  if (unknown.length > 0)
    throw new Error(
      `Unknown benchmark suite(s) ${unknown.join(', ')}; known: ${Object.keys(SUITES).join(', ')}`,
    );
  if (flags.includes('--help') || flags.includes('-h')) return { kind: 'help', text: benchUsage(names) };
  return { kind: 'run', suites: names.length > 0 ? names : Object.keys(SUITES), flags };
}
