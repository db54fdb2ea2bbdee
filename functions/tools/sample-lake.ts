// Generates the fragmented `events` sample lake (Hive-style date partitions of small snappy Parquet
// files) deterministically from a seed, handing each file to a sink one at a time so memory stays flat.
import {
  Field,
  Float64,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMillisecond,
  tableToIPC,
  Utf8,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';

/** A uniform random number generator on [0, 1). */
export type Rng = () => number;

/**
 * mulberry32 (Tommy Ettinger's 32-bit generator): one 32-bit state, full 2^32 period, passes
 * gjrand/PractRand far enough for test data, and is a few lines — so the same seed gives the same
 * numbers in every JS engine, forever, which is all this generator needs. Not for cryptography.
 */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Mixes integers into one 32-bit seed (murmur3's fmix32 over a running hash), so every file gets
 * its own independent stream derived from (seed, partition, batch) and any one file can be
 * generated without generating the files before it.
 */
export function deriveSeed(...parts: readonly number[]): number {
  let h = 0x9e3779b9;
  for (const part of parts) {
    h = Math.imul(h ^ (part >>> 0), 0x85ebca6b);
    h ^= h >>> 13;
    h = Math.imul(h, 0xc2b2ae35);
    h ^= h >>> 16;
  }
  return h >>> 0;
}

const DAY_MS = 86_400_000;
const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;

/** Milliseconds since the epoch of `YYYY-MM-DD`T00:00Z; throws InvalidInputError on a non-date. */
export function dayStartMs(day: string): number {
  const ms = Date.parse(`${day}T00:00:00Z`);
  if (!DATE_RE.test(day) || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== day) {
    throw new InvalidInputError(
      `Invalid date ${JSON.stringify(day)}: use a real calendar date as YYYY-MM-DD`,
    );
  }
  return ms;
}

function addDays(day: string, n: number): string {
  return new Date(dayStartMs(day) + n * DAY_MS).toISOString().slice(0, 10);
}

/** Event types and their shares; `purchase` (10%) is the only type with revenue. */
export const EVENT_TYPES = ['view', 'click', 'search', 'purchase'] as const;
const EVENT_CUMULATIVE = [0.5, 0.75, 0.9, 1];
const EVENT_BYTES = EVENT_TYPES.map((t) => new TextEncoder().encode(t));
/** `sess_` + 8 digits. */
const SESSION_LENGTH = 13;
const USERS = 100_000;

/** The Arrow schema of every events file: nullable like Spark's, no nulls written. */
export const EVENTS_SCHEMA = new Schema([
  new Field('user_id', new Int64(), true),
  new Field('event_type', new Utf8(), true),
  new Field('event_timestamp', new TimestampMillisecond('UTC'), true),
  new Field('session_id', new Utf8(), true),
  new Field('revenue_usd', new Float64(), true),
]);

export interface EventsBatchOptions {
  /** Rows in the file (≥ 1). */
  readonly rows: number;
  /** The partition's day, `YYYY-MM-DD`; every event_timestamp falls inside it (UTC). */
  readonly day: string;
  /**
   * Footer key-value metadata to stamp the file with, as real writers do (Spark's version, Databricks' write
   * timestamp): files that differ only in such stamps must still compact together. @default none
   */
  readonly keyValueMetadata?: Readonly<Record<string, string>>;
}

/** Writes a non-negative integer below 2^53 into an int64 slot of a little-endian word view. */
function setInt64(words: Uint32Array, index: number, value: number): void {
  words[index * 2] = value >>> 0;
  words[index * 2 + 1] = Math.floor(value / 4294967296);
}

/**
 * One micro-batch file of events as snappy Parquet bytes, one row group. Rows are in timestamp
 * order, like a streaming writer's output; sessions belong to one user each. Columns: user_id
 * INT64, event_type STRING, event_timestamp TIMESTAMP(MILLIS, UTC), session_id STRING,
 * revenue_usd DOUBLE (non-zero only for purchases, ≈10% of rows).
 */
export function generateEventsBatch(rng: Rng, options: EventsBatchOptions): Uint8Array {
  const { rows } = options;
  if (!Number.isSafeInteger(rows) || rows < 1) {
    throw new InvalidInputError(`rows must be a positive integer, got ${rows}`);
  }
  const start = dayStartMs(options.day);

  // Sessions: about eight events each, each owned by one user.
  const sessionCount = Math.max(1, Math.ceil(rows / 8));
  const sessionUser = new Float64Array(sessionCount);
  const sessionNumber = new Uint32Array(sessionCount);
  for (let s = 0; s < sessionCount; s += 1) {
    sessionUser[s] = 1 + Math.floor(rng() * USERS);
    sessionNumber[s] = Math.floor(rng() * 100_000_000);
  }

  const offsets = new Float64Array(rows);
  for (let i = 0; i < rows; i += 1) offsets[i] = Math.floor(rng() * DAY_MS);
  offsets.sort();

  const userIds = new BigInt64Array(rows);
  const userWords = new Uint32Array(userIds.buffer);
  const timestamps = new BigInt64Array(rows);
  const timeWords = new Uint32Array(timestamps.buffer);
  const revenue = new Float64Array(rows);
  const typeIndex = new Uint8Array(rows);
  const typeOffsets = new Int32Array(rows + 1);
  const sessionOffsets = new Int32Array(rows + 1);
  const sessionBytes = new Uint8Array(rows * SESSION_LENGTH);
  const prefix = [0x73, 0x65, 0x73, 0x73, 0x5f]; // "sess_"

  let typeBytes = 0;
  for (let i = 0; i < rows; i += 1) {
    const session = Math.floor(rng() * sessionCount);
    setInt64(userWords, i, sessionUser[session] ?? 1);
    setInt64(timeWords, i, start + (offsets[i] ?? 0));
    const r = rng();
    let t = 0;
    while (r >= (EVENT_CUMULATIVE[t] ?? 1)) t += 1;
    typeIndex[i] = t;
    typeBytes += EVENT_BYTES[t]?.length ?? 0;
    typeOffsets[i + 1] = typeBytes;
    revenue[i] = EVENT_TYPES[t] === 'purchase' ? Math.round((1 + rng() * 499) * 100) / 100 : 0;
    const base = i * SESSION_LENGTH;
    sessionBytes.set(prefix, base);
    let n = sessionNumber[session] ?? 0;
    for (let d = SESSION_LENGTH - 1; d >= prefix.length; d -= 1) {
      sessionBytes[base + d] = 0x30 + (n % 10);
      n = Math.floor(n / 10);
    }
    sessionOffsets[i + 1] = base + SESSION_LENGTH;
  }
  const types = new Uint8Array(typeBytes);
  for (let i = 0; i < rows; i += 1) {
    const bytes = EVENT_BYTES[typeIndex[i] ?? 0];
    if (bytes) types.set(bytes, typeOffsets[i]);
  }

  const fields = EVENTS_SCHEMA.fields;
  const children = [
    makeData({ type: new Int64(), length: rows, nullCount: 0, data: userIds }),
    makeData({ type: new Utf8(), length: rows, nullCount: 0, valueOffsets: typeOffsets, data: types }),
    makeData({ type: new TimestampMillisecond('UTC'), length: rows, nullCount: 0, data: timestamps }),
    makeData({
      type: new Utf8(),
      length: rows,
      nullCount: 0,
      valueOffsets: sessionOffsets,
      data: sessionBytes,
    }),
    makeData({ type: new Float64(), length: rows, nullCount: 0, data: revenue }),
  ];
  const batch = new RecordBatch(
    EVENTS_SCHEMA,
    makeData({ type: new Struct(fields), length: rows, nullCount: 0, children }),
  );
  const ipc = tableToIPC(new Table(batch), 'stream');
  // writeParquet consumes both the wasm table and the properties (see docs/engine.md): no free().
  let builder = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.SNAPPY)
    .setMaxRowGroupSize(rows);
  const kv = Object.entries(options.keyValueMetadata ?? {});
  if (kv.length > 0) builder = builder.setKeyValueMetadata(new Map(kv));
  return pw.writeParquet(pw.Table.fromIPCStream(ipc), builder.build());
}

const positiveInt = (max: number) => z.number().int().min(1).max(max);

/**
 * Options of writeSampleLake. Layout mode (default): `days` × `batches` files with
 * `minRows..maxRows` rows each. Benchmark mode (both `files` and `rows` set): `files` files of
 * exactly `rows` rows, spread round-robin over `days` daily partitions, or all in the first
 * day's partition with `partitions: 'single'`.
 */
export const sampleLakeOptionsSchema = z
  .object({
    table: z
      .string()
      .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'a table name of letters, digits, _ . - (no slashes)')
      .default('events'),
    days: positiveInt(36_600).default(30),
    batches: positiveInt(1_000_000).default(20),
    seed: z.number().int().min(0).max(0xffffffff).default(42),
    startDate: z.string().regex(DATE_RE, 'a date as YYYY-MM-DD').default('2024-01-01'),
    minRows: positiveInt(10_000_000).default(500),
    maxRows: positiveInt(10_000_000).default(2000),
    files: positiveInt(10_000_000).optional(),
    rows: positiveInt(10_000_000).optional(),
    partitions: z.enum(['daily', 'single']).default('daily'),
  })
  .strict()
  .refine((o) => o.minRows <= o.maxRows, { message: 'minRows must not exceed maxRows', path: ['minRows'] })
  .refine((o) => (o.files === undefined) === (o.rows === undefined), {
    message: 'benchmark mode needs both files and rows',
    path: ['files'],
  });

