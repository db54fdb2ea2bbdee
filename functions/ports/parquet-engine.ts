// The Parquet engine port: a streaming rewrite that fingerprints its inputs, an independent re-read of the
// outputs, footer reading — and the vocabulary all layers share with the engine (codecs…), defined once.
import { z } from 'zod';
import type { DeletedRows } from '../core/deletes/deleted-rows.js';
import type { GroupFingerprint } from '../core/fingerprint/fingerprint.js';
import type { FooterSource, ParquetFooter } from '../core/parquet/footer.js';
import type { RowSource } from '../core/parquet/provenance.js';
import type { StatisticsMode } from '../core/parquet/statistics-policy.js';
import type { ColumnProjection } from '../core/projection.js';
import type { ObjectStore } from './object-store.js';

/**
 * Output codecs the engine writes. One tuple: the table config, the run input, the construct's props and
 * the CLI's `--codec` all derive from it, so a codec added here is accepted everywhere at once (and one
 * the engine cannot write is refused everywhere at once).
 */
export const CODECS = ['zstd', 'snappy'] as const;
export type Codec = (typeof CODECS)[number];
export const codecSchema = z.enum(CODECS);
/** ZSTD: on compacted files it is both smaller and faster to scan than snappy (parquet-rs level 1). */
export const DEFAULT_CODEC: Codec = 'zstd';

/** What the engine does with Spark's legacy INT96 timestamps: refuse the input, or write INT64 micros. */
export const INT96_MODES = ['refuse', 'convert'] as const;
export type Int96Mode = (typeof INT96_MODES)[number];

/**
 * How faithful an output's schema must be to its inputs'. `exact`: the output's Parquet schema is the
 * input's, leaf for leaf (physical type, annotations, field ids), and an input the writer cannot reproduce
 * so is refused. `logical`: the same logical values in today's standard physical forms where the writer
 * cannot reproduce a legacy one — INT96 timestamps as INT64 TIMESTAMP (MICROS, or NANOS when a value has
 * sub-microsecond digits; a value neither holds is refused), BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY decimals as
 * the writer's decimal form, 2-level lists and MAP_KEY_VALUE maps as 3-level LIST / MAP. One tuple: the
 * table config, the run input and the CLI's `--schema-fidelity` derive from it. Exact is the default because
 * a reader that keys on the physical form (an old Hive or Impala) may not read the standard one.
 */
export const SCHEMA_FIDELITIES = ['exact', 'logical'] as const;
export type SchemaFidelity = (typeof SCHEMA_FIDELITIES)[number];
export const schemaFidelitySchema = z.enum(SCHEMA_FIDELITIES);
export const DEFAULT_SCHEMA_FIDELITY: SchemaFidelity = 'exact';

/** One planned input: the object as the plan saw it. */
export interface InputFile {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  /** Rows the plan read from the footer; a different count now is a changed (or damaged) input. */
  readonly rows?: number;
  /**
   * Rows of the file its table format deletes without rewriting it (a deletion vector, a
   * position delete file), by position (0-based row index in the file): the rewrite skips exactly these, and
   * its fingerprint is of the rows it kept. A position at or past the file's row count is refused
   * (CorruptInputError: the deletes are not of this file); a file whose every row is deleted contributes
   * nothing — no rows, no schema, no output.
   */
  readonly deleted?: DeletedRows;
  /**
   * Row lineage the table format tracks per row (Iceberg v3 `_row_id` / `_last_updated_sequence_number`): every
   * output row carries both, as INT64 columns with those field ids — the value the input stores when it has one,
   * else `firstRowId` + the row's position in the file (counted before deletes) and `sequenceNumber`. The
   * fingerprint is of the rows with their lineage, so verify checks the values written.
   */
  readonly rowLineage?: RowLineage;
  /**
   * The input projected onto the schema its table format writes (core/projection.ts): every output row has the
   * projection's columns — field ids, names, types — with values copied by source column, widened where it says;
   * a column without a source holds its default value in every row where one is declared, else null. Inputs of one projection's written schema
   * share outputs whatever schema each was written with. The fingerprint applies the description to the rows as
   * decoded, independently of the code that builds the written batches, so verify proves the projection as well as
   * the write. Never stitched. With `rowLineage`, each row's lineage is written into its lineage columns first and
   * the projection must carry both columns through (by their field ids), or the input is refused.
   */
  readonly projection?: ColumnProjection;
  /**
   * Planned from the listing alone, its footer unread (a tiny file, see core/planning.ts `footerDeferred`): what
   * planning would have learnt from the footer is learnt here, from the one read that fetches the file whole. Such
   * an input is left out of the rewrite — reported in `RewriteResult.leftOut`, not failing its neighbours — when
   * its footer is unreadable, it holds zero rows, or the engine cannot rewrite it by its footer (planning would have
   * skipped the first two; the third is what a rewrite quarantines); and when it is the only input of its output
   * schema in the group (a rewrite of it alone would copy a tiny file into another tiny file). Inputs of a group
   * with such inputs are written in schema populations (all inputs of one output schema together, in input order)
   * rather than in runs of consecutive inputs, since no planner sorted them by schema.
   */
  readonly footerDeferred?: boolean;
}

