// Writes Hudi log blocks and names log files, byte for byte as Hudi's HoodieLogFormatWriter and HoodieAvroDataBlock
// write them — the inverse of blocks.ts and content.ts, built on the same tables (block types and header keys by
// Java ordinal, the magic, the format version), so what this writes is what the reader reads by construction and
// the two cannot drift apart. A small writer of Merge-on-Read deltas (the project's sample appender, the tests'
// crafted blocks) needs exactly this much:
//
//   block   magic "#HUDI#" | int64 block length | int32 format version (1) | int32 block type ordinal | header
//           | int64 content length | content | footer | int64 reverse pointer (= block length + 6)
//   header, footer   int32 count, then per entry int32 key ordinal, int32 UTF-8 length, the UTF-8 bytes
//   AVRO_DATA content   int32 version 3, int32 record count, per record int32 length + one Avro binary datum of
//                       the header's SCHEMA (HoodieAvroDataBlock.serializeRecords)
//   PARQUET_DATA content   a whole Parquet file of the records (HoodieParquetDataBlock)
//   DELETE content      int32 version 3, int32 length, one Avro HoodieDeleteRecordList datum
//   COMMAND             no content; COMMAND_BLOCK_TYPE 0 (rollback) and its TARGET_INSTANT_TIME
//
// Header entries are written in the order given: Hudi keeps them in a HashMap keyed by an enum, whose iteration
// order varies between JVM runs (the fixtures have both INSTANT_TIME, SCHEMA and SCHEMA, INSTANT_TIME), and its
// reader looks them up by key.
import { avroReader } from './avro.js';
import {
  BLOCK_TYPES,
  HEADER_KEYS,
  type HeaderKey,
  type HudiBlockType,
  LOG_FORMAT_VERSION,
  MAGIC,
} from './blocks.js';
import { fitsPrecision, isLogDecimal, type LogDecimal, twosComplementBytes } from './decimal.js';
import { HudiLogWriteError } from './errors.js';

/** The block content version Hudi has written since 0.12 for data and delete blocks (content.ts reads only it). */
export const BLOCK_CONTENT_VERSION = 3;

/** Header or footer entries, in the order they are written. */
export type LogBlockMetadata = readonly (readonly [HeaderKey, string])[];

/** One block to frame: its type, header, content and footer. */
export interface LogBlockInput {
  readonly type: HudiBlockType;
  readonly header: LogBlockMetadata;
  readonly content?: Uint8Array;
  readonly footer?: LogBlockMetadata;
}

const utf8 = new TextEncoder();

function int32(n: number): Uint8Array {
  const out = new Uint8Array(4);
  new DataView(out.buffer).setInt32(0, n);
  return out;
}

