// A small Apache Hudi writer for the demo, the benchmark and the tests: creates a Copy-on-Write or a Merge-on-Read
// table (version 6 or 8, hoodie.properties as Hudi writes them, non-Hive-style partitions by `byteField`) and appends
// insert commits, each writing one new file group — a base file with Hudi's meta columns and index footer, and the
// commit's requested, inflight and completed instant files through the timeline-writer's builders. Enough small base
// files to cluster, with keys known to the caller. On a Merge-on-Read table every write is a `deltacommit`, and
// `appendHudiDeltaCommit` upserts a fraction of a partition's records into one new log file per file slice (an Avro
// data block through the log writer), so there are log files to compact; the appender keeps the latest version of
// every record it wrote, the merged view a reader of the table must see. A Merge-on-Read table can also carry a
// decimal column (`amount`, decimal(20, 2) or another: FIXED_LEN_BYTE_ARRAY in base files, Avro `fixed` in log records), and a
// delta commit can write its records as a Parquet data block instead of an Avro one. Beside a running clustering or compaction
// (the demo), each commit can be made as a Hudi writer configured with the storage lock makes it: under the table's
// lock, its instant minted from the clock and after every instant on the timeline, so the appender's commits never
// land in the past of a table service's instant.
import { parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { parquetWriteBuffer, schemaFromColumnData } from 'hyparquet-writer';
import { hudiIndexFooterEntries } from '../core/formats/hudi/bloom/index.js';
import { type HudiLockHandle, type HudiTableLock, withHudiLock } from '../core/formats/hudi/lock/index.js';
import {
  avroDataBlock,
  logFileInstant,
  logFileName,
  parquetDataBlock,
} from '../core/formats/hudi/log/index.js';
import { readHudiTable } from '../core/formats/hudi/table-state.js';
import {
  baseFileName,
  type CommitMetadata,
  compactionCommitContent,
  completedInstantFile,
  emptyWriteStat,
  latestInstant,
  mintInstantTime,
  newFileId,
  newFileWriteStat,
  nextInstant,
  pendingInstantFiles,
  relativeFilePath,
  type WriteStat,
  writeToken,
} from '../core/formats/hudi/timeline-writer/index.js';
import type { ObjectStore } from '../ports/object-store.js';

export type AppenderTableVersion = 6 | 8;

/** The Avro schema the commits record (extraMetadata.schema), as Spark's Hudi writer names it. */
export const APPENDER_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'events_record',
  namespace: 'hoodie.events',
  fields: [
    { name: 'id', type: ['int', 'null'] },
    { name: 'name', type: ['string', 'null'] },
    { name: 'byteField', type: ['int', 'null'] },
  ],
});

/** Hudi's two table types: base files rewritten per write, or updates landed as log files beside them. */
export type AppenderTableType = 'COPY_ON_WRITE' | 'MERGE_ON_READ';

/**
 * The Avro schema a Merge-on-Read table's commits record (extraMetadata.schema): the Copy-on-Write one plus `ts`, the
 * ordering (precombine) field, so an update's newer version wins by event time as well as by arrival; nullable
 * fields as Spark's writer declares them in a MoR table's delta commits (the fixtures' `["null", …]`).
 */
export const MOR_APPENDER_SCHEMA = JSON.stringify({
  type: 'record',
  name: 'events_record',
  namespace: 'hoodie.events',
  fields: [
    { name: 'id', type: ['null', 'int'], default: null },
    { name: 'name', type: ['null', 'string'], default: null },
    { name: 'byteField', type: ['null', 'int'], default: null },
    { name: 'ts', type: ['null', 'long'], default: null },
  ],
});

/** The decimal type of a Merge-on-Read table's `amount` column: digits, digits after the point, bytes of its fixed. */
export interface AmountDecimal {
  readonly precision: number;
  readonly scale: number;
  readonly size: number;
}

/** The default `amount` decimal: 20 digits, 2 after the point, in 9 bytes (Avro's fixed; the fewest that hold 20 digits). */
export const AMOUNT_DECIMAL: AmountDecimal = { precision: 20, scale: 2, size: 9 };

/**
 * A decimal(10, 2) `amount` in 5 bytes, as Spark's Hudi writer (Avro) stores it — where the Parquet engine's own form
 * of 10 digits would be INT64, so compacting it proves the engine keeps the input's form.
 */
export const AMOUNT_DECIMAL_10: AmountDecimal = { precision: 10, scale: 2, size: 5 };

/**
 * The `amount` field as Spark's Hudi writer declares a decimal column: a nullable `fixed` of the fewest bytes that
 * hold its digits, with logicalType decimal (its Parquet form is FIXED_LEN_BYTE_ARRAY(size) DECIMAL(precision, scale)).
 */
