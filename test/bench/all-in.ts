// The bench's one comparable number (issue #30): what compacting 1,000 input objects costs us, all in, beside
// what S3 Tables charges to compact the same objects. Pure arithmetic over what the bench measured, kept apart
// from the measuring so a unit test can hold it (test/unit/bench/all-in.test.ts).

import {
  LAMBDA_ARM_USD_PER_GB_SECOND,
  type RequestCounts,
  requestsUsd,
} from '../../functions/core/workflow/cost.js';

/**
 * S3 Tables' compaction price (us-east-1, binpack): $0.002 per 1,000 objects processed and $0.005 per GB processed,
 * from the S3 Tables tab of https://aws.amazon.com/s3/pricing/ (see docs/benchmarks.md). It bills GB of 2^30 bytes
 * (its pricing example: 150,000 MB = 146.48 GB), and nothing for watching writes.
 */
export const S3_TABLES_USD_PER_1000_OBJECTS = 0.002;
export const S3_TABLES_USD_PER_GB = 0.005;

/** What S3 Tables charges to compact `objects` objects of `bytes` bytes in all. */
export function s3TablesUsd(objects: number, bytes: number): number {
  return (S3_TABLES_USD_PER_1000_OBJECTS * objects) / 1000 + (S3_TABLES_USD_PER_GB * bytes) / 2 ** 30;
}

/** What Lambda bills for `cpuMs` of a function of `memoryMb` (duration × memory at the arm64 price). */
export function lambdaUsd(cpuMs: number, memoryMb: number): number {
  return (cpuMs / 1000) * (memoryMb / 1024) * LAMBDA_ARM_USD_PER_GB_SECOND;
}

/** One set's measurements in one bucket mode. */
export interface AllInInput {
  /** Input objects the run compacted. */
  readonly inputs: number;
  readonly inputBytes: number;
  /** Every S3 request of the run, all steps (plan to finalize), as the store counted them. */
  readonly requests: RequestCounts;
  /** S3 events the profiler handles per input: its creation, its removal by the commit, a share of the outputs' creations. */
  readonly eventsPerInput: number;
  /** The profiler's measured cost per event, USD. */
  readonly profilerUsdPerEvent: number;
  /** Compute time of the rewrite and of the verification, ms (each its own Lambda of `memoryMb`). */
  readonly rewriteMs: number;
  readonly verifyMs: number;
  readonly memoryMb: number;
}

/** The all-in cost per 1,000 inputs, by part, and S3 Tables' price for the same objects (USD). */
export interface AllInLine {
  readonly profiler: number;
  readonly requests: number;
  readonly rewrite: number;
  readonly verify: number;
  readonly total: number;
  readonly s3Tables: number;
  /** Which costs less; `same` only when equal to the cent-thousandth. */
  readonly cheaper: 'ours' | 'S3 Tables' | 'same';
}

/** Per 1,000 inputs: profiler events + S3 requests + Lambda compute of rewrite and verify, beside S3 Tables'. */
export function allInPer1000(m: AllInInput): AllInLine {
  if (m.inputs <= 0) throw new Error('allInPer1000 needs at least one input');
  const per1k = (usd: number) => (usd * 1000) / m.inputs;
  const profiler = 1000 * m.eventsPerInput * m.profilerUsdPerEvent;
  const requests = per1k(requestsUsd(m.requests));
  const rewrite = per1k(lambdaUsd(m.rewriteMs, m.memoryMb));
  const verify = per1k(lambdaUsd(m.verifyMs, m.memoryMb));
  const total = profiler + requests + rewrite + verify;
  const s3Tables = per1k(s3TablesUsd(m.inputs, m.inputBytes));
  const diff = Math.round((total - s3Tables) * 1e8);
  return {
    profiler,
    requests,
    rewrite,
    verify,
    total,
    s3Tables,
    cheaper: diff < 0 ? 'ours' : diff > 0 ? 'S3 Tables' : 'same',
  };
}

/** Dollars to five decimals (per-1,000 figures are fractions of a cent). */
export function usd5(n: number): string {
  return `$${n.toFixed(5)}`;
}

/** The printed line: the total, its parts, S3 Tables' price and which is cheaper. */
export function formatAllIn(label: string, line: AllInLine): string {
  const verdict =
    line.cheaper === 'same'
      ? 'the same as S3 Tables'
      : line.cheaper === 'ours'
        ? `BELOW S3 Tables by ${((100 * (line.s3Tables - line.total)) / line.s3Tables).toFixed(0)}%`
        : `ABOVE S3 Tables by ${((100 * (line.total - line.s3Tables)) / line.s3Tables).toFixed(0)}%`;
  return `${label} all-in per 1,000 inputs: ${usd5(line.total)} = profiler ${usd5(line.profiler)} + S3 requests ${usd5(line.requests)} + Lambda rewrite ${usd5(line.rewrite)} + verify ${usd5(line.verify)} | S3 Tables ${usd5(line.s3Tables)} | ${verdict}`;
}
