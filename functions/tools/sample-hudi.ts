// A small Apache Hudi writer for the demo and the tests: creates a Copy-on-Write table (version 6 or 8,
// hoodie.properties as Hudi writes them, non-Hive-style partitions by `byteField`) and appends insert commits, each
// writing one new file group — a base file with Hudi's meta columns and index footer, and the commit's requested,
// inflight and completed instant files through the timeline-writer's builders. Enough small base files to cluster,
// with keys known to the caller. Beside a running clustering (the demo), each commit can be made as a Hudi writer
// configured with the storage lock makes it: under the table's lock, its instant minted from the clock and after
// every instant on the timeline, so the appender's commits never land in the past of a replacecommit.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { hudiIndexFooterEntries } from '../core/formats/hudi/bloom/index.js';
import { type HudiLockHandle, type HudiTableLock, withHudiLock } from '../core/formats/hudi/lock/index.js';
import {
  baseFileName,
  compactionCommitContent,
  completedInstantFile,
  mintInstantTime,
  newFileId,
  newFileWriteStat,
  nextInstant,
  pendingInstantFiles,
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

function properties(version: AppenderTableVersion, name: string): string {
  const common = [
    'hoodie.table.precombine.field=id',
    'hoodie.table.partition.fields=byteField',
    'hoodie.table.type=COPY_ON_WRITE',
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

/** A Hudi table being appended to: its root, version and the last instant minted. */
export interface AppenderTable {
  readonly store: ObjectStore;
  readonly root: string;
  readonly version: AppenderTableVersion;
  /** The last instant (or completion) time minted; the next is one millisecond later. */
  last: string;
  /** How many record keys were written (ids are 1..written). */
  written: number;
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
  await store.put(keyOf(table, '.hoodie/hoodie.properties'), properties(version, 'events'));
  return table;
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
 * value): the base file, then requested, inflight and the completed commit (the atomic step). Returns the base
 * file's key and the instant.
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
    const body = insertBaseFile(instant, name, partition, ids);
    const key = keyOf(table, `${partition}/${name}`);
    await table.store.put(key, body);
    const location = { tableVersion: table.version, operation: 'commit' as const, instant };
    const pending = pendingInstantFiles(location);
    await table.store.put(keyOf(table, pending.requested), new Uint8Array(0));
    await table.store.put(keyOf(table, pending.inflight), new Uint8Array(0));
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
      extraMetadata: { schema: APPENDER_SCHEMA },
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
