// Writes small Avro container files with avsc for synthetic manifests: any field names, any field order, the
// `field-id` attributes the test chooses, and longs as BigInt — so tests can prove the reader keys by field id.
import avro from 'avsc';
import { BIG_LONG } from '../../../../../functions/core/formats/iceberg/avro.js';

/** An Avro object container file holding `records` under `schema`, with extra header metadata. */
export async function writeAvroContainer(
  schema: object,
  records: readonly object[],
  metadata: Readonly<Record<string, string>> = {},
): Promise<Uint8Array> {
  const type = avro.Type.forSchema(schema as avro.Schema, { registry: { long: BIG_LONG } });
  const meta = Object.fromEntries(Object.entries(metadata).map(([k, v]) => [k, Buffer.from(v)]));
  const encoder = new avro.streams.BlockEncoder(type, { codec: 'deflate', metadata: meta } as never);
  // Given a Type (needed for BigInt longs), avsc writes the header schema without field attributes; the header
  // must carry the `field-id`s, so the encoder is handed the schema as written (it writes the header lazily).
  (encoder as unknown as { _schema: object })._schema = schema;
  const chunks: Buffer[] = [];
  const done = new Promise<void>((resolve, reject) => {
    encoder.on('data', (chunk: Buffer) => chunks.push(chunk));
    encoder.on('end', () => resolve());
    encoder.on('error', reject);
  });
  for (const r of records) encoder.write(r);
  encoder.end();
  await done;
  return new Uint8Array(Buffer.concat(chunks));
}

/**
 * A manifest list whose fields are named nothing like the spec's (`a`, `b`, …) and declared in reverse order,
 * with a decoy field *named* `manifest_path` that carries another field id.
 */
export const SCRAMBLED_MANIFEST_LIST_SCHEMA = {
  type: 'record',
  name: 'scrambled_list',
  fields: [
    { name: 'g', type: ['null', 'long'], default: null, 'field-id': 520 },
    { name: 'k', type: ['null', 'bytes'], default: null, 'field-id': 519 },
    { name: 'f', type: 'int', 'field-id': 517 },
    { name: 'e', type: 'long', 'field-id': 516 },
    { name: 'd', type: 'long', 'field-id': 515 },
    { name: 'c', type: ['null', 'long'], default: null, 'field-id': 503 },
    { name: 'b', type: 'int', 'field-id': 502 },
    { name: 'manifest_path', type: 'string', 'field-id': 9999 },
    { name: 'len', type: 'long', 'field-id': 501 },
    { name: 'a', type: 'string', 'field-id': 500 },
  ],
};

/** A manifest whose entry and data_file fields are renamed and reordered; partition by field id 1000. */
export const SCRAMBLED_MANIFEST_SCHEMA = {
  type: 'record',
  name: 'scrambled_entry',
  fields: [
    {
      name: 'file',
      'field-id': 2,
      type: {
        type: 'record',
        name: 'scrambled_file',
        fields: [
          { name: 'size', type: 'long', 'field-id': 104 },
          { name: 'rows', type: 'long', 'field-id': 103 },
          {
            name: 'part',
            'field-id': 102,
            type: {
              type: 'record',
              name: 'p',
              fields: [{ name: 'whatever', type: ['null', 'int'], 'field-id': 1000 }],
            },
          },
          { name: 'fmt', type: 'string', 'field-id': 101 },
          { name: 'where', type: 'string', 'field-id': 100 },
          { name: 'kind', type: 'int', 'field-id': 134 },
          { name: 'km', type: ['null', 'bytes'], default: null, 'field-id': 131 },
          { name: 'file_path', type: 'string', 'field-id': 9998 },
        ],
      },
    },
    { name: 'seq', type: ['null', 'long'], default: null, 'field-id': 3 },
    { name: 'snap', type: ['null', 'long'], default: null, 'field-id': 1 },
    { name: 'st', type: 'int', 'field-id': 0 },
  ],
};
