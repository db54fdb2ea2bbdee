// Reads a Delta deletion vector (PROTOCOL.md "Deletion Vectors"): its descriptor resolved to inline bytes or a
// range of a DV file under the table, checked (magic, size, CRC-32, cardinality) and decoded into the deleted
// row positions of its data file, through the Roaring decoder Iceberg's DVs share.
import { crc32 } from 'node:zlib';
import type { ObjectStore } from '../../../ports/object-store.js';
import { DeletedRows, DeletedRowsBuilder, InvalidDeletedRowsError } from '../../deletes/deleted-rows.js';
import { decodePortableRoaring64 } from '../../deletes/roaring.js';
import { keyUnderRoot, printable } from '../../keys.js';
import { type DeletionVector, deletionVectorUniqueId } from './actions.js';
import { deletionVectorRelativePath, z85Decode } from './dv-paths.js';
import { DeltaLogError } from './errors.js';
import { normalizeTableRoot } from './log.js';

export { deletionVectorRelativePath, z85Decode } from './dv-paths.js';

/** `RoaringBitmapArray` magic number, little-endian, ahead of every serialized DV (inline or on disk). */
const DV_MAGIC = 1681511377;
/** The only DV file format version the protocol defines. */
const DV_FILE_VERSION = 1;
/**
 * The store key of the DV file a `u` descriptor names (see {@link deletionVectorRelativePath}) below the table root,
 * checked by the confinement rule: the prefix is the writer's text, and a `../` in it names another table's file.
 * @throws Error for a malformed descriptor, or one whose file would leave the table root.
 */
export function deletionVectorFileKey(tableRoot: string, dv: Pick<DeletionVector, 'pathOrInlineDv'>): string {
  const relative = deletionVectorRelativePath(dv.pathOrInlineDv);
  const built = keyUnderRoot(normalizeTableRoot(tableRoot), relative);
  if ('refused' in built) throw new Error(`its file ${printable(relative)} ${built.refused}`);
  return built.key;
}

export interface ReadDeletionVectorOptions {
  /**
   * The table root as an absolute URI (`s3://bucket/table/`), when known: a `p` descriptor is read only when its
   * path lies under it. Without it every `p` descriptor is refused, since an absolute URI cannot be mapped to a
   * key of the store (it may name another bucket).
   */
  readonly tableUri?: string;
}

/**
 * The positions `dv` deletes in its data file (`file`, for messages), checked end to end: the DV file's version
 * byte, the declared size, the magic number, the CRC-32 (on disk), no bytes after the bitmap, and the decoded
 * positions against the descriptor's `cardinality`. Why so strict: a DV read wrong makes a rewrite drop the
 * wrong rows, silently; one that disagrees with its descriptor is refused instead.
 * @throws DeltaLogError naming the data file and what is wrong with its DV.
 */
export async function readDeletionVector(
  store: ObjectStore,
  tableRoot: string,
  file: string,
  dv: DeletionVector,
  options: ReadDeletionVectorOptions = {},
): Promise<DeletedRows> {
  const root = normalizeTableRoot(tableRoot);
  const where = `the deletion vector ${deletionVectorUniqueId(dv)} of ${file}`;
  const fail = (reason: string, cause?: unknown): never => {
    throw new DeltaLogError(root, `${where} ${reason}`, cause === undefined ? undefined : { cause });
  };
  let bitmap: Uint8Array;
  if (dv.storageType === 'i') {
    let decoded: Uint8Array;
    try {
      decoded = z85Decode(dv.pathOrInlineDv);
    } catch (err) {
      return fail(`is not valid Z85 (${(err as Error).message})`, err);
    }
    if (decoded.length < dv.sizeInBytes) fail(`holds ${decoded.length} bytes inline, not ${dv.sizeInBytes}`);
    bitmap = decoded.subarray(0, dv.sizeInBytes);
  } else {
    let key: string;
    if (dv.storageType === 'u') {
      try {
        key = deletionVectorFileKey(root, dv);
      } catch (err) {
        return fail(`has no valid file name (${(err as Error).message})`, err);
      }
    } else key = absoluteKey(root, dv.pathOrInlineDv, options.tableUri, fail);
    bitmap = await readFromFile(store, key, dv, fail);
  }
  return decodeBitmap(bitmap, dv.cardinality, fail);
}

