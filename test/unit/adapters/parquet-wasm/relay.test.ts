// Proves the engine worker's relay (the store its output writer uploads through) posts a copy of every chunk and
// never detaches the writer's own: a chunk that is a Node Buffer — what node:zlib's ZSTD returns, a view of the
// stream's output buffer — stays readable after it is posted. Without that, a natively compressed output written on
// a worker failed at close ("Cannot perform %TypedArray%.prototype.set on a detached ArrayBuffer", Node.js 22.15):
// the second test writes such an output through the relay, with a compressor whose results are shaped as
// node:zlib's, and DuckDB reads the relayed bytes row for row.

import { MessageChannel } from 'node:worker_threads';
import * as zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { OutputWriter } from '../../../../functions/adapters/parquet-wasm/output.js';
import { relayStore } from '../../../../functions/adapters/parquet-wasm/relay.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

/**
 * node:zlib's result shape on a runtime without its ZSTD (Node 20): the @mongodb-js/zstd package's bytes, returned
 * as node:zlib returns them — a Buffer viewing the start of a 16 KiB (or larger) output buffer of its own. The
 * package's own Buffers are external memory, which Node copies instead of transferring, so they hid the defect.
 */
vi.mock('../../../../functions/adapters/parquet-wasm/native-zstd.js', async (importOriginal) => {
  const actual =
    await importOriginal<typeof import('../../../../functions/adapters/parquet-wasm/native-zstd.js')>();
  return {
    ...actual,
    nativeZstd: async () => {
      const pkg = await actual.nativeZstd({ prefer: '@mongodb-js/zstd' });
      if (pkg === undefined) throw new Error('the @mongodb-js/zstd package is not installed');
      return {
        ...pkg,
        source: 'node:zlib' as const,
        compress: async (bytes: Uint8Array) => {
          const out = await pkg.compress(bytes);
          const outBuffer = Buffer.allocUnsafeSlow(Math.max(16 * 1024, out.length));
          outBuffer.set(out);
          return outBuffer.subarray(0, out.length);
        },
      };
    },
  };
});

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** A relay posting into a real MessageChannel, and the bytes the other end received. */
function channelRelay() {
  const { port1, port2 } = new MessageChannel();
  const received: Uint8Array[] = [];
  port2.on('message', (bytes: Uint8Array) => received.push(bytes));
  const store = relayStore((bytes, transfer) => port1.postMessage(bytes, transfer));
  /** Waits until every posted message has arrived, then closes the channel. */
  const drain = async (count: number) => {
    while (received.length < count) await new Promise((resolve) => setImmediate(resolve));
    port1.close();
  };
  return { store, received, drain };
}

describe('relayStore', () => {
  it('posts a copy of each chunk and leaves the chunks it was given readable', async () => {
    // Prepare: a node:zlib result (own ArrayBuffer), a Buffer view into a larger buffer, a plain Uint8Array.
    const fromZlib = await new Promise<Buffer>((resolve, reject) =>
      zlib.gzip(Buffer.from(Array.from({ length: 20_000 }, (_, i) => (i * 7919) % 251)), (err, out) =>
        err === null ? resolve(out) : reject(err),
      ),
    );
    const backing = Buffer.alloc(64 * 1024, 3);
    const view = backing.subarray(1_000, 9_000);
    const plain = new Uint8Array([1, 2, 3, 4, 5]);
    const chunks: Uint8Array[] = [fromZlib, view, plain];
    const before = chunks.map((c) => Buffer.from(c));
    const { store, received, drain } = channelRelay();

    // Act
    const { size } = await store.putStream(
      'out.parquet',
      (async function* () {
        yield* chunks;
      })(),
    );
    await drain(chunks.length);

    // Assess
    expect(size).toBe(before.reduce((n, c) => n + c.length, 0));
    expect(chunks.map((c) => Buffer.from(c))).toEqual(before);
    expect(backing.byteLength).toBe(64 * 1024);
    expect(received.map((r) => Buffer.from(r))).toEqual(before);
  });

  it("carries an output written with pageCompression 'native' from Buffer-returning compression, read by DuckDB row for row", async () => {
    // Prepare: every physical type, nulls, nested columns; enough distinct strings that pages compress to more than
    // Node's Buffer pool hands out (which it would copy rather than transfer).
    const select = `SELECT i::BIGINT AS id, (i % 3 = 0) AS flag,
        CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7)::INTEGER END AS int32, (i / 8.0)::FLOAT AS f32,
        CASE WHEN i % 13 = 0 THEN NULL ELSE i * 1.25 END AS f64, (i * 12345.67)::DECIMAL(38, 2) AS dec38,
        CASE WHEN i % 7 = 0 THEN NULL ELSE 'value-' || (i % 50) END AS dict_string, md5(i::VARCHAR) AS plain_string,
        CASE WHEN i % 9 = 0 THEN NULL ELSE [i, i + 1, NULL] END AS ints,
        {'x': i % 17, 'y': CASE WHEN i % 4 = 0 THEN NULL ELSE 's' || i END} AS pair
      FROM range(3000) t(i)`;
    const input = await duck.parquet(select);
    const { store, received, drain } = channelRelay();
    const writer = new OutputWriter(
      store,
      'out.parquet',
      { codec: 'zstd', pageCompression: 'native', rowGroupRows: 1_000, keyValueMetadata: {} },
      60_000,
    );

    // Act
    for (const batch of pw.readParquet(input).recordBatches()) await writer.write(batch, 'in.parquet');
    const written = await writer.close();
    await drain(1);
    await new Promise((resolve) => setImmediate(resolve));

    // Assess
    expect(writer.pageCompressor).toBe('node:zlib');
    expect(written.rows).toBe(3000);
    const files = new MemoryObjectStore();
    await files.put('in.parquet', input);
    await files.put('out.parquet', Buffer.concat(received));
    const [inList, outList] = [
      await duck.materialise(files, ['in.parquet']),
      await duck.materialise(files, ['out.parquet']),
    ];
    const codecs = await duck.db.rows(`SELECT DISTINCT compression FROM parquet_metadata(${outList})`);
    expect(codecs).toEqual([{ compression: 'ZSTD' }]);
    const missing = await duck.db.scalar(
      `SELECT count(*) FROM ((SELECT * FROM read_parquet(${inList}) EXCEPT ALL SELECT * FROM read_parquet(${outList}))
        UNION ALL (SELECT * FROM read_parquet(${outList}) EXCEPT ALL SELECT * FROM read_parquet(${inList})))`,
    );
    expect(Number(missing)).toBe(0);
    expect(Number(await duck.db.scalar(`SELECT count(*) FROM read_parquet(${outList})`))).toBe(3000);
  });
});
