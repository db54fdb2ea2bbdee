// The rows Iceberg deletes from a data file without rewriting it, as the rewrite drops them: every position-delete
// file, deletion vector and equality delete the reader's rules (live-files.ts) say apply to the file, read into one
// DeletedRows (equality deletes matched against the file's own equality columns, into positions), and what the plan
// and the journal carry to identify exactly those deletes (a digest of the delete files).
import { createHash } from 'node:crypto';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import pLimit from 'p-limit';
import type { JournalInputDeletes } from '../../../ports/journal.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import { DeletedRows, InvalidDeletedRowsError } from '../../deletes/deleted-rows.js';
import { MetadataTooLargeError, ObjectNotFoundError } from '../../errors.js';
import { currentMemoryBudget, currentMetadataLimits, describeBytes } from '../../memory-budget.js';
import type { InputDeletes } from '../../planning.js';
import { readDeletionVector } from './deletion-vectors.js';
import { IcebergMetadataError } from './errors.js';
import type { DeleteKind, LiveDeleteFile, SnapshotFiles } from './live-files.js';
import type { IcebergSchema } from './metadata.js';

/** One delete file (a DV: one blob of a Puffin file) applying to a data file, as the plan and journal record it. */
export interface AppliedDelete {
  readonly kind: DeleteKind;
  /** Where it lies in the store. */
  readonly key: string;
  /** As the manifest records it. */
  readonly path: string;
  /** Upper case, as the manifest records it (`PARQUET`, `PUFFIN`, …). */
  readonly format: string;
  /** Its data sequence number, as decimal text (a long). */
  readonly sequence: string;
  /** Its record count: rows of a position-delete file, positions of a DV. */
  readonly records: number;
  /** A DV's blob: offset and length in its Puffin file. */
  readonly offset?: number;
  readonly size?: number;
  /** An equality delete's field ids: a row whose values of these fields equal a delete row's is deleted. */
  readonly equalityIds?: readonly number[];
}

/** A planned data file and the deletes to drop from it. */
export interface DeleteTarget {
  /** The data file's path as the metadata records it: what a position-delete row's `file_path` names. */
  readonly dataPath: string;
  /** The data file's key: read (its equality columns) when equality deletes apply. */
  readonly dataKey: string;
  /** The data file's record count: no deleted position may reach it. */
  readonly recordCount: number | undefined;
  readonly deletes: readonly AppliedDelete[];
}

/** Every live data file's applicable delete files (by data file path), as the reader's rules computed them. */
export function deletesByDataFile(files: SnapshotFiles): Map<string, LiveDeleteFile[]> {
  const out = new Map<string, LiveDeleteFile[]>();
  for (const d of files.deleteFiles)
    for (const path of d.appliesTo) {
      const list = out.get(path);
      if (list === undefined) out.set(path, [d]);
      else list.push(d);
    }
  return out;
}

/** What the plan keeps of one applicable delete file. */
export function appliedDeleteOf(d: LiveDeleteFile): AppliedDelete {
  const f = d.entry.file;
  return {
    kind: d.kind,
    key: f.key,
    path: f.path,
    format: f.format,
    sequence: d.entry.dataSequenceNumber.toString(),
    records: Number(f.recordCount),
    ...(f.contentOffset === undefined ? {} : { offset: Number(f.contentOffset) }),
    ...(f.contentSizeInBytes === undefined ? {} : { size: Number(f.contentSizeInBytes) }),
    ...(d.kind === 'equality' ? { equalityIds: [...(f.equalityIds ?? [])] } : {}),
  };
}

/**
 * Most equality-delete rows held in memory for one data file (a hash set of their values): above it the file is
 * left alone with why, rather than risk the compact step's memory.
 */
export const MAX_EQUALITY_DELETE_ROWS = 1_000_000;

/**
 * Column types whose values are matched exactly as decoded (integers, dates as days, strings, bytes, booleans).
 * Floating-point, decimal, time and timestamp values are not: their decoded form may round, so two different
 * values could be taken for equal and a live row dropped.
 */
