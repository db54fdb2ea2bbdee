// Child process of memory.test.ts: rewrites a synthetic group of `totalBytes` input and prints its
// peak RSS. The group references one real Parquet file under many keys, so no disk or RAM holds the whole group.

import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import type {
  DeleteRef,
  DeleteResult,
  ListPage,
  ObjectInfo,
  ObjectStore,
} from '../../../../functions/ports/object-store.js';

/** A ~1 MB Parquet file: 1,000 rows of an id and 1 KiB of pseudo-random bytes (incompressible). */
function inputFile(): Uint8Array {
  const rows = 1_000;
  const ids = new BigInt64Array(rows);
  const payload: Uint8Array[] = [];
  let x = 0x9e3779b9;
  for (let i = 0; i < rows; i++) {
    ids[i] = BigInt(i);
    const value = new Uint8Array(1024);
    for (let j = 0; j < value.length; j++) {
      x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) ^ (x + 0x6d2b79f5)) | 0;
      value[j] = x & 0xff;
    }
    payload.push(value);
  }
  const { Binary, tableToIPC, Table, vectorFromArray } = arrow;
  const table = new Table({ id: vectorFromArray(ids), payload: vectorFromArray(payload, new Binary()) });
  const props = new pw.WriterPropertiesBuilder().setCompression(pw.Compression.SNAPPY).build();
  return pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props);
}

const arrow = await import('apache-arrow');

class SyntheticSource implements ObjectStore {
  readonly description = 'synthetic://';
  constructor(private readonly bytes: Uint8Array) {}
  async list(): Promise<ListPage> {
    return { objects: [], commonPrefixes: [] };
  }
  async *listAll(): AsyncIterable<ObjectInfo> {}
  async head(key: string): Promise<ObjectInfo> {
    return { key, size: this.bytes.length, etag: 'same', lastModified: new Date(0) };
  }
  async getRange(_key: string, start: number, end: number): Promise<Uint8Array> {
    return this.bytes.slice(start, end + 1);
  }
  async get(): Promise<Uint8Array> {
    return this.bytes.slice();
  }
  async put(): Promise<{ etag: string }> {
    throw new Error('the source is read-only');
  }
  async putStream(_key: string, _body: AsyncIterable<Uint8Array>): Promise<{ etag: string; size: number }> {
    throw new Error('the source is read-only');
  }
  async copy(): Promise<{ etag: string }> {
    throw new Error('the source is read-only');
  }
  async deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult> {
    return { deleted: refs, errors: [] };
  }
}

/** Counts and discards what is written, like an upload that keeps nothing in this process. */
class NullSink extends SyntheticSource {
  written = 0;
  override async putStream(
    _key: string,
    body: AsyncIterable<Uint8Array>,
  ): Promise<{ etag: string; size: number }> {
    let size = 0;
    for await (const chunk of body) size += chunk.length;
    this.written += size;
    return { etag: 'sink', size };
  }
}

const totalBytes = Number(process.argv[2]);
const bytes = inputFile();
const count = Math.max(1, Math.round(totalBytes / bytes.length));
const files = Array.from({ length: count }, (_, i) => ({
  key: `in/${String(i).padStart(6, '0')}.parquet`,
  size: bytes.length,
  etag: 'same',
}));
const sink = new NullSink(new Uint8Array(0));
const result = await rewriteGroup(
  { source: new SyntheticSource(bytes), target: sink },
  { groupId: 'memory', files },
  // A small fetch budget and batch size for both sizes: the peak then reflects what grows with the
  // group, not how far V8's lazy collection of transient buffers happened to lag in one run.
  {
    outputKey: (i) => `out/${i}.parquet`,
    codec: 'snappy',
    maxBytesInFlight: 8 * 1024 * 1024,
    batchRows: 250,
    // 32 MiB outputs: the 100 MB group then rolls over outputs too, so it reaches the same
    // steady state as the large one (with one 128 MiB output it never did, and sat 15–35 % lower).
    targetFileSizeBytes: 32 * 1024 * 1024,
  },
);
const peakRssBytes = process.resourceUsage().maxRSS * 1024;
// What the rewrite still holds once it is done: the JS heap after a full collection (the test starts this
// child with --expose-gc). Unlike the peak, this does not depend on when V8 happened to collect.
(globalThis as { gc?: () => void }).gc?.();
console.log(
  JSON.stringify({
    inputBytes: count * bytes.length,
    rows: result.fingerprint.rows,
    outputs: result.outputs.length,
    peakRssBytes,
    retainedHeapBytes: process.memoryUsage().heapUsed,
  }),
);
