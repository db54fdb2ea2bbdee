// Proves that a batch hashed row by row from its columns as the ordered digest reads them (`addColumnRows`, what a
// sorted rewrite's multiset fingerprint uses for a projected input) gives exactly the multiset hash and null counts
// of the FFI walker that verify hashes the outputs with, over seeded random tables of every type the engine reads,
// decoded from Parquet and held from IPC. Any divergence would fail every sorted rewrite of projected inputs.

import { describe, expect, it } from 'vitest';
import { hashWasmBatch } from '../../../../functions/adapters/parquet-wasm/batch-hash.js';
import { withWasmBatchColumns } from '../../../../functions/adapters/parquet-wasm/ffi-hash.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { toGroupFingerprint } from '../../../../functions/core/fingerprint/fingerprint.js';
import { addColumnRows, MultisetHash } from '../../../../functions/core/fingerprint/row-hash.js';
import { propertyCase } from './ffi-property.js';

const CASES = 40;

describe('addColumnRows against the FFI walker', () => {
  it.each(['parquet', 'ipc'] as const)(
    'gives the same multiset hash and null counts for batches from %s',
    (source) => {
      // Prepare / Act
      const disagreements: string[] = [];
      const seen = new Set<string>();
      for (let seed = 1; seed <= CASES; seed++) {
        const { batches } = propertyCase(seed, source, seen);
        const walker = new MultisetHash();
        const slots = new MultisetHash();
        for (const batch of batches) {
          hashWasmBatch(walker, batch);
          withWasmBatchColumns(batch, pw.wasmMemory(), (columns, offset, rows) =>
            addColumnRows(slots, columns, offset, rows),
          );
          batch.free();
        }
        const a = toGroupFingerprint(walker, []);
        const b = toGroupFingerprint(slots, []);
        if (JSON.stringify(a) !== JSON.stringify(b))
          disagreements.push(`seed ${seed}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
      }

      // Assess
      expect(seen.size).toBeGreaterThan(5);
      expect(disagreements).toEqual([]);
    },
  );
});
