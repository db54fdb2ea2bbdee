// Proves the schema-less Thrift compact codec round-trips real Parquet footers and page indexes (DuckDB- and
// parquet-wasm-written) to the same bytes, encodes every wire type back to what it decoded, and refuses bad bytes.

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { metadataBytesOf, stitchSourceOf } from '../../../../functions/core/parquet/stitch.js';
import {
  decodeStruct,
  encodeStruct,
  T,
  ThriftDecodeError,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';
import { type DuckDb, openDuckDb } from '../../../support/duckdb.js';
import { eventsSelect } from '../../adapters/parquet-wasm/helpers.js';

let db: DuckDb;
let dir: string;
beforeAll(async () => {
  db = await openDuckDb();
  dir = await mkdtemp(join(tmpdir(), 'thrift-test-'));
});
afterAll(async () => {
  db.close();
  await rm(dir, { recursive: true, force: true });
});

async function duckFile(rows: number, rowGroupSize: number): Promise<Uint8Array> {
  const path = join(dir, `duck-${rows}.parquet`);
  await db.writeParquet(eventsSelect(rows, 3), path, { compression: 'zstd', rowGroupSize });
  return new Uint8Array(await readFile(path));
}

/** parquet-wasm with page-level statistics: it then writes column indexes beside the offset indexes. */
function wasmFile(from: Uint8Array, rowGroupRows: number): Uint8Array {
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.ZSTD)
    .setStatisticsEnabled(pw.EnabledStatistics.Page)
    .setMaxRowGroupSize(rowGroupRows)
    .setDataPageSizeLimit(16 * 1024)
    .build();
  return pw.writeParquet(pw.readParquet(from), props);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

describe('Thrift compact codec', () => {
  it('re-encodes the footers of DuckDB- and parquet-wasm-written files byte for byte, and they decode equal', async () => {
    // Prepare
    const duck = await duckFile(30_000, 10_000);
    const files = { duck, wasm: wasmFile(duck, 12_000) };

    for (const [writer, file] of Object.entries(files)) {
      const metadata = metadataBytesOf(writer, file);

      // Act
      const decoded = decodeStruct(metadata).struct;
      const encoded = encodeStruct(decoded);

      // Assess
      expect(sameBytes(encoded, metadata), writer).toBe(true);
      expect(decodeStruct(encoded).struct).toEqual(decoded);
      expect(parquetMetadata(encodedFile(encoded)).num_rows).toBe(30_000n);
    }
  });

  it('re-encodes column and offset indexes byte for byte', async () => {
    // Prepare
    const file = wasmFile(await duckFile(30_000, 30_000), 15_000);
    const source = stitchSourceOf('wasm', metadataBytesOf('wasm', file), file.length);
    const indexes = source.rowGroups.flatMap((g) => g.chunks.flatMap((c) => [c.columnIndex, c.offsetIndex]));
    expect(indexes.length).toBeGreaterThan(0);

    for (const range of indexes) {
      expect(range).toBeDefined();
      if (range === undefined) continue;
      const bytes = file.subarray(range.offset, range.offset + range.length);

      // Act
      const { struct, end } = decodeStruct(bytes);

      // Assess
      expect(end).toBe(bytes.length);
      expect(sameBytes(encodeStruct(struct), bytes)).toBe(true);
    }
  });

  it('encodes every wire type, long lists, far field ids and large i64 back to what it decodes', () => {
    // Prepare
    const value: ThriftStruct = {
      fields: [
        { id: 1, type: T.TRUE, value: true },
        { id: 2, type: T.FALSE, value: false },
        { id: 3, type: T.BYTE, value: -7 },
        { id: 4, type: T.I16, value: -300 },
        { id: 5, type: T.I32, value: 2_147_483_647 },
        { id: 6, type: T.I64, value: 9_007_199_254_740_993n },
        { id: 7, type: T.I64, value: -9_223_372_036_854_775_808n },
        { id: 8, type: T.DOUBLE, value: -1.5e300 },
        { id: 9, type: T.BINARY, value: new TextEncoder().encode('päge') },
        {
          id: 40,
          type: T.LIST,
          value: { elementType: T.I32, items: Array.from({ length: 20 }, (_, i) => i - 10) },
        },
        { id: 41, type: T.LIST, value: { elementType: T.TRUE, items: [true, false, true] } },
        { id: 42, type: T.SET, value: { elementType: T.BINARY, items: [new Uint8Array([1, 2])] } },
        {
          id: 43,
          type: T.MAP,
          value: { keyType: T.BINARY, valueType: T.I64, entries: [[new Uint8Array([65]), 5n]] },
        },
        { id: 44, type: T.MAP, value: { keyType: 0, valueType: 0, entries: [] } },
        { id: 3000, type: T.STRUCT, value: { fields: [{ id: 1, type: T.I32, value: 1 }] } },
      ],
    };

    // Act
    const bytes = encodeStruct(value);
    const back = decodeStruct(bytes);

    // Assess
    expect(back.struct).toEqual(value);
    expect(back.end).toBe(bytes.length);
    expect(sameBytes(encodeStruct(back.struct), bytes)).toBe(true);
  });

  it('refuses truncated bytes and unknown types with ThriftDecodeError', () => {
    // Prepare
    const bytes = encodeStruct({ fields: [{ id: 1, type: T.BINARY, value: new Uint8Array(50) }] });

    // Act / Assess
    expect(() => decodeStruct(bytes.subarray(0, 20))).toThrow(ThriftDecodeError);
    expect(() => decodeStruct(Uint8Array.of(0x1d))).toThrow(ThriftDecodeError);
  });
});

/** A footer-only Parquet buffer, for hyparquet's footer reader. */
function encodedFile(metadata: Uint8Array): ArrayBuffer {
  const out = new Uint8Array(metadata.length + 12);
  out.set([0x50, 0x41, 0x52, 0x31]);
  out.set(metadata, 4);
  new DataView(out.buffer).setUint32(4 + metadata.length, metadata.length, true);
  out.set([0x50, 0x41, 0x52, 0x31], 8 + metadata.length);
  return out.buffer;
}