/** An input the rewrite left out (see {@link InputFile.footerDeferred}): in place, untouched, and why. */
export interface LeftOutInput {
  readonly key: string;
  /**
   * `unreadable`: not a readable Parquet footer; `empty`: zero rows; `alone`: the only file of its schema. (A valid
   * file the engine refuses as it is fails the group instead: its refusal names a setting to change.)
   */
  readonly kind: 'unreadable' | 'empty' | 'alone';
  readonly reason: string;
  /** The typed error that refused it (`CorruptInputError`, or `UnsupportedInputError` for zero rows), for its quarantine; absent for `alone`. */
  readonly errorName?: string;
}

/** See {@link InputFile.rowLineage}: what a row without stored lineage inherits from its file. */
export interface RowLineage {
  /** The row id of the file's first row (Iceberg: the data file's `first_row_id`). */
  readonly firstRowId: bigint;
  /** The file's data sequence number. */
  readonly sequenceNumber: bigint;
}

/** Field ids and names of the row lineage columns (Iceberg spec, reserved metadata columns). */
export const ROW_ID_FIELD = { id: 2147483540, name: '_row_id' } as const;
export const LAST_UPDATED_SEQUENCE_NUMBER_FIELD = {
  id: 2147483539,
  name: '_last_updated_sequence_number',
} as const;

export interface RewriteGroup {
  readonly groupId: string;
  readonly files: readonly InputFile[];
  /** The planner's output count; rows are balanced across this many outputs (per schema). */
  readonly expectedOutputFiles?: number;
}

/** Where a rewrite reads its inputs and writes its outputs (the same store in the workflow). */
export interface RewriteIo {
  readonly source: ObjectStore;
  readonly target: ObjectStore;
}

/**
 * How to rewrite. Every limit is optional, with the default the engine was measured with; the budgets
 * bound memory, so a group of any size runs in the same memory.
 */
