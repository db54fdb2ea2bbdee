// The contents of the log blocks a compaction needs, decoded from a block's bytes:
//   AVRO_DATA    int32 block version (3), int32 record count, then per record an int32 length and one Avro binary
//                datum of the header's SCHEMA;
//   PARQUET_DATA a whole Parquet file;
//   DELETE       int32 block version (3), int32 length, one Avro datum of HoodieDeleteRecordList (below version 3
//                the list was Java-serialised by Kryo: refused);
//   COMMAND      no content; the header says the command (0 = rollback) and its TARGET_INSTANT_TIME.
// A decimal, from either kind of data block, is its unscaled integer and scale (decimal.ts), never a double.
// HFILE_DATA (metadata-table blocks) and CDC_DATA (change-data files) are refused by name, as are blocks Hudi's newer
// writers mark partial (IS_PARTIAL) or log-compacted (COMPACTED_BLOCK_TIMES): reading them as plain blocks would
// fabricate values or count records twice.
import { parquetMetadata } from 'hyparquet';
import { decodedRowGroupBounds } from '../../../parquet/decoded-size.js';
import { avroReader, Cursor, decodeDatum } from './avro.js';
import type { LogBlock } from './blocks.js';
import type { DecodeBudget } from './budget.js';
import { twosComplement } from './decimal.js';
import { HudiLogFormatError, HudiLogUnsupportedError } from './errors.js';
import { isDecimalElement, readRowsExact, topLevelDecimals } from './parquet-rows.js';

/** The block content version Hudi has written since 0.12 for data and delete blocks. */
const BLOCK_CONTENT_VERSION = 3;

/**
 * The ordering (precombine) value of a delete, as `HoodieDeleteRecordList` carries it: a union of one-field wrapper
 * records (`BooleanWrapper` … `TimestampMicrosWrapper`, apache/hudi hudi-common/src/main/avro/
 * HoodieDeleteRecordList.avsc), unwrapped here to the value. Longs are BigInt, ints and floating points numbers,
 * a decimal its unscaled value and scale. `null` means none was written.
 */
export type OrderingValue =
  | null
  | boolean
  | number
  | bigint
  | string
  | Uint8Array
  | { readonly unscaled: bigint; readonly scale: number };

/** One entry of a delete block. */
export interface DeleteEntry {
  readonly recordKey: string | null;
  readonly partitionPath: string | null;
  readonly orderingValue: OrderingValue;
  /**
   * Whether the writer's ordering value was an IntWrapper 0 or absent: Hudi's "natural order" delete (what SQL
   * DELETE writes), which wins by arrival instead of by ordering value (`DeleteRecord.getOrderingValue().equals(0)`).
   */
  readonly naturalOrder: boolean;
}

/** What one data or delete block holds. */
export type BlockRecords =
  | { readonly kind: 'data'; readonly records: readonly Record<string, unknown>[] }
  | { readonly kind: 'delete'; readonly deletes: readonly DeleteEntry[] };

/**
 * The records of a data or delete block.
 * @throws HudiLogUnsupportedError for HFILE, CDC, partial or log-compacted blocks, and content versions other
 *   than 3.
 * @throws HudiLogFormatError when the content does not decode.
 * @throws MetadataTooLargeError when the records would outgrow `budget`.
 */
export async function decodeBlockRecords(block: LogBlock, budget: DecodeBudget): Promise<BlockRecords> {
  refuseUnsupported(block);
  switch (block.type) {
    case 'AVRO_DATA_BLOCK':
      return { kind: 'data', records: decodeAvroData(block, budget) };
    case 'PARQUET_DATA_BLOCK':
      return { kind: 'data', records: await decodeParquetData(block, budget) };
    case 'DELETE_BLOCK':
      return { kind: 'delete', deletes: decodeDeletes(block, budget) };
    default:
      throw new HudiLogFormatError(block.file, block.offset, `a ${block.type} holds no records`);
  }
}

