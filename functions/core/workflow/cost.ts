// The estimated cost of a run: Lambda GB-seconds from the bytes to rewrite plus S3 request charges,
// from named list prices (us-east-1, arm64, 2025) — an order of magnitude for operators, not a bill.
import type { RetireMode } from '../../ports/journal.js';
import type { ComposedPiece } from '../../ports/object-store.js';
import { smallInputCacheBytes } from '../memory-budget.js';
import { planParts } from '../parquet/compose.js';
import { PREFLIGHT_WHOLE_READ_BYTES } from '../parquet/footer.js';

/** Lambda arm64 price per GB-second (USD). */
export const LAMBDA_ARM_USD_PER_GB_SECOND = 0.0000133334;
/** Lambda price per request (USD): $0.20 per million. */
export const LAMBDA_USD_PER_REQUEST = 0.2 / 1_000_000;
/** S3 Standard GET, HEAD and other GET-class requests: $0.0004 per 1,000. */
export const S3_USD_PER_GET = 0.0004 / 1000;
/** S3 Standard PUT, COPY, POST, LIST (and multipart part/create/complete): $0.005 per 1,000. */
export const S3_USD_PER_PUT = 0.005 / 1000;
/** DELETE requests are free on S3. */
export const S3_USD_PER_DELETE = 0;
/** Step Functions Standard state transitions: $0.025 per 1,000. */
export const SFN_USD_PER_TRANSITION = 0.025 / 1000;
/**
 * Rewrite throughput assumed per compact Lambda, input bytes per second: ~18 MB/s was measured on a
 * 2-core machine with parquet-wasm (docs/engine.md); 10 MiB/s leaves room for verify and slower inputs.
 */
export const REWRITE_BYTES_PER_SECOND = 10 * 1024 * 1024;
/** Verify re-reads outputs at about 4× the rewrite speed (docs/engine.md: 21–24% of the rewrite time on the first measurement). */
export const VERIFY_BYTES_PER_SECOND = 4 * REWRITE_BYTES_PER_SECOND;
/** State transitions per group (compact, verify, commit + map bookkeeping) and per run. */
const TRANSITIONS_PER_GROUP = 8;
const TRANSITIONS_PER_RUN = 16;
/** LISTs that probe one folder for a foreign table: one per layout a registered format recognises. */
const FOREIGN_PROBE_LISTS = 3;

// What the code sends S3, and the limits that shape it. Some mirror adapter defaults (core may not import
// adapters): keep them in step with the files named, which test/unit/core/workflow/cost.test.ts checks by
// counting the requests of real runs.

/** S3ObjectStore's multipart part size: an output up to this is one PutObject, else create + parts + complete. */
export const UPLOAD_PART_BYTES = 8 * 1024 * 1024;
/** Keys per ListObjectsV2 page and per DeleteObjects request (S3's limits). */
export const S3_KEYS_PER_REQUEST = 1000;
/** The writer-tuning sample (parquet-wasm runs.ts): first inputs until this many rows, at most 256 inputs / 4 MiB. */
const SAMPLE_ROWS = 16_384;
const SAMPLE_INPUTS = 256;
const SAMPLE_BYTES = 4 * 1024 * 1024;
/** Output row groups: at most 262,144 rows or 16 MiB (parquet-wasm settings.ts); verify reads one range per row group. */
const ROW_GROUP_ROWS = 262_144;
const ROW_GROUP_BYTES = 16 * 1024 * 1024;
/**
 * Verify's ranged GETs of an output besides one per row group: our footer read (verify.ts), whose bytes the
 * hashing worker is handed, then one more read by parquet-wasm's reader before the row groups (counted by
 * test/unit/core/workflow/cost.test.ts; it was five before the footer was handed over).
 */
const VERIFY_FIXED_GETS_PER_OUTPUT = 2;
/**
 * The same for a stitched output: the footer read only (shared with its proof), counted by cost.test.ts on inputs
 * DuckDB wrote, which carry no page index; the reader's extra read of our own outputs is not made for these.
 */
const STITCHED_VERIFY_FIXED_GETS_PER_OUTPUT = 1;

