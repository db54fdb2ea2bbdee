// Set-up of a rewrite: the options checked (every problem at once, before anything is read) and every
// default applied, so the stages after it read one settled value each.

import { InvalidInputError } from '../../core/errors.js';
import { currentMemoryBudget, smallInputCacheBytes } from '../../core/memory-budget.js';
import { DEFAULT_STATISTICS_MODE, type StatisticsMode } from '../../core/parquet/statistics-policy.js';
import { DEFAULT_STITCH_THRESHOLDS } from '../../core/parquet/stitch.js';
import {
  type Codec,
  DEFAULT_CODEC,
  DEFAULT_SCHEMA_FIDELITY,
  type DerivedColumn,
  type Int96Mode,
  type OutputFooterEntries,
  type RewriteGroup,
  type RewriteOptions,
  type SchemaFidelity,
  type WriterTuningMemo,
} from '../../ports/parquet-engine.js';

const MiB = 1024 * 1024;

/** The options with every default applied: what the rewrite's stages read. */
export interface RewriteSettings {
  readonly codec: Codec;
  /** Who compresses pages (see `RewriteOptions.pageCompression`). */
  readonly pageCompression: 'encoder' | 'native';
  readonly targetFileSizeBytes: number;
  readonly rowGroupRows: number;
  readonly rowGroupBytes: number;
  readonly maxBytesInFlight: number;
  readonly maxRequestsInFlight: number;
  /** Whole small inputs pre-flight fetched and keeps for the rewrite, in bytes (see `settingsOf`). */
  readonly smallFileCacheBytes: number;
  readonly batchRows: number;
  readonly sort: RewriteOptions['sort'];
  readonly deltaEncoding: boolean;
  /** Statistics policy: `auto` decides per column from the run's sample; `keep` (with the sort columns) always keep them. */
  readonly statistics: { readonly mode: StatisticsMode; readonly keep: readonly string[] };
  readonly schemaFidelity: SchemaFidelity;
  /** INT96 columns: `schemaFidelity` decides unless the older `int96` option says otherwise. */
  readonly int96: Int96Mode;
  /** Stitching thresholds; undefined: stitching off. */
  readonly stitch: { readonly minRowGroupBytes: number; readonly minRowGroupRows: number } | undefined;
  readonly stallMs: number;
  readonly workers: number;
  /** Exact rows per output (one run only); undefined: balanced. */
  readonly outputRows: readonly number[] | undefined;
  readonly signal: AbortSignal | undefined;
  /** Columns set per output (see `RewriteOptions.derivedColumns`); empty: none. */
  readonly derivedColumns: readonly DerivedColumn[];
  /** Footer entries computed per output; undefined: none. */
  readonly outputFooterEntries: OutputFooterEntries | undefined;
  /** Writer tunings of earlier runs of the caller's job (see `RewriteOptions.tuningMemo`); undefined: sample every run. */
  readonly tuningMemo: WriterTuningMemo | undefined;
}

/**
 * Whether outputs carry anything computed per output (a derived column or footer entries): no stitching (a copied
 * row group would keep its input's values); workers set them as this thread does (see `workersMayEncode`).
 */
export function computesPerOutput(settings: RewriteSettings): boolean {
  return settings.derivedColumns.length > 0 || settings.outputFooterEntries !== undefined;
}

/**
 * Checks the group and the options and applies the defaults.
 * @throws InvalidInputError listing every problem.
 */
