// A bounded Avro object container codec, shared by the table formats whose metadata is Avro (Iceberg manifests,
// Hudi timeline files). Decoding checks every count and length the file claims against the bytes present and the
// memory budget before anything is allocated for it, so a file that lies fails with a bounded error instead of
// exhausting memory; 64-bit longs decode as BigInt (exact), and header metadata comes back as text. Records come
// back by field name under the writer's schema; a format that keys fields otherwise (Iceberg: by field id) wraps
// them. Encoding writes the writer's schema JSON exactly as given (attributes such as Iceberg's `field-id` kept).
import { randomBytes } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import avro from 'avsc';
import { currentMetadataLimits, describeBytes, inflationLimit } from '../memory-budget.js';
import {
  BIG_LONG,
  Cursor,
  checkDatum,
  collectNamed,
  DatumOverBudget,
  minEncodedSize,
  type SchemaJson,
} from './datum.js';

export { BIG_LONG, type SchemaJson } from './datum.js';

/** A record schema as JSON: the root of every container this module decodes. */
export interface RecordSchema {
  readonly type: 'record';
  readonly name: string;
  readonly fields: readonly {
    readonly name: string;
    readonly type: SchemaJson;
    readonly 'field-id'?: unknown;
  }[];
}

/**
 * One decoded container file: its header metadata, the writer's root record schema with every named type it defines
 * (by name and full name, so a caller can follow references), and the records by field name (longs as BigInt,
 * bytes as Buffer; unions of null and one type as the value or null).
 */
export interface DecodedContainer {
  readonly metadata: ReadonlyMap<string, string>;
  readonly schema: RecordSchema;
  readonly named: ReadonlyMap<string, SchemaJson>;
  readonly records: readonly Readonly<Record<string, unknown>>[];
}

/** What one container file may cost: its records decoded, and its deflate blocks inflated (together). */
export interface AvroLimits {
  /** Heap bytes the records may take once decoded (estimated per value while checking, before avsc decodes). */
  readonly decodedBytes: number;
  /** Bytes the file's blocks may inflate to, together (also at most MAX_INFLATION_RATIO times the file). */
  readonly inflatedBytes: number;
}

/**
 * The file is well formed but would take more memory than `AvroLimits` allow: the caller turns it into a
 * MetadataTooLargeError naming the file (this module does not know which file it decodes).
 */
export class AvroLimitError extends Error {
  override readonly name = 'AvroLimitError';
}

/**
 * Decodes a whole container file held in memory, checking as Avro Java's `SystemLimitException` does that nothing
 * it claims exceeds what is there: every record, array or map count against the bytes left (each element takes at
 * least one byte, except array items that encode in none, whose count the decoded limit bounds; see
 * ./datum.ts), every string or bytes length against the bytes left, each block's size against the file, and
 * the inflated blocks and the decoded records against `limits` (by default the current memory budget's). A record
 * schema that encodes in zero bytes is refused, since a block could then claim any number of records. Codecs:
 * `null` and `deflate`, what Iceberg and Hudi writers use.
 * @throws AvroLimitError when the file is well formed but over `limits`.
 * @throws Error for anything malformed (the caller names the file).
 */
