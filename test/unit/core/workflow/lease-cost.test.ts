// Unit tests of the quiet-partition verdict (go, wait how long, give up with a reason) and of the
// run cost estimate (grows with the work, trash mode pays for its copies).
import { describe, expect, it } from 'vitest';
import { estimateCost, S3_USD_PER_GET, S3_USD_PER_PUT } from '../../../../functions/core/workflow/cost.js';
import { quietVerdict } from '../../../../functions/core/workflow/lease.js';

const options = { maxRounds: 3, maxWaitSeconds: 300 };
const MIN = 60_000;

describe('quietVerdict', () => {
  it('goes when the partition has been quiet for the window, or has no recorded write', () => {
    // Prepare / Act / Assess
    expect(quietVerdict({ quietMinutes: 15, force: false }, 0, 1, 16 * MIN, options)).toMatchObject({
      quiet: true,
    });
    expect(quietVerdict({ quietMinutes: 15, force: false }, undefined, 1, 0, options)).toMatchObject({
      quiet: true,
    });
  });

  it('waits the remaining quiet time, capped, while rounds remain', () => {
    // Prepare / Act
    const soon = quietVerdict({ quietMinutes: 15, force: false }, 0, 1, 14 * MIN, options);
    const later = quietVerdict({ quietMinutes: 15, force: false }, 0, 2, 1 * MIN, options);

    // Assess
    expect(soon).toMatchObject({ quiet: false, giveUp: false, waitSeconds: 60, round: 1 });
    expect(later).toMatchObject({ quiet: false, giveUp: false, waitSeconds: 300, round: 2 });
  });

  it('gives up with a reason on the last round, unless forced', () => {
    // Prepare / Act
    const busy = quietVerdict({ quietMinutes: 15, force: false }, 0, 3, 1 * MIN, options);
    const forced = quietVerdict({ quietMinutes: 15, force: true }, 0, 1, 1 * MIN, options);

    // Assess
    expect(busy).toMatchObject({
      quiet: false,
      giveUp: true,
      reason: expect.stringContaining('force: true'),
    });
    expect(forced).toMatchObject({ quiet: true });
  });
});

describe('estimateCost', () => {
  const base = {
    groups: 1,
    inputFiles: 100,
    inputBytes: 100 * 1024 * 1024,
    expectedOutputFiles: 1,
    retireMode: 'delete-versioned' as const,
    compactMemoryMb: 3008,
  };

  it('grows with the bytes to rewrite', () => {
    // Prepare / Act
    const small = estimateCost(base);
    const large = estimateCost({ ...base, inputBytes: 10 * base.inputBytes });

    // Assess
    expect(large.lambdaGbSeconds).toBeGreaterThan(small.lambdaGbSeconds * 5);
    expect(large.usd).toBeGreaterThan(small.usd);
  });

  it('charges one COPY per input more in trash mode; versioned deletes check the bucket once more per group and list their inputs instead of a HEAD each', () => {
    // Prepare / Act
    const versioned = estimateCost(base);
    const trash = estimateCost({ ...base, retireMode: 'trash' });

    // Assess: delete mode asks the bucket's versioning at planning and at each group's commit, and (its version ids
    // named by the rewrite's GETs) checks a group's 100 inputs with one LIST of their folder where trash HEADs each.
    expect(trash.requests.copy - versioned.requests.copy).toBe(100);
    expect(versioned.requests.get - trash.requests.get).toBe(1 + base.groups - 100);
    expect(versioned.requests.put - trash.requests.put).toBe(base.groups);
    expect(trash.breakdownUsd.s3 - versioned.breakdownUsd.s3).toBeCloseTo(
      100 * S3_USD_PER_PUT + (100 - 1 - base.groups) * S3_USD_PER_GET - base.groups * S3_USD_PER_PUT,
      5,
    );
  });
});
