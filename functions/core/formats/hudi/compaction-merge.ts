// The merged view of one Merge-on-Read file slice, as Hudi's compactor builds it (HoodieMergeHandle over
// HoodieMergedLogRecordScanner, HUDI-NOTES §5): the slice's log files scanned up to the compaction instant (corrupt
// blocks skipped, rolled-back and uncommitted instants left out: log/scanner.ts), their records merged by record key
// with the table's payload or merge mode (log/merge.ts), then against the base file's keys. The result is said as
// the Parquet engine rewrites it: the base file's rows to drop (deleted rows of that input, by position) and the
// surviving log records as one extra Parquet file in the base file's own schema — so the engine's fingerprint, and
// with it verify, is of the merged view, never of the raw inputs. A decimal is carried as its unscaled integer from
// the log record (Avro bytes or fixed, or a Parquet block's column) into the base file's own decimal column, of the
// same precision and scale, or refused by name.
import { type FileMetaData, parquetMetadata, type SchemaElement } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import type { ObjectStore } from '../../../ports/object-store.js';
import { readFooterBytes } from '../../parquet/footer.js';
import { HUDI_INDEX_FOOTER_KEYS } from './bloom/index.js';
import { HudiCompactionUnsupportedError } from './compaction-errors.js';
import { fitsPrecision, isLogDecimal, twosComplementBytes } from './log/decimal.js';
import {
  baseComparisonsCannotRefuse,
  comparesAnyWithBase,
  DecodeBudget,
  HudiLogFormatError,
  HudiLogUnsupportedError,
  HudiMergeUnsupportedError,
  type LogScan,
  type MergedLogRecord,
  type MergePolicy,
  mergeLogBlocks,
  mergeSlice,
  type SliceMerge,
  scanLogFiles,
} from './log/index.js';
import { isDecimalElement, readRowsExact } from './log/parquet-rows.js';

/** One slice to merge: its base file and log files (keys relative to the store). */
export interface SliceToMerge {
  readonly baseKey: string;
  readonly logKeys: readonly string[];
  /** The base file's size, when the caller's listing has it (the plan-time check then makes no HEAD for it). */
  readonly baseSize?: number;
}

/** What merging a slice counted (the compaction commit's write stat takes them). */
export interface SliceMergeCounts {
  readonly baseRows: number;
  /** Base rows a log version replaced. */
  readonly updated: number;
  /** Base rows a log delete removed. */
  readonly deleted: number;
  /** Log records whose key the base did not hold. */
  readonly inserted: number;
  readonly logRecords: number;
  readonly logBlocks: number;
  readonly corruptBlocks: number;
  readonly rollbackBlocks: number;
  /** Distinct record keys the logs touched. */
  readonly keysTouched: number;
}

/** A slice's merged view: base rows to drop, the log rows to add, and the counts. */
export interface MergedSlice {
  readonly merge: SliceMerge;
  readonly counts: SliceMergeCounts;
  /** The base file's footer (its schema is the output's). */
  readonly baseMetadata: FileMetaData;
}

/** Parsers that keep times as Parquet stores them (the writer writes them back unchanged). */
const RAW_TIME = {
  timestampFromMilliseconds: (v: bigint) => v,
  timestampFromMicroseconds: (v: bigint) => v,
  timestampFromNanoseconds: (v: bigint) => v,
  dateFromDays: (v: number) => v,
};

