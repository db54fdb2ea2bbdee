// The order `npm test` starts its files in: the known-slow ones first, longest first, then the rest as vitest
// orders them.
//
// Why: the run has two workers, and a file runs on one of them from start to end. Vitest's own order puts files
// it has no cached timing for (every file, on a fresh CI clone) in the order they were found, so a file of a
// minute or more could start near the end and run alone while the other worker sits idle: the run then lasts
// as long as everything before it plus that file. Starting the longest files first (longest-processing-time
// first) lets the hundreds of short files fill in around them, so both workers finish close together.
//
// The durations are what a CI run measured (`npx vitest run --reporter=verbose` prints each file's); they only
// order the start, so a stale entry costs balance, never correctness. Refresh them when a file's time changes a
// lot, and add a file here once it takes tens of seconds.

/**
 * Wall time (ms) of the slowest files on a CI run, keyed by path from the repository root.
 *
 * Four were re-estimated on 2026-12-07 (branch test-speed) after cuts to them, from CPU time (user + sys,
 * `/usr/bin/time -v npx vitest run <file>`) of the file alone before and after on the shared 2-core machine (load
 * average 13–22, so its wall times were not usable): each CI figure scaled by the file's after/before CPU ratio.
 * install 80.0 → 71.5 s of CPU, profiler 55.9 → 35.9, metadata-bombs 55.4 → 33.0, cli-foreign-format-s3 32.5 →
 * 25.8. Measured the same way and unchanged: settle 80.4 s, cli-kill 93.8 s (its children run two at a time),
 * memory 71.1 s (its children run one at a time, beside the other worker on CI).
 */
export const KNOWN_DURATIONS_MS: Readonly<Record<string, number>> = {
  // 76 s on CI before the user's synth lost aws-cdk-lib's built-in validation (vitest.config.ts).
  'test/package/install.test.ts': 68_000,
  // Re-estimated on 2026-12-07 (branch suite-time-2) after their repeats went to the soak, from the CI run's 49.7 s
  // and 51.7 s: settle less the 7 s its kill test lost alone (22.9 -> 15.7 s, median of two), cli-kill scaled by its
  // CPU ratio alone at the same load (55.5 -> 35.8 s of CPU).
  'test/fault/settle.test.ts': 43_000,
  'test/fault/cli-kill.test.ts': 33_000,
  'test/unit/adapters/parquet-wasm/memory.test.ts': 38_045,
  'test/fault/workflow-crash.test.ts': 35_437,
  'test/fault/iceberg-commit-crash.test.ts': 33_286,
  'test/integration/cli-foreign-format-s3.test.ts': 26_800,
  // 35.8 s on CI before aws-cdk-lib's built-in validation was turned off outside test/infra.
  'test/integration/profiler.test.ts': 23_000,
  // 33.2 s on CI before its children ran from a bundle instead of under tsx.
  'test/fault/metadata-bombs.test.ts': 19_800,
  // 249 s on CI before its byte comparisons left toEqual; ~16 s of CPU alone since.
  'test/fault/hudi-compaction-crash.test.ts': 20_000,
  // Not in the CI figures we have: estimated from a local run on a loaded machine (~0.3 of its times). Those that synthesize a stack to create their tables (profiler-delta,
  // run-caps, dynamodb-stats-store, profiler-iceberg) have since lost aws-cdk-lib's validation too: ~9 s of CPU
  // each, not re-measured.
  'test/integration/workflow-delta.test.ts': 32_000,
  'test/unit/adapters/parquet-wasm/native-compression.test.ts': 31_000,
  'test/integration/profiler-delta.test.ts': 30_000,
  'test/integration/run-caps.test.ts': 29_000,
  'test/integration/delta-dynamodb-coordination.test.ts': 28_000,
  'test/integration/dynamodb-stats-store.test.ts': 25_000,
  'test/unit/cli-undo.test.ts': 20_000,
  'test/unit/cli-startup.test.ts': 17_000,
  'test/integration/workflow.test.ts': 16_000,
  'test/integration/profiler-iceberg.test.ts': 15_000,
};

/**
 * Orders `files` (paths relative to `root`) longest known duration first; files not in `durations` keep their
 * order among themselves, after the known ones. Pure, for the test and the sequencer.
 */
export function slowFirst<T>(
  files: readonly T[],
  pathOf: (file: T) => string,
  durations: Readonly<Record<string, number>> = KNOWN_DURATIONS_MS,
): T[] {
  return files
    .map((file, index) => ({ file, index, ms: durations[pathOf(file)] ?? 0 }))
    .sort((a, b) => b.ms - a.ms || a.index - b.index)
    .map((entry) => entry.file);
}