function amountField(amount: AmountDecimal) {
  return {
    name: 'amount',
    type: [
      'null',
      {
        type: 'fixed',
        name: 'fixed',
        namespace: 'hoodie.events.events_record.amount',
        size: amount.size,
        logicalType: 'decimal',
        precision: amount.precision,
        scale: amount.scale,
      },
    ],
    default: null,
  };
}

/** {@link MOR_APPENDER_SCHEMA} with an `amount` decimal column last. */
function morAmountAppenderSchema(amount: AmountDecimal): string {
  return JSON.stringify({
    ...JSON.parse(MOR_APPENDER_SCHEMA),
    fields: [...(JSON.parse(MOR_APPENDER_SCHEMA) as { fields: unknown[] }).fields, amountField(amount)],
  });
}

/** Hudi's meta columns, first in every base file and log record. */
const META_FIELDS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  '_hoodie_file_name',
] as const;

/**
 * The writer schema of a Merge-on-Read table's log blocks (header SCHEMA): Hudi's meta fields first, each a nullable
 * string with an empty doc, then the table's fields — as every fixture's Avro data block declares it.
 */
export const MOR_LOG_SCHEMA = JSON.stringify({
  ...JSON.parse(MOR_APPENDER_SCHEMA),
  fields: [
    ...META_FIELDS.map((name) => ({ name, type: ['null', 'string'], doc: '', default: null })),
    ...(JSON.parse(MOR_APPENDER_SCHEMA) as { fields: unknown[] }).fields,
  ],
});

/** {@link MOR_LOG_SCHEMA} with an `amount` decimal column last. */
function morAmountLogSchema(amount: AmountDecimal): string {
  return JSON.stringify({
    ...JSON.parse(MOR_LOG_SCHEMA),
    fields: [...(JSON.parse(MOR_LOG_SCHEMA) as { fields: unknown[] }).fields, amountField(amount)],
  });
}

/** The schema a Merge-on-Read table's commits record, and its log blocks' writer schema. */
function morSchemas(table: AppenderTable): { readonly commit: string; readonly log: string } {
  return table.amount !== undefined
    ? { commit: morAmountAppenderSchema(table.amount), log: morAmountLogSchema(table.amount) }
    : { commit: MOR_APPENDER_SCHEMA, log: MOR_LOG_SCHEMA };
}

/** The precombine field and payload of a Merge-on-Read table: event-time ordering by `ts`, against the base too. */
const MOR_PAYLOAD = 'org.apache.hudi.common.model.DefaultHoodieRecordPayload';

function properties(version: AppenderTableVersion, name: string, type: AppenderTableType): string {
  const mor = type === 'MERGE_ON_READ';
  const common = [
    `hoodie.table.precombine.field=${mor ? 'ts' : 'id'}`,
    'hoodie.table.partition.fields=byteField',
    `hoodie.table.type=${type}`,
    ...(mor ? [`hoodie.compaction.payload.class=${MOR_PAYLOAD}`] : []),
    'hoodie.archivelog.folder=archived',
    'hoodie.table.recordkey.fields=id',
    `hoodie.table.name=${name}`,
    'hoodie.datasource.write.hive_style_partitioning=false',
    'hoodie.datasource.write.partitionpath.urlencode=false',
    'hoodie.datasource.write.drop.partition.columns=false',
    'hoodie.table.timeline.timezone=UTC',
  ];
  const versioned =
    version === 6
      ? [
          'hoodie.table.version=6',
          'hoodie.timeline.layout.version=1',
          'hoodie.table.keygenerator.class=org.apache.hudi.keygen.SimpleKeyGenerator',
        ]
      : [
          'hoodie.table.version=8',
          'hoodie.table.initial.version=8',
          'hoodie.timeline.layout.version=2',
          'hoodie.timeline.path=timeline',
          'hoodie.timeline.history.path=history',
          'hoodie.table.keygenerator.type=SIMPLE',
          'hoodie.record.merge.mode=EVENT_TIME_ORDERING',
        ];
  return `#Properties saved by the test appender\n${[...common, ...versioned].join('\n')}\n`;
}

/** One record's latest version as the appender committed it: every column but `_hoodie_file_name`. */
export interface AppenderRow {
  readonly _hoodie_commit_time: string;
  readonly _hoodie_commit_seqno: string;
  readonly _hoodie_record_key: string;
  readonly _hoodie_partition_path: string;
  readonly id: number;
  readonly name: string;
  readonly byteField: number;
  /** The ordering field: the writing commit's instant as a number (so a later commit's version is newer). */
  readonly ts: bigint;
  /** A table with `amount` only: its unscaled value (hundredths, see {@link AMOUNT_DECIMAL}), or null. */
  readonly amount?: bigint | null;
}

