// Reads a v3 deletion vector: the `deletion-vector-v1` Puffin blob a DV entry points at (length, magic, portable
// 64-bit Roaring bitmap, CRC-32), checked end to end and decoded into the deleted row positions, ascending.
import { crc32 } from 'node:zlib';
import type { ObjectStore } from '../../../ports/object-store.js';
import { decodePortableRoaring64 as decodeRoaring } from '../../deletes/roaring.js';
import { IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import type { ContentFile } from './manifests.js';

const MAGIC = [0xd1, 0xd3, 0x39, 0x64] as const;

/**
 * The positions a DV deletes in its referenced data file, ascending. One ranged GET of exactly the blob.
 * Why check the CRC and the cardinality: a DV read wrong deletes the wrong rows of a rewrite, silently; a blob
 * that disagrees with its manifest entry (`record_count` = cardinality) is refused instead.
 * @throws IcebergMetadataError when the blob is not a valid `deletion-vector-v1` or disagrees with its entry.
 */
export async function readDeletionVector(
  store: ObjectStore,
  table: string,
  dv: Pick<ContentFile, 'key' | 'path' | 'format' | 'contentOffset' | 'contentSizeInBytes' | 'recordCount'>,
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

/**
 * Decodes a 64-bit Roaring bitmap in the portable format (CRoaring/RoaringBitmap's `Roaring64NavigableMap`),
 * through the one decoder Delta's deletion vectors share (core/deletes/roaring.ts), into positions.
 */
export function decodePortableRoaring64(bytes: Uint8Array, table: string, where: string): bigint[] {
  const out: bigint[] = [];
  decodeRoaring(
    bytes,
    (high, start, end) => {
      const base = BigInt(high) << 32n;
      for (let v = start; v < end; v++) out.push(base | BigInt(v));
    },
    (reason, unsupported) => {
      if (unsupported === true) throw new IcebergUnsupportedError(table, `${reason} (${where})`);
      throw new IcebergMetadataError(table, `${where} ${reason}`);
    },
  );
  return out;
}
