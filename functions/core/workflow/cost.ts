// The estimated cost of a run: Lambda GB-seconds from the bytes to rewrite plus S3 request charges,
// from named list prices (us-east-1, arm64, 2025) — an order of magnitude for operators, not a bill.

/** Lambda arm64 price per GB-second (USD). */
export const LAMBDA_ARM_USD_PER_GB_SECOND = 0.0000133334;
/** Lambda price per request (USD): $0.20 per million. */
export const LAMBDA_USD_PER_REQUEST = 0.2 / 1_000_000;
/** S3 Standard GET/HEAD/LIST... GET and HEAD: $0.0004 per 1,000. */
export const S3_USD_PER_GET = 0.0004 / 1000;
/** S3 Standard PUT, COPY, POST, LIST: $0.005 per 1,000. */
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
/** Multipart part size assumed for output uploads (one PUT per part, plus create and complete). */
const PART_BYTES = 16 * 1024 * 1024;
/** State transitions per group (compact, verify, commit + map bookkeeping) and per run. */
const TRANSITIONS_PER_GROUP = 8;
const TRANSITIONS_PER_RUN = 16;

export interface CostInput {
  readonly groups: number;
  readonly inputFiles: number;
  readonly inputBytes: number;
  readonly expectedOutputFiles: number;
  readonly retireMode: 'delete-versioned' | 'trash';
  /** Memory of the compact and verify Lambdas, MB. */
  readonly compactMemoryMb: number;
}

export interface CostEstimate {
  readonly usd: number;
  readonly lambdaGbSeconds: number;
  readonly requests: {
    readonly get: number;
    readonly put: number;
    readonly copy: number;
    readonly delete: number;
  };
  readonly breakdownUsd: { readonly lambda: number; readonly s3: number; readonly stepFunctions: number };
  readonly assumptions: string;
}

/**
 * Estimates a run: compute from bytes and the assumed throughputs; requests from the commit protocol
 * (per input: 2 footer GETs at planning, 1 GET to rewrite, 1 HEAD before publishing, a COPY to trash in
 * trash mode, 1 DELETE; per output: multipart PUTs, verify GETs, 1 COPY to publish, 1 DELETE of staging).
 */
export function estimateCost(input: CostInput): CostEstimate {
  const gb = input.compactMemoryMb / 1024;
  const seconds =
    input.inputBytes / REWRITE_BYTES_PER_SECOND +
    input.inputBytes / VERIFY_BYTES_PER_SECOND +
    input.groups * 2;
  const lambdaGbSeconds = gb * seconds;
  const outputBytes = input.inputBytes; // upper bound: outputs are rarely larger than inputs
  const partsPerOutput = Math.max(
    1,
    Math.ceil(outputBytes / Math.max(1, input.expectedOutputFiles) / PART_BYTES),
  );
  const get = input.inputFiles * 4 + input.expectedOutputFiles * (2 + partsPerOutput);
  const put = input.expectedOutputFiles * (partsPerOutput + 2) + 2 + input.groups;
  const copy = input.expectedOutputFiles + (input.retireMode === 'trash' ? input.inputFiles : 0);
  const del = input.inputFiles + input.expectedOutputFiles;
  const lambda =
    lambdaGbSeconds * LAMBDA_ARM_USD_PER_GB_SECOND + (input.groups * 4 + 3) * LAMBDA_USD_PER_REQUEST;
  const s3 = get * S3_USD_PER_GET + (put + copy) * S3_USD_PER_PUT + del * S3_USD_PER_DELETE;
  const stepFunctions = (input.groups * TRANSITIONS_PER_GROUP + TRANSITIONS_PER_RUN) * SFN_USD_PER_TRANSITION;
  return {
    usd: round6(lambda + s3 + stepFunctions),
    lambdaGbSeconds: round6(lambdaGbSeconds),
    requests: { get, put, copy, delete: del },
    breakdownUsd: { lambda: round6(lambda), s3: round6(s3), stepFunctions: round6(stepFunctions) },
    assumptions: `us-east-1 list prices, arm64 Lambda at ${input.compactMemoryMb} MB, rewrite ${REWRITE_BYTES_PER_SECOND / 1024 / 1024} MiB/s`,
  };
}

function round6(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