/** Refuses, by Hudi's name, what this reader does not implement. */
export function refuseUnsupported(block: LogBlock): void {
  if (block.type === 'HFILE_DATA_BLOCK')
    throw new HudiLogUnsupportedError(
      block.file,
      block.offset,
      'an HFILE_DATA block',
      'HFile blocks belong to the metadata table',
    );
  if (block.type === 'CDC_DATA_BLOCK')
    throw new HudiLogUnsupportedError(
      block.file,
      block.offset,
      'a CDC_DATA block',
      'change-data-capture logs are not compacted',
    );
  if ((block.header.get('IS_PARTIAL') ?? 'false').toLowerCase() === 'true')
    throw new HudiLogUnsupportedError(
      block.file,
      block.offset,
      'a partial-update block (IS_PARTIAL)',
      'its records carry only the columns that were written',
    );
  if (block.header.has('COMPACTED_BLOCK_TIMES'))
    throw new HudiLogUnsupportedError(
      block.file,
      block.offset,
      'a log-compacted block (COMPACTED_BLOCK_TIMES)',
      'log compaction (logcompaction instants) is not implemented',
    );
}

/** A rollback command block's target, or a refusal for any other command. */
export function rollbackTarget(block: LogBlock): string {
  const command = block.header.get('COMMAND_BLOCK_TYPE');
  if (command !== '0')
    throw new HudiLogUnsupportedError(
      block.file,
      block.offset,
      `command block type ${command ?? '(none)'}`,
      'only rollback (0) commands exist in Hudi',
    );
  const target = block.header.get('TARGET_INSTANT_TIME');
  if (target === undefined)
    throw new HudiLogFormatError(block.file, block.offset, 'a rollback block names no TARGET_INSTANT_TIME');
  return target;
}

/** Reads big-endian fields of a block's content, never past its end. */
class ContentReader {
  private readonly view: DataView;
  pos = 0;

  constructor(private readonly block: LogBlock) {
    const c = block.content;
    this.view = new DataView(c.buffer, c.byteOffset, c.byteLength);
  }

  get left(): number {
    return this.block.content.length - this.pos;
  }

  int32(what: string): number {
    if (this.left < 4) throw this.error(`the content ends inside ${what}`);
    const v = this.view.getInt32(this.pos);
    this.pos += 4;
    return v;
  }

