// Proves, over many seeded random Arrow tables of every type the engine reads and writes, that the zero-copy FFI
// walker (what verify and the rewrite hash through) gives exactly the digest and null counts of the Arrow IPC
// path (arrow-rs's IPC writer, arrow-js's reader: an independent reader of the same wasm memory), for batches as
// parquet-wasm decodes them from Parquet and as it holds them from IPC, cut at arbitrary rows; the run-time
// cross-check verify made by going through IPC, moved here. ffi-mutants.test.ts shows these checks fail for a
// walker that skips a child or mis-reads an offset.

import { describe, expect, it } from 'vitest';
import {
  hashWasmBatchFfi,
  withWasmBatchColumns,
} from '../../../../functions/adapters/parquet-wasm/ffi-hash.js';
import { hashParquetObject } from '../../../../functions/adapters/parquet-wasm/hash-output.js';
import { Rand, randomTable } from './arrow-tables.js';
import {
  type FfiWalker,
  IPC_TYPES,
  PARQUET_TYPES,
  parquetOf,
  propertyCase,
  walkerDisagreement,
} from './ffi-property.js';

/** Tables per source; each is a few hundred rows at most, so the whole file runs in seconds. */
const CASES = 60;

describe('the FFI walker against the Arrow IPC oracle', () => {
  it('gives the same ordered digest and null counts for batches parquet-wasm decoded from Parquet, cut anywhere', async () => {
    // Prepare / Act
    const seen = new Set<string>();
    const disagreements: string[] = [];
    for (let seed = 1; seed <= CASES; seed++) {
      const found = walkerDisagreement(propertyCase(seed, 'parquet', seen));
      if (found !== undefined) disagreements.push(`seed ${seed}: ${found}`);
    }

    // Assess
    expect(disagreements).toEqual([]);
    expect([...PARQUET_TYPES.leaves, ...PARQUET_TYPES.nested].filter((t) => !seen.has(t))).toEqual([]);
  });

  it('gives the same ordered digest, multiset hash and null counts for batches read from Arrow IPC, cut anywhere', async () => {
    // Prepare / Act
    const seen = new Set<string>();
    const disagreements: string[] = [];
    for (let seed = 1; seed <= CASES; seed++) {
      const found = walkerDisagreement(propertyCase(seed, 'ipc', seen));
      if (found !== undefined) disagreements.push(`seed ${seed}: ${found}`);
    }

    // Assess
    expect(disagreements).toEqual([]);
    expect([...IPC_TYPES.leaves, ...IPC_TYPES.nested].filter((t) => !seen.has(t))).toEqual([]);
  });

  it('makes verify hash a stored output the same through FFI as through IPC', async () => {
    // Prepare: Parquet bytes of random tables, read the way verify reads an output (by ranges, streamed).
    const seen = new Set<string>();
    const results: { ffi: unknown; ipc: unknown }[] = [];

    // Act
    for (let seed = 1; seed <= 12; seed++) {
      const rand = new Rand(7_919 * seed);
      const bytes = parquetOf(randomTable(rand, PARQUET_TYPES, 1 + rand.int(400), seen), rand);
      const read = async (start: number, end: number) => bytes.slice(start, end);
      const batchRows = 1 + rand.int(300);
      for (const kind of ['ordered-columns-v1', 'multiset-v1'] as const) {
        const ffi = await hashParquetObject('out.parquet', read, bytes.length, kind, batchRows, {
          path: 'ffi',
        });
        const ipc = await hashParquetObject('out.parquet', read, bytes.length, kind, batchRows, {
          path: 'ipc',
        });
        results.push({ ffi, ipc });
      }
    }

    // Assess
    for (const { ffi, ipc } of results) expect(ffi).toEqual(ipc);
  });
});

describe('the property check itself', () => {
  it('sees a walker that drops the last row of every batch', () => {
    // Prepare: the real walker, but told one row fewer.
    const dropsARow: FfiWalker = {
      ordered: (batch, memory, sink) => withWasmBatchColumns(batch, memory, (c, o, n) => sink(c, o, n - 1)),
      multiset: hashWasmBatchFfi,
    };

    // Act
    const found = walkerDisagreement(propertyCase(3, 'parquet', new Set()), dropsARow);

    // Assess
    expect(found).toMatch(/ordered/);
  });
});