/** A `p` descriptor's key: only a path under the table's own URI is read. */
function absoluteKey(
  root: string,
  path: string,
  tableUri: string | undefined,
  fail: (reason: string) => never,
): string {
  const base = tableUri === undefined ? undefined : tableUri.replace(/\/*$/, '/');
  if (base === undefined || !path.startsWith(base)) {
    return fail(
      `is stored at the absolute path ${path}${base === undefined ? '' : `, outside the table (${base})`}: only deletion vectors under the table are read`,
    );
  }
  let relative: string;
  try {
    relative = decodeURIComponent(path.slice(base.length));
  } catch (err) {
    return fail(`has an undecodable path ${path} (${(err as Error).message})`);
  }
  const built = keyUnderRoot(root, relative);
  return 'refused' in built
    ? fail(
        `is stored at ${printable(path)}, which ${built.refused}: only deletion vectors under the table are read`,
      )
    : built.key;
}

/** One DV of a DV file: `offset` → 4-byte big-endian size, the bitmap, a 4-byte big-endian CRC-32 of it. */
async function readFromFile(
  store: ObjectStore,
  key: string,
  dv: DeletionVector,
  fail: (reason: string, cause?: unknown) => never,
): Promise<Uint8Array> {
  const offset = dv.offset ?? fail('is stored in a file but has no offset');
  if (offset < 1) fail(`starts at offset ${offset}, inside the file's version byte`);
  const end = offset + 4 + dv.sizeInBytes + 4;
  const [version, bytes] = await Promise.all([
    store.getRange(key, 0, 0),
    store.getRange(key, offset, end - 1),
  ]).catch((err: unknown) => fail(`cannot be read from ${key} (${(err as Error).message})`, err));
  if (version[0] !== DV_FILE_VERSION) fail(`is in ${key}, whose format version ${version[0]} is not 1`);
  if (bytes.length !== end - offset)
    fail(`ends early: ${key} holds ${bytes.length} of its ${end - offset} bytes`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const size = view.getUint32(0, false);
  if (size !== dv.sizeInBytes) fail(`declares ${size} bytes in ${key}, its descriptor ${dv.sizeInBytes}`);
  const bitmap = bytes.subarray(4, 4 + size);
  if (crc32(bitmap) !== view.getUint32(4 + size, false)) fail(`fails its CRC-32 check in ${key}`);
  return bitmap;
}

/** Magic number, then the portable 64-bit Roaring bitmap, then nothing; every position below 2^32 − 1. */
function decodeBitmap(
  bitmap: Uint8Array,
  cardinality: number,
  fail: (reason: string, cause?: unknown) => never,
): DeletedRows {
  if (bitmap.length < 4) fail(`holds ${bitmap.length} bytes, too few for a bitmap`);
  const view = new DataView(bitmap.buffer, bitmap.byteOffset, bitmap.byteLength);
  const magic = view.getUint32(0, true);
  if (magic !== DV_MAGIC) fail(`starts with ${magic}, not the RoaringBitmapArray magic number ${DV_MAGIC}`);
  const builder = new DeletedRowsBuilder();
  let decoded: { cardinality: number; bytesRead: number };
  try {
    decoded = decodePortableRoaring64(
      bitmap.subarray(4),
      (high, start, end) => {
        if (high !== 0) fail(`deletes row ${high * 2 ** 32 + start}, beyond any file this engine rewrites`);
        builder.add(start, end);
      },
      (reason) => fail(reason),
    );
  } catch (err) {
    if (err instanceof InvalidDeletedRowsError) return fail(err.message, err);
    throw err;
  }
  if (decoded.bytesRead !== bitmap.length - 4) {
    fail(`has ${bitmap.length - 4 - decoded.bytesRead} bytes after its bitmap`);
  }
  if (decoded.cardinality !== cardinality) {
    fail(`holds ${decoded.cardinality} positions, its descriptor says ${cardinality}`);
  }
  return decoded.cardinality === 0 ? DeletedRows.NONE : builder.build();
}