export interface RewriteOptions {
  /** Key of the `index`-th output (0-based), e.g. a staging key. Must give a new key for every index. */
  readonly outputKey: (index: number) => string;
  /** Output codec. @default DEFAULT_CODEC */
  readonly codec?: Codec;
  /** Roll over to a new output around this size. @default 128 MiB */
  readonly targetFileSizeBytes?: number;
  /** Rows per output row group at most. @default 262,144 */
  readonly rowGroupRows?: number;
  /** Uncompressed bytes per output row group at most (bounds the writer's buffer for wide rows). @default 16 MiB */
  readonly rowGroupBytes?: number;
  /** Input bytes fetched but not yet decoded, half of it for whole small files kept from pre-flight. @default 16 MiB */
  readonly maxBytesInFlight?: number;
  /** Concurrent GETs: footers and small files are tiny, so latency is what costs. @default 128 */
  readonly maxRequestsInFlight?: number;
  /** Rows per decoded batch. @default 65,536 */
  readonly batchRows?: number;
  /**
   * Sort each output set by these columns (stable; nulls first, then ascending), or with `curve: 'zorder'` along
   * the Z-order curve of their ranks. The group must fit `memoryBudgetBytes` decoded — checked from the footers
   * before anything is read, and again while decoding — else MemoryBudgetExceededError. Without it, rows keep
   * input order.
   */
  readonly sort?: {
    readonly columns: readonly string[];
    readonly memoryBudgetBytes: number;
    /** @default 'lexicographic' */
    readonly curve?: 'lexicographic' | 'zorder';
  };
  /**
   * Let integer, date, time and timestamp columns use DELTA_BINARY_PACKED where a trial encoding finds it
   * no larger than PLAIN (and a dictionary does not win). Off by default: readers must support Parquet's
   * DELTA encodings (Spark's vectorized reader from 3.3, Trino, DuckDB, pyarrow, Polars); with it off,
   * only PLAIN and dictionary encodings are written, which every reader reads.
   */
  readonly deltaEncoding?: boolean;
  /**
   * Column-chunk statistics. `all`: every column gets min/max/null count. `auto`: string columns whose sampled
   * values are nearly all distinct and in no order get none, since no row group's min/max could prune them
   * (core/parquet/statistics-policy.ts); never the `keep` columns nor the sort columns. Stitched row groups keep
   * the statistics their input has. @default { mode: 'all' }
   */
  readonly statistics?: { readonly mode: StatisticsMode; readonly keep?: readonly string[] };
  /**
   * Row-group stitching: an input whose row groups all reach these thresholds (compressed bytes or rows)
   * and whose schema, codec and encodings are the target's is copied row group by row group — pages
   * untouched, footer rebuilt — into outputs of its own instead of being re-encoded, and not decoded: its
   * output's fingerprint segment lists the source row groups (`stitched-v1`), which verify proves from the
   * bytes. Stitched outputs follow the re-encoded ones, each output's rows in input order. `false`
   * re-encodes everything. Never with `sort`.
   * @default { minRowGroupBytes: 16 MiB, minRowGroupRows: 100,000 }
   */
  readonly stitch?: false | { readonly minRowGroupBytes?: number; readonly minRowGroupRows?: number };
  /**
   * Which schema changes a rewrite may make (see SCHEMA_FIDELITIES): under `logical`, legacy physical forms
   * are written in the standard ones, and the fingerprint, taken over decoded (logical) values, still has
   * to match. @default 'exact'
   */
  readonly schemaFidelity?: SchemaFidelity;
  /**
   * INT96 inputs alone: refuse, or convert to INT64 TIMESTAMP(MICROS, UTC) (NANOS when a value needs it).
   * Kept for callers that chose it before `schemaFidelity`; when set it wins for INT96 columns.
   * @default 'convert' under schemaFidelity 'logical', else 'refuse'
   */
  readonly int96?: Int96Mode;
  /**
   * Rows of each output, in order, instead of balanced counts: the group must make one schema run (no sort,
   * no stitching) that keeps exactly their sum, else InvalidInputError before anything is written. Lets a
   * caller cut outputs at rows of its choosing — the delete-rebuild undo re-creates several inputs in one
   * pass over the outputs, one output per input.
   */
  readonly outputRows?: readonly number[];
  /**
   * Columns whose value in every output row is set by the rewrite instead of copied from the input row — a table
   * format that records each row's own file in a column (e.g. a `_file_name` meta column) needs the output's name
   * there, not the input's. The fingerprint leaves these columns out of its row digests and records the rule, and
   * verify checks every output value equals what the rule gives for that output; every other column is compared
   * as without it. Each must be a top-level string column. Rows keep input order: not with `sort`; stitching is
   * off (a copied row group would keep the input's values). With `workers`, the workers set the values.
   */
  readonly derivedColumns?: readonly DerivedColumn[];
  /**
   * Footer key-value entries computed from each output's own rows (a table format's index over them: a
   * bloom filter and min/max record keys), written into the footer once the output's last row is encoded. The
   * format-specific computation comes from the caller; the engine only feeds it the column's values. The other
   * entries are the first input's, as without it. Same restrictions as `derivedColumns`. With `workers`, the hook
   * still runs on the calling thread, fed each output's values in its row order by the workers that encode it.
   */
  readonly outputFooterEntries?: OutputFooterEntries;
  /**
   * Who compresses ZSTD pages. `encoder`: parquet-wasm, on the thread that encodes. `native`: the encoder writes
   * pages uncompressed and a native ZSTD (node:zlib's where the runtime has it, else the @mongodb-js/zstd
   * package) compresses each page on the thread pool as it streams out, page headers, page indexes and footer
   * rewritten (the same level: parquet-rs's default, 1); where neither is present, the encoder compresses. Other
   * codecs: always the encoder. @default 'encoder'
   */
  readonly pageCompression?: 'encoder' | 'native';
  /**
   * A memo the caller keeps across the groups of one job whose outputs share a schema — a table service rewriting
   * many file groups of one table one group at a time, each into one output. A run's writer tuning (per-column
   * dictionary and encoding decisions by trial encoding, the statistics policy's columns, the encoded bytes per row)
   * costs a decode and several encodes of a sample: where every group is one small output, that is several times
   * the rewrite itself. With the memo, the tuning is kept under the run's output schema and settings and later runs
   * of that schema reuse it instead of sampling again. It changes how outputs are encoded, never their rows. Keep
   * one memo per job: a tuning describes the data it was sampled from. Without it every run samples its own input.
   */
  readonly tuningMemo?: WriterTuningMemo;
  /** Fail a write that makes no progress for this long. @default 120 s */
  readonly stallTimeoutMs?: number;
  /**
   * Threads that may encode (default 1: everything on the calling thread); pass the vCPUs the function
   * has. Several outputs are encoded one per worker; one output's row groups are split between the workers
   * and joined. Sorted rewrites stay on one thread.
   */
  readonly workers?: number;
  readonly signal?: AbortSignal;
}

