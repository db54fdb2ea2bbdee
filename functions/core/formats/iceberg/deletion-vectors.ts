// Reads a v3 deletion vector: the `deletion-vector-v1` Puffin blob a DV entry points at (length, magic, portable
// 64-bit Roaring bitmap, CRC-32), checked end to end and decoded into the deleted row positions, ascending.
import { crc32 } from 'node:zlib';
import type { ObjectStore } from '../../../ports/object-store.js';
import { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import type { ContentFile } from './manifests.js';

const MAGIC = [0xd1, 0xd3, 0x39, 0x64] as const;
const SERIAL_COOKIE_NO_RUN = 12346;
const SERIAL_COOKIE = 12347;
const NO_OFFSET_THRESHOLD = 4;

/**
 * The positions a DV deletes in its referenced data file, ascending. One ranged GET of exactly the blob.
 * Why check the CRC and the cardinality: a DV read wrong deletes the wrong rows of a rewrite, silently; a blob
 * that disagrees with its manifest entry (`record_count` = cardinality) is refused instead.
 * @throws IcebergMetadataError when the blob is not a valid `deletion-vector-v1` or disagrees with its entry.
 */
export async function readDeletionVector(
  store: ObjectStore,
  table: string,
  dv: ContentFile,
): Promise<bigint[]> {
  if (dv.format !== 'PUFFIN' || dv.contentOffset === undefined || dv.contentSizeInBytes === undefined)
    throw new IcebergMetadataError(
      table,
      `${dv.path} is not a deletion vector (no Puffin blob offset and size)`,
    );
  const start = Number(dv.contentOffset);
  const size = Number(dv.contentSizeInBytes);
  const blob = await store.getRange(dv.key, start, start + size - 1);
  const where = `the deletion vector at ${dv.path}@${start}`;
  const fail = (reason: string): never => {
    throw new IcebergMetadataError(table, `${where} ${reason}`);
  };
  if (blob.byteLength !== size || size < 12) fail(`has ${blob.byteLength} bytes, not ${size}`);
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  const length = view.getUint32(0, false);
  if (length !== size - 8) fail(`declares ${length} bytes of bitmap, the blob holds ${size - 8}`);
  if (MAGIC.some((b, i) => blob[4 + i] !== b)) fail('does not start with the deletion-vector-v1 magic');
  const body = blob.subarray(4, 4 + length);
  if (crc32(body) !== view.getUint32(4 + length, false)) fail('fails its CRC-32 check');
  const positions = decodePortableRoaring64(blob.subarray(8, 4 + length), table, where);
  if (BigInt(positions.length) !== dv.recordCount)
    fail(`holds ${positions.length} positions, its manifest entry says ${dv.recordCount}`);
  return positions;
}

/** Decodes a 64-bit Roaring bitmap in the portable format (CRoaring/RoaringBitmap's `Roaring64NavigableMap`). */
export function decodePortableRoaring64(bytes: Uint8Array, table: string, where: string): bigint[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: bigint[] = [];
  let pos = 0;
  const need = (n: number) => {
    if (pos + n > bytes.byteLength) throw new IcebergMetadataError(table, `${where} ends inside its bitmap`);
  };
  need(8);
  const bitmaps = view.getBigUint64(pos, true);
  pos += 8;
  for (let b = 0n; b < bitmaps; b++) {
    need(4);
    const high = BigInt(view.getUint32(pos, true)) << 32n;
    pos += 4;
    for (const low of decodeRoaring32()) out.push(high | BigInt(low));
  }
  return out;

  function decodeRoaring32(): number[] {
    need(4);
    const cookie = view.getUint32(pos, true);
    pos += 4;
    let containers: number;
    let runFlags: Uint8Array | undefined;
    if ((cookie & 0xffff) === SERIAL_COOKIE) {
      containers = (cookie >>> 16) + 1;
      const flagBytes = Math.ceil(containers / 8);
      need(flagBytes);
      runFlags = bytes.subarray(pos, pos + flagBytes);
      pos += flagBytes;
    } else if (cookie === SERIAL_COOKIE_NO_RUN) {
      need(4);
      containers = view.getUint32(pos, true);
      pos += 4;
    } else throw new IcebergUnsupportedError(table, `a Roaring bitmap with cookie ${cookie} (${where})`);
    need(containers * 4);
    const keys: number[] = [];
    const cards: number[] = [];
    for (let i = 0; i < containers; i++) {
      keys.push(view.getUint16(pos, true));
      cards.push(view.getUint16(pos + 2, true) + 1);
      pos += 4;
    }
    if (runFlags === undefined || containers >= NO_OFFSET_THRESHOLD) pos += containers * 4; // offsets: not needed
    const values: number[] = [];
    for (let i = 0; i < containers; i++) {
      const high = (keys[i] as number) * 0x10000;
      const card = cards[i] as number;
      const isRun = runFlags !== undefined && (((runFlags[i >> 3] as number) >> (i & 7)) & 1) === 1;
      if (isRun) {
        need(2);
        const runs = view.getUint16(pos, true);
        pos += 2;
        need(runs * 4);
        for (let r = 0; r < runs; r++) {
          const startValue = view.getUint16(pos, true);
          const lengthMinusOne = view.getUint16(pos + 2, true);
          pos += 4;
          for (let v = startValue; v <= startValue + lengthMinusOne; v++) values.push(high + v);
        }
      } else if (card <= 4096) {
        need(card * 2);
        for (let k = 0; k < card; k++) values.push(high + view.getUint16(pos + k * 2, true));
        pos += card * 2;
      } else {
        need(8192);
        // 1024 little-endian 64-bit words, read as 2048 little-endian 32-bit halves (low half first)
        for (let w = 0; w < 2048; w++) {
          const word = view.getUint32(pos + w * 4, true);
          for (let bit = 0; bit < 32; bit++) if ((word >>> bit) & 1) values.push(high + w * 32 + bit);
        }
        pos += 8192;
      }
    }
    return values;
  }
}
