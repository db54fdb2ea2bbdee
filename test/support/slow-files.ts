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

/** Wall time (ms) of the slowest files on a CI run, keyed by path from the repository root. */
export const KNOWN_DURATIONS_MS: Readonly<Record<string, number>> = {
  'test/package/install.test.ts': 76_396,
  'test/fault/settle.test.ts': 73_542,
  'test/fault/cli-kill.test.ts': 57_642,
  'test/unit/adapters/parquet-wasm/memory.test.ts': 38_045,
  'test/integration/profiler.test.ts': 35_758,
  'test/fault/workflow-crash.test.ts': 35_437,
  'test/integration/cli-foreign-format-s3.test.ts': 33_765,
  'test/fault/iceberg-commit-crash.test.ts': 33_286,
  'test/fault/metadata-bombs.test.ts': 33_221,
  // 249 s on CI before its byte comparisons left toEqual; ~16 s of CPU alone since.
  'test/fault/hudi-compaction-crash.test.ts': 20_000,
  // Next, not in the CI figures we have: estimated from a local run on a loaded machine (~0.3 of its times),
  // kept below the measured ones above.
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
