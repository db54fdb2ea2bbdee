// Writes a classic Delta checkpoint (`_delta_log/<v>.checkpoint.parquet`, PROTOCOL.md "Checkpoints" and the
// appendix "Checkpoint Schema") and then `_last_checkpoint`, through the ObjectStore port. A checkpoint only saves
// readers work, so writing one must never change what the table is: put-if-absent, verified before it is put, and
// a `_last_checkpoint` that only ever moves forward.
import { createHash } from 'node:crypto';
import { isDeepStrictEqual } from 'node:util';
import { parquetMetadata } from 'hyparquet';
import { ByteWriter, parquetWrite, type SchemaElement } from 'hyparquet-writer';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CompactorError, ObjectNotFoundError, PreconditionFailedError } from '../../errors.js';
import { parseActions } from './actions.js';
import { readParquetRecords } from './checkpoint-parquet.js';
import { type DeltaSnapshot, normalizeTableRoot, readDeltaSnapshot } from './log.js';
import { LAST_CHECKPOINT } from './log-files.js';
import { deletedFileRetentionMs } from './retention.js';

/** Delta's default of `delta.checkpointInterval`: a checkpoint every 10 commits. */
export const DEFAULT_CHECKPOINT_INTERVAL = 10;

/**
 * A checkpoint was not written because the table asks for something this writer does not produce. Nothing was
 * changed, and the table stays correct without it (checkpoints are an optimisation): log it and carry on.
 */
export class DeltaCheckpointError extends CompactorError {
  constructor(
    readonly tableRoot: string,
    readonly version: number,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `No checkpoint was written for version ${version} of Delta table ${tableRoot || '(store root)'}: ${reason}. The table is unchanged and stays readable from its JSON commits.`,
      options,
    );
  }
}

/**
 * `delta.checkpointInterval` of a table's configuration, or the default when it is absent or not a positive
 * integer: Delta refuses such values when they are set, so one found in a log came from a broken writer, and
 * the default keeps checkpoints coming rather than stopping them.
 */
export function checkpointInterval(configuration: Readonly<Record<string, string>>): number {
  const raw = configuration['delta.checkpointInterval'];
  const n = raw === undefined ? Number.NaN : Number(raw.trim());
  return Number.isSafeInteger(n) && n > 0 ? n : DEFAULT_CHECKPOINT_INTERVAL;
}

/**
 * Whether the commit of `version` is one after which a checkpoint is written: Delta's rule (Spark's and the
 * standalone writer's `shouldCheckpoint`) is `version != 0 && version % interval == 0`, so version 0 never is.
 */
export function checkpointDue(version: number, configuration: Readonly<Record<string, string>>): boolean {
  return version > 0 && version % checkpointInterval(configuration) === 0;
}

/**
 * `delta.deletedFileRetentionDuration` in ms (Spark's interval text, e.g. `interval 1 week`, `interval 2 days
 * 12 hours`), the default week when absent, or undefined when it cannot be read: then no tombstone is dropped,
 * because keeping one too many only makes the checkpoint bigger, and dropping one early is not ours to decide.
 */
export function tombstoneRetentionMs(configuration: Readonly<Record<string, string>>): number | undefined {
  return deletedFileRetentionMs(configuration);
}

export interface WriteCheckpointOptions {
  /**
   * The clock (epoch ms) tombstones expire by: a `remove` older than `delta.deletedFileRetentionDuration` is left
   * out, as Delta writers do. Without it every tombstone the log still holds is kept, which is always correct.
   */
  readonly now?: number;
}

export interface CheckpointWriteResult {
  /** The checkpoint's object key. */
  readonly key: string;
  readonly version: number;
  /** Its size in bytes. */
  readonly size: number;
  /** Rows in it, one action each (`_last_checkpoint.size`). */
  readonly actions: number;
  /** Add actions in it, when known (not for a checkpoint another writer had put already). */
  readonly addFiles?: number;
  /** False when a checkpoint of this version existed already (ours is then not written; theirs is returned). */
  readonly written: boolean;
  /** Whether `_last_checkpoint` now names this version because of this call. */
  readonly lastCheckpointUpdated: boolean;
}

/** `_delta_log/00000000000000000010.checkpoint.parquet` under `root` (normalised). */
export function checkpointKey(root: string, version: number): string {
  return `${root}_delta_log/${String(version).padStart(20, '0')}.checkpoint.parquet`;
}