const EQUALITY_TYPES = /^(boolean|int|long|date|string|binary|fixed\[\d+\])$/;

/**
 * Why a data file's deletes cannot be dropped by the rewrite, or undefined when they can: delete files in a file
 * format other than Parquet are not read; equality deletes are applied only on top-level columns of exactly
 * matched types (see `EQUALITY_TYPES`), with at most `MAX_EQUALITY_DELETE_ROWS` delete rows in memory.
 */
export function unappliableDeletes(
  deletes: readonly AppliedDelete[],
  schema: Pick<IcebergSchema, 'fields'>,
): string | undefined {
  const other = deletes.find((d) => d.kind !== 'deletion-vector' && d.format !== 'PARQUET');
  if (other !== undefined)
    return `Iceberg data file with a ${other.kind} delete in ${other.format} (${other.path}) applied to it: left as it is, since only Parquet delete files are read`;
  const equality = deletes.filter((d) => d.kind === 'equality');
  if (equality.length === 0) return undefined;
  const what = `Iceberg data file with ${equality.length} equality delete${equality.length === 1 ? '' : 's'} applied to it: left as it is`;
  if (equality.some((d) => (d.equalityIds ?? []).length === 0))
    return `${what}, since one of them names no equality field`;
  for (const id of new Set(equality.flatMap((d) => d.equalityIds ?? []))) {
    const field = schema.fields.find((f) => f.id === id);
    const type = typeof field?.type === 'string' ? field.type : 'a nested type';
    if (field === undefined || !EQUALITY_TYPES.test(type))
      return `${what}, since equality deletes on ${field === undefined ? `field ${id} (not a top-level column)` : `${field.name} (${type})`} are not matched by value while rewriting`;
    // A file written before the column was added reads it as its initial-default, where the matching reads null.
    const initial = field['initial-default'];
    if (initial !== undefined && initial !== null)
      return `${what}, since equality deletes on ${field.name}, which has an initial-default, are not matched by value while rewriting`;
  }
  const rows = equality.reduce((a, d) => a + d.records, 0);
  if (rows > MAX_EQUALITY_DELETE_ROWS)
    return `${what}, since their ${rows} rows are more than the ${MAX_EQUALITY_DELETE_ROWS} held in memory to match it by value`;
  return undefined;
}

/**
 * The id of a set of deletes: a digest of each one's kind, path, blob offset and data sequence number, sorted.
 * Why these: Iceberg files are immutable and never reused under one path, so the same id means the same
 * positions; the starting snapshot's deletes of an input must still have it when the group commits.
 */
export function deletesId(deletes: readonly AppliedDelete[]): string {
  const lines = deletes
    .map((d) => `${d.kind}\t${d.path}\t${d.offset ?? ''}\t${d.sequence}`)
    .sort()
    .join('\n');
  return `iceberg-deletes:${createHash('sha256').update(lines).digest('hex')}`;
}

/**
 * What the plan carries of a data file's deletes: their id, how many rows they delete (`rows`), and the
 * descriptor the compact step reads them from (the data file's path and the delete files, as JSON text).
 */
export function inputDeletesOf(
  dataPath: string,
  deletes: readonly AppliedDelete[],
  rows: number,
): InputDeletes {
  return {
    id: deletesId(deletes),
    rows,
    descriptor: { dataPath, files: JSON.stringify(deletes) },
  };
}

/**
 * An upper bound of the rows deletes remove from a file of `recordCount` rows, without reading them: a DV's
 * cardinality (exact), else the position-delete files' row counts (which may name other files too). Only what a
 * snapshot without footers reports; a plan reads the exact count (see `readDeletedRows`).
 */
export function estimatedDeletedRows(deletes: readonly AppliedDelete[], recordCount: number): number {
  return Math.min(
    recordCount,
    deletes.reduce((a, d) => a + d.records, 0),
  );
}

/**
 * The data file path and delete files an input's journal deletes describe, checked against their id.
 * @throws IcebergMetadataError when the descriptor is not one `inputDeletesOf` wrote, or not for that id.
 */