function int64(n: number | bigint): Uint8Array {
  const out = new Uint8Array(8);
  new DataView(out.buffer).setBigInt64(0, BigInt(n));
  return out;
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function metadataBytes(entries: LogBlockMetadata): Uint8Array[] {
  const parts = [int32(entries.length)];
  for (const [key, value] of entries) {
    const ordinal = HEADER_KEYS.indexOf(key);
    if (ordinal < 0) throw new HudiLogWriteError(`header key ${key} is not one Hudi defines`);
    const bytes = utf8.encode(value);
    parts.push(int32(ordinal), int32(bytes.length), bytes);
  }
  return parts;
}

/**
 * One whole block, framed as HoodieLogFormatWriter appends it.
 * @throws HudiLogWriteError for a block type or header key Hudi does not define.
 */
export function encodeLogBlock(block: LogBlockInput): Uint8Array {
  const ordinal = BLOCK_TYPES.indexOf(block.type);
  if (ordinal < 0) throw new HudiLogWriteError(`block type ${block.type} is not one Hudi defines`);
  const content = block.content ?? new Uint8Array(0);
  const body = concat([
    int32(LOG_FORMAT_VERSION),
    int32(ordinal),
    ...metadataBytes(block.header),
    int64(content.length),
    content,
    ...metadataBytes(block.footer ?? []),
  ]);
  // The length counts everything after its own field, the reverse pointer included; the pointer adds the magic.
  const length = body.length + 8;
  return concat([MAGIC, int64(length), body, int64(length + MAGIC.length)]);
}

/**
 * An Avro data block's content from records already encoded as Avro binary datums (one per record): the framing
 * alone, for callers holding bytes (and for tests that craft a datum the schema does not allow).
 */
export function avroDataContent(datums: readonly Uint8Array[], claimedCount = datums.length): Uint8Array {
  const parts = [int32(BLOCK_CONTENT_VERSION), int32(claimedCount)];
  for (const d of datums) parts.push(int32(d.length), d);
  return concat(parts);
}

/**
 * The Avro binary datums of `records` in the writer schema `schemaText`, as the reader decodes them: 64-bit longs as
 * BigInt, a nullable union as its plain value, a top-level decimal as a {@link LogDecimal} of the schema's scale.
 * @throws HudiLogWriteError when the schema is not an Avro record schema, or a record does not fit it.
 */
export function encodeAvroRecords(
  schemaText: string,
  records: readonly Readonly<Record<string, unknown>>[],
): Uint8Array[] {
  let reader: ReturnType<typeof avroReader>;
  try {
    reader = avroReader(schemaText);
  } catch (err) {
    throw new HudiLogWriteError(`the schema is not usable (${(err as Error).message})`, { cause: err });
  }
  return records.map((record, i) => {
    const datum = withDecimalBytes(reader, record, i);
    try {
      return new Uint8Array(reader.type.toBuffer(datum));
    } catch (err) {
      throw new HudiLogWriteError(`record ${i} does not fit the schema (${(err as Error).message})`, {
        cause: err,
      });
    }
  });
}

/**
 * `record` with each decimal field's {@link LogDecimal} as the bytes its schema type holds: the unscaled value in two's
 * complement, sign-extended to a `fixed`'s size; the value as the reader decodes it back.
 * @throws HudiLogWriteError for a decimal of another scale, more digits than the precision, or too wide for the fixed.
 */
function withDecimalBytes(
  reader: ReturnType<typeof avroReader>,
  record: Readonly<Record<string, unknown>>,
  i: number,
): Readonly<Record<string, unknown>> {
  if (reader.decimals.size === 0) return record;
  const out: Record<string, unknown> = { ...record };
  for (const [name, decimal] of reader.decimals) {
    const value = record[name];
    if (!isLogDecimal(value)) continue;
    const where = `record ${i}'s decimal ${name}`;
    if (value.scale !== decimal.scale)
      throw new HudiLogWriteError(`${where} has scale ${value.scale}, its schema ${decimal.scale}`);
    if (!fitsPrecision(value.unscaled, decimal.precision))
      throw new HudiLogWriteError(`${where} has more than the ${decimal.precision} digits of its schema`);
    const bytes = twosComplementBytes(value.unscaled, decimal.size);
    if (bytes === undefined)
      throw new HudiLogWriteError(`${where} does not fit the ${decimal.size} bytes of its fixed`);
    out[name] = Buffer.from(bytes);
  }
  return out;
}

/** Header of a data or delete block: its writing instant and the writer schema (the order of the fixtures' v6). */
function dataHeader(instant: string, schemaText: string): LogBlockMetadata {
  checkInstant(instant);
  return [
    ['INSTANT_TIME', instant],
    ['SCHEMA', schemaText],
  ];
}

/**
 * An AVRO_DATA block of `records` written at `instant` in `schemaText` (the table's writer schema with Hudi's meta
 * fields first), as HoodieAppendHandle appends one per delta commit and file group.
 * @throws HudiLogWriteError for an instant that is not 17 digits or a record that does not fit the schema.
 */
export function avroDataBlock(
  instant: string,
  schemaText: string,
  records: readonly Readonly<Record<string, unknown>>[],
): Uint8Array {
  return encodeLogBlock({
    type: 'AVRO_DATA_BLOCK',
    header: dataHeader(instant, schemaText),
    content: avroDataContent(encodeAvroRecords(schemaText, records)),
  });
}

/**
 * A PARQUET_DATA block written at `instant` in `schemaText`, its content the whole Parquet file `parquet` of the
 * records (meta fields first, as HoodieParquetDataBlock holds them when hoodie.logfile.data.block.format is parquet).
 * @throws HudiLogWriteError for an instant that is not 17 digits.
 */
export function parquetDataBlock(instant: string, schemaText: string, parquet: Uint8Array): Uint8Array {
  return encodeLogBlock({
    type: 'PARQUET_DATA_BLOCK',
    header: dataHeader(instant, schemaText),
    content: parquet,
  });
}

/**
 * A delete's ordering (precombine) value, as a HoodieDeleteRecordList wrapper carries it: null (none), a boolean, an
 * int32 (IntWrapper; 0 is Hudi's natural-order delete), a bigint (LongWrapper), a string (StringWrapper) or, when
 * tagged, a double (DoubleWrapper). Other wrappers (dates, decimals, bytes, times) are not written.
 */
export type DeleteOrderingValue = null | boolean | number | bigint | string | { readonly double: number };

/** One entry of a delete block. */
export interface DeleteInput {
  readonly recordKey: string;
  readonly partitionPath: string;
  readonly orderingValue: DeleteOrderingValue;
}

/** Union branches of HoodieDeleteRecordList's `orderingVal` that this writer emits (content.ts's ORDERING_BRANCHES). */
const BRANCH = {
  null: 0,
  BooleanWrapper: 1,
  IntWrapper: 2,
  LongWrapper: 3,
  DoubleWrapper: 5,
  StringWrapper: 7,
};

/** A minimal Avro binary encoder: zig-zag varints, strings, doubles, booleans. */
class AvroBytes {
  private readonly parts: Uint8Array[] = [];

  long(n: number | bigint): this {
    let v = BigInt(n);
    v = v < 0n ? (-v << 1n) - 1n : v << 1n;
    const bytes: number[] = [];
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) b |= 0x80;
      bytes.push(b);
    } while (v !== 0n);
    this.parts.push(Uint8Array.from(bytes));
    return this;
  }

  string(s: string): this {
    const b = utf8.encode(s);
    this.long(b.length);
    this.parts.push(b);
    return this;
  }

  double(d: number): this {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, d, true);
    this.parts.push(b);
    return this;
  }

  boolean(v: boolean): this {
    this.parts.push(Uint8Array.of(v ? 1 : 0));
    return this;
  }

  bytes(): Uint8Array {
    return concat(this.parts);
  }
}

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