/** A Hudi table being appended to: its root, version and the last instant minted. */
export interface AppenderTable {
  readonly store: ObjectStore;
  readonly root: string;
  readonly version: AppenderTableVersion;
  /** The table type (hoodie.table.type). @default 'COPY_ON_WRITE' */
  readonly type?: AppenderTableType;
  /** The last instant (or completion) time minted; the next is one millisecond later. */
  last: string;
  /** How many record keys were written (ids are 1..written). */
  written: number;
  /**
   * Merge-on-Read only: the latest committed version of every record, by record key — what Hudi's snapshot read of
   * the table (base files merged with their logs), and so a compaction's output, must hold.
   */
  readonly latest?: Map<string, AppenderRow>;
  /** Merge-on-Read only: delta commits of updates made so far (rotates which records the next one updates). */
  deltaCommits?: number;
  /** Merge-on-Read only: every record also has `amount`, a decimal of this type (see {@link AMOUNT_DECIMAL}). */
  readonly amount?: AmountDecimal;
}

function keyOf(table: AppenderTable, relative: string): string {
  return table.root === '' ? relative : `${table.root}/${relative}`;
}

/** Creates an empty table (hoodie.properties only), instants starting after `start` (17 digits, UTC). */
export async function createHudiTable(
  store: ObjectStore,
  root: string,
  version: AppenderTableVersion,
  start = '20240301000000000',
): Promise<AppenderTable> {
  const table: AppenderTable = { store, root, version, last: start, written: 0 };
  await store.put(keyOf(table, '.hoodie/hoodie.properties'), properties(version, 'events', 'COPY_ON_WRITE'));
  return table;
}

/**
 * Creates an empty Merge-on-Read table (hoodie.properties only: `hoodie.table.type=MERGE_ON_READ`, precombine field
 * `ts`, DefaultHoodieRecordPayload, and on version 8 EVENT_TIME_ORDERING), instants starting after `start`; with
 * `amount`, its records carry the decimal column too. Its
 * inserts complete as deltacommits writing base files; `appendHudiDeltaCommit` adds the log files.
 */
export async function createHudiMorTable(
  store: ObjectStore,
  root: string,
  version: AppenderTableVersion,
  start = '20240301000000000',
  options: { readonly amount?: boolean | AmountDecimal } = {},
): Promise<AppenderTable> {
  const table: AppenderTable = {
    store,
    root,
    version,
    type: 'MERGE_ON_READ',
    last: start,
    written: 0,
    latest: new Map(),
    deltaCommits: 0,
    ...(options.amount === true
      ? { amount: AMOUNT_DECIMAL }
      : typeof options.amount === 'object'
        ? { amount: options.amount }
        : {}),
  };
  await store.put(keyOf(table, '.hoodie/hoodie.properties'), properties(version, 'events', 'MERGE_ON_READ'));
  return table;
}

/** Every record's latest committed version (Merge-on-Read tables), ordered by id. */
export function appenderLatestRows(table: AppenderTable): AppenderRow[] {
  return [...(table.latest ?? new Map<string, AppenderRow>()).values()].sort((a, b) => a.id - b.id);
}

/** The base file of an insert: Hudi's five meta columns first, then the data; the index footer of its keys. */
export function insertBaseFile(
  instant: string,
  fileName: string,
  partition: string,
  ids: readonly number[],
): Uint8Array {
  const keys = ids.map(String);
  const text = (name: string, data: (string | null)[]) => ({ name, data, type: 'STRING' as const });
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        text(
          '_hoodie_commit_time',
          ids.map(() => instant),
        ),
        text(
          '_hoodie_commit_seqno',
          ids.map((_, i) => `${instant}_0_${i}`),
        ),
        text('_hoodie_record_key', keys),
        text(
          '_hoodie_partition_path',
          ids.map(() => partition),
        ),
        text(
          '_hoodie_file_name',
          ids.map(() => fileName),
        ),
        { name: 'id', data: Int32Array.from(ids), type: 'INT32' },
        text(
          'name',
          ids.map((id) => `event-${id}`),
        ),
        { name: 'byteField', data: Int32Array.from(ids, () => Number(partition)), type: 'INT32' },
      ],
      kvMetadata: Object.entries(hudiIndexFooterEntries(keys)).map(([key, value]) => ({ key, value })),
    } as never),
  );
}

/**
 * Every column the Merge-on-Read appender writes but `_hoodie_file_name` (which names the file a row is in, so a
 * compaction or clustering rewrites it) and the optional `amount`: what a row multiset before and after compares.
 */
export const MOR_ROW_COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'id',
  'name',
  'byteField',
  'ts',
] as const;