export function parseInputDeletes(table: string, key: string, deletes: JournalInputDeletes): DeleteTarget {
  const fail = (why: string): never => {
    throw new IcebergMetadataError(table, `the planned deletes of ${key} ${why}`);
  };
  const { dataPath, files } = deletes.descriptor;
  if (typeof dataPath !== 'string' || typeof files !== 'string')
    return fail('have no data path or delete files');
  let parsed: unknown;
  try {
    parsed = JSON.parse(files);
  } catch {
    return fail('list their delete files as invalid JSON');
  }
  if (!Array.isArray(parsed) || !parsed.every(isAppliedDelete)) return fail('list malformed delete files');
  if (deletesId(parsed) !== deletes.id) return fail(`are not those of id ${deletes.id}`);
  return { dataPath, dataKey: key, recordCount: undefined, deletes: parsed };
}

function isAppliedDelete(v: unknown): v is AppliedDelete {
  if (typeof v !== 'object' || v === null) return false;
  const d = v as Record<string, unknown>;
  return (
    (d.kind === 'position' || d.kind === 'deletion-vector' || d.kind === 'equality') &&
    typeof d.key === 'string' &&
    typeof d.path === 'string' &&
    typeof d.format === 'string' &&
    typeof d.sequence === 'string' &&
    Number.isSafeInteger(d.records) &&
    (d.equalityIds === undefined ||
      (Array.isArray(d.equalityIds) && d.equalityIds.every((id) => Number.isSafeInteger(id)))) &&
    (d.offset === undefined || Number.isSafeInteger(d.offset)) &&
    (d.size === undefined || Number.isSafeInteger(d.size))
  );
}

/**
 * The rows the deletes of each target delete, as one DeletedRows per data file path: the union of the positions
 * its position-delete files name for it (their `file_path` equal to the data file's path, as the spec says), of
 * its DV's positions and of the rows its equality deletes match (see `equalityPositions`). Each delete file is
 * read once (whole: delete files are small next to data), keeping only the rows of the targets' paths; targets
 * are read a few at a time.
 * @throws IcebergMetadataError when a delete file is missing, not readable, disagrees with its manifest entry,
 *   or names a position beyond its data file's rows.
 */
export async function readDeletedRows(
  store: ObjectStore,
  table: string,
  targets: readonly DeleteTarget[],
): Promise<Map<string, DeletedRows>> {
  const cache = new Map<string, Promise<ReadonlyMap<string, readonly number[]>>>();
  const wanted = new Set(targets.map((t) => t.dataPath));
  const positionsOf = (d: AppliedDelete) => {
    let read = cache.get(d.key);
    if (read === undefined) {
      read = readPositionDeleteFile(store, table, d, wanted);
      cache.set(d.key, read);
    }
    return read;
  };
  const equalityKeys = new Map<string, Promise<ReadonlySet<string>>>();
  const keysOf = (d: AppliedDelete) => {
    let read = equalityKeys.get(d.key);
    if (read === undefined) {
      read = readEqualityDeleteFile(store, table, d);
      equalityKeys.set(d.key, read);
    }
    return read;
  };
  const one = async (target: DeleteTarget): Promise<DeletedRows> => {
    const positions: number[] = [];
    const equality = target.deletes.filter((d) => d.kind === 'equality');
    if (equality.length > 0)
      for (const p of await equalityPositions(store, table, target, equality, keysOf)) positions.push(p);
    for (const d of target.deletes) {
      if (d.kind === 'equality') continue;
      if (d.kind === 'deletion-vector') {
        for (const p of await readDv(store, table, target.dataPath, d)) positions.push(p);
      } else for (const p of (await positionsOf(d)).get(target.dataPath) ?? []) positions.push(p);
    }
    let rows: DeletedRows;
    try {
      rows = DeletedRows.of(positions);
    } catch (err) {
      if (!(err instanceof InvalidDeletedRowsError)) throw err;
      throw new IcebergMetadataError(table, `the deletes of ${target.dataPath}: ${err.message}`);
    }
    const last = rows.last;
    if (last !== undefined && target.recordCount !== undefined && last >= target.recordCount)
      throw new IcebergMetadataError(
        table,
        `a delete of ${target.dataPath} names row ${last}, but the file holds ${target.recordCount} rows`,
      );
    return rows;
  };
  const limit = pLimit(8);
  const read = await Promise.all(targets.map((t) => limit(() => one(t))));
  return new Map(targets.map((t, i) => [t.dataPath, read[i] as DeletedRows]));
}