/**
 * Writes the classic checkpoint of `version` (the table state the log defines there, read with
 * {@link readDeltaSnapshot}), then points `_last_checkpoint` at it unless that already names a version at or
 * above it. The Parquet file is decoded and compared with what was meant before it is put, and put only if no
 * checkpoint of that version exists; an existing one is kept and returned (another writer's is as good: the
 * state of a version is fixed). A table with the `v2Checkpoint` feature gets the V2 spec in the classic name
 * (with its `checkpointMetadata` row), which the protocol allows.
 * @throws DeltaCheckpointError when the table asks for a checkpoint shape not produced here
 *   (`delta.checkpoint.writeStatsAsStruct=true`) or the encoding does not read back as written.
 * @throws DeltaLogError / DeltaFeatureNotSupportedError from reading the log: nothing is written then.
 */
export async function writeCheckpoint(
  store: ObjectStore,
  tableRoot: string,
  version: number,
  options: WriteCheckpointOptions = {},
): Promise<CheckpointWriteResult> {
  const root = normalizeTableRoot(tableRoot);
  const snapshot = await readDeltaSnapshot(store, root, { version });
  const refuse = (reason: string, cause?: unknown): DeltaCheckpointError =>
    new DeltaCheckpointError(root, version, reason, cause === undefined ? undefined : { cause });
  if (snapshot.metadata.configuration['delta.checkpoint.writeStatsAsStruct'] === 'true') {
    // PROTOCOL.md makes stats_parsed and partitionValues_parsed required then; typed per-table structs are not
    // written here, and a checkpoint that breaks the table's own rule is worse than none.
    throw refuse(
      'the table sets delta.checkpoint.writeStatsAsStruct=true, which requires stats_parsed and partitionValues_parsed columns that lake-compactor does not write',
    );
  }

  const rows = checkpointRows(snapshot, options.now);
  const columns = checkpointColumns(rows);
  const bytes = encode(rows, columns);
  await verifyEncoding(bytes, rows, refuse);

  const key = checkpointKey(root, version);
  const addFiles = rows.filter((r) => r.add !== undefined).length;
  let result: Omit<CheckpointWriteResult, 'lastCheckpointUpdated'>;
  try {
    await store.put(key, bytes, { ifNoneMatch: '*', contentType: 'application/octet-stream' });
    result = { key, version, size: bytes.byteLength, actions: rows.length, addFiles, written: true };
  } catch (err) {
    if (!(err instanceof PreconditionFailedError)) throw err;
    result = { ...(await existingCheckpoint(store, key, refuse)), key, version, written: false };
  }
  const lastCheckpoint: LastCheckpoint = {
    version,
    size: result.actions,
    sizeInBytes: result.size,
    ...(result.addFiles === undefined ? {} : { numOfAddFiles: result.addFiles }),
  };
  const lastCheckpointUpdated = await advanceLastCheckpoint(store, root, lastCheckpoint);
  return { ...result, lastCheckpointUpdated };
}

// ---------------------------------------------------------------------------------------------------------
// The checkpoint's rows: one action each, as plain JSON-shaped objects (the shape JSON commits have)
// ---------------------------------------------------------------------------------------------------------

type Row = Partial<Record<ColumnName, Record<string, unknown>>>;