/**
 * The columns of a Merge-on-Read table's rows as the base file and a Parquet log block both store them: the meta
 * columns (`_hoodie_file_name` = `fileName`), id, name, byteField and the ordering field `ts` (INT64).
 */
function morColumns(rows: readonly AppenderRow[], fileName: string) {
  const text = (name: string, data: string[]) => ({ name, data, type: 'STRING' as const });
  return [
    text(
      '_hoodie_commit_time',
      rows.map((r) => r._hoodie_commit_time),
    ),
    text(
      '_hoodie_commit_seqno',
      rows.map((r) => r._hoodie_commit_seqno),
    ),
    text(
      '_hoodie_record_key',
      rows.map((r) => r._hoodie_record_key),
    ),
    text(
      '_hoodie_partition_path',
      rows.map((r) => r._hoodie_partition_path),
    ),
    text(
      '_hoodie_file_name',
      rows.map(() => fileName),
    ),
    { name: 'id', data: Int32Array.from(rows, (r) => r.id), type: 'INT32' as const },
    text(
      'name',
      rows.map((r) => r.name),
    ),
    { name: 'byteField', data: Int32Array.from(rows, (r) => r.byteField), type: 'INT32' as const },
    { name: 'ts', data: BigInt64Array.from(rows, (r) => r.ts), type: 'INT64' as const },
  ];
}

/**
 * The base file of a Merge-on-Read insert: the meta columns, then id, name, byteField and the ordering field `ts`
 * (INT64); the footer Hudi's Avro Parquet writer leaves (`parquet.avro.schema`, `writer.model.name`, then the index
 * entries of its keys). `_hoodie_file_name` names the file itself, as Hudi's create handle writes it.
 */
export function morInsertBaseFile(
  fileName: string,
  rows: readonly AppenderRow[],
  amount?: AmountDecimal,
): Uint8Array {
  const keys = rows.map((r) => r._hoodie_record_key);
  return new Uint8Array(
    parquetWriteBuffer({
      ...withAmountColumn(amount, rows, morColumns(rows, fileName)),
      kvMetadata: [
        { key: 'parquet.avro.schema', value: amount ? morAmountLogSchema(amount) : MOR_LOG_SCHEMA },
        { key: 'writer.model.name', value: 'avro' },
        ...Object.entries(hudiIndexFooterEntries(keys)).map(([key, value]) => ({ key, value })),
      ],
    } as never),
  );
}

/** A typed column of a Merge-on-Read file (hyparquet-writer's column source with its basic type). */
interface TypedColumn {
  readonly name: string;
  readonly data: unknown;
  readonly type: string;
}

/**
 * The columns of a Merge-on-Read file, with `amount` last when the table has it: FIXED_LEN_BYTE_ARRAY(size) annotated
 * DECIMAL(precision, scale), as Hudi's Avro Parquet writer stores the Avro fixed, its values the unscaled BigInts (or null). The
 * schema is then given whole, as the writer takes a column without a basic type.
 */
function withAmountColumn(
  amount: AmountDecimal | undefined,
  rows: readonly AppenderRow[],
  columns: readonly TypedColumn[],
): { columnData: never; schema?: never } {
  if (amount === undefined) return { columnData: columns as never };
  const data = rows.map((r) => r.amount ?? null);
  const schema = schemaFromColumnData({
    columnData: [...columns, { name: 'amount', data }] as never,
    schemaOverrides: {
      amount: {
        name: 'amount',
        type: 'FIXED_LEN_BYTE_ARRAY',
        type_length: amount.size,
        repetition_type: 'OPTIONAL',
        converted_type: 'DECIMAL',
        logical_type: { type: 'DECIMAL', precision: amount.precision, scale: amount.scale },
        precision: amount.precision,
        scale: amount.scale,
      },
    },
  });
  return {
    columnData: [
      ...columns.map(({ name, data: d }) => ({ name, data: d })),
      { name: 'amount', data },
    ] as never,
    schema: schema as never,
  };
}

/**
 * The amount of record `id` when inserted (unscaled): every digit of the type used (20 by default, so no double holds
 * it), alternating in sign, null for every seventh record.
 */
function insertedAmount(id: number, amount: AmountDecimal): bigint | null {
  if (id % 7 === 0) return null;
  const top = 10n ** BigInt(amount.precision - 1);
  const magnitude = top + ((BigInt(id) * 123_456_789_012_345n) % (8n * top)) + 1n;
  return id % 2 === 0 ? -magnitude : magnitude;
}

/**
 * An updated amount at `instant`: the old one moved by the instant (a null becomes that move), within the type's
 * digits — by the whole instant at 20 digits, by its last `precision - 2` digits below.
 */