async function readDv(
  store: ObjectStore,
  table: string,
  dataPath: string,
  d: AppliedDelete,
): Promise<number[]> {
  const positions = await readDeletionVector(store, table, {
    key: d.key,
    path: d.path,
    format: d.format,
    contentOffset: d.offset === undefined ? undefined : BigInt(d.offset),
    contentSizeInBytes: d.size === undefined ? undefined : BigInt(d.size),
    recordCount: BigInt(d.records),
  });
  return positions.map((p) => {
    if (p > BigInt(Number.MAX_SAFE_INTEGER))
      throw new IcebergMetadataError(table, `the deletion vector of ${dataPath} names row ${p}`);
    return Number(p);
  });
}

/**
 * The (file_path, pos) rows of a position-delete file. hyparquet decodes the codecs it knows (uncompressed,
 * Snappy, Gzip…); a file in another one (ZSTD: Spark's default) is decoded by parquet-wasm, the rewrite engine's
 * library, used here as a pure decoder (no I/O): delete files are small and read whole.
 */
async function decodePositionDeletes(bytes: Uint8Array): Promise<{ path: unknown; pos: unknown }[]> {
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  try {
    const rows = await parquetReadObjects({ file, columns: ['file_path', 'pos'] });
    return rows.map((r) => ({ path: r.file_path, pos: r.pos }));
  } catch (err) {
    if (!(err instanceof Error) || !/unsupported compression codec/i.test(err.message)) throw err;
  }
  const arrow = await decodeWithParquetWasm(bytes, ['file_path', 'pos']);
  const paths = arrow.getChild('file_path');
  const positions = arrow.getChild('pos');
  if (paths === null || positions === null) throw new Error('no file_path or pos column');
  return Array.from({ length: arrow.numRows }, (_, i) => ({ path: paths.get(i), pos: positions.get(i) }));
}

/**
 * The rows of `target`'s data file that its equality deletes delete, by position: the file's equality columns
 * (found by field id; a column the file lacks is null, as Iceberg reads it) are read, and a row is deleted when
 * its values of a delete file's equality fields equal one of that file's rows (null equal to null, as the spec's
 * readers compare). Why positions: the rewrite drops rows by position, so equality deletes reuse that one
 * mechanism (and its checks) instead of a second, value-based filter in the engine.
 */
async function equalityPositions(
  store: ObjectStore,
  table: string,
  target: DeleteTarget,
  deletes: readonly AppliedDelete[],
  keysOf: (d: AppliedDelete) => Promise<ReadonlySet<string>>,
): Promise<number[]> {
  const bySet = new Map<string, { ids: readonly number[]; keys: Set<string> }>();
  for (const d of deletes) {
    const ids = [...(d.equalityIds ?? [])].sort((a, b) => a - b);
    if (ids.length === 0)
      throw new IcebergMetadataError(table, `the equality delete ${d.path} names no field`);
    const set = ids.join(',');
    let group = bySet.get(set);
    if (group === undefined) {
      group = { ids, keys: new Set() };
      bySet.set(set, group);
    }
    for (const k of await keysOf(d)) group.keys.add(k);
  }
  const ids = [...new Set([...bySet.values()].flatMap((g) => g.ids))];
  const { rows, columns } = await readColumnsById(store, table, target.dataKey, target.dataPath, ids);
  const out: number[] = [];
  for (let i = 0; i < rows; i++)
    for (const group of bySet.values())
      if (
        group.keys.has(
          rowKey(
            group.ids.map((id) => columns.get(id)?.[i] ?? null),
            table,
            target.dataPath,
          ),
        )
      ) {
        out.push(i);
        break;
      }
  return out;
}

