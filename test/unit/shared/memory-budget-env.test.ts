// A Lambda's memory budget comes from the memory size Lambda sets, read once, and names the function in its
// advice; every invocation of a handler runs under it. Outside Lambda (no variable) there is none.
import type { Context } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { currentMemoryBudget } from '../../../functions/core/memory-budget.js';
import { lambdaMemoryBudget } from '../../../functions/shared/env.js';
import { lambdaEntry } from '../../../functions/shared/middleware.js';

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

describe("a Lambda function's memory budget", () => {
  it('is the memory Lambda sets, with advice naming the function', () => {
    // Act
    const budget = lambdaMemoryBudget({
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512',
      AWS_LAMBDA_FUNCTION_NAME: 'lake-Profiler',
    });

    // Assess
    expect(budget?.memoryMb).toBe(512);
    expect(budget?.advice).toMatch(/^raise the memory of Lambda function lake-Profiler \(now 512 MB;/);
    expect(lambdaMemoryBudget({})).toBeUndefined();
    expect(() => lambdaMemoryBudget({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: 'lots' })).toThrow(
      /AWS_LAMBDA_FUNCTION_MEMORY_SIZE/,
    );
  });

  it('is the budget every invocation of a handler runs under', async () => {
    // Prepare
    process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = '1024';
    process.env.AWS_LAMBDA_FUNCTION_NAME = 'lake-Vacuum';
    const handler = lambdaEntry(() => async () => currentMemoryBudget());

    // Act
    const budget = await handler({}, { functionName: 'lake-Vacuum' } as Context);

    // Assess
    expect(budget.memoryMb).toBe(1024);
    expect(budget.advice).toMatch(/lake-Vacuum/);
  });
});