function updatedAmount(old: bigint | null | undefined, instant: string, amount: AmountDecimal): bigint {
  const move = BigInt(instant) % 10n ** BigInt(amount.precision - 2);
  return old == null ? move : old - move;
}

/** The rows of a Merge-on-Read insert of `ids` at `instant` into `partition`: version 0 of each record. */
function insertedRows(
  instant: string,
  partition: string,
  ids: readonly number[],
  amount?: AmountDecimal,
): AppenderRow[] {
  return ids.map((id, i) => ({
    _hoodie_commit_time: instant,
    _hoodie_commit_seqno: `${instant}_0_${i}`,
    _hoodie_record_key: String(id),
    _hoodie_partition_path: partition,
    id,
    name: `event-${id}`,
    byteField: Number(partition),
    ts: BigInt(instant),
    ...(amount ? { amount: insertedAmount(id, amount) } : {}),
  }));
}

/**
 * How an insert commit is made beside other writers and table services (the demo, where clustering commits to the
 * same timeline). Without either, instants follow the appender's own last one (the tests' deterministic tables).
 */
export interface AppendHudiOptions {
  /**
   * Mint the instant (and, on v8, the completion time) from this clock (epoch ms, UTC) and after every instant on
   * the timeline, as Hudi's writers do: a commit minted before a completed replacecommit would land in its past.
   */
  readonly clock?: () => number;
  /**
   * Commit under the table's lock (the one its Hudi writers declare), from minting the instant to the completed
   * instant file, as a Hudi writer with optimistic concurrency control holds it around its commit.
   */
  readonly lock?: HudiTableLock;
}

/** Every instant and completion time named on the active timeline (the folder's instant files). */
async function timelineTimes(table: AppenderTable): Promise<string[]> {
  const folder = keyOf(table, table.version === 6 ? '.hoodie/' : '.hoodie/timeline/');
  const times: string[] = [];
  for await (const object of table.store.listAll(folder)) {
    const name = object.key.slice(folder.length);
    if (!name.includes('/')) times.push(...(name.match(/\d{17}/g) ?? []));
  }
  return times;
}

/**
 * One insert commit writing `rows` new records into a new file group of `partition` (a number, as byteField's
 * value): the base file, then requested, inflight and the completed commit (the atomic step). On a Merge-on-Read
 * table the action is a `deltacommit` (its inflight the workload, as Hudi's writer saves it) and the records join
 * the appender's latest versions. Returns the base file's key and the instant.
 */
export async function appendHudiInsert(
  table: AppenderTable,
  partition: string,
  rows: number,
  options: AppendHudiOptions = {},
): Promise<{ key: string; instant: string; fileId: string }> {
  const { clock, lock } = options;
  const commit = async (handle?: HudiLockHandle) => {
    const instant =
      clock === undefined
        ? nextInstant(table.last)
        : mintInstantTime(clock(), 'UTC', [table.last, ...(await timelineTimes(table))]);
    const ids = Array.from({ length: rows }, (_, i) => table.written + i + 1);
    const fileId = newFileId(`appender/${instant}`, 0);
    const name = baseFileName(fileId, writeToken({ partitionId: 0, stageId: 1, attemptId: 0 }), instant);
    const marker = keyOf(table, `${partition}/.hoodie_partition_metadata`);
    if ((await table.store.head(marker)) === undefined)
      await table.store.put(marker, `#partition metadata\ncommitTime=${instant}\npartitionDepth=1\n`);
    // On a Merge-on-Read table every write is a deltacommit, inserts too (they create base files).
    const mor = table.type === 'MERGE_ON_READ';
    const amount = table.amount;
    const inserted = mor ? insertedRows(instant, partition, ids, amount) : [];
    const body = mor
      ? morInsertBaseFile(name, inserted, amount)
      : insertBaseFile(instant, name, partition, ids);
    const key = keyOf(table, `${partition}/${name}`);
    await table.store.put(key, body);
    const location = {
      tableVersion: table.version,
      operation: mor ? ('deltacommit' as const) : ('commit' as const),
      instant,
    };
    const pending = pendingInstantFiles(location);
    await table.store.put(keyOf(table, pending.requested), new Uint8Array(0));
    await table.store.put(
      keyOf(table, pending.inflight),
      mor
        ? deltaCommitInflightContent(table.version, {
            partition,
            inserts: rows,
            updates: [],
            operationType: 'INSERT',
          })
        : new Uint8Array(0),
    );
    const completion =
      table.version === 6
        ? undefined
        : clock === undefined
          ? nextInstant(instant)
          : mintInstantTime(clock(), 'UTC', [instant]);
    const metadata = {
      partitionToWriteStats: {
        [partition]: [
          newFileWriteStat({
            partitionPath: partition,
            fileId,
            fileName: name,
            numWrites: rows,
            fileSizeInBytes: body.length,
          }),
        ],
      },
      compacted: false,
      extraMetadata: { schema: mor ? morSchemas(table).commit : APPENDER_SCHEMA },
      version: null,
      operationType: 'INSERT',
    };
    handle?.assertHeld('completing the insert commit');
    await table.store.put(
      keyOf(table, completedInstantFile(location, completion)),
      compactionCommitContent(table.version, metadata),
    );
    table.written += rows;
    table.last = completion ?? instant;
    for (const row of inserted) table.latest?.set(row._hoodie_record_key, row);
    return { key, instant, fileId };
  };
  return lock === undefined ? commit() : withHudiLock(lock, commit);
}