/** See {@link RewriteOptions.tuningMemo}: opaque to the caller, who only creates it (`new Map()`) and passes it on. */
export type WriterTuningMemo = Map<string, object>;

/**
 * What a derived column's value is, in every row of an output. A closed list, not a function: verify recomputes
 * the value from the output alone (its key), so the rule must be one it knows. `output-file-name`: the output's
 * own file name, the last segment of its key (for a table format naming each row's file in a
 * column of its own).
 */
export const DERIVED_COLUMN_VALUES = ['output-file-name'] as const;
export type DerivedColumnValue = (typeof DERIVED_COLUMN_VALUES)[number];

/** A top-level string column the rewrite sets rather than copies (see {@link RewriteOptions.derivedColumns}). */
export interface DerivedColumn {
  readonly column: string;
  readonly value: DerivedColumnValue;
}

/** Collects one output's rows for {@link OutputFooterEntries}: fed each row's value in order, then finished once. */
export interface OutputFooterAccumulator {
  /** The next row's value of the column the hook reads (null for a null value). */
  add(value: string | null): void;
  /**
   * The next row's value as the bytes the column stores it in — well-formed UTF-8, never null — instead of
   * {@link add}, when the accumulator offers it: a hook that hashes a value's bytes then takes them as they are,
   * with no string decoded for each row and encoded again. `bytes` is a view valid only during the call. The engine
   * still calls {@link add} for a null and for bytes that are not well-formed UTF-8.
   */
  addUtf8?(bytes: Uint8Array): void;
  /** The entries to write, once every row of the output was added; only keys the hook owns. */
  finish(): Readonly<Record<string, string>>;
}

/**
 * Footer key-value entries computed from each output's own rows (see {@link RewriteOptions.outputFooterEntries}).
 */
export interface OutputFooterEntries {
  /**
   * The keys the hook owns. The inputs' values for them are dropped (they describe the inputs' rows, not the
   * output's), inputs that differ only in them may share outputs, and the fingerprint's schema identity leaves
   * them out on both sides, since verify cannot recompute them.
   */
  readonly keys: readonly string[];
  /** Top-level string column whose values, in output row order, the hook reads. */
  readonly column: string;
  /** A fresh accumulator for the output stored at `outputKey`. */
  readonly begin: (outputKey: string) => OutputFooterAccumulator;
}

/** One output as it was stored. */
export interface WrittenOutput {
  readonly key: string;
  readonly size: number;
  readonly etag: string;
  readonly rows: number;
}

