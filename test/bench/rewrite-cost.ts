// The rewrite bench's cost lines: what a set's measured wall times and S3 requests would cost on Lambda and S3 at
// list prices, per TB and per 1,000 input objects, in each retirement mode, beside S3 Tables' compaction price.
// Kept apart from rewrite.ts (which only counts and calls this) so the measured rows there can change freely.

import { readdir, readFile } from 'node:fs/promises';
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
import { countedWorkflowRun } from '../support/counted-workflow.js';
import { allInPer1000, formatAllIn, lambdaUsd, s3TablesUsd } from './all-in.js';

/** Lambda memory of the 1-thread rows (1 vCPU) and of the 2-worker rows (the memory that buys ~2 vCPUs' worth). */
const ONE_THREAD_MB = 1769;
const TWO_WORKERS_MB = 3008;

/** What the reporting needs of a bench row (rewrite.ts's Measurement has it). */
export interface CostRow {
  readonly wallMs: number;
  /** CPU time of the rewrite child (all its threads). */
  readonly cpuMs: number;
  /** Wall time of the verification child (compactor rows). */
  readonly verifyMs?: number;
  /** CPU time of the verification child (compactor rows). */
  readonly verifyCpuMs?: number;
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
const computeUsd = lambdaUsd;

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
  const tables = s3TablesUsd(files, inputBytes);
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

/** The bucket modes of the all-in line: what a versioned bucket's run and an unversioned bucket's runs retire by. */
const BUCKET_MODES: readonly { readonly label: string; readonly mode: RetireMode }[] = [
  { label: 'versioned (delete)', mode: 'delete-versioned' },
  { label: 'unversioned, bin-pack (delete-rebuild)', mode: 'delete-rebuild' },
  { label: 'unversioned, sort/z-order (trash)', mode: 'trash' },
];

/**
 * Prints issue #30's one comparable number, per bucket mode: the all-in cost per 1,000 input objects — the
 * profiler's cost per event (measured in this bench run) × the events each input causes, the S3 requests of the
 * whole run (plan to finalize) as the store counted them on an end-to-end run of the set's files through the
 * workflow's own steps, and Lambda compute of the rewrite and of the verification (each child's CPU time at
 * 1,769 MB: on a shared machine wall time measures the load, CPU time the work) — beside S3 Tables' price for
 * the same objects, and which is cheaper.
 */
export async function reportAllIn(
  set: string,
  dir: string,
  inputBytes: number,
  ours: CostRow,
  profilerUsdPerEvent: number | undefined,
): Promise<void> {
  const names = (await readdir(join(dir, 'data'))).sort();
  const fill = async (put: (key: string, bytes: Uint8Array) => Promise<void>) => {
    for (const name of names)
      await put(`bench/date=2024-01-01/${name}`, await readFile(join(dir, 'data', name)));
  };
  console.log(
    `  all-in cost, set ${set} (${count(names.length)} inputs of ${(inputBytes / names.length / 1000).toFixed(1)} KB; list prices, us-east-1; S3 requests counted on an end-to-end run of the set through the workflow's steps; compute = CPU time of the 1-thread rewrite and of its verification at ${count(ONE_THREAD_MB)} MB):`,
  );
  if (profilerUsdPerEvent === undefined) {
    console.log('    not printed: the profiler was not measured in this run (see its error above)');
    return;
  }
  for (const { label, mode } of BUCKET_MODES) {
    const { result, counted } = await countedWorkflowRun(fill, {
      table: 'bench',
      partition: 'date=2024-01-01',
      mode,
    });
    const groups = result.groups;
    const retired = groups.reduce((n, g) => n + (g.result.retired ?? 0), 0);
    const outputs = groups.reduce((n, g) => n + (g.compacted?.outputs ?? 0), 0);
    if (result.summary.outcome !== 'compacted' || retired !== names.length) {
      throw new Error(
        `set ${set}, ${mode}: the counted run did not compact every input (${result.summary.outcome}, ${retired} of ${names.length} retired)`,
      );
    }
    // The profiler sees each input created by its writer and removed by the commit, and each output published
    // into the table (staging and trash lie under the work root, outside the table's notifications).
    const eventsPerInput = (names.length + retired + outputs) / names.length;
    const line = allInPer1000({
      inputs: names.length,
      inputBytes,
      requests: counted,
      eventsPerInput,
      profilerUsdPerEvent,
      rewriteMs: ours.cpuMs,
      verifyMs: ours.verifyCpuMs ?? 0,
      memoryMb: ONE_THREAD_MB,
    });
    const per1kCount = (n: number) => ((n * 1000) / names.length).toFixed(0);
    console.log(
      `    ${formatAllIn(`set ${set}, ${label}:`, line)} | requests per 1,000 inputs: GET ${per1kCount(counted.get)}, PUT/LIST ${per1kCount(counted.put)}, COPY ${per1kCount(counted.copy)}, DELETE ${per1kCount(counted.delete)} (${groups.length} group(s), ${outputs} output(s)); ${eventsPerInput.toFixed(3)} profiler events per input at $${(profilerUsdPerEvent * 1e6).toFixed(3)} per million`,
    );
  }
}