/**
 * An upsert of the file group `fileId` (a new slice: the old rows rewritten under a new instant, with one more), as a
 * concurrent Hudi writer would commit it.
 */
export async function upsertHudiFileGroup(
  table: AppenderTable,
  partition: string,
  fileId: string,
  ids: readonly number[],
): Promise<{ key: string; instant: string }> {
  const instant = nextInstant(table.last);
  const name = baseFileName(fileId, writeToken({ partitionId: 0, stageId: 2, attemptId: 0 }), instant);
  const body = insertBaseFile(instant, name, partition, ids);
  const key = keyOf(table, `${partition}/${name}`);
  await table.store.put(key, body);
  const location = { tableVersion: table.version, operation: 'commit' as const, instant };
  const completion = table.version === 6 ? undefined : nextInstant(instant);
  const stat = newFileWriteStat({
    partitionPath: partition,
    fileId,
    fileName: name,
    numWrites: ids.length,
    fileSizeInBytes: body.length,
  });
  await table.store.put(
    keyOf(table, completedInstantFile(location, completion)),
    compactionCommitContent(table.version, {
      partitionToWriteStats: {
        [partition]: [{ ...stat, prevCommit: 'x', numInserts: 0, numUpdateWrites: ids.length }],
      },
      compacted: false,
      extraMetadata: { schema: APPENDER_SCHEMA },
      version: null,
      operationType: 'UPSERT',
    }),
  );
  table.last = completion ?? instant;
  return { key, instant };
}

/** One file group a delta commit updates, as its workload profile (the inflight file) counts it. */
export interface DeltaCommitUpdate {
  readonly fileId: string;
  /** The base instant of the slice the updates land in (the workload's prevCommit). */
  readonly baseInstant: string;
  readonly records: number;
}

/** What a delta commit plans to write in one partition: new records (a new base file) and updated file groups. */
export interface DeltaCommitWorkload {
  readonly partition: string;
  readonly inserts: number;
  readonly updates: readonly DeltaCommitUpdate[];
  readonly operationType: string;
}

/**
 * The `.deltacommit.inflight` file as Hudi's Spark writer leaves it (its WorkloadProfile saved before any file is
 * written, fixtures mor_v6_trips_8i1u and mor_v8_trips_8i3u1d): per partition one stat for the insert bucket (file id
 * "", numInserts) then one per updated file group (prevCommit its slice's base instant, numUpdateWrites), nothing
 * else set; no extraMetadata. Jackson JSON on version 6, Avro HoodieCommitMetadata on 8.
 */
export function deltaCommitInflightContent(
  version: AppenderTableVersion,
  workload: DeltaCommitWorkload,
): Uint8Array {
  const stats: WriteStat[] = [
    { ...emptyWriteStat(), fileId: '', numInserts: workload.inserts },
    ...workload.updates.map((u) => ({
      ...emptyWriteStat(),
      fileId: u.fileId,
      prevCommit: u.baseInstant,
      numUpdateWrites: u.records,
    })),
  ];
  return compactionCommitContent(version, {
    partitionToWriteStats: { [workload.partition]: stats },
    compacted: false,
    extraMetadata: {},
    version: null,
    operationType: workload.operationType,
  });
}

/** One log file a delta commit wrote: what its write stat says. */
export interface LogAppend {
  readonly partition: string;
  readonly fileId: string;
  readonly logFileName: string;
  /** The instant the log is named by (v6: the slice's base instant; v8: the delta commit's): the stat's prevCommit. */
  readonly logInstant: string;
  readonly logVersion: number;
  /** v6: the slice's base file name; v8: "" (Hudi 1.x no longer records it). */
  readonly baseFile: string;
  readonly updates: number;
  readonly sizeInBytes: number;
  readonly upsertTimeMs?: number;
}

/**
 * The write stat of a log append (HoodieDeltaWriteStat, as HoodieAppendHandle fills it; fixtures mor_v6_trips_8i1u and
 * mor_v8_trips_8i3u1d): the log's path, version and offset 0 (a new file on object storage), the base file, the one
 * log file, its updates and size.
 */