  bytes(n: number, what: string): Uint8Array {
    if (n < 0 || n > this.left) throw this.error(`${what} claims ${n} bytes but ${this.left} are left`);
    const out = this.block.content.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  error(reason: string, cause?: unknown): HudiLogFormatError {
    return new HudiLogFormatError(
      this.block.file,
      this.block.contentOffset + this.pos,
      reason,
      cause === undefined ? undefined : { cause },
    );
  }

  version(): void {
    const version = this.int32('the block version');
    if (version !== BLOCK_CONTENT_VERSION)
      throw new HudiLogUnsupportedError(
        this.block.file,
        this.block.contentOffset,
        `${this.block.type} content version ${version}`,
        `only version ${BLOCK_CONTENT_VERSION} is read${this.block.type === 'DELETE_BLOCK' ? ' (older delete blocks are Kryo-serialised Java objects)' : ''}`,
      );
  }
}

function decodeAvroData(block: LogBlock, budget: DecodeBudget): Record<string, unknown>[] {
  const r = new ContentReader(block);
  r.version();
  const schemaText = block.header.get('SCHEMA');
  if (schemaText === undefined) throw r.error('the data block has no SCHEMA in its header');
  let reader: ReturnType<typeof avroReader>;
  try {
    reader = avroReader(schemaText);
  } catch (err) {
    throw new HudiLogFormatError(
      block.file,
      block.offset,
      `its SCHEMA is not usable (${(err as Error).message})`,
      {
        cause: err,
      },
    );
  }
  const count = r.int32('the record count');
  // Each record takes at least its four-byte length, so a count the content cannot hold is refused first.
  if (count < 0 || count > r.left / 4) throw r.error(`the block claims ${count} records in ${r.left} bytes`);
  const records: Record<string, unknown>[] = [];
  for (let i = 0; i < count; i++) {
    const length = r.int32(`the length of record ${i}`);
    const at = r.pos;
    const datum = r.bytes(length, `record ${i}`);
    try {
      records.push(decodeDatum(reader, datum, budget, block.file));
    } catch (err) {
      if (!(err instanceof Error) || err.name === 'MetadataTooLargeError') throw err;
      throw new HudiLogFormatError(
        block.file,
        block.contentOffset + at,
        `record ${i} does not decode (${err.message})`,
        {
          cause: err,
        },
      );
    }
  }
  return records;
}

/**
 * Dates and timestamps as their stored numbers (days; milli-, micro- or nanoseconds as BigInt) instead of Date
 * objects: what an Avro block holds for the same columns, exact at every precision, and one representation for the
 * later projection onto the base file's schema whichever kind of block a record came from.
 */
const RAW_TIME = {
  timestampFromMilliseconds: (v: bigint) => v,
  timestampFromMicroseconds: (v: bigint) => v,
  timestampFromNanoseconds: (v: bigint) => v,
  dateFromDays: (v: number) => v,
};

async function decodeParquetData(block: LogBlock, budget: DecodeBudget): Promise<Record<string, unknown>[]> {
  const c = block.content;
  const file = c.buffer.slice(c.byteOffset, c.byteOffset + c.byteLength) as ArrayBuffer;
  let rows: Record<string, unknown>[];
  try {
    const metadata = parquetMetadata(file, { geoparquet: false });
    const leaves = metadata.schema.filter((e) => e.num_children === undefined || e.num_children === 0);
    // Top-level decimals are read exactly (parquet-rows.ts); one nested in a group would be rounded to a double by
    // the Parquet decoder, exact only up to 15 digits, so a wider one is refused, not rounded.
    const flat = new Set(topLevelDecimals(metadata));
    const wide = leaves.find((e) => isDecimalElement(e) && !flat.has(e) && (e.precision ?? 0) > 15);
    if (wide !== undefined)
      throw new HudiLogUnsupportedError(
        block.file,
        block.contentOffset,
        `a Parquet data block with decimal column ${wide.name} of precision ${wide.precision} inside a group`,
        'its values would be rounded to doubles by the Parquet decoder',
      );
    const columns = leaves.map((e) => (e.type_length === undefined ? {} : { typeLength: e.type_length }));
    const left = budget.limit - budget.spent;
    const bound = decodedRowGroupBounds(metadata, columns, left, c);
    // Every row group is decoded at once here (a log block is small next to a base file), so their sum counts.
    let total = 0;
    for (const g of metadata.row_groups) total += Number(g.total_byte_size);
    budget.spend(Math.max(bound.worst.bytes, total), block.file);
    rows = await readRowsExact({ file, metadata, parsers: RAW_TIME });
  } catch (err) {
    if (
      err instanceof Error &&
      (err.name === 'MetadataTooLargeError' || err instanceof HudiLogUnsupportedError)
    )
      throw err;
    throw new HudiLogFormatError(
      block.file,
      block.contentOffset,
      `its Parquet content does not decode (${(err as Error).message})`,
      { cause: err },
    );
  }
  return rows;
}

/** Union branches of `orderingVal` in HoodieDeleteRecordList (apache/hudi), index = branch. */
const ORDERING_BRANCHES = [
  'null',
  'BooleanWrapper',
  'IntWrapper',
  'LongWrapper',
  'FloatWrapper',
  'DoubleWrapper',
  'BytesWrapper',
  'StringWrapper',
  'DateWrapper',
  'DecimalWrapper',
  'TimeMicrosWrapper',
  'TimestampMicrosWrapper',
  'ArrayWrapper',
] as const;

/** A strict UTF-8 decoder (the global TextDecoder with `fatal: true`). */
interface Utf8 {
  decode(bytes: Uint8Array): string;
}

/** Scale of DecimalWrapper's `decimal(30, 15)` bytes. */
const DECIMAL_WRAPPER_SCALE = 15;

function decodeDeletes(block: LogBlock, budget: DecodeBudget): DeleteEntry[] {
  const r = new ContentReader(block);
  r.version();
  const length = r.int32('the delete list length');
  const datumAt = r.pos;
  const datum = r.bytes(length, 'the delete list');
  const c = new Cursor(datum);
  const text = new TextDecoder('utf-8', { fatal: true });
  const out: DeleteEntry[] = [];
  try {
    for (;;) {
      let n = c.long();
      if (n === 0) break;
      if (n < 0) {
        n = -n;
        c.count('a block size of the delete list');
      }
      // Each entry takes at least three bytes (three union indexes).
      if (!Number.isSafeInteger(n) || n > c.left / 3)
        throw new Error(`the delete list claims ${n} entries in the ${c.left} bytes left`);
      for (let i = 0; i < n; i++) {
        const recordKey = optionalString(c, text, 'recordKey');
        const partitionPath = optionalString(c, text, 'partitionPath');
        const ordering = orderingValue(c, text, block);
        budget.spend(96 + (recordKey?.length ?? 0) * 2 + (partitionPath?.length ?? 0) * 2, block.file);
        out.push({ recordKey, partitionPath, ...ordering });
      }
    }
  } catch (err) {
    if (
      err instanceof Error &&
      (err.name === 'MetadataTooLargeError' || err instanceof HudiLogUnsupportedError)
    )
      throw err;
    throw new HudiLogFormatError(
      block.file,
      block.contentOffset + datumAt + c.pos,
      `the delete list does not decode (${(err as Error).message})`,
      { cause: err },
    );
  }
  return out;
}

function optionalString(c: Cursor, text: Utf8, field: string): string | null {
  const branch = c.long();
  if (branch === 0) return null;
  if (branch !== 1) throw new Error(`${field} names union branch ${branch} of 2`);
  return text.decode(c.take(c.count(`the ${field} length`), field));
}

function orderingValue(
  c: Cursor,
  text: Utf8,
  block: LogBlock,
): { orderingValue: OrderingValue; naturalOrder: boolean } {
  const branch = c.long();
  const name = ORDERING_BRANCHES[branch];
  const view = () => new DataView(c.bytes.buffer, c.bytes.byteOffset + c.pos, c.bytes.byteLength - c.pos);
  switch (name) {
    case 'null':
      return { orderingValue: null, naturalOrder: true };
    case 'BooleanWrapper':
      return { orderingValue: (c.take(1, 'a boolean')[0] ?? 0) !== 0, naturalOrder: false };
    case 'IntWrapper':
    case 'DateWrapper': {
      const v = c.long();
      return { orderingValue: v, naturalOrder: name === 'IntWrapper' && v === 0 };
    }
    case 'LongWrapper':
    case 'TimeMicrosWrapper':
    case 'TimestampMicrosWrapper':
      return { orderingValue: c.bigLong(), naturalOrder: false };
    case 'FloatWrapper': {
      const v = view().getFloat32(0, true);
      c.take(4, 'a float');
      return { orderingValue: v, naturalOrder: false };
    }
    case 'DoubleWrapper': {
      const v = view().getFloat64(0, true);
      c.take(8, 'a double');
      return { orderingValue: v, naturalOrder: false };
    }
    case 'BytesWrapper':
      return { orderingValue: c.take(c.count('a bytes length'), 'bytes').slice(), naturalOrder: false };
    case 'StringWrapper':
      return {
        orderingValue: text.decode(c.take(c.count('a string length'), 'a string')),
        naturalOrder: false,
      };
    case 'DecimalWrapper': {
      const raw = c.take(c.count('a decimal length'), 'a decimal');
      return {
        orderingValue: { unscaled: twosComplement(raw), scale: DECIMAL_WRAPPER_SCALE },
        naturalOrder: false,
      };
    }
    case 'ArrayWrapper':
      throw new HudiLogUnsupportedError(
        block.file,
        block.offset,
        'a composite ordering value (ArrayWrapper)',
        'tables ordered by several fields are not merged',
      );
    default:
      throw new Error(`orderingVal names union branch ${branch} of ${ORDERING_BRANCHES.length}`);
  }
}