export async function decodeContainer(
  bytes: Uint8Array,
  limits: AvroLimits = {
    decodedBytes: currentMetadataLimits().decodedBytes,
    inflatedBytes: currentMetadataLimits().inflatedBytes,
  },
): Promise<DecodedContainer> {
  const cursor = new Cursor(bytes, 0, bytes.length);
  const header = readHeader(cursor);
  const schemaText = header.metadata.get('avro.schema');
  if (schemaText === undefined) throw new Error('the Avro header has no avro.schema');
  const schema = JSON.parse(schemaText) as SchemaJson;
  if (typeof schema !== 'object' || Array.isArray(schema) || schema.type !== 'record')
    throw new Error('the Avro schema is not a record');
  const named = collectNamed(schema);
  const root = schema as unknown as RecordSchema;
  if (minEncodedSize(schema, named) === 0)
    throw new Error(
      'the record schema encodes in zero bytes, so its block counts cannot be checked against the data',
    );
  const codec = header.metadata.get('avro.codec') ?? 'null';
  if (codec !== 'null' && codec !== 'deflate')
    throw new Error(`codec ${codec} is not supported (only null and deflate are read)`);
  const type = avro.Type.forSchema(schema as avro.Schema, {
    registry: { long: BIG_LONG },
    wrapUnions: 'auto',
  });

  const maxInflated = inflationLimit(bytes.length, limits.inflatedBytes);
  const cost = { bytes: 0, limit: limits.decodedBytes };
  let inflated = 0;
  const records: Record<string, unknown>[] = [];
  while (cursor.pos < cursor.end) {
    const count = cursor.count('block record count');
    const size = cursor.count('block size');
    if (size + 16 > cursor.end - cursor.pos)
      throw new Error(`a block claims ${size} bytes but only ${cursor.end - cursor.pos - 16} are left`);
    const data = bytes.subarray(cursor.pos, cursor.pos + size);
    cursor.pos += size;
    if (!equalBytes(bytes.subarray(cursor.pos, cursor.pos + 16), header.sync))
      throw new Error("a block does not end with the header's sync marker");
    cursor.pos += 16;
    let block: Uint8Array = data;
    if (codec === 'deflate') {
      try {
        block = inflateRawSync(data, { maxOutputLength: Math.max(1, maxInflated - inflated) });
      } catch (err) {
        if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE')
          throw new AvroLimitError(
            `its deflate blocks inflate to more than ${describeBytes(maxInflated)} (at most ${describeBytes(limits.inflatedBytes)}, or 200 times its ${describeBytes(bytes.length)})`,
          );
        throw new Error(`a deflate block does not inflate (${(err as Error).message})`);
      }
      inflated += block.length;
    }
    // Each record takes at least one byte (a zero-byte schema was refused above).
    if (count > block.length)
      throw new Error(`a block claims ${count} records but holds ${block.length} bytes`);
    const buffer = Buffer.from(block.buffer, block.byteOffset, block.byteLength);
    const inBlock = new Cursor(block, 0, block.length);
    for (let i = 0; i < count; i++) {
      const start = inBlock.pos;
      try {
        checkDatum(schema, inBlock, named, cost);
      } catch (err) {
        if (err instanceof DatumOverBudget)
          throw new AvroLimitError(
            `its records would take more than ${describeBytes(limits.decodedBytes)} decoded (after ${records.length} records)`,
          );
        throw err;
      }
      const decoded = type.decode(buffer, start);
      if (decoded.offset !== inBlock.pos)
        throw new Error(`record ${records.length} does not decode to the bytes its schema spans`);
      records.push(decoded.value as Record<string, unknown>);
    }
  }
  return { metadata: header.metadata, schema: root, named, records };
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

const MAGIC = [0x4f, 0x62, 0x6a, 0x01];

/** The container header (magic, metadata map, sync marker), every length checked against the bytes. */
function readHeader(c: Cursor): { metadata: Map<string, string>; sync: Uint8Array } {
  if (c.end < MAGIC.length + 1 + 16 || MAGIC.some((b, i) => c.bytes[i] !== b))
    throw new Error('not an Avro object container file (no "Obj\\x01" magic)');
  c.pos = MAGIC.length;
  const metadata = new Map<string, string>();
  const text = new TextDecoder();
  for (;;) {
    let n = c.long();
    if (n === 0) break;
    if (n < 0) {
      n = -n;
      c.count('header block size');
    }
    // Each entry is at least two bytes (two empty strings).
    if (!Number.isSafeInteger(n) || n > (c.end - c.pos) / 2)
      throw new Error(`the header claims ${n} metadata entries in ${c.end - c.pos} bytes`);
    for (let i = 0; i < n; i++) {
      const keyLength = c.count('a header key length');
      const key = text.decode(c.bytes.subarray(c.pos, c.pos + keyLength));
      c.pos += keyLength;
      const valueLength = c.count('a header value length');
      metadata.set(key, text.decode(c.bytes.subarray(c.pos, c.pos + valueLength)));
      c.pos += valueLength;
    }
  }
  if (c.end - c.pos < 16) throw new Error('the header ends before its sync marker');
  const sync = c.bytes.slice(c.pos, c.pos + 16);
  c.pos += 16;
  return { metadata, sync };
}

/** Avro's zig-zag varint encoding of a long (block counts, lengths). */
function zigzag(n: number): Buffer {
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
  return Buffer.concat([zigzag(b.length), b]);
}

/** Records per container block: writers use blocks of a few thousand entries; any size reads the same. */
const RECORDS_PER_BLOCK = 1000;

/** The block compression of an encoded container: deflate, or null (uncompressed). */
export type ContainerCodec = 'null' | 'deflate';

/** How {@link encodeContainer} writes a file, beyond its schema, records and metadata. */
export interface EncodeOptions {
  /** Block compression; deflate unless told. */
  readonly codec?: ContainerCodec;
  /**
   * The 16-byte sync marker; random unless given. A writer whose files must be deterministic (Hudi's timeline: a
   * crashed run rebuilding the same content must write the same bytes) derives it from the content.
   */
  readonly sync?: Uint8Array;
  /**
   * The avsc type to encode records with, built from `schema` by the caller; by default one with BIG_LONG longs.
   * For callers whose values follow another convention (Hudi's timeline: plain-number longs, unwrapped unions).
   */
  readonly type?: avro.Type;
  /** Leave `avro.codec` out of the header when it is null (readers take absent as null), as Hudi's writer does. */
  readonly omitNullCodec?: boolean;
}

/**
 * Encodes an Avro object container file holding `records` under `schema`, with `metadata` in the header and the
 * blocks compressed with `codec` (deflate unless told). The header's `avro.schema` is `schema` exactly as given.
 * Why not avsc's BlockEncoder: given a Type (needed for BigInt longs) it writes the schema without attributes such
 * as Iceberg's `field-id`, and Iceberg readers find manifest fields by those ids.
 * @throws Error from avsc when a record does not match the schema (a bug of the caller, never data-dependent).
 */
export function encodeContainer(
  schema: object,
  records: readonly unknown[],
  metadata: Readonly<Record<string, string>>,
  options: EncodeOptions = {},
): Uint8Array {
  const codec = options.codec ?? 'deflate';
  const type = options.type ?? avro.Type.forSchema(schema as avro.Schema, { registry: { long: BIG_LONG } });
  const sync = options.sync ?? randomBytes(16);
  if (sync.length !== 16) throw new Error(`a sync marker is 16 bytes, not ${sync.length}`);
  const marker = Buffer.from(sync);
  const meta: Record<string, string> = { ...metadata, 'avro.schema': JSON.stringify(schema) };
  if (!(codec === 'null' && options.omitNullCodec === true)) meta['avro.codec'] = codec;
  const entries = Object.entries(meta);
  const parts: Buffer[] = [Buffer.from([0x4f, 0x62, 0x6a, 0x01])];
  if (entries.length > 0) {
    parts.push(zigzag(entries.length));
    for (const [k, v] of entries)
      parts.push(avroBytes(Buffer.from(k, 'utf8')), avroBytes(Buffer.from(v, 'utf8')));
  }
  parts.push(zigzag(0), marker);
  for (let start = 0; start < records.length; start += RECORDS_PER_BLOCK) {
    const block = records.slice(start, start + RECORDS_PER_BLOCK);
    const raw = Buffer.concat(block.map((r) => type.toBuffer(r)));
    const data = codec === 'deflate' ? deflateRawSync(raw) : raw;
    parts.push(zigzag(block.length), zigzag(data.length), data, marker);
  }
  return new Uint8Array(Buffer.concat(parts));
}