export function logAppendWriteStat(append: LogAppend): WriteStat {
  return {
    ...emptyWriteStat(),
    fileId: append.fileId,
    path: relativeFilePath(append.partition, append.logFileName),
    prevCommit: append.logInstant,
    numWrites: append.updates,
    numUpdateWrites: append.updates,
    totalWriteBytes: append.sizeInBytes,
    partitionPath: append.partition,
    fileSizeInBytes: append.sizeInBytes,
    logVersion: append.logVersion,
    logOffset: 0,
    baseFile: append.baseFile,
    logFiles: [append.logFileName],
    runtimeStats: { totalScanTime: 0, totalCreateTime: 0, totalUpsertTime: append.upsertTimeMs ?? 0 },
  };
}

/** The completed deltacommit of log appends in one partition: their stats, the table schema, the operation. */
export function deltaCommitMetadata(
  partition: string,
  appends: readonly LogAppend[],
  extraMetadata: Readonly<Record<string, string>>,
  operationType: string,
): CommitMetadata {
  return {
    partitionToWriteStats: { [partition]: appends.map(logAppendWriteStat) },
    compacted: false,
    extraMetadata,
    version: null,
    operationType,
  };
}

/** How a delta commit of updates is made: as an insert commit is (clock, lock), and how much it updates. */
export interface AppendHudiDeltaOptions extends AppendHudiOptions {
  /** The share of each updated file slice's records to update, in (0, 1]. @default 0.2 */
  readonly fraction?: number;
  /**
   * How the records are written: an Avro data block (Hudi's default), or a Parquet data block (its
   * hoodie.logfile.data.block.format=parquet: the records as one Parquet file, in the base files' column types).
   * @default 'avro'
   */
  readonly logBlock?: 'avro' | 'parquet';
}

/** What one delta commit of updates wrote. */
export interface HudiDeltaCommit {
  readonly instant: string;
  /** The log files written (store keys), one per updated file slice. */
  readonly logKeys: readonly string[];
  readonly fileIds: readonly string[];
  /** Records updated (new versions written). */
  readonly updated: number;
}

/**
 * One data block of a delta commit's `rows` in slice `fileId`: Avro records of the table's log schema (`amount` as the
 * decimal it is), or the same records as one Parquet file of the base files' column types.
 */
function logDataBlock(
  table: AppenderTable,
  instant: string,
  rows: readonly AppenderRow[],
  fileId: string,
  kind: 'avro' | 'parquet',
): Uint8Array {
  const { log } = morSchemas(table);
  const amount = table.amount;
  if (kind === 'avro')
    return avroDataBlock(
      instant,
      log,
      rows.map(({ amount: unscaled, ...r }) => ({
        ...r,
        _hoodie_file_name: fileId,
        ...(amount ? { amount: unscaled == null ? null : { unscaled, scale: amount.scale } } : {}),
      })),
    );
  const parquet = parquetWriteBuffer({
    ...withAmountColumn(amount, rows, morColumns(rows, fileId)),
    kvMetadata: [{ key: 'parquet.avro.schema', value: log }],
  } as never);
  return parquetDataBlock(instant, log, new Uint8Array(parquet));
}

/** The record keys of a base file, in file order. */
async function recordKeysOf(store: ObjectStore, key: string): Promise<string[]> {
  const bytes = await store.get(key);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  const rows = (await parquetReadObjects({ file, columns: ['_hoodie_record_key'], compressors })) as {
    _hoodie_record_key: unknown;
  }[];
  return rows.map((r) => String(r._hoodie_record_key));
}

/**
 * One delta commit of updates on a Merge-on-Read table (made with `createHudiMorTable`): in every live file slice of
 * `partition` with a base file, a `fraction` of its records (rotating from commit to commit) get a new version — a
 * new name, `ts` the commit's instant, so it is newer by event time too, another `amount` if the table has one —
 * written as one Avro (or, with `logBlock: 'parquet'`, Parquet) data block in a new log file of the slice; then requested, inflight (the workload) and the completed deltacommit naming each log file.
 * The slices are read from the table under the lock, so a log extends the slice a completed compaction started;
 * file groups in a pending compaction or clustering plan are left alone (the reader sets them aside until the plan
 * completes, and a v6 writer would have to name its log after the pending instant). Returns undefined when no slice
 * of the partition can take an update (nothing written).
 * @throws Error on a Copy-on-Write table, or a fraction outside (0, 1].
 */