export type SampleLakeOptions = z.input<typeof sampleLakeOptionsSchema>;
export type ResolvedSampleLakeOptions = z.output<typeof sampleLakeOptionsSchema>;

/** Validates options, filling defaults; InvalidInputError listing every problem otherwise. */
export function parseSampleLakeOptions(options: SampleLakeOptions = {}): ResolvedSampleLakeOptions {
  const parsed = sampleLakeOptionsSchema.safeParse(options);
  if (!parsed.success) {
    throw new InvalidInputError(
      'Invalid sample-lake options',
      parsed.error.issues.map((i) => `${i.path.join('.') || 'options'}: ${i.message}`),
    );
  }
  dayStartMs(parsed.data.startDate); // rejects dates like 2024-02-30 that the pattern lets through
  return parsed.data;
}

/** One file the generator will write, known before any byte is generated. */
export interface PlannedFile {
  /** Object key, e.g. `events/date=2024-01-01/part-00003-1f0c…-….snappy.parquet`. */
  readonly key: string;
  /** Partition prefix, e.g. `events/date=2024-01-01`. */
  readonly partition: string;
  readonly day: string;
  readonly rows: number;
  /** Seed of the file's own random stream. */
  readonly seed: number;
}

function uuidLike(rng: Rng): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rng() * 16).toString(16));
  hex[12] = '4';
  hex[16] = (8 + Math.floor(rng() * 4)).toString(16);
  const s = hex.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20)}`;
}

function plannedFile(
  o: ResolvedSampleLakeOptions,
  dayIndex: number,
  part: number,
  rows?: number,
): PlannedFile {
  const day = addDays(o.startDate, dayIndex);
  const partition = `${o.table}/date=${day}`;
  const naming = mulberry32(deriveSeed(o.seed, dayIndex, part, 0x6e616d65));
  const fileRows = rows ?? o.minRows + Math.floor(naming() * (o.maxRows - o.minRows + 1));
  const key = `${partition}/part-${String(part).padStart(5, '0')}-${uuidLike(naming)}.snappy.parquet`;
  return { key, partition, day, rows: fileRows, seed: deriveSeed(o.seed, dayIndex, part) };
}

/**
 * Every file of the lake in write order (partition by partition in layout mode, round-robin over
 * partitions in benchmark mode), computed without generating rows — cheap even for the default
 * 600 files, so a layout can be checked without writing it.
 */
export function* planSampleLake(options: SampleLakeOptions = {}): Generator<PlannedFile> {
  const o = parseSampleLakeOptions(options);
  if (o.files !== undefined && o.rows !== undefined) {
    const partitions = o.partitions === 'single' ? 1 : o.days;
    for (let i = 0; i < o.files; i += 1) {
      yield plannedFile(o, i % partitions, Math.floor(i / partitions), o.rows);
    }
    return;
  }
  for (let d = 0; d < o.days; d += 1) {
    for (let b = 0; b < o.batches; b += 1) yield plannedFile(o, d, b);
  }
}

export interface PartitionSummary {
  readonly files: number;
  readonly rows: number;
  readonly bytes: number;
}

export interface SampleLakeSummary {
  readonly table: string;
  readonly files: number;
  readonly rows: number;
  readonly bytes: number;
  /** Per partition prefix (e.g. `events/date=2024-01-01`). */
  readonly partitions: Readonly<Record<string, PartitionSummary>>;
}

/** Receives one generated file; awaited before the next file is generated (backpressure). */
export type SampleLakeSink = (key: string, bytes: Uint8Array) => Promise<void>;

/**
 * Generates the lake and hands every file to `sink`, one at a time, so memory holds one file
 * whatever the lake's size. Same options → byte-identical files under identical keys; nothing
 * depends on the current date or time.
 */
export async function writeSampleLake(
  sink: SampleLakeSink,
  options: SampleLakeOptions = {},
): Promise<SampleLakeSummary> {
  const o = parseSampleLakeOptions(options);
  const partitions: Record<string, { files: number; rows: number; bytes: number }> = {};
  let files = 0;
  let rows = 0;
  let bytes = 0;
  for (const file of planSampleLake(o)) {
    const body = generateEventsBatch(mulberry32(file.seed), { rows: file.rows, day: file.day });
    await sink(file.key, body);
    const p = partitions[file.partition] ?? { files: 0, rows: 0, bytes: 0 };
    p.files += 1;
    p.rows += file.rows;
    p.bytes += body.length;
    partitions[file.partition] = p;
    files += 1;
    rows += file.rows;
    bytes += body.length;
  }
  return { table: o.table, files, rows, bytes, partitions };
}
