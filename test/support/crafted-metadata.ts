// Builds the crafted inputs of the security review's appendix in the test itself (nothing vendored): raw Avro
// containers whose counts or deflate blocks lie, gzip bombs, and Parquet footers rewritten to claim other counts.
import { constants, crc32, deflateRawSync, inflateRawSync } from 'node:zlib';
import {
  decodeStruct,
  encodeStruct,
  field,
  setField,
  T,
  type ThriftList,
  type ThriftStruct,
} from '../../functions/core/parquet/thrift-compact.js';

/** Avro's zig-zag varint of a long, exact for any safe integer (and beyond, through BigInt). */
export function avroLong(n: number | bigint): Buffer {
  let v = BigInt(n) >= 0n ? BigInt(n) << 1n : (-BigInt(n) << 1n) - 1n;
  const out: number[] = [];
  do {
    let byte = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) byte |= 0x80;
    out.push(byte);
  } while (v !== 0n);
  return Buffer.from(out);
}

function avroBytes(b: Buffer): Buffer {
  return Buffer.concat([avroLong(b.length), b]);
}

const SYNC = Buffer.alloc(16, 0x5a);

/** A container header: magic, the metadata map (schema, codec), the sync marker. */
export function avroHeader(schema: object, codec: 'null' | 'deflate' = 'null'): Buffer {
  return Buffer.concat([
    Buffer.from('Obj\x01', 'latin1'),
    avroLong(2),
    avroBytes(Buffer.from('avro.schema')),
    avroBytes(Buffer.from(JSON.stringify(schema))),
    avroBytes(Buffer.from('avro.codec')),
    avroBytes(Buffer.from(codec)),
    avroLong(0),
    SYNC,
  ]);
}

/** One block: the count it claims, the data as it is (already compressed for deflate), the sync marker. */
export function avroBlock(count: number | bigint, data: Buffer): Buffer {
  return Buffer.concat([avroLong(count), avroLong(data.length), data, SYNC]);
}

/**
 * The appendix's `avro-count`: a manifest list with a zero-field record schema and one null-codec block of 0 bytes
 * claiming `records` records (126 bytes for 10^12; the review's, with more header metadata, had 143).
 */
export function avroCountBomb(records: number | bigint = 1_000_000_000_000): Buffer {
  return Buffer.concat([
    avroHeader({ type: 'record', name: 'manifest_file', fields: [] }),
    avroBlock(records, Buffer.alloc(0)),
  ]);
}

/**
 * The appendix's `avro-deflate`: field `blob: bytes`, `blocks` blocks of one record each whose bytes are `mib` MiB
 * of zeros, deflated at level 9 (about 1 MB per GiB).
 */
export function avroDeflateBomb(mib = 1024, blocks = 1): Buffer {
  const size = mib * 1024 * 1024;
  // The record: the bytes' length, then the zeros; deflated in pieces so the test never holds `size` bytes.
  const record = deflateZerosAfter(avroLong(size), size);
  const parts = [
    avroHeader(
      { type: 'record', name: 'manifest_file', fields: [{ name: 'blob', type: 'bytes' }] },
      'deflate',
    ),
  ];
  for (let i = 0; i < blocks; i++) parts.push(avroBlock(1, record));
  return Buffer.concat(parts);
}

/**
 * Raw deflate of `prefix` then `zeros` zero bytes, built from one compressed MiB repeated: each piece is
 * full-flushed (byte-aligned, no reference across it), so the pieces concatenate into one valid stream, closed by a
 * final empty block, and the test never holds the inflated bytes.
 */
function deflateZerosAfter(prefix: Buffer, zeros: number): Buffer {
  const MiB = 1024 * 1024;
  const flushed = { level: 9, finishFlush: constants.Z_FULL_FLUSH };
  const parts = [deflateRawSync(Buffer.concat([prefix, Buffer.alloc(Math.min(zeros, MiB))]), flushed)];
  const repeated = deflateRawSync(Buffer.alloc(MiB), flushed);
  let left = zeros - Math.min(zeros, MiB);
  for (; left >= MiB; left -= MiB) parts.push(repeated);
  if (left > 0) parts.push(deflateRawSync(Buffer.alloc(left), flushed));
  parts.push(deflateRawSync(Buffer.alloc(0)));
  return Buffer.concat(parts);
}

/**
 * A manifest-list-shaped record with an `array` field whose one block claims `items` elements in a few bytes: the
 * nested count avsc would loop over.
 */
export function avroNestedArrayBomb(items: number | bigint = 1_000_000_000_000): Buffer {
  const schema = {
    type: 'record',
    name: 'manifest_file',
    fields: [
      { name: 'manifest_path', type: 'string', 'field-id': 500 },
      {
        name: 'partitions',
        type: {
          type: 'array',
          items: { type: 'record', name: 'r508', fields: [{ name: 'contains_null', type: 'boolean' }] },
        },
        'field-id': 507,
      },
    ],
  };
  const record = Buffer.concat([avroBytes(Buffer.from('m.avro')), avroLong(items), Buffer.from([1, 0])]);
  return Buffer.concat([avroHeader(schema), avroBlock(1, record)]);
}

/**
 * The appendix's `gzip`: a gzip of `mib` MiB of spaces (about 1 MB per GiB), built as the deflate above inside a
 * gzip header and trailer (CRC-32 and length of the spaces, computed a MiB at a time).
 */
export function gzipBomb(mib = 1024): Buffer {
  const MiB = 1024 * 1024;
  const spaces = Buffer.alloc(MiB, 0x20);
  const flushed = { level: 9, finishFlush: constants.Z_FULL_FLUSH };
  const piece = deflateRawSync(spaces, flushed);
  let crc = 0;
  for (let i = 0; i < mib; i++) crc = crc32(spaces, crc);
  const trailer = Buffer.alloc(8);
  trailer.writeUInt32LE(crc >>> 0, 0);
  trailer.writeUInt32LE((mib * MiB) >>> 0, 4);
  return Buffer.concat([
    Buffer.from([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 2, 255]),
    ...Array.from({ length: mib }, () => piece),
    deflateRawSync(Buffer.alloc(0)),
    trailer,
  ]);
}

/** Inflates a raw deflate stream (to check a crafted one is what it claims, in small sizes). */
export function inflate(bytes: Uint8Array): Buffer {
  return inflateRawSync(bytes);
}

/**
 * The appendix's `rows`: the Parquet file `bytes` with FileMetaData field 3 (num_rows) and every RowGroup's field 3
 * (num_rows) set to `rows` (2^53 − 1 by default), re-encoded with the project's own Thrift writer.
 */
export function withClaimedRows(bytes: Uint8Array, rows: bigint = 9007199254740991n): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const length = view.getUint32(bytes.length - 8, true);
  const footerStart = bytes.length - 8 - length;
  const { struct } = decodeStruct(bytes.subarray(footerStart, bytes.length - 8));
  setField(struct, 3, T.I64, rows);
  const groups = field(struct, 4)?.value as ThriftList;
  for (const group of groups.items as ThriftStruct[]) setField(group, 3, T.I64, rows);
  const footer = encodeStruct(struct);
  const out = new Uint8Array(footerStart + footer.length + 8);
  out.set(bytes.subarray(0, footerStart), 0);
  out.set(footer, footerStart);
  new DataView(out.buffer).setUint32(footerStart + footer.length, footer.length, true);
  out.set([0x50, 0x41, 0x52, 0x31], out.length - 4);
  return out;
}