export interface CostInput {
  readonly groups: number;
  /** Planned inputs (the files the groups rewrite). */
  readonly inputFiles: number;
  readonly inputBytes: number;
  readonly expectedOutputFiles: number;
  readonly retireMode: RetireMode;
  /** Memory of the compact and verify Lambdas, MB. */
  readonly compactMemoryMb: number;
  /** Files the partition's listing holds, planned or not: each footer is read at planning. @default inputFiles */
  readonly listedFiles?: number;
  /**
   * Listed files planning did not read a footer of (tiny files planned from the listing, `footerDeferred`): the
   * rewrite's one read of each is all they cost in GETs. @default 0
   */
  readonly deferredFiles?: number;
  /** Rows of the planned inputs (their footers'): output row groups and the writer's sample. Unknown: one row group per 16 MiB. */
  readonly inputRows?: number;
  /**
   * Folders of the partition's directory (`events/date=2024-01-01/` is 2): before each listing of the partition,
   * every folder above it is probed for each foreign table layout (three LISTs each). @default 2
   */
  readonly partitionDepth?: number;
  /** The planned inputs the engine copies row group by row group instead of re-encoding (planning's `stitch`). */
  readonly stitched?: StitchedInputs;
  /**
   * Whether the store composes stitched outputs server-side (S3's UploadPartCopy: `putComposed`) rather than the
   * engine downloading their inputs and uploading the bytes. @default false
   */
  readonly composes?: boolean;
}

/** The stitched path's share of a run (all counted within `CostInput`'s inputs, bytes, rows and outputs). */
export interface StitchedInputs {
  readonly files: number;
  readonly bytes: number;
  readonly rows: number;
  /** Their row groups: verify's reader reads each copied row group of a stitched output. */
  readonly rowGroups: number;
  /** Outputs they are copied into (the engine balances them apart from the re-encoded inputs). */
  readonly outputs: number;
  /** The sum of their `proofReadsPerSide`: verify's proof reads as many ranges of the outputs, and of the sources. */
  readonly proofReadsPerSide: number;
  /** Those whose data page version the rewrite reads from a page header (no encoding statistics). */
  readonly pageHeaderReads: number;
}

/** S3 requests by billing class. */
export interface RequestCounts {
  /** GET class ($0.0004 per 1,000): GetObject whole or ranged, HeadObject, GetBucketVersioning. */
  readonly get: number;
  /** PUT class ($0.005 per 1,000) except COPY: PutObject, multipart create / part / complete, ListObjectsV2 pages. */
  readonly put: number;
  /** CopyObject (PUT class): one per output to publish, one per input in trash mode. */
  readonly copy: number;
  /** DeleteObjects requests, one per 1,000 keys (free). */
  readonly delete: number;
}

export interface CostEstimate {
  readonly usd: number;
  readonly lambdaGbSeconds: number;
  readonly requests: RequestCounts;
  readonly breakdownUsd: { readonly lambda: number; readonly s3: number; readonly stepFunctions: number };
  readonly assumptions: string;
}

/**
 * COPY requests per input that retirement costs: trash mode copies every input aside before deleting it (the copy is
 * the undo); delete mode relies on the bucket's versioning, whose old version is the undo, and delete-rebuild on the
 * outputs, from which its undo re-creates an input (rare: only when an input changed mid-commit, so not part of a
 * run's expected cost), so neither copies anything. A new retire mode states its price here (the switch is
 * exhaustive, so the compiler asks for it).
 */
export function retireCopiesPerInput(mode: RetireMode): number {
  switch (mode) {
    case 'trash':
      return 1;
    case 'delete-versioned':
    case 'delete-rebuild':
      return 0;
  }
}

