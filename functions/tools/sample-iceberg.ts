// A small Apache Iceberg writer for the demo and the tests: creates a format-v2 path-based events table (its
// metadata/ holds vN.metadata.json and version-hint.text) partitioned by day(event_timestamp), and appends
// micro-batches as a streaming writer does — one Parquet file carrying the schema's field ids and one `append`
// snapshot each, committed through the path catalog's put-if-absent and rebased over lost races, so it can run
// beside a compaction of the same table.
import { randomUUID } from 'node:crypto';
import {
  Field,
  Float64,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  tableToIPC,
  Utf8,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { PreconditionFailedError } from '../core/errors.js';
import { describeTable, loadTable, PathCatalog } from '../core/formats/iceberg/catalog.js';
import { commitAppend } from '../core/formats/iceberg/commit.js';
import { schemaById } from '../core/formats/iceberg/metadata.js';
import { metricsConfig, readParquetMetrics } from '../core/formats/iceberg/metrics.js';
import type { ObjectStore } from '../ports/object-store.js';
import { dayStartMs, EVENT_TYPES, mulberry32 } from './sample-lake.js';

/** The Iceberg schema of the events table: the sample lake's columns, timestamps in microseconds (Iceberg's unit). */
export const ICEBERG_EVENTS_SCHEMA = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'user_id', required: false, type: 'long' },
    { id: 2, name: 'event_type', required: false, type: 'string' },
    { id: 3, name: 'event_timestamp', required: false, type: 'timestamptz' },
    { id: 4, name: 'session_id', required: false, type: 'string' },
    { id: 5, name: 'revenue_usd', required: false, type: 'double' },
  ],
} as const;

/** The partition field: `day(event_timestamp)`, field id 1000 as Iceberg numbers the first partition field. */
export const ICEBERG_EVENTS_PARTITION_FIELD = {
  name: 'event_timestamp_day',
  transform: 'day',
  'source-id': 3,
  'field-id': 1000,
} as const;

const DAY_MS = 86_400_000;

/** The Arrow schema of the data files: each field carries its Iceberg id as `PARQUET:field_id`. */
const ARROW_SCHEMA = new Schema(
  [
    new Field('user_id', new Int64(), true, fieldId(1)),
    new Field('event_type', new Utf8(), true, fieldId(2)),
    new Field('event_timestamp', new TimestampMicrosecond('UTC'), true, fieldId(3)),
    new Field('session_id', new Utf8(), true, fieldId(4)),
    new Field('revenue_usd', new Float64(), true, fieldId(5)),
  ],
  new Map([['iceberg.schema', JSON.stringify(ICEBERG_EVENTS_SCHEMA)]]),
);

function fieldId(id: number): Map<string, string> {
  return new Map([['PARQUET:field_id', String(id)]]);
}

function rootOf(tableRoot: string): string {
  const trimmed = tableRoot.replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

/**
 * Version 1 of an empty events table at `tableRoot`: format v2, the schema above, partitioned by
 * day(event_timestamp), no snapshot. `location` is what the metadata records as the table location (default: the
 * store's description of the root, e.g. the folder's path or `s3://bucket/prefix`); `properties` become the
 * table's properties.
 * @throws Error when a table exists already at the root.
 */
export async function createIcebergEventsTable(
  store: ObjectStore,
  tableRoot: string,
  options: {
    readonly now: number;
    readonly location?: string;
    readonly properties?: Readonly<Record<string, string>>;
  },
): Promise<void> {
  const root = rootOf(tableRoot);
  const location = (options.location ?? describeTable(store, tableRoot)).replace(/\/+$/, '');
  const metadata = {
    'format-version': 2,
    'table-uuid': randomUUID(),
    location,
    'last-sequence-number': 0,
    'last-updated-ms': options.now,
    'last-column-id': 5,
    'current-schema-id': 0,
    schemas: [ICEBERG_EVENTS_SCHEMA],
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [ICEBERG_EVENTS_PARTITION_FIELD] }],
    'last-partition-id': 1000,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'write.format.default': 'parquet', ...options.properties },
    'current-snapshot-id': -1,
    refs: {},
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
  };
  try {
    await store.put(`${root}metadata/v1.metadata.json`, JSON.stringify(metadata, null, 2), {
      ifNoneMatch: '*',
      contentType: 'application/json',
    });
  } catch (err) {
    if (err instanceof PreconditionFailedError)
      throw new Error(`An Iceberg table exists already at ${tableRoot || '(store root)'}`);
    throw err;
  }
  await store.put(`${root}metadata/version-hint.text`, '1');
}

export interface IcebergAppend {
  /** The snapshot that committed the batch (a 64-bit id). */
  readonly snapshotId: bigint;
  /** The data file's key. */
  readonly key: string;
  readonly rows: number;
}

/**
 * Appends one micro-batch of `rows` events of `day` (deterministic for a seed): writes the data file under
 * `data/event_timestamp_day=<day>/` (Iceberg's default layout), then commits it as an `append` snapshot with
 * metrics from its footer, rebased over any writer that committed first.
 */