function orderingValue(out: AvroBytes, value: DeleteOrderingValue, i: number): void {
  if (value === null) out.long(BRANCH.null);
  else if (typeof value === 'boolean') out.long(BRANCH.BooleanWrapper).boolean(value);
  else if (typeof value === 'bigint') out.long(BRANCH.LongWrapper).long(value);
  else if (typeof value === 'string') out.long(BRANCH.StringWrapper).string(value);
  else if (typeof value === 'number') {
    if (!Number.isInteger(value) || value < INT32_MIN || value > INT32_MAX)
      throw new HudiLogWriteError(
        `delete ${i}'s ordering value ${value} is not an int32 (tag a double as { double: ${value} })`,
      );
    out.long(BRANCH.IntWrapper).long(value);
  } else out.long(BRANCH.DoubleWrapper).double(value.double);
}

/**
 * A DELETE block of `deletes` written at `instant` (HoodieDeleteBlock, content version 3): the HoodieDeleteRecordList
 * as one array block, each entry's record key and partition path as the string branch of their union.
 * @throws HudiLogWriteError for an instant that is not 17 digits or an ordering value no wrapper here carries.
 */
export function deleteBlock(
  instant: string,
  schemaText: string,
  deletes: readonly DeleteInput[],
): Uint8Array {
  return encodeLogBlock({
    type: 'DELETE_BLOCK',
    header: dataHeader(instant, schemaText),
    content: deleteContent(deletes),
  });
}