export function settingsOf(group: RewriteGroup, options: RewriteOptions): RewriteSettings {
  const issues: string[] = [];
  if (group.files.length === 0) issues.push('the group has no files');
  const keys = new Set<string>();
  for (const f of group.files) {
    if (keys.has(f.key)) issues.push(`${f.key} appears twice`);
    keys.add(f.key);
    if (!Number.isSafeInteger(f.size) || f.size < 0) issues.push(`${f.key} has an invalid size ${f.size}`);
  }
  const positive = (name: string, v: number | undefined) => {
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0))
      issues.push(`${name} must be a positive integer, got ${v}`);
  };
  positive('expectedOutputFiles', group.expectedOutputFiles);
  positive('targetFileSizeBytes', options.targetFileSizeBytes);
  positive('rowGroupRows', options.rowGroupRows);
  positive('maxBytesInFlight', options.maxBytesInFlight);
  positive('maxRequestsInFlight', options.maxRequestsInFlight);
  positive('workers', options.workers);
  if (options.stitch !== undefined && options.stitch !== false) {
    positive('stitch.minRowGroupBytes', options.stitch.minRowGroupBytes);
    positive('stitch.minRowGroupRows', options.stitch.minRowGroupRows);
  }
  if (options.outputRows !== undefined) {
    if (options.outputRows.length === 0) issues.push('outputRows must name at least one output');
    for (const rows of options.outputRows) positive('outputRows[]', rows);
    if (options.sort !== undefined) issues.push('outputRows cannot be combined with sort');
  }
  const derived = options.derivedColumns ?? [];
  if (new Set(derived.map((d) => d.column)).size !== derived.length)
    issues.push('derivedColumns names a column twice');
  const perOutput = derived.length > 0 || options.outputFooterEntries !== undefined;
  if (perOutput && options.sort !== undefined) {
    issues.push(
      'derivedColumns and outputFooterEntries keep rows in input order: they cannot be combined with sort',
    );
  }
  if (issues.length > 0) throw new InvalidInputError(`Invalid rewrite of group ${group.groupId}`, issues);
  return {
    codec: options.codec ?? DEFAULT_CODEC,
    pageCompression: options.pageCompression ?? 'encoder',
    targetFileSizeBytes: options.targetFileSizeBytes ?? 128 * MiB,
    // About twice DuckDB's default. The writer holds a whole row group encoded in wasm memory until it
    // is flushed, and wasm memory never shrinks: larger row groups grow the heap for no speed gain.
    rowGroupRows: options.rowGroupRows ?? 262_144,
    // Bounds that same buffer for wide rows (see rowsPerRowGroup in runs.ts).
    rowGroupBytes: options.rowGroupBytes ?? 16 * MiB,
    // Enough to hide S3 latency at one thread's decode speed; every MiB more is resident memory.
    maxBytesInFlight: options.maxBytesInFlight ?? 16 * MiB,
    maxRequestsInFlight: options.maxRequestsInFlight ?? 128,
    // Pre-flight fetches a small input whole (up to PREFLIGHT_WHOLE_READ_BYTES, core/parquet/footer.ts); kept,
    // the rewrite needs no second GET, which was ~10 % of a tiny file's cost (set C) and a request per file on
    // S3. Bounded by the process's memory (smallInputCacheBytes: 64–256 MiB), and each file is dropped as the
    // rewrite takes it; inputs beyond it are read twice (footer, then body).
    smallFileCacheBytes: smallInputCacheBytes(currentMemoryBudget().memoryMb),
    // parquet's default of 1,024 rows per batch is slow.
    batchRows: options.batchRows ?? 65_536,
    sort: options.sort,
    deltaEncoding: options.deltaEncoding === true,
    statistics: {
      mode: options.statistics?.mode ?? DEFAULT_STATISTICS_MODE,
      keep: [...new Set([...(options.statistics?.keep ?? []), ...(options.sort?.columns ?? [])])],
    },
    schemaFidelity: options.schemaFidelity ?? DEFAULT_SCHEMA_FIDELITY,
    int96: options.int96 ?? (options.schemaFidelity === 'logical' ? 'convert' : 'refuse'),
    // A row group this large already reads well; 16 MiB is the re-encoded row groups' uncompressed bound.
    // Stitched outputs hold whole inputs: they could not be cut at the rows asked for.
    stitch:
      // …nor could a copied row group carry an output's own derived values or feed its footer entries.
      options.stitch === false || options.outputRows !== undefined || perOutput
        ? undefined
        : {
            minRowGroupBytes: options.stitch?.minRowGroupBytes ?? DEFAULT_STITCH_THRESHOLDS.minRowGroupBytes,
            minRowGroupRows: options.stitch?.minRowGroupRows ?? DEFAULT_STITCH_THRESHOLDS.minRowGroupRows,
          },
    stallMs: options.stallTimeoutMs ?? 120_000,
    workers: options.workers ?? 1,
    signal: options.signal,
    outputRows: options.outputRows,
    derivedColumns: derived,
    outputFooterEntries: options.outputFooterEntries,
    tuningMemo: options.tuningMemo,
  };
}