export async function appendIcebergEvents(
  store: ObjectStore,
  tableRoot: string,
  batch: { readonly day: string; readonly rows: number; readonly seed: number; readonly now: number },
): Promise<IcebergAppend> {
  const [one] = await appendIcebergEventFiles(store, tableRoot, [batch], batch.now);
  if (one === undefined) throw new Error('appendIcebergEventFiles returned no file for one batch');
  return one;
}

/**
 * Appends several micro-batches in one `append` snapshot, one data file each (what a sink task does when it
 * commits the files of several writers at once): every file is written first, then one commit lists them all.
 * Building a large table this way keeps its manifests few, as a writer that merges manifests would.
 */
export async function appendIcebergEventFiles(
  store: ObjectStore,
  tableRoot: string,
  batches: readonly { readonly day: string; readonly rows: number; readonly seed: number }[],
  now: number,
): Promise<IcebergAppend[]> {
  const root = rootOf(tableRoot);
  const written: { key: string; day: string; rows: number }[] = [];
  for (const batch of batches) {
    const key = `${root}data/${ICEBERG_EVENTS_PARTITION_FIELD.name}=${batch.day}/00000-0-${randomUUID()}-00001.parquet`;
    await store.put(key, generateIcebergEventsBatch(batch.seed, batch.rows, batch.day));
    written.push({ key, day: batch.day, rows: batch.rows });
  }
  const table = await loadTable(store, tableRoot);
  const schema = schemaById(table.metadata);
  if (schema === undefined) throw new Error(`${table.name} has no current schema`);
  const addedFiles = [];
  for (const w of written)
    addedFiles.push({
      path: table.paths.path(w.key),
      partition: {
        specId: 0,
        values: [{ fieldId: ICEBERG_EVENTS_PARTITION_FIELD['field-id'], value: dayStartMs(w.day) / DAY_MS }],
      },
      metrics: await readParquetMetrics(store, w.key, schema, metricsConfig(table.metadata, schema)),
    });
  const result = await commitAppend(
    store,
    new PathCatalog(store),
    { tableLocation: tableRoot, addedFiles },
    { clock: { now: () => now }, maxAttempts: 100, backoffMs: 1 },
  );
  return written.map((w) => ({ snapshotId: result.snapshotId, key: w.key, rows: w.rows }));
}

/**
 * One micro-batch of events as Parquet bytes with field ids (snappy, one row group), rows in timestamp order.
 * Columns as {@link ICEBERG_EVENTS_SCHEMA}: event_timestamp is TIMESTAMP(MICROS, UTC), as Iceberg's timestamptz.
 */
export function generateIcebergEventsBatch(seed: number, rows: number, day: string): Uint8Array {
  const rng = mulberry32(seed);
  const start = BigInt(dayStartMs(day)) * 1000n;
  const offsets = Array.from({ length: rows }, () => BigInt(Math.floor(rng() * DAY_MS * 1000))).sort(
    (a, b) => (a < b ? -1 : a > b ? 1 : 0),
  );
  const userIds = new BigInt64Array(rows);
  const timestamps = new BigInt64Array(rows);
  const revenue = new Float64Array(rows);
  const types: string[] = [];
  const sessions: string[] = [];
  for (let i = 0; i < rows; i += 1) {
    userIds[i] = BigInt(1 + Math.floor(rng() * 100_000));
    timestamps[i] = start + (offsets[i] ?? 0n);
    const type = EVENT_TYPES[Math.floor(rng() * EVENT_TYPES.length)] ?? 'view';
    types.push(type);
    revenue[i] = type === 'purchase' ? Math.round((1 + rng() * 499) * 100) / 100 : 0;
    sessions.push(`sess_${String(Math.floor(rng() * 100_000_000)).padStart(8, '0')}`);
  }
  const children = [
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: userIds }),
    utf8Data(types),
    makeData({ type: new TimestampMicrosecond('UTC'), length: rows, nullCount: 0, data: timestamps }),
    utf8Data(sessions),
    makeData({ type: new Float64(), length: rows, nullCount: 0, data: revenue }),
  ];
  const recordBatch = new RecordBatch(
    ARROW_SCHEMA,
    makeData({ type: new Struct(ARROW_SCHEMA.fields), length: rows, nullCount: 0, children }),
  );
  const ipc = tableToIPC(new Table(recordBatch), 'stream');
  // writeParquet consumes both the wasm table and the properties (see docs/engine.md): no free().
  const properties = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setMaxRowGroupSize(rows)
    .build();
  return pw.writeParquet(pw.Table.fromIPCStream(ipc), properties);
}

function utf8Data(values: readonly string[]) {
  const encoder = new TextEncoder();
  const encoded = values.map((v) => encoder.encode(v));
  const offsets = new Int32Array(values.length + 1);
  let total = 0;
  encoded.forEach((bytes, i) => {
    total += bytes.length;
    offsets[i + 1] = total;
  });
  const data = new Uint8Array(total);
  encoded.forEach((bytes, i) => {
    data.set(bytes, offsets[i]);
  });
  return makeData({ type: new Utf8(), length: values.length, nullCount: 0, valueOffsets: offsets, data });
}