/**
 * A DELETE block's content: int32 version 3, int32 length, the HoodieDeleteRecordList datum (one array block).
 * @throws HudiLogWriteError for an ordering value no wrapper here carries.
 */
export function deleteContent(deletes: readonly DeleteInput[]): Uint8Array {
  const datum = new AvroBytes();
  if (deletes.length > 0) datum.long(deletes.length);
  deletes.forEach((d, i) => {
    datum.long(1).string(d.recordKey).long(1).string(d.partitionPath);
    orderingValue(datum, d.orderingValue, i);
  });
  const list = datum.long(0).bytes();
  return concat([int32(BLOCK_CONTENT_VERSION), int32(list.length), list]);
}

/** A rollback COMMAND block written at `instant`, voiding every block of `target` before it in the slice's logs. */
export function rollbackBlock(instant: string, target: string): Uint8Array {
  checkInstant(instant);
  checkInstant(target);
  return encodeLogBlock({
    type: 'COMMAND_BLOCK',
    header: [
      ['INSTANT_TIME', instant],
      ['COMMAND_BLOCK_TYPE', '0'],
      ['TARGET_INSTANT_TIME', target],
    ],
  });
}

/** What names a log file. */
export interface LogFileNameInput {
  readonly fileId: string;
  /**
   * Table version 6: the base instant of the file slice the log extends; 8 and later: the writing deltacommit's own
   * instant (HUDI-NOTES §3.1; the v8 fixture's log names match their blocks' INSTANT_TIME). See
   * {@link logFileInstant}.
   */
  readonly instant: string;
  /** 1 for a slice's first log (Hudi's LOGFILE_BASE_VERSION); each further file of the same name stem adds one. */
  readonly version: number;
  /** `<partitionId>-<stageId>-<attemptId>` of the writing task. */
  readonly writeToken: string;
}

/**
 * A log file's name, `.<fileId>_<instant>.log.<version>_<writeToken>`, as HoodieLogFile names it.
 * @throws HudiLogWriteError for a file id with `_` or `/`, an instant that is not 17 digits, a version below 1 or a
 *   malformed write token — names the reader (scanner.ts, file-groups.ts) would not parse back to the same parts.
 */
export function logFileName(input: LogFileNameInput): string {
  const { fileId, instant, version, writeToken } = input;
  if (fileId === '' || /[_/]/.test(fileId))
    throw new HudiLogWriteError(`"${fileId}" cannot be a file id (empty, or with "_" or "/")`);
  checkInstant(instant);
  if (!Number.isSafeInteger(version) || version < 1)
    throw new HudiLogWriteError(`log version ${version} is not a count from 1`);
  if (!/^\d+-\d+-\d+$/.test(writeToken)) throw new HudiLogWriteError(`"${writeToken}" is not a write token`);
  return `.${fileId}_${instant}.log.${version}_${writeToken}`;
}

/**
 * The instant a new log file is named by: on table version 6 the base instant of the slice it extends (a log
 * joins its slice by name), on 8 and later the writing deltacommit's instant (a log joins the slice by its
 * completion time).
 */
export function logFileInstant(
  tableVersion: number,
  sliceBaseInstant: string,
  deltaCommitInstant: string,
): string {
  return tableVersion === 6 ? sliceBaseInstant : deltaCommitInstant;
}

function checkInstant(instant: string): void {
  if (!/^\d{17}$/.test(instant)) throw new HudiLogWriteError(`"${instant}" is not a 17-digit instant time`);
}