/**
 * The S3 requests of a Hive-style run, as the code sends them (counted against real runs in cost.test.ts):
 *
 * - plan: GetBucketVersioning (delete mode only), a HEAD for a stored plan, the folders above the partition
 *   probed for foreign tables (3 LISTs each, one per layout), the partition's listing (a LIST per 1,000 keys), one ranged GET per
 *   listed file for its footer (64 KiB from the end: the whole of a small file) — none for a file no larger than
 *   that read, planned from the listing (`deferredFiles`) —, two PUTs (plan and items);
 * - compact, per group: a LIST of the staging prefix; per input a ranged GET for the footer again (pre-flight)
 *   and a GET of the whole file — except a file no larger than that first read, which arrived whole and is kept
 *   while the group's cache (8 MiB) holds it — plus, for such larger files, the GETs of the writer's sample
 *   (the first inputs up to 16,384 rows); per output one PutObject, or create + 8 MiB parts + complete; one PUT
 *   of the fingerprint;
 * - verify, per output: a HEAD, then ranged GETs: 2 before the data and one per row group;
 * - commit, per group: the inputs checked before publishing — in delete-rebuild and delete mode (whose version
 *   ids the rewrite's GETs named) a LIST of their folder per 1,000 keys when that is cheaper than their HEADs (13
 *   inputs or more), else a HEAD per input —,
 *   GetBucketVersioning (delete mode), a COPY per input in trash mode
 *   ({@link retireCopiesPerInput}), a COPY per output to publish, DeleteObjects of the inputs (one per 1,000),
 *   a LIST of staging and DeleteObjects of the staged outputs and fingerprint;
 * - finalize: the probes and the listing again (no footers).
 *
 * Groups are taken as alike (averages); outputs as large as their inputs (an upper bound for the parts). Trash
 * copies are removed later by the vacuum, not by the run. A run with no group plans only (and finalize lists nothing).
 * A format whose log or metadata is the table reads and writes it besides, which this does not count.
 */
export function estimateRequests(input: CostInput): RequestCounts {
  const steps = estimateRequestsByStep(input);
  return sumRequests(Object.values(steps));
}

/**
 * A run's requests by who sends them: the engine's `rewrite` (pre-flight footers, input GETs, output uploads)
 * and `verify` (ranged GETs of the outputs), which a benchmark can measure instead, and the workflow's own
 * around them: `plan`, the compact and verify steps' `bookkeeping` (staging LIST, fingerprint PUT, a HEAD
 * per output), `commit` and `finalize`. See {@link estimateRequests}.
 */
