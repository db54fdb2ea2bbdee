// The memory budget: its limits are shares of the memory, a scope holds for everything run inside it (two
// concurrent scopes do not mix), the default applies outside any scope, and a bounded read refuses an object larger
// than its limit having read no more than that, and reads an empty one.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MetadataTooLargeError } from '../../../functions/core/errors.js';
import {
  currentMemoryBudget,
  DEFAULT_MEMORY_MB,
  inflationLimit,
  memoryBudget,
  metadataLimits,
  readWithin,
  withMemoryBudget,
} from '../../../functions/core/memory-budget.js';

const MiB = 1024 * 1024;

describe('the memory budget', () => {
  it('derives its limits from the memory: a quarter decoded, a sixteenth per file, a 64th per footer', () => {
    // Act
    const limits = metadataLimits(memoryBudget(512));

    // Assess
    expect(limits).toEqual({
      decodedBytes: 128 * MiB,
      fileBytes: 32 * MiB,
      inflatedBytes: 32 * MiB,
      footerBytes: 8 * MiB,
      deltaActions: 65_536,
      rowGroupDecodedBytes: 128 * MiB,
    });
  });

  it('caps inflation at 200 times the input (at least 4 MiB) and never past the absolute cap', () => {
    // Act / Assess
    expect(inflationLimit(1024, 32 * MiB)).toBe(4 * MiB);
    expect(inflationLimit(64 * 1024, 32 * MiB)).toBe(200 * 64 * 1024);
    expect(inflationLimit(MiB, 32 * MiB)).toBe(32 * MiB);
  });

  it('holds in its scope across awaits, keeps concurrent scopes apart, and is the default outside', async () => {
    // Prepare
    const seen = async (mb: number) =>
      withMemoryBudget(memoryBudget(mb), async () => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        return currentMemoryBudget().memoryMb;
      });

    // Act
    const [a, b] = await Promise.all([seen(1024), seen(3008)]);

    // Assess
    expect([a, b]).toEqual([1024, 3008]);
    expect(currentMemoryBudget().memoryMb).toBe(DEFAULT_MEMORY_MB);
  });

  it('refuses a memory size too small to run in', () => {
    // Act / Assess
    expect(() => memoryBudget(10)).toThrow(/not usable: give at least 64 MB/);
  });
});

describe('readWithin', () => {
  it('refuses an object over the limit after one ranged read of limit + 1 bytes, naming it', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('t/big.json', new Uint8Array(2 * MiB));

    // Act
    const err = await withMemoryBudget(memoryBudget(512, 'give it more'), () =>
      readWithin(store, 't/big.json', MiB, 'Iceberg metadata file', 'expire snapshots'),
    ).catch((e: unknown) => e as Error);

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect((err as Error).message).toBe(
      "Iceberg metadata file t/big.json is too large for this process's memory: it has more than 1.0 MiB, the most one metadata file may have in 512 MiB of memory. Nothing was changed; give it more, or expire snapshots.",
    );
    expect(store.requests.getRange).toBe(1);
    expect(store.requests.get).toBe(0);
  });

  it('reads an object within the limit whole, and an empty object as no bytes', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('t/small.json', '{"a":1}');
    await store.put('t/empty.json', new Uint8Array());

    // Act
    const small = await readWithin(store, 't/small.json', MiB, 'file');
    const empty = await readWithin(store, 't/empty.json', MiB, 'file');

    // Assess
    expect(new TextDecoder().decode(small)).toBe('{"a":1}');
    expect(empty.length).toBe(0);
  });
});
