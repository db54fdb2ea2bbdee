// The Avro object container framing of Hudi's timeline files: one block of one record, codec null, and a header
// whose only key is `avro.schema` — exactly what Hudi's TimelineMetadataUtils writes (every fixture's plan and
// 1.x commit file has that header and nothing else). The record itself is encoded by avsc against one of the
// schemas in ./schemas.ts; the framing is core/avro/container.ts's encoder, told to leave out `avro.codec` and to use
// a content-derived sync marker.
import { createHash } from 'node:crypto';
import avro from 'avsc';
import { encodeContainer } from '../../../avro/container.js';
import { HudiTimelineWriteError } from './errors.js';
import type { HudiTimelineSchema } from './schemas.js';

const MAGIC = Buffer.from([0x4f, 0x62, 0x6a, 0x01]);

/** The parsed avsc type of each schema, built once: the constants never change. */
const typeCache = new WeakMap<object, avro.Type>();

/** The avsc type for a schema; unions stay unwrapped (every union Hudi declares is null plus one type). */
export function avroTypeOf(schema: object): avro.Type {
  let type = typeCache.get(schema);
  if (type === undefined) {
    type = avro.Type.forSchema(schema as avro.Schema, { wrapUnions: false });
    typeCache.set(schema, type);
  }
  return type;
}

/**
 * Encodes one timeline record as Hudi writes it. The sync marker is derived from the schema and the payload, not
 * random, so a crashed run that rebuilds the same content from its journal writes the same bytes (an idempotent
 * conditional create, and a byte comparison when the file is already there).
 * @throws HudiTimelineWriteError when the record does not fit the schema (names the first offending path).
 */
export function encodeTimelineAvro(schema: HudiTimelineSchema, record: object): Uint8Array {
  const type = avroTypeOf(schema);
  const problems: string[] = [];
  if (!type.isValid(record, { errorHook: (path) => problems.push(path.join('.') || '(record)') })) {
    throw new HudiTimelineWriteError(
      `the ${schema.name} content does not fit Hudi's schema at ${problems.slice(0, 3).join(', ')}`,
    );
  }
  const schemaJson = Buffer.from(JSON.stringify(schema), 'utf8');
  const payload = type.toBuffer(record);
  const sync = createHash('sha256').update(schemaJson).update(payload).digest().subarray(0, 16);
  return encodeContainer(schema, [record], {}, { codec: 'null', omitNullCodec: true, sync, type });
}

/** One decoded timeline file: the writer schema from its header and its records. */
export interface DecodedTimelineAvro {
  readonly writerSchema: unknown;
  readonly records: readonly unknown[];
}

/**
 * Decodes a small timeline container (codec null or absent) with avsc: with the writer schema from its header, or
 * resolved to `readerSchema` as a Hudi reader would. For verification and tests of what this module writes; the
 * timeline reader has its own bounded decoder.
 */
export function decodeTimelineAvro(bytes: Uint8Array, readerSchema?: object): DecodedTimelineAvro {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buf.length < 4 || !buf.subarray(0, 4).equals(MAGIC))
    throw new HudiTimelineWriteError('not an Avro file');
  const header = HEADER_META.decode(buf, 4);
  const meta = header.value as Record<string, Buffer>;
  const codec = meta['avro.codec']?.toString('utf8') ?? 'null';
  if (codec !== 'null')
    throw new HudiTimelineWriteError(`Avro codec ${codec} is not expected in a timeline file`);
  const schemaText = meta['avro.schema']?.toString('utf8');
  if (schemaText === undefined) throw new HudiTimelineWriteError('the Avro header has no avro.schema');
  const writerSchema: unknown = JSON.parse(schemaText);
  const writer = avro.Type.forSchema(writerSchema as avro.Schema, { wrapUnions: false });
  const reader =
    readerSchema === undefined
      ? writer
      : avro.Type.forSchema(readerSchema as avro.Schema, { wrapUnions: false });
  const resolver = reader === writer ? undefined : reader.createResolver(writer);
  let offset = header.offset + 16;
  const records: unknown[] = [];
  while (offset < buf.length) {
    const count = LONG.decode(buf, offset);
    const size = LONG.decode(buf, count.offset);
    let at = size.offset;
    const end = at + (size.value as number);
    for (let i = 0; i < (count.value as number); i++) {
      const decoded = resolver === undefined ? reader.decode(buf, at) : reader.decode(buf, at, resolver);
      if (decoded.offset < 0) throw new HudiTimelineWriteError('truncated Avro block');
      records.push(decoded.value);
      at = decoded.offset;
    }
    offset = end + 16;
  }
  return { writerSchema, records };
}

const HEADER_META = avro.Type.forSchema({ type: 'map', values: 'bytes' });
const LONG = avro.Type.forSchema('long');