export function estimateRequestsByStep(input: CostInput): Readonly<Record<RunStep, RequestCounts>> {
  const groups = input.groups;
  const listed = input.listedFiles ?? input.inputFiles;
  const depth = input.partitionDepth ?? 2;
  const outputs = input.expectedOutputFiles;
  const versioned = input.retireMode === 'delete-versioned';
  const pages = (keys: number) => Math.max(1, Math.ceil(keys / S3_KEYS_PER_REQUEST));
  const plan = counts({
    get: (versioned ? 1 : 0) + 1 + listed - Math.min(listed, input.deferredFiles ?? 0),
    put: FOREIGN_PROBE_LISTS * depth + pages(listed) + 2,
  });
  if (groups === 0) {
    const none = counts({});
    return { plan, rewrite: none, verify: none, bookkeeping: none, commit: none, finalize: none };
  }
  const filesPerGroup = input.inputFiles / groups;
  // The re-encoded inputs and their outputs; the stitched ones are priced apart (stitchedRequests).
  const stitched = input.stitched;
  const encoded = {
    files: input.inputFiles - (stitched?.files ?? 0),
    bytes: input.inputBytes - (stitched?.bytes ?? 0),
    rows: input.inputRows === undefined ? undefined : input.inputRows - (stitched?.rows ?? 0),
    outputs: outputs - (stitched?.outputs ?? 0),
  };
  const perFile = encoded.files === 0 ? 0 : encoded.bytes / encoded.files;
  const encodedPerGroup = encoded.files / groups;

  // Whole-file GETs of the rewrite: every input larger than pre-flight reads whole; of the small ones, those the
  // pre-flight cache had no room for. Larger files are fetched once more for the writer's sample.
  let wholeGets: number;
  let sampleGets = 0;
  if (encoded.files === 0) {
    wholeGets = 0;
  } else if (perFile > PREFLIGHT_WHOLE_READ_BYTES) {
    wholeGets = encoded.files;
    const rowsPerFile = encoded.rows === undefined ? SAMPLE_ROWS : encoded.rows / encoded.files;
    const picked = Math.min(
      Math.ceil(SAMPLE_ROWS / Math.max(1, rowsPerFile)),
      SAMPLE_INPUTS,
      Math.floor(SAMPLE_BYTES / perFile),
      encodedPerGroup,
    );
    sampleGets = groups * (picked < 2 ? 1 : picked);
  } else {
    // Whole small inputs the engine's pre-flight keeps for the rewrite, per group (parquet-wasm settings.ts
    // `smallFileCacheBytes`, sized from the compact function's memory): an input no larger than
    // `PREFLIGHT_WHOLE_READ_BYTES` is read whole by it while the cache has room, and not fetched again.
    const cacheBytes = smallInputCacheBytes(input.compactMemoryMb);
    const cachedPerGroup = perFile === 0 ? encodedPerGroup : Math.floor(cacheBytes / perFile);
    wholeGets = groups * Math.max(0, encodedPerGroup - cachedPerGroup);
  }
  // The commit's check of the inputs before publishing (hive/commit.ts): in delete-rebuild mode (no version id
  // needed) and in delete mode (each input's version id journaled from the rewrite's GETs, which name it) a
  // listing of their folder, when their HEADs would cost more than a LIST page and for at most the pages that
  // many HEADs would cost; else (trash mode, small groups) a HEAD each.
  const listBudget = Math.floor(filesPerGroup / (S3_USD_PER_PUT / S3_USD_PER_GET));
  const headsInputs = input.retireMode === 'trash' || listBudget < 1;
  const bytesPerOutput = encoded.outputs <= 0 ? 0 : encoded.bytes / encoded.outputs;
  const parts = Math.ceil(bytesPerOutput / UPLOAD_PART_BYTES);
  const rowGroupsPerOutput = Math.max(
    1,
    encoded.rows === undefined || encoded.outputs <= 0
      ? 0
      : Math.ceil(encoded.rows / encoded.outputs / ROW_GROUP_ROWS),
    Math.ceil(bytesPerOutput / ROW_GROUP_BYTES),
  );
  const encodedOutputs = Math.max(0, encoded.outputs);
  const copied = stitched === undefined ? undefined : stitchedRequests(stitched, input.composes === true);
  return {
    plan,
    rewrite: counts({
      get: input.inputFiles + wholeGets + sampleGets + (copied?.rewrite.get ?? 0),
      put: encodedOutputs * (parts <= 1 ? 1 : parts + 2) + (copied?.rewrite.put ?? 0),
    }),
    verify: counts({
      get: encodedOutputs * (VERIFY_FIXED_GETS_PER_OUTPUT + rowGroupsPerOutput) + (copied?.verify.get ?? 0),
    }),
    bookkeeping: counts({ get: outputs, put: 2 * groups }),
    commit: counts({
      get: (headsInputs ? input.inputFiles : 0) + (versioned ? groups : 0),
      put: groups + (headsInputs ? 0 : groups * Math.min(listBudget, pages(listed + outputs))),
      copy: outputs + input.inputFiles * retireCopiesPerInput(input.retireMode),
      delete: groups * (pages(filesPerGroup) + pages(outputs / groups + 1)),
    }),
    finalize: counts({ put: FOREIGN_PROBE_LISTS * depth + pages(listed - input.inputFiles + outputs) }),
  };
}

/**
 * The requests of the stitched path (parquet-wasm stitch.ts and stitched-proof.ts), besides the pre-flight footer
 * read every input has:
 *
 * - rewrite, per stitched input: its footer read again to plan the copy, a data page header where the footer has
 *   no encoding statistics; then, composed in the store, one ranged read of its page indexes and footer, and the
 *   output's multipart upload (create, a part per copied range or uploaded piece, complete; a range that must go
 *   into an uploaded part is read with a GET) — else the input downloaded whole and the output uploaded as a stream;
 *   never a writer sample (nothing is re-encoded);
 * - verify, per stitched output: the footer and row-group reads of any output (its rows are decoded and counted);
 *   per source a HEAD, its footer, and a HEAD again at the end (the ETag still the planned one); and the proof's
 *   ranged reads, as many of the output as of the sources.
 *
 * Groups are taken as alike; footers as fitting the first 64 KiB read; dictionary pages a footer cannot clear
 * (read to bound their decoded size) are not counted.
 */
