// Proves an output writer does not keep the bytes it has already handed to the store: after a
// ~24 MB output is written, only its tail (kept for the footer check) is still reachable.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { makeTable, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { OutputWriter } from '../../../../functions/adapters/parquet-wasm/output.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';

setFlagsFromString('--expose-gc');
/** V8's collector, reachable without a command-line flag: the test needs objects freed now, not later. */
const collect = runInNewContext('gc') as () => void;

/** Random doubles do not compress, so encoded bytes ≈ 8 × rows. */
function randomBatch(rows: number, seed: number): pw.RecordBatch {
  const values = new Float64Array(rows);
  let x = seed;
  for (let i = 0; i < rows; i++) {
    x = (x * 1103515245 + 12345) % 2147483648;
    values[i] = x / 7 + i;
  }
  const table = makeTable({ v: values });
  const batches = pw.Table.fromIPCStream(tableToIPC(table, 'stream')).recordBatches();
  return batches[0] as pw.RecordBatch;
}

describe('OutputWriter memory', () => {
  it('keeps only the tail of the output reachable, not every chunk it has uploaded', async () => {
    // Prepare: a store that consumes the upload at once and keeps only weak references to the
    // chunks, so a chunk stays alive only if the writer itself still references it.
    const chunks: WeakRef<ArrayBuffer>[] = [];
    let uploaded = 0;
    const store = {
      async putStream(_key: string, body: AsyncIterable<Uint8Array>) {
        for await (const chunk of body) {
          uploaded += chunk.length;
          chunks.push(new WeakRef(chunk.buffer as ArrayBuffer));
        }
        return { etag: 'e', size: uploaded };
      },
    } as unknown as ObjectStore;
    const rowsPerBatch = 65_536;
    const writer = new OutputWriter(
      store,
      'out.parquet',
      { codec: 'snappy', rowGroupRows: rowsPerBatch, keyValueMetadata: {}, dictionary: { v: false } },
      60_000,
    );

    // Act: 48 row groups of ~0.5 MB each, then the footer.
    for (let i = 0; i < 48; i++) await writer.write(randomBatch(rowsPerBatch, i + 1), `in-${i}`);
    const written = await writer.close();
    collect();
    await new Promise((resolve) => setImmediate(resolve));
    collect();

    // Assess: the writer (still referenced here) holds at most its 4 MiB tail and a chunk or two.
    const reachable = chunks.reduce((n, ref) => n + (ref.deref()?.byteLength ?? 0), 0);
    expect(written.rows).toBe(48 * rowsPerBatch);
    expect(uploaded).toBeGreaterThan(20_000_000);
    expect(reachable).toBeLessThan(8_000_000);
  }, 60_000);
});