export async function appendHudiDeltaCommit(
  table: AppenderTable,
  partition: string,
  options: AppendHudiDeltaOptions = {},
): Promise<HudiDeltaCommit | undefined> {
  const { clock, lock } = options;
  const fraction = options.fraction ?? 0.2;
  if (table.type !== 'MERGE_ON_READ' || table.latest === undefined)
    throw new Error('delta commits are written to Merge-on-Read tables (createHudiMorTable)');
  if (!(fraction > 0 && fraction <= 1)) throw new Error(`update fraction ${fraction} is not in (0, 1]`);
  const latest = table.latest;
  const commit = async (handle?: HudiLockHandle): Promise<HudiDeltaCommit | undefined> => {
    const state = await readHudiTable(table.store, table.root);
    const slices = (state.partitions.find((p) => p.partition === partition)?.liveSlices ?? []).filter(
      (s) => s.baseFile !== undefined,
    );
    if (slices.length === 0) return undefined;
    // Always after every instant on the timeline, clock or not: a delta commit minted before a completed compaction
    // would land in its past (v6: Hudi's ordering rule; v8+: its log would join the compacted-away slice).
    const times = [table.last, ...(await timelineTimes(table))];
    const instant =
      clock === undefined
        ? nextInstant(latestInstant(times) ?? table.last)
        : mintInstantTime(clock(), 'UTC', times);
    const round = table.deltaCommits ?? 0;
    const token = writeToken({ partitionId: 0, stageId: 2 + round, attemptId: 0 });
    const appends: LogAppend[] = [];
    const written: AppenderRow[] = [];
    let seq = 0;
    for (const slice of slices) {
      const base = slice.baseFile;
      if (base === undefined) continue;
      const keys = (await recordKeysOf(table.store, base.key)).filter((k) => latest.has(k));
      if (keys.length === 0) continue;
      const count = Math.max(1, Math.round(keys.length * fraction));
      const start = (round * count) % keys.length;
      const rows: AppenderRow[] = [];
      for (let j = 0; j < Math.min(count, keys.length); j++) {
        const old = latest.get(keys[(start + j) % keys.length] as string) as AppenderRow;
        rows.push({
          ...old,
          _hoodie_commit_time: instant,
          _hoodie_commit_seqno: `${instant}_0_${seq++}`,
          name: `event-${old.id}-u${instant}`,
          ts: BigInt(instant),
          // A new amount, still of the type's digits (see updatedAmount).
          ...(table.amount !== undefined ? { amount: updatedAmount(old.amount, instant, table.amount) } : {}),
        });
      }
      const logInstant = logFileInstant(table.version, slice.baseInstantTime, instant);
      // Object storage cannot append: each write of a slice's log adds the next version (v8 names are per commit).
      const version =
        1 + Math.max(0, ...slice.logFiles.filter((l) => l.instantTime === logInstant).map((l) => l.version));
      const name = logFileName({ fileId: slice.fileId, instant: logInstant, version, writeToken: token });
      const bytes = logDataBlock(table, instant, rows, slice.fileId, options.logBlock ?? 'avro');
      await table.store.put(keyOf(table, relativeFilePath(partition, name)), bytes);
      appends.push({
        partition,
        fileId: slice.fileId,
        logFileName: name,
        logInstant,
        logVersion: version,
        baseFile: table.version === 6 ? base.name : '',
        updates: rows.length,
        sizeInBytes: bytes.length,
      });
      written.push(...rows);
    }
    if (appends.length === 0) return undefined;
    const location = { tableVersion: table.version, operation: 'deltacommit' as const, instant };
    const pending = pendingInstantFiles(location);
    await table.store.put(keyOf(table, pending.requested), new Uint8Array(0));
    await table.store.put(
      keyOf(table, pending.inflight),
      deltaCommitInflightContent(table.version, {
        partition,
        inserts: 0,
        updates: appends.map((a) => ({
          fileId: a.fileId,
          baseInstant: slices.find((s) => s.fileId === a.fileId)?.baseInstantTime ?? a.logInstant,
          records: a.updates,
        })),
        operationType: 'UPSERT',
      }),
    );
    const completion =
      table.version === 6
        ? undefined
        : clock === undefined
          ? nextInstant(instant)
          : mintInstantTime(clock(), 'UTC', [instant]);
    handle?.assertHeld('completing the delta commit');
    await table.store.put(
      keyOf(table, completedInstantFile(location, completion)),
      compactionCommitContent(
        table.version,
        deltaCommitMetadata(partition, appends, { schema: morSchemas(table).commit }, 'UPSERT'),
      ),
    );
    table.last = completion ?? instant;
    table.deltaCommits = round + 1;
    for (const row of written) latest.set(row._hoodie_record_key, row);
    return {
      instant,
      logKeys: appends.map((a) => keyOf(table, relativeFilePath(partition, a.logFileName))),
      fileIds: appends.map((a) => a.fileId),
      updated: written.length,
    };
  };
  return lock === undefined ? commit() : withHudiLock(lock, commit);
}
