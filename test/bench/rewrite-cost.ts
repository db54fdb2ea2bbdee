// The rewrite bench's cost lines: what a set's measured wall times and S3 requests would cost on Lambda and S3 at
// list prices, per TB and per 1,000 input objects, in each retirement mode, beside S3 Tables' compaction price.
// Kept apart from rewrite.ts (which only counts and calls this) so the measured rows there can change freely.

import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CostInput,
  estimateRequestsByStep,
  LAMBDA_ARM_USD_PER_GB_SECOND,
  type RequestCounts,
  requestsUsd,
  sumRequests,
} from '../../functions/core/workflow/cost.js';
import { RETIRE_MODES, type RetireMode } from '../../functions/ports/journal.js';

/** Lambda memory of the 1-thread rows (1 vCPU) and of the 2-worker rows (the memory that buys ~2 vCPUs' worth). */
const ONE_THREAD_MB = 1769;
const TWO_WORKERS_MB = 3008;
/**
 * S3 Tables' compaction price (us-east-1, binpack): $0.002 per 1,000 objects processed and $0.005 per GB processed,
 * from the S3 Tables tab of https://aws.amazon.com/s3/pricing/ (see docs/benchmarks.md).
 */
const S3_TABLES_USD_PER_1000_OBJECTS = 0.002;
const S3_TABLES_USD_PER_GB = 0.005;

/** What the reporting needs of a bench row (rewrite.ts's Measurement has it). */
export interface CostRow {
  readonly wallMs: number;
  /** Wall time of the verification child (compactor rows). */
  readonly verifyMs?: number;
  readonly outputs: readonly number[];
  readonly rows: number;
  /** The engine's requests while rewriting, counted through its ObjectStore (compactor rows). */
  readonly requests?: RequestCounts;
  /** The engine's requests while verifying (compactor rows). */
  readonly verifyRequests?: RequestCounts;
}

/** Our row and DuckDB's at one Lambda size. */
export interface CostPair {
  readonly ours: CostRow;
  readonly duckdb: CostRow;
}

const usd = (n: number) =>
  n >= 1 ? `$${n.toFixed(2)}` : n >= 0.01 ? `$${n.toFixed(3)}` : `$${n.toFixed(5)}`;
const count = (n: number) => Math.round(n).toLocaleString('en-US');

/** Duration × memory at the arm64 price: what Lambda bills for a wall time (the per-request fee left out). */
function computeUsd(ms: number, memoryMb: number): number {
  return (ms / 1000) * (memoryMb / 1024) * LAMBDA_ARM_USD_PER_GB_SECOND;
}

/**
 * Prints a set's cost lines. Compute: our rewrite, verify (its own Lambda) and both, and DuckDB's COPY, from the
 * 1-thread rows at 1,769 MB and, where the set has them, the 2-worker rows at 3,008 MB. S3: the requests the
 * engine sent (counted in the children) plus, from the cost model, those of the steps the bench does not run
 * (plan, bookkeeping, commit, finalize) for the whole set as one group, in each retirement mode. Returns the
 * compute $/TB of rewrite + verify at 1,769 MB (one thread), which issue #19 sets a goal for.
 */
export async function reportCost(
  dir: string,
  inputBytes: number,
  one: CostPair,
  two?: CostPair,
): Promise<{ readonly computeUsdPerTb: number }> {
  const files = (await readdir(join(dir, 'data'))).length;
  const perTb = (dollars: number) => (dollars * 1e12) / inputBytes;
  const per1k = (dollars: number) => (dollars * 1000) / files;
  console.log(
    `  cost (list prices, us-east-1; Lambda arm64 $${LAMBDA_ARM_USD_PER_GB_SECOND}/GB-s × wall time; TB = 10^12 bytes; ${count(files)} inputs, ${(inputBytes / files / 1000).toFixed(1)} KB each):`,
  );
  const compute = (label: string, memoryMb: number, pair: CostPair) => {
    const rewrite = computeUsd(pair.ours.wallMs, memoryMb);
    const verify = computeUsd(pair.ours.verifyMs ?? 0, memoryMb);
    const duck = computeUsd(pair.duckdb.wallMs, memoryMb);
    console.log(
      `    compute $/TB at ${count(memoryMb)} MB (${label}): rewrite ${usd(perTb(rewrite))} | verify ${usd(perTb(verify))} | both ${usd(perTb(rewrite + verify))} | DuckDB COPY ${usd(perTb(duck))}`,
    );
    return rewrite + verify;
  };
  const oneThread = compute('1 thread; DuckDB threads=1', ONE_THREAD_MB, one);
  if (two !== undefined) compute('2 workers; DuckDB threads=2', TWO_WORKERS_MB, two);
  else console.log(`    compute $/TB at ${count(TWO_WORKERS_MB)} MB: this set has no 2-worker row`);

  const measured = { rewrite: one.ours.requests, verify: one.ours.verifyRequests };
  if (measured.rewrite === undefined || measured.verify === undefined) {
    console.log('    S3 requests: not counted (no compactor row with its verification)');
    return { computeUsdPerTb: perTb(oneThread) };
  }
  const model = (retireMode: RetireMode) => {
    const input: CostInput = {
      groups: 1,
      inputFiles: files,
      inputBytes,
      expectedOutputFiles: one.ours.outputs.length,
      retireMode,
      compactMemoryMb: ONE_THREAD_MB,
      inputRows: one.ours.rows,
    };
    return estimateRequestsByStep(input);
  };
  const engineModel = model('trash');
  const show = (r: RequestCounts, scale = 1) =>
    `GET ${count(r.get * scale)} | PUT/LIST ${count(r.put * scale)} | COPY ${count(r.copy * scale)} | DELETE ${count(r.delete * scale)}`;
  console.log(
    `    S3 requests the engine sent: rewrite ${show(measured.rewrite)}; verify ${show(measured.verify)} (model: ${show(sumRequests([engineModel.rewrite, engineModel.verify]))})`,
  );
  // S3 Tables bills GB of 2^30 bytes (its pricing example: 150,000 MB = 146.48 GB).
  const tables =
    (S3_TABLES_USD_PER_1000_OBJECTS * files) / 1000 + (S3_TABLES_USD_PER_GB * inputBytes) / 2 ** 30;
  for (const mode of RETIRE_MODES) {
    const steps = model(mode);
    const total = sumRequests([
      steps.plan,
      measured.rewrite,
      measured.verify,
      steps.bookkeeping,
      steps.commit,
      steps.finalize,
    ]);
    const s3 = requestsUsd(total);
    console.log(
      `    ${mode.padEnd(16)} requests per TB: ${show(total, 1e12 / inputBytes)}; per 1,000 inputs: ${show(total, 1000 / files)}`,
    );
    console.log(
      `    ${mode.padEnd(16)} $ per 1,000 inputs: S3 requests ${usd(per1k(s3))} + compute ${usd(per1k(oneThread))} (1,769 MB) = ${usd(per1k(s3 + oneThread))} | $/TB: requests ${usd(perTb(s3))}, with compute ${usd(perTb(s3 + oneThread))}`,
    );
  }
  console.log(
    `    S3 Tables compaction (binpack; $0.002 per 1,000 objects + $0.005 per GB processed): ${usd(per1k(tables))} per 1,000 inputs of this size, ${usd(perTb(tables))}/TB`,
  );
  return { computeUsdPerTb: perTb(oneThread) };
}
