// The bench's all-in line (issue #30) is arithmetic over what it measured: held here with chosen figures, so a
// printed comparison with S3 Tables cannot drift from the prices it names. No times are measured or asserted.
import { describe, expect, it } from 'vitest';
import {
  LAMBDA_ARM_USD_PER_GB_SECOND,
  S3_USD_PER_GET,
  S3_USD_PER_PUT,
} from '../../../functions/core/workflow/cost.js';
import { type AllInInput, allInPer1000, formatAllIn, s3TablesUsd } from '../../bench/all-in.js';

const GIB = 2 ** 30;

/** 2,000 inputs of 1 GiB in all, priced with round figures. */
const MEASURED: AllInInput = {
  inputs: 2_000,
  inputBytes: GIB,
  requests: { get: 5_000, put: 10, copy: 4, delete: 2 },
  eventsPerInput: 2,
  profilerUsdPerEvent: 1e-6,
  rewriteMs: 3_000,
  verifyMs: 1_000,
  memoryMb: 1_024,
};

describe('allInPer1000', () => {
  it('adds the profiler, the counted requests and the compute of rewrite and verify per 1,000 inputs', () => {
    // Act
    const line = allInPer1000(MEASURED);

    // Assess: each part is its measured dollars scaled from 2,000 inputs to 1,000; DELETEs are free.
    expect(line.profiler).toBeCloseTo(1000 * 2 * 1e-6, 12);
    expect(line.requests).toBeCloseTo((5_000 * S3_USD_PER_GET + (10 + 4) * S3_USD_PER_PUT) / 2, 12);
    expect(line.rewrite).toBeCloseTo((3 * 1 * LAMBDA_ARM_USD_PER_GB_SECOND) / 2, 12);
    expect(line.verify).toBeCloseTo((1 * 1 * LAMBDA_ARM_USD_PER_GB_SECOND) / 2, 12);
    expect(line.total).toBeCloseTo(line.profiler + line.requests + line.rewrite + line.verify, 12);
  });

  it("prices S3 Tables' compaction at $0.002 per 1,000 objects plus $0.005 per GiB processed", () => {
    // Act
    const line = allInPer1000(MEASURED);

    // Assess: 2,000 objects and 1 GiB cost $0.004 + $0.005; per 1,000 inputs half of it.
    expect(s3TablesUsd(2_000, GIB)).toBeCloseTo(0.009, 12);
    expect(line.s3Tables).toBeCloseTo(0.0045, 12);
  });

  it('says ours is cheaper when the total is below S3 Tables, and by how much', () => {
    // Act
    const line = allInPer1000(MEASURED);

    // Assess: $0.00306 (requests $0.001035 + profiler $0.002 + compute $0.000027) against $0.0045.
    expect(line.total).toBeCloseTo(0.0030617, 6);
    expect(line.cheaper).toBe('ours');
    expect(formatAllIn('set X:', line)).toContain('BELOW S3 Tables by 32%');
  });

  it('says S3 Tables is cheaper when our total is above its price', () => {
    // Prepare: a COPY per input (trash mode's) alone costs $0.005 per 1,000, more than S3 Tables' $0.0045.
    const trash = { ...MEASURED, requests: { ...MEASURED.requests, copy: 2_000 } };

    // Act
    const line = allInPer1000(trash);

    // Assess
    expect(line.requests).toBeGreaterThan(0.005);
    expect(line.cheaper).toBe('S3 Tables');
    expect(formatAllIn('set X:', line)).toMatch(/ABOVE S3 Tables by \d+%/);
  });

  it('refuses a run with no inputs instead of dividing by zero', () => {
    // Act / Assess
    expect(() => allInPer1000({ ...MEASURED, inputs: 0 })).toThrow(/at least one input/);
  });
});