function checkpointRows(snapshot: DeltaSnapshot, now: number | undefined): Row[] {
  const { protocol, metadata } = snapshot;
  const v2 = [...protocol.readerFeatures, ...protocol.writerFeatures].includes('v2Checkpoint');
  const retention = tombstoneRetentionMs(metadata.configuration);
  const expired = (deletionTimestamp: number | undefined): boolean =>
    now !== undefined &&
    retention !== undefined &&
    deletionTimestamp !== undefined &&
    deletionTimestamp < now - retention;

  const rows: Row[] = [];
  if (v2) rows.push({ checkpointMetadata: { version: snapshot.version } });
  rows.push({
    protocol: {
      minReaderVersion: protocol.minReaderVersion,
      minWriterVersion: protocol.minWriterVersion,
      // PROTOCOL.md: not null exactly at reader version 3 / writer version 7, and null below.
      readerFeatures: protocol.minReaderVersion === 3 ? [...protocol.readerFeatures] : null,
      writerFeatures: protocol.minWriterVersion === 7 ? [...protocol.writerFeatures] : null,
    },
  });
  rows.push({
    metaData: {
      id: metadata.id,
      name: metadata.name ?? null,
      description: metadata.description ?? null,
      // An absent options map is written empty: Spark's and the Kernel's readers expect a map there.
      format: { provider: metadata.provider, options: metadata.formatOptions ?? {} },
      schemaString: metadata.schemaString,
      partitionColumns: [...metadata.partitionColumns],
      configuration: metadata.configuration,
      createdTime: metadata.createdTime ?? null,
    },
  });
  for (const txn of Object.values(snapshot.transactions)) {
    rows.push({ txn: { appId: txn.appId, version: txn.version, lastUpdated: txn.lastUpdated ?? null } });
  }
  for (const [domain, configuration] of Object.entries(snapshot.domains)) {
    rows.push({ domainMetadata: { domain, configuration, removed: false } });
  }
  for (const f of snapshot.files) {
    rows.push({
      add: {
        path: f.path,
        partitionValues: f.physicalPartitionValues,
        size: f.size,
        modificationTime: f.modificationTime,
        dataChange: f.dataChange,
        // Only the writer's own JSON: stats rebuilt from a parsed form could change a bound's type or precision,
        // and wrong stats skip live rows, where missing stats only skip nothing.
        stats:
          metadata.configuration['delta.checkpoint.writeStatsAsJson'] === 'false'
            ? null
            : (f.statsJson ?? null),
        tags: f.tags ?? null,
        deletionVector: f.deletionVector ?? null,
        baseRowId: f.baseRowId ?? null,
        defaultRowCommitVersion: f.defaultRowCommitVersion ?? null,
      },
    });
  }
  for (const t of snapshot.tombstones) {
    if (expired(t.deletionTimestamp)) continue;
    // PROTOCOL.md: checkpoint removes are vacuum tombstones and carry no stats or tags.
    rows.push({
      remove: {
        path: t.path,
        deletionTimestamp: t.deletionTimestamp ?? null,
        dataChange: t.dataChange,
        extendedFileMetadata: t.extendedFileMetadata ?? null,
        partitionValues: t.partitionValues ?? null,
        size: t.size ?? null,
        deletionVector: t.deletionVector ?? null,
      },
    });
  }
  return rows;
}

// ---------------------------------------------------------------------------------------------------------
// The Parquet layout: Spark's (nullable structs, 3-level MAP `key_value` and LIST `list`/`element` groups)
// ---------------------------------------------------------------------------------------------------------

type Field =
  | { readonly name: string; readonly kind: 'string' | 'long' | 'int' | 'boolean' | 'map' | 'list' }
  | { readonly name: string; readonly kind: 'struct'; readonly fields: readonly Field[] };

const s = (name: string): Field => ({ name, kind: 'string' });
const long = (name: string): Field => ({ name, kind: 'long' });
const int = (name: string): Field => ({ name, kind: 'int' });
const bool = (name: string): Field => ({ name, kind: 'boolean' });
const map = (name: string): Field => ({ name, kind: 'map' });
const list = (name: string): Field => ({ name, kind: 'list' });
const struct = (name: string, fields: readonly Field[]): Field => ({ name, kind: 'struct', fields });

/** PROTOCOL.md "Deletion Vector Descriptor Schema": offset and sizeInBytes are ints, cardinality a long. */
const DELETION_VECTOR = struct('deletionVector', [
  s('storageType'),
  s('pathOrInlineDv'),
  int('offset'),
  int('sizeInBytes'),
  long('cardinality'),
]);

/** Every column a checkpoint may have, in Spark's order; those no row uses beyond the base five are left out. */
const COLUMNS = [
  struct('txn', [s('appId'), long('version'), long('lastUpdated')]),
  struct('add', [
    s('path'),
    map('partitionValues'),
    long('size'),
    long('modificationTime'),
    bool('dataChange'),
    s('stats'),
    map('tags'),
    DELETION_VECTOR,
    long('baseRowId'),
    long('defaultRowCommitVersion'),
  ]),
  struct('remove', [
    s('path'),
    long('deletionTimestamp'),
    bool('dataChange'),
    bool('extendedFileMetadata'),
    map('partitionValues'),
    long('size'),
    DELETION_VECTOR,
  ]),
  struct('metaData', [
    s('id'),
    s('name'),
    s('description'),
    struct('format', [s('provider'), map('options')]),
    s('schemaString'),
    list('partitionColumns'),
    map('configuration'),
    long('createdTime'),
  ]),
  struct('protocol', [
    int('minReaderVersion'),
    int('minWriterVersion'),
    list('readerFeatures'),
    list('writerFeatures'),
  ]),
  struct('domainMetadata', [s('domain'), s('configuration'), bool('removed')]),
  struct('checkpointMetadata', [long('version'), map('tags')]),
] as const;