/** The canonical keys of an equality-delete file's rows (values of its equality fields, in field id order). */
async function readEqualityDeleteFile(
  store: ObjectStore,
  table: string,
  d: AppliedDelete,
): Promise<ReadonlySet<string>> {
  const ids = [...(d.equalityIds ?? [])].sort((a, b) => a - b);
  const { rows, columns, missing } = await readColumnsById(store, table, d.key, d.path, ids);
  if (missing.length > 0)
    throw new IcebergMetadataError(
      table,
      `the equality delete ${d.path} has no column of field ${missing.join(', ')}`,
    );
  if (rows !== d.records)
    throw new IcebergMetadataError(
      table,
      `the equality delete ${d.path} holds ${rows} rows, its manifest entry says ${d.records}`,
    );
  const keys = new Set<string>();
  for (let i = 0; i < rows; i++)
    keys.add(
      rowKey(
        ids.map((id) => columns.get(id)?.[i] ?? null),
        table,
        d.path,
      ),
    );
  return keys;
}

/**
 * A tuple of decoded values as text, equal exactly when the values are: integers of any width alike (a column
 * promoted from int to long still matches), strings, bytes and booleans by value, null as itself.
 * @throws IcebergMetadataError for a value of a type not matched exactly (see `EQUALITY_TYPES`).
 */
function rowKey(values: readonly unknown[], table: string, where: string): string {
  return JSON.stringify(
    values.map((v) => {
      if (v === null || v === undefined) return null;
      if (typeof v === 'bigint') return `i${v}`;
      if (typeof v === 'number' && Number.isSafeInteger(v)) return `i${v}`;
      if (typeof v === 'string') return `s${v}`;
      if (typeof v === 'boolean') return v ? 't' : 'f';
      if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
      if (v instanceof Date && Number.isSafeInteger(v.getTime())) return `d${v.getTime()}`;
      throw new IcebergMetadataError(
        table,
        `${where} holds a value (${String(v)}) equality deletes are not matched on`,
      );
    }),
  );
}

/**
 * The top-level columns of a Parquet file whose field ids are `ids`, decoded whole by parquet-wasm (every codec;
 * no I/O), as arrays by field id; ids the file has no column of are `missing`.
 */
