// The bound of the instant cache an entry point builds once per cold start (adapters/formats/hudi/services.ts): a
// share of the function's memory, since decoded metadata takes several times its file's size in the heap.
import { describe, expect, it } from 'vitest';
import { instantCacheBytes } from '../../../functions/adapters/formats/hudi/services.js';
import { DEFAULT_INSTANT_CACHE_BYTES } from '../../../functions/core/formats/hudi/instant-cache.js';

describe('the instant cache bound', () => {
  it("is 1/64 of a Lambda function's memory, and the default where none is set or it is not a number", () => {
    // Act / Assess
    expect(instantCacheBytes({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '512' })).toBe(8 * 1024 * 1024);
    expect(instantCacheBytes({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '3008' })).toBe(
      Math.floor((3008 * 1024 * 1024) / 64),
    );
    expect(instantCacheBytes({})).toBe(DEFAULT_INSTANT_CACHE_BYTES);
    expect(instantCacheBytes({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: 'many' })).toBe(DEFAULT_INSTANT_CACHE_BYTES);
  });
});