function stitchedRequests(
  stitched: StitchedInputs,
  composes: boolean,
): { rewrite: RequestCounts; verify: RequestCounts } {
  const { files, bytes, outputs } = stitched;
  if (files === 0 || outputs === 0) return { rewrite: counts({}), verify: counts({}) };
  let get = files + stitched.pageHeaderReads;
  let put: number;
  if (composes) {
    // The output's pieces as the engine hands them to planParts: PAR1, each input's pages (a range), the footer.
    const perOutput = Math.round(files / outputs);
    const perInput = Math.floor(bytes / files);
    const pieces: ComposedPiece[] = [{ kind: 'bytes', bytes: new Uint8Array(4) }];
    for (let i = 0; i < perOutput; i++) {
      pieces.push({ kind: 'range', key: `${i}`, etag: '', start: 0, endInclusive: perInput - 1 });
    }
    pieces.push({ kind: 'bytes', bytes: new Uint8Array(1) });
    const planned = planParts(pieces);
    const rangeReads = planned.reduce(
      (n, p) => n + (p.kind === 'upload' ? p.pieces.filter((q) => q.kind === 'range').length : 0),
      0,
    );
    get += files + outputs * rangeReads;
    put = outputs * (planned.length + 2);
  } else {
    get += files;
    const parts = Math.ceil(bytes / outputs / UPLOAD_PART_BYTES);
    put = outputs * (parts <= 1 ? 1 : parts + 2);
  }
  const rowGroupsPerOutput = Math.max(1, stitched.rowGroups / outputs);
  return {
    rewrite: counts({ get, put }),
    verify: counts({
      get:
        outputs * (STITCHED_VERIFY_FIXED_GETS_PER_OUTPUT + rowGroupsPerOutput) +
        files * 3 +
        2 * stitched.proofReadsPerSide,
    }),
  };
}

/** Who sends a run's requests (see {@link estimateRequestsByStep}). */
export type RunStep = 'plan' | 'rewrite' | 'verify' | 'bookkeeping' | 'commit' | 'finalize';

/** Request counts added up by class. */
export function sumRequests(all: readonly RequestCounts[]): RequestCounts {
  const total = { get: 0, put: 0, copy: 0, delete: 0 };
  for (const r of all) {
    total.get += r.get;
    total.put += r.put;
    total.copy += r.copy;
    total.delete += r.delete;
  }
  return total;
}

/** Whole requests: averages over groups may leave fractions. */
function counts(r: Partial<RequestCounts>): RequestCounts {
  return {
    get: Math.round(r.get ?? 0),
    put: Math.round(r.put ?? 0),
    copy: Math.round(r.copy ?? 0),
    delete: Math.round(r.delete ?? 0),
  };
}

/** Estimates a run: compute from bytes and the assumed throughputs, requests from {@link estimateRequests}, at list prices. */
export function estimateCost(input: CostInput): CostEstimate {
  const gb = input.compactMemoryMb / 1024;
  const seconds =
    input.inputBytes / REWRITE_BYTES_PER_SECOND +
    input.inputBytes / VERIFY_BYTES_PER_SECOND +
    input.groups * 2;
  const lambdaGbSeconds = gb * seconds;
  const requests = estimateRequests(input);
  const lambda =
    lambdaGbSeconds * LAMBDA_ARM_USD_PER_GB_SECOND + (input.groups * 4 + 3) * LAMBDA_USD_PER_REQUEST;
  const s3 = requestsUsd(requests);
  const stepFunctions = (input.groups * TRANSITIONS_PER_GROUP + TRANSITIONS_PER_RUN) * SFN_USD_PER_TRANSITION;
  return {
    usd: round6(lambda + s3 + stepFunctions),
    lambdaGbSeconds: round6(lambdaGbSeconds),
    requests,
    breakdownUsd: { lambda: round6(lambda), s3: round6(s3), stepFunctions: round6(stepFunctions) },
    assumptions: `us-east-1 list prices, arm64 Lambda at ${input.compactMemoryMb} MB, rewrite ${REWRITE_BYTES_PER_SECOND / 1024 / 1024} MiB/s`,
  };
}

/** The list price of `requests` (USD), unrounded. */
export function requestsUsd(requests: RequestCounts): number {
  return (
    requests.get * S3_USD_PER_GET +
    (requests.put + requests.copy) * S3_USD_PER_PUT +
    requests.delete * S3_USD_PER_DELETE
  );
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