async function readColumnsById(
  store: ObjectStore,
  table: string,
  key: string,
  path: string,
  ids: readonly number[],
): Promise<{ rows: number; columns: Map<number, unknown[]>; missing: number[] }> {
  let bytes: Uint8Array;
  try {
    bytes = await store.get(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new IcebergMetadataError(table, `${path} is missing from storage`);
    throw err;
  }
  try {
    const metadata = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const names = new Map<number, string>();
    const schema = metadata.schema;
    let at = 1;
    for (let c = 0; c < (schema[0]?.num_children ?? 0) && at < schema.length; c++) {
      const element = schema[at];
      if (element === undefined) break;
      if (element.field_id !== undefined && ids.includes(element.field_id) && !element.num_children)
        names.set(element.field_id, element.name);
      at += 1 + descendants(schema, at);
    }
    const wanted = ids.filter((id) => names.has(id));
    const columns = new Map<number, unknown[]>();
    if (wanted.length > 0) {
      const arrow = await decodeWithParquetWasm(
        bytes,
        wanted.map((id) => names.get(id) as string),
      );
      for (const id of wanted) {
        const vector = arrow.getChild(names.get(id) as string);
        if (vector === null) throw new Error(`no column ${names.get(id)}`);
        columns.set(
          id,
          Array.from({ length: arrow.numRows }, (_, i) => vector.get(i)),
        );
      }
    }
    return { rows: Number(metadata.num_rows), columns, missing: ids.filter((id) => !names.has(id)) };
  } catch (err) {
    if (err instanceof IcebergMetadataError) throw err;
    throw new IcebergMetadataError(
      table,
      `${path} could not be read for its equality columns (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
}

/**
 * `columns` of a whole Parquet file as an Arrow table, decoded by parquet-wasm. Imported on first use: the module
 * loads its .wasm file when imported, which only the functions that rewrite ship (see infra/node-function.ts), so
 * a function that never meets such a delete (the profiler) never loads it.
 */
async function decodeWithParquetWasm(bytes: Uint8Array, columns: readonly string[]) {
  const [pw, arrow] = await Promise.all([import('parquet-wasm'), import('apache-arrow')]);
  const table = pw.readParquet(bytes, { columns: [...columns] });
  return arrow.tableFromIPC(table.intoIPCStream());
}

/** How many schema elements follow `at` as its descendants (a depth-first flattened Parquet schema). */
function descendants(schema: readonly { num_children?: number }[], at: number): number {
  let count = 0;
  let pending = schema[at]?.num_children ?? 0;
  for (let i = at + 1; pending > 0 && i < schema.length; i++) {
    pending += (schema[i]?.num_children ?? 0) - 1;
    count += 1;
  }
  return count;
}

/** Heap bytes one decoded (file_path, pos) row takes: its object, the position and a reference to the path. */
const POSITION_DELETE_ROW_BYTES = 128;

/**
 * Refuses a position-delete file larger than the memory budget's file size, or whose footer claims more rows than
 * the budget's decoded bytes hold, before any row is decoded: the file is the writer's, and its rows become objects.
 * @throws MetadataTooLargeError naming the file.
 */
function checkPositionDeleteSize(table: string, d: AppliedDelete, bytes: Uint8Array): void {
  const limits = currentMetadataLimits();
  const what = `Iceberg table ${table}: position-delete file`;
  const remedy = "have the table's owner rewrite its position deletes (rewrite_position_delete_files)";
  const refuse = (reason: string) =>
    new MetadataTooLargeError(d.key, what, reason, currentMemoryBudget().advice, remedy);
  if (bytes.length > limits.fileBytes)
    throw refuse(
      `it has ${describeBytes(bytes.length)}, more than the ${describeBytes(limits.fileBytes)} one such file may have`,
    );
  let rows: number;
  try {
    rows = Number(
      parquetMetadata(
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      ).num_rows,
    );
  } catch {
    return; // not Parquet: the decode says so, naming the file
  }
  if (rows * POSITION_DELETE_ROW_BYTES > limits.decodedBytes)
    throw refuse(
      `its footer claims ${rows} rows, which would take more than the ${describeBytes(limits.decodedBytes)} its decoded rows may take`,
    );
}

/** The positions a Parquet position-delete file names, per data file path among `wanted`. */
async function readPositionDeleteFile(
  store: ObjectStore,
  table: string,
  d: AppliedDelete,
  wanted: ReadonlySet<string>,
): Promise<ReadonlyMap<string, readonly number[]>> {
  let bytes: Uint8Array;
  try {
    bytes = await store.get(d.key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError)
      throw new IcebergMetadataError(table, `the position-delete file ${d.path} is missing from storage`);
    throw err;
  }
  checkPositionDeleteSize(table, d, bytes);
  let rows: { readonly path: unknown; readonly pos: unknown }[];
  try {
    rows = await decodePositionDeletes(bytes);
  } catch (err) {
    throw new IcebergMetadataError(
      table,
      `the position-delete file ${d.path} is not readable Parquet with file_path and pos (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
  if (rows.length !== d.records)
    throw new IcebergMetadataError(
      table,
      `the position-delete file ${d.path} holds ${rows.length} rows, its manifest entry says ${d.records}`,
    );
  const out = new Map<string, number[]>();
  for (const row of rows) {
    const path = row.path;
    if (typeof path !== 'string' || !wanted.has(path)) continue;
    const pos = typeof row.pos === 'bigint' ? Number(row.pos) : row.pos;
    if (typeof pos !== 'number' || !Number.isSafeInteger(pos) || pos < 0)
      throw new IcebergMetadataError(
        table,
        `the position-delete file ${d.path} has a row with pos ${String(row.pos)}`,
      );
    const list = out.get(path);
    if (list === undefined) out.set(path, [pos]);
    else list.push(pos);
  }
  return out;
}