export interface RewriteResult {
  readonly outputs: readonly WrittenOutput[];
  /**
   * Computed over the inputs (minus their deleted rows) while they were rewritten: per output, its rows in order
   * (`ordered-columns-v1`) when rows keep input order, else the row multiset (`multiset-v1`, sorted).
   */
  readonly fingerprint: GroupFingerprint;
  /** Bytes read from the source store (footers and data). */
  readonly bytesRead: number;
  /**
   * Where each input's rows went, per output (same order as `outputs`): its rows' sources in order, each a
   * stretch of one input's kept rows (see `RowSource`). Given when rows keep input order (no `sort`); a
   * sorted rewrite scatters every input's rows, and this is absent. Lets a commit re-create an input from
   * the outputs instead of keeping a copy of it (retire mode `delete-rebuild`).
   */
  readonly sources?: readonly (readonly RowSource[])[];
  /** Inputs left out of the outputs (see {@link InputFile.footerDeferred}); absent or empty when every input was rewritten. */
  readonly leftOut?: readonly LeftOutInput[];
  /**
   * Rows each rewritten input's footer holds (deleted rows included), by key: what planning reads from footers, for
   * inputs it planned without them (their journal entry, the cost estimate, the delete-rebuild undo).
   */
  readonly inputRows?: Readonly<Record<string, number>>;
}

export interface VerifyOptions {
  /** Rows per decoded batch. @default 65,536 */
  readonly batchRows?: number;
  /** Threads hashing outputs; outputs are verified `workers` at a time. Pass the vCPUs the function has. @default 1 */
  readonly workers?: number;
  /**
   * Where the inputs of stitched outputs are read (each at the ETag its fingerprint segment records), to prove
   * the copy from their bytes; the workflow's store holds both. @default the outputs' store
   */
  readonly sources?: ObjectStore;
}

export interface VerificationReport {
  readonly outputs: number;
  readonly rows: number;
  readonly bytes: number;
  /** The fingerprint recomputed from the outputs (equal to the expected one). */
  readonly fingerprint: GroupFingerprint;
}

/**
 * A Parquet engine. The workflow's compact and verify steps, the CLI and the tools get one passed in;
 * deployments take the default from functions/shared/parquet-engine.ts. The contract that keeps rows safe
 * is in the fingerprint: `rewriteGroup` fingerprints the rows it read, `verifyOutputs` recomputes it from the
 * stored outputs alone (never from state the rewrite kept), and only a match lets a group be published.
 */
export interface ParquetEngine {
  /** Names the engine in logs and benchmark figures. */
  readonly name: string;
  /**
   * Rewrites one group into a few large outputs: schemas never mixed, rows in input order unless sorted,
   * memory bounded by the options' budgets, never by the group's size. Inputs are only ever read.
   * @throws CorruptInputError / UnsupportedInputError naming the input that cannot be rewritten exactly
   * (before anything is written when its footer tells); InvalidInputError for a bad group or options;
   * MemoryBudgetExceededError for a sort over its budget. On any failure the outputs written so far are deleted.
   */
  rewriteGroup(io: RewriteIo, group: RewriteGroup, options: RewriteOptions): Promise<RewriteResult>;
  /**
   * Re-reads `outputs` from `store` and compares what they hold with `expected` (the rewrite's fingerprint),
   * recomputed in the kind `expected` records; see core/verify/verify.ts for what must match. `outputs`
   * come in the order the rewrite returned them: an ordered fingerprint is compared output by output.
   * @throws VerificationError listing every difference; CorruptInputError naming an output that cannot be read.
   */
  verifyOutputs(
    store: ObjectStore,
    outputs: readonly { readonly key: string; readonly size: number }[],
    expected: GroupFingerprint,
    options?: VerifyOptions,
  ): Promise<VerificationReport>;
  /**
   * Reads and checks the footer of `key` (`size` from a listing saves a HEAD).
   * @throws CorruptInputError / UnsupportedInputError naming the key; ObjectNotFoundError without `size`.
   */
  readFooter(store: FooterSource, key: string, size?: number): Promise<ParquetFooter>;
}