type ColumnName =
  | 'txn'
  | 'add'
  | 'remove'
  | 'metaData'
  | 'protocol'
  | 'domainMetadata'
  | 'checkpointMetadata';
const ALWAYS: ReadonlySet<string> = new Set(['txn', 'add', 'remove', 'metaData', 'protocol']);

function checkpointColumns(rows: readonly Row[]): Field[] {
  return COLUMNS.filter((c) => ALWAYS.has(c.name) || rows.some((r) => r[c.name as ColumnName] !== undefined));
}

const UTF8 = { type: 'BYTE_ARRAY', converted_type: 'UTF8' } as const;

/** The flattened Parquet schema of a field (depth-first, as the format stores it). */
function schemaOf(field: Field): SchemaElement[] {
  const optional = { name: field.name, repetition_type: 'OPTIONAL' } as const;
  switch (field.kind) {
    case 'string':
      return [{ ...optional, ...UTF8 }];
    case 'long':
      return [{ ...optional, type: 'INT64' }];
    case 'int':
      return [{ ...optional, type: 'INT32' }];
    case 'boolean':
      return [{ ...optional, type: 'BOOLEAN' }];
    case 'map':
      return [
        { ...optional, converted_type: 'MAP', num_children: 1 },
        { name: 'key_value', repetition_type: 'REPEATED', num_children: 2 },
        { name: 'key', repetition_type: 'REQUIRED', ...UTF8 },
        { name: 'value', repetition_type: 'OPTIONAL', ...UTF8 },
      ];
    case 'list':
      return [
        { ...optional, converted_type: 'LIST', num_children: 1 },
        { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
        { name: 'element', repetition_type: 'OPTIONAL', ...UTF8 },
      ];
    case 'struct':
      return [{ ...optional, num_children: field.fields.length }, ...field.fields.flatMap(schemaOf)];
  }
}

/** A value in the writer's terms: longs as bigint, structs with every field present (null when absent). */
function toParquetValue(field: Field, value: unknown): unknown {
  if (value === undefined || value === null) return null;
  switch (field.kind) {
    case 'long':
      return BigInt(value as number);
    case 'list':
      return [...(value as readonly string[])];
    case 'map':
      return Object.entries(value as Record<string, string | null>).map(([key, v]) => ({ key, value: v }));
    case 'struct': {
      const object = value as Record<string, unknown>;
      return Object.fromEntries(field.fields.map((f) => [f.name, toParquetValue(f, object[f.name])]));
    }
    default:
      return value;
  }
}

function encode(rows: readonly Row[], columns: readonly Field[]): Uint8Array {
  const writer = new ByteWriter();
  parquetWrite({
    writer,
    schema: [{ name: 'schema', num_children: columns.length }, ...columns.flatMap(schemaOf)],
    columnData: columns.map((c) => ({
      name: c.name,
      data: rows.map((r) => toParquetValue(c, r[c.name as ColumnName])),
    })),
    // No min/max statistics: a checkpoint is read whole, and a truncated string bound is one thing less to trust.
    statistics: false,
    createdBy: 'lake-compactor (hyparquet-writer)',
  });
  return new Uint8Array(writer.getBuffer());
}

/**
 * Decodes the encoded file with the log reader's own Parquet path and checks every row parses to exactly the
 * action meant: an encoder that drops a null map value or a list would otherwise publish a checkpoint that
 * silently changes the table for every reader that starts from it.
 */
async function verifyEncoding(
  bytes: Uint8Array,
  rows: readonly Row[],
  refuse: (reason: string, cause?: unknown) => DeltaCheckpointError,
): Promise<void> {
  let decoded: Record<string, unknown>[];
  try {
    decoded = await readParquetRecords(bytes);
  } catch (err) {
    throw refuse('the encoded checkpoint cannot be decoded', err);
  }
  if (decoded.length !== rows.length)
    throw refuse(`the encoded checkpoint holds ${decoded.length} rows, not ${rows.length}`);
  rows.forEach((row, i) => {
    // Through JSON: an absent field and one read back as null are the same action (both parse to undefined).
    const meant: unknown = JSON.parse(JSON.stringify(parseActions(row)));
    const read: unknown = JSON.parse(JSON.stringify(parseActions(decoded[i] as Record<string, unknown>)));
    if (!isDeepStrictEqual(meant, read))
      throw refuse(`row ${i} of the encoded checkpoint does not read back as the action written`);
  });
}

/** Size and row count of a checkpoint another writer put; its rows are not trusted to be counted as adds. */
async function existingCheckpoint(
  store: ObjectStore,
  key: string,
  refuse: (reason: string, cause?: unknown) => DeltaCheckpointError,
): Promise<{ size: number; actions: number }> {
  const bytes = await store.get(key);
  try {
    const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    return { size: bytes.byteLength, actions: Number(parquetMetadata(file).num_rows) };
  } catch (err) {
    throw refuse(`${key} exists and is not a readable Parquet file; _last_checkpoint was left as it is`, err);
  }
}

// ---------------------------------------------------------------------------------------------------------
// _last_checkpoint (PROTOCOL.md "Last Checkpoint File Schema"), moved forward only, by compare-and-swap
// ---------------------------------------------------------------------------------------------------------

interface LastCheckpoint {
  readonly version: number;
  readonly size: number;
  readonly sizeInBytes: number;
  readonly numOfAddFiles?: number;
}

/** Attempts of the compare-and-swap before leaving the hint to whoever keeps changing it. */
const LAST_CHECKPOINT_ATTEMPTS = 3;

/**
 * Writes `_last_checkpoint` naming `next` unless it names `next.version` or later already. HEAD then GET then a
 * put conditioned on the HEAD's ETag: whatever was read, the put replaces only the object that was judged, so
 * a concurrent writer's newer hint is never overwritten. Losing the race every time leaves the hint as the
 * other writers made it (it is a hint: readers find the newest checkpoint by listing).
 */
async function advanceLastCheckpoint(
  store: ObjectStore,
  root: string,
  next: LastCheckpoint,
): Promise<boolean> {
  const key = `${root}_delta_log/${LAST_CHECKPOINT}`;
  const body = lastCheckpointJson(next);
  for (let attempt = 0; attempt < LAST_CHECKPOINT_ATTEMPTS; attempt += 1) {
    try {
      const current = await store.head(key);
      if (current === undefined) {
        await store.put(key, body, { ifNoneMatch: '*', contentType: 'application/json' });
        return true;
      }
      const named = await namedVersion(store, key);
      if (named !== undefined && named >= next.version) return false;
      await store.put(key, body, { ifMatch: current.etag, contentType: 'application/json' });
      return true;
    } catch (err) {
      if (err instanceof PreconditionFailedError || err instanceof ObjectNotFoundError) continue;
      throw err;
    }
  }
  return false;
}

/** The version a `_last_checkpoint` names, or undefined when it is unreadable (then it may be replaced). */
async function namedVersion(store: ObjectStore, key: string): Promise<number | undefined> {
  const text = new TextDecoder().decode(await store.get(key));
  try {
    const version = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'number' && Number.isSafeInteger(version) ? version : undefined;
  } catch {
    return undefined;
  }
}

/** The hint's JSON with its `checksum` (PROTOCOL.md "JSON checksum"), which Spark validates when present. */
export function lastCheckpointJson(fields: LastCheckpoint): string {
  const plain = { ...fields };
  return JSON.stringify({ ...plain, checksum: lastCheckpointChecksum(plain) });
}

/**
 * PROTOCOL.md "JSON checksum": MD5 of the canonical form, in which every leaf is `path=value`, names and
 * strings are quoted and strictly URL-encoded, array positions are bare numbers, pairs are sorted by path
 * bytes and joined with `,`, and the top-level `checksum` is left out.
 */
export function lastCheckpointChecksum(json: Readonly<Record<string, unknown>>): string {
  const pairs: [string, string][] = [];
  const walk = (path: string[], value: unknown): void => {
    if (Array.isArray(value)) {
      for (const [i, v] of value.entries()) walk([...path, String(i)], v);
    } else if (value !== null && typeof value === 'object') {
      for (const [k, v] of Object.entries(value)) walk([...path, `"${strictUrlEncode(k)}"`], v);
    } else {
      const leaf = typeof value === 'string' ? `"${strictUrlEncode(value)}"` : JSON.stringify(value);
      pairs.push([path.join('+'), leaf]);
    }
  };
  for (const [k, v] of Object.entries(json)) if (k !== 'checksum') walk([`"${strictUrlEncode(k)}"`], v);
  pairs.sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const canonical = pairs.map(([p, v]) => `${p}=${v}`).join(',');
  return createHash('md5').update(canonical, 'utf8').digest('hex');
}

/** RFC 3986 strict: every octet but `A-Z a-z 0-9 - . _ ~` is `%XX` in uppercase hex. */
function strictUrlEncode(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