function arrayBufferOf(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

/**
 * The merged view of one slice at compaction instant `instant`: logs of instants the timeline does not call
 * committed, or later than `instant`, are left out, as Hudi's scanner leaves them (`undefined`: no instant is
 * later).
 * @throws HudiCompactionUnsupportedError for a base schema the log rows cannot be written in exactly.
 * @throws what the log reader and merger throw (HudiLogFormatError, HudiLogUnsupportedError, HudiMergeUnsupportedError).
 */
export async function mergeFileSlice(
  store: ObjectStore,
  slice: SliceToMerge,
  policy: MergePolicy,
  isCommitted: (instant: string) => boolean,
  instant: string | undefined,
): Promise<MergedSlice> {
  const base = await readBaseWhole(store, slice.baseKey);
  const log = await mergedLog(store, slice.logKeys, policy, isCommitted, instant);
  return mergeWithBase(base, log, policy);
}

/** A slice's base file: its footer (its schema checked writable: refuseUnwritableSchema), and its bytes. */
interface BaseFile {
  readonly metadata: FileMetaData;
  /** The whole file, read once when first asked for. */
  readonly file: () => Promise<ArrayBuffer>;
}

/** The base file read whole (its rows are to be read). */
async function readBaseWhole(store: ObjectStore, baseKey: string): Promise<BaseFile> {
  const file = arrayBufferOf(await store.get(baseKey));
  const metadata = parquetMetadata(file, { geoparquet: false });
  refuseUnwritableSchema(baseKey, metadata.schema);
  return { metadata, file: async () => file };
}

/** The base file's footer alone (ranged reads of its end); the whole file read only if its rows are asked for. */
async function readBaseFooterOnly(store: ObjectStore, baseKey: string, size?: number): Promise<BaseFile> {
  const { tail } = await readFooterBytes(store, baseKey, size);
  const metadata = parquetMetadata(tail, { geoparquet: false });
  refuseUnwritableSchema(baseKey, metadata.schema);
  let whole: Promise<ArrayBuffer> | undefined;
  return {
    metadata,
    file: () => {
      whole ??= store.get(baseKey).then(arrayBufferOf);
      return whole;
    },
  };
}

/** The log side of a slice's merge: its log files scanned (up to `instant`), their records merged by key. */
interface MergedLog {
  readonly scan: LogScan;
  readonly records: ReadonlyMap<string, MergedLogRecord>;
}

async function mergedLog(
  store: ObjectStore,
  logKeys: readonly string[],
  policy: MergePolicy,
  isCommitted: (instant: string) => boolean,
  instant: string | undefined,
): Promise<MergedLog> {
  const logs = await Promise.all(logKeys.map(async (key) => ({ key, bytes: await store.get(key) })));
  const scan = scanLogFiles(
    logs,
    instant === undefined ? { isCommitted } : { isCommitted, latestInstant: instant },
  );
  return { scan, records: await mergeLogBlocks(scan.blocks, policy, new DecodeBudget()) };
}

/** The merged log against the base file's keys (and ordering values): the slice's merged view. */
async function mergeWithBase(base: BaseFile, merged: MergedLog, policy: MergePolicy): Promise<MergedSlice> {
  const { metadata: baseMetadata } = base;
  const file = await base.file();
  const { scan, records: log } = merged;
  const field = policy.orderingField;
  const columns = ['_hoodie_record_key', ...(field === undefined ? [] : [field])];
  // A decimal ordering field is read exactly, as the log's decimals are, so the two compare by value.
  const keyRows = await readRowsExact({ file, metadata: baseMetadata, columns, parsers: RAW_TIME });
  const merge = mergeSlice(
    keyRows.map((r, position) => ({
      position,
      recordKey: String(r._hoodie_record_key),
      orderingValue: field === undefined ? null : (r[field] ?? null),
    })),
    log,
    policy,
  );
  // Counted against the log's keys the base holds (a few per slice), not a set of every base key.
  let deleted = 0;
  for (const key of merge.baseHeld) {
    const record = log.get(key);
    if (record !== undefined && isDelete(record)) deleted++;
  }
  const inserted = merge.append.filter((r) => !merge.baseHeld.has(String(r._hoodie_record_key))).length;
  return {
    merge,
    baseMetadata,
    counts: {
      baseRows: keyRows.length,
      updated: merge.dropPositions.length - deleted,
      deleted,
      inserted,
      // The merged records (one per key): the scanner does not count superseded versions.
      logRecords: log.size,
      logBlocks: scan.blocks.length,
      corruptBlocks: scan.corruptBlocks,
      rollbackBlocks: scan.rolledBack.length,
      keysTouched: log.size,
    },
  };
}

function isDelete(record: MergedLogRecord): boolean {
  return record.kind === 'delete' || record.deleted;
}

/**
 * Refuses, before a compaction is scheduled, a slice the compact step would refuse, over every committed log block
 * the slice has now; nothing is written. A plan is written only for slices this passes, so a refusal leaves the
 * timeline byte for byte as it was instead of a plan no run of ours can finish (Hudi never removes a scheduled
 * compaction by itself). A log block committed after this check can still be refused at T (see
 * compaction-workflow.ts, `unscheduleRefused`).
 *
 * The compact step's refusals are the base file's schema (its footer), the log's framing, blocks and records, their
 * merge by key, the comparison of the log's ordering values with the base rows' (values of types with no common
 * order), and each surviving log row's values converted for the base schema. Only the last two depend on the base
 * rows, and only through which log records survive and the types of the base's ordering values; so this reads the
 * footer and the logs as the compact step does, and the base rows not at all when it can tell without them that
 * neither can refuse: every log row that could survive (every upsert the log keeps, a superset of those the merge
 * appends) converts, and no log ordering value it compares with the base is of a type that has no order with those
 * of the base's ordering column (types told from the footer when the column is a plain number, else read). Else —
 * a refusal is possible — the slice is merged with its base rows as the compact step merges it, and that merge's
 * refusal, if any, is thrown: the same refusal by name either way.
 * @throws HudiCompactionUnsupportedError, HudiLogFormatError, HudiLogUnsupportedError, HudiMergeUnsupportedError —
 *   the compact step's own refusals, by name.
 */
export async function checkSliceMergeable(
  store: ObjectStore,
  slice: SliceToMerge,
  policy: MergePolicy,
  isCommitted: (instant: string) => boolean,
): Promise<void> {
  const base = await readBaseFooterOnly(store, slice.baseKey, slice.baseSize);
  const log = await mergedLog(store, slice.logKeys, policy, isCommitted, undefined);
  if (await cannotRefuseWithBase(base, log, policy, slice.baseKey)) return;
  // Every value converted as the write-back converts it (its refusals are there), but nothing encoded.
  logRowColumns(await mergeWithBase(base, log, policy), slice.baseKey);
}

/**
 * Whether merging `log` with `base`'s rows and converting the surviving log rows cannot refuse, told without the
 * base's keys (see {@link checkSliceMergeable}); false when it might (or a read here fails: the merge then decides).
 */
async function cannotRefuseWithBase(
  base: BaseFile,
  log: MergedLog,
  policy: MergePolicy,
  where: string,
): Promise<boolean> {
  try {
    const survivors: Readonly<Record<string, unknown>>[] = [];
    for (const record of log.records.values())
      if (record.kind === 'upsert' && !record.deleted) survivors.push(record.row);
    rowColumns(base.metadata.schema, survivors, where);
    const field = policy.orderingField;
    if (field === undefined || !comparesAnyWithBase(log.records, policy)) return true;
    const values = await baseOrderingTypes(base, field);
    return values !== undefined && baseComparisonsCannotRefuse(log.records, policy, values);
  } catch {
    return false;
  }
}

/**
 * Values of each type the base file's ordering column `field` holds, as the merge reads them (RAW_TIME): for a plain
 * number column (INT32, INT64, FLOAT, DOUBLE; not a decimal) one number stands for all, for hyparquet hands every
 * value of such a column as a number or a BigInt whatever its annotation (date, time, timestamp, unsigned), and the
 * two compare alike; else every value, read. Undefined when the base has no such column (the merge decides).
 */
async function baseOrderingTypes(base: BaseFile, field: string): Promise<readonly unknown[] | undefined> {
  const element = base.metadata.schema.slice(1).find((e) => e.name === field);
  if (element === undefined) return undefined;
  if (NUMBER_TYPES.has(element.type ?? '') && !isDecimalElement(element)) return [0];
  const rows = await readRowsExact({
    file: await base.file(),
    metadata: base.metadata,
    columns: [field],
    parsers: RAW_TIME,
  });
  return rows.map((r) => r[field] ?? null);
}

const NUMBER_TYPES: ReadonlySet<string> = new Set(['INT32', 'INT64', 'FLOAT', 'DOUBLE']);

/**
 * The base-schema part of {@link checkSliceMergeable} alone: a base file whose schema the log rows cannot be written
 * in exactly, refused by name.
 * @throws HudiCompactionUnsupportedError naming the column.
 */
export async function checkSliceWritable(store: ObjectStore, baseKey: string): Promise<void> {
  await readBaseFooterOnly(store, baseKey);
}

/**
 * The names of the errors by which the merge refuses a slice (this module's, and the log reader's and merger's): the
 * same slice is refused the same way by every run until its files change. The format's `operatorErrors`, and what
 * the workflow's undo takes for a refusal of our own plan (compaction-workflow.ts).
 */
export const MERGE_REFUSAL_ERRORS: readonly string[] = [
  HudiCompactionUnsupportedError.name,
  HudiLogFormatError.name,
  HudiLogUnsupportedError.name,
  HudiMergeUnsupportedError.name,
];

/** Leaves the writer cannot reproduce from a log record without loss: refused by name before anything is written. */
function refuseUnwritableSchema(baseKey: string, schema: readonly SchemaElement[]): void {
  const [, ...fields] = schema;
  for (const e of fields) {
    if ((e.num_children ?? 0) > 0)
      throw new HudiCompactionUnsupportedError(
        baseKey,
        `nested column ${e.name}`,
        'log records are written back into flat schemas only',
      );
    if (e.repetition_type === 'REPEATED')
      throw new HudiCompactionUnsupportedError(baseKey, `repeated column ${e.name}`, 'not a flat column');
    if (e.type === 'INT96')
      throw new HudiCompactionUnsupportedError(baseKey, `INT96 column ${e.name}`, 'Spark legacy timestamps');
  }
}

/**
 * A log record's decimal as the writer takes it for the base file's decimal column `element`: its unscaled value,
 * which the writer stores in the column's own physical type (INT32, INT64, BYTE_ARRAY or FIXED_LEN_BYTE_ARRAY of the
 * column's length) — only when that is the same number: the record's scale is the column's, its digits fit the
 * column's precision (and so its fixed length). Anything else (another scale, a wider value, a decimal the log
 * schema did not declare as one) is refused by name, never rescaled or rounded.
 * @throws HudiCompactionUnsupportedError
 */
function decimalColumnValue(element: SchemaElement, value: unknown, where: string): bigint {
  const column = `decimal(${element.precision ?? '?'}, ${element.scale ?? 0}) column ${element.name}`;
  if (!isLogDecimal(value))
    throw new HudiCompactionUnsupportedError(
      where,
      `a log value of ${column} that is not a decimal (${value instanceof Uint8Array ? 'bytes' : typeof value})`,
      'its log schema must declare the column as Avro bytes or fixed with logicalType decimal, else its scale is unknown',
    );
  const scale = element.scale ?? 0;
  if (value.scale !== scale)
    throw new HudiCompactionUnsupportedError(
      where,
      `a log decimal of scale ${value.scale} for ${column}`,
      'rescaling a decimal is not part of a compaction; the log and base schemas must agree',
    );
  const fits =
    fitsPrecision(value.unscaled, element.precision ?? 0) &&
    (element.type !== 'FIXED_LEN_BYTE_ARRAY' ||
      twosComplementBytes(value.unscaled, element.type_length ?? 0) !== undefined) &&
    (element.type !== 'INT32' || (value.unscaled >= -(2n ** 31n) && value.unscaled < 2n ** 31n)) &&
    (element.type !== 'INT64' || (value.unscaled >= -(2n ** 63n) && value.unscaled < 2n ** 63n));
  if (!fits)
    throw new HudiCompactionUnsupportedError(
      where,
      `a log decimal with unscaled value ${value.unscaled} for ${column}`,
      'it has more digits than the column holds',
    );
  return value.unscaled;
}

/** A log record's value as the writer takes it for a column of `element` (its stored form, exactly). */
function columnValue(element: SchemaElement, value: unknown, where: string): unknown {
  if (value === null || value === undefined) return null;
  if (isDecimalElement(element)) return decimalColumnValue(element, value, where);
  switch (element.type) {
    case 'INT64':
      if (typeof value === 'bigint') return value;
      if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
      break;
    case 'INT32':
      if (typeof value === 'number' && Number.isInteger(value)) return value;
      if (typeof value === 'bigint') return Number(value);
      break;
    case 'FLOAT':
    case 'DOUBLE':
      if (typeof value === 'number') return value;
      break;
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      break;
    case 'BYTE_ARRAY':
    case 'FIXED_LEN_BYTE_ARRAY':
      if (typeof value === 'string') return value;
      if (value instanceof Uint8Array) return value;
      break;
  }
  throw new HudiCompactionUnsupportedError(
    where,
    `a log value of column ${element.name} (${typeof value}) for a ${element.type} column`,
    'it cannot be written in the base file schema exactly',
  );
}

/**
 * The surviving log records as one Parquet file in the base file's schema and key-value metadata (less the index
 * entries, which the rewrite recomputes): the rewrite's second input. Columns the log schema lacks (added to the
 * base since) are null; a log column the base lacks is refused, as Hudi would fail the write too.
 * @throws HudiCompactionUnsupportedError for a value or column that cannot be written exactly.
 */
export function logRowsParquet(
  merged: MergedSlice,
  where: string,
): { readonly bytes: Uint8Array; readonly rows: number } {
  const schema = merged.baseMetadata.schema;
  const rows = merged.merge.append;
  const columnData = logRowColumns(merged, where);
  const kvMetadata = (merged.baseMetadata.key_value_metadata ?? []).filter(
    (kv) => !HUDI_INDEX_FOOTER_KEYS.includes(kv.key),
  );
  const buffer = parquetWriteBuffer({
    columnData,
    // hyparquet-writer bundles its own hyparquet types: the same elements, typed apart.
    schema: schema.map((e) => ({ ...e })) as Parameters<typeof parquetWriteBuffer>[0]['schema'],
    // An empty key-value list is written as a list of no element type, which parquet-wasm refuses to read ("Expected
    // list element type of Struct"): a base file whose only entries were Hudi's index keys gets none at all.
    ...(kvMetadata.length === 0 ? {} : { kvMetadata }),
    statistics: false,
    codec: 'UNCOMPRESSED',
  });
  return { bytes: new Uint8Array(buffer), rows: rows.length };
}

/**
 * The surviving log records' values, column by column in the base file's schema, as the writer takes them.
 * @throws HudiCompactionUnsupportedError for a value or column that cannot be written exactly.
 */
function logRowColumns(merged: MergedSlice, where: string): { name: string; data: unknown[] }[] {
  return rowColumns(merged.baseMetadata.schema, merged.merge.append, where);
}

/** Log rows' values, column by column in `schema`, as the writer takes them (see {@link logRowColumns}). */
function rowColumns(
  schema: readonly SchemaElement[],
  rows: readonly Readonly<Record<string, unknown>>[],
  where: string,
): { name: string; data: unknown[] }[] {
  const [, ...fields] = schema;
  const names = new Set(fields.map((f) => f.name));
  for (const row of rows)
    for (const column of Object.keys(row))
      if (!names.has(column))
        throw new HudiCompactionUnsupportedError(
          where,
          `log column ${column}, which the base file does not have`,
          'schema evolution is not compacted',
        );
  return fields.map((element) => ({
    name: element.name,
    data: rows.map((row) => columnValue(element, row[element.name], where)),
  }));
}
