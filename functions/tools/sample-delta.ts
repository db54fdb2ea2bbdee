// A small Delta Lake writer for the demo and the tests: creates an events table partitioned by `date` and appends
// micro-batches as a streaming writer does — one Parquet file and one `WRITE` commit each, committed with
// put-if-absent (as delta-rs does) and retried on a lost race, so it can run beside a compaction of the same table.
// Tests hand it another commit protocol (`writer`) to play a writer of another engine.
import { randomUUID } from 'node:crypto';
import { readDeltaSnapshot } from '../core/formats/delta/log.js';
import {
  type CommitWriteResult,
  ConditionalPutLogStore,
  type DeltaLogStore,
} from '../core/formats/delta/log-store.js';
import { deltaFileStatsOf } from '../core/formats/delta/stats.js';
import type { ObjectStore } from '../ports/object-store.js';
import { generateEventsBatch, mulberry32 } from './sample-lake.js';

/** The Delta schema of the events files (sample-lake.ts EVENTS_SCHEMA) plus the `date` partition column. */
export const DELTA_EVENTS_SCHEMA = {
  type: 'struct',
  fields: [
    { name: 'user_id', type: 'long', nullable: true, metadata: {} },
    { name: 'event_type', type: 'string', nullable: true, metadata: {} },
    { name: 'event_timestamp', type: 'timestamp', nullable: true, metadata: {} },
    { name: 'session_id', type: 'string', nullable: true, metadata: {} },
    { name: 'revenue_usd', type: 'double', nullable: true, metadata: {} },
    { name: 'date', type: 'string', nullable: true, metadata: {} },
  ],
} as const;

/** How the sample writer commits: put-if-absent by default; a test's model of another engine's protocol. */
export interface DeltaCommitWriter {
  writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult>;
  /** What the engine does before it lists the log (Spark's S3DynamoDBLogStore: finish an incomplete entry). */
  prepareRead?(tableRoot: string): Promise<void>;
  /** The `engineInfo` its commits carry. @default 'lake-compactor sample writer' */
  readonly engineInfo?: string;
}

const SAMPLE_ENGINE = 'lake-compactor sample writer';

function writerOf(store: ObjectStore, writer: DeltaCommitWriter | undefined): DeltaCommitWriter {
  return writer ?? (new ConditionalPutLogStore(store) satisfies DeltaLogStore);
}

function rootOf(tableRoot: string): string {
  const trimmed = tableRoot.replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

function lines(actions: readonly object[]): Uint8Array {
  return new TextEncoder().encode(`${actions.map((a) => JSON.stringify(a)).join('\n')}\n`);
}

/**
 * Version 0 of an events table at `tableRoot`: protocol (1, 2), the schema above, partitioned by `date`.
 * `configuration` becomes the table's properties (e.g. `delta.checkpointInterval`).
 */
export async function createDeltaEventsTable(
  store: ObjectStore,
  tableRoot: string,
  options: {
    readonly now: number;
    readonly configuration?: Readonly<Record<string, string>>;
    readonly writer?: DeltaCommitWriter;
  },
): Promise<void> {
  const writer = writerOf(store, options.writer);
  const written = await writer.writeCommit(
    tableRoot,
    0,
    lines([
      {
        commitInfo: {
          timestamp: options.now,
          operation: 'CREATE TABLE',
          operationParameters: { partitionBy: '["date"]' },
          engineInfo: writer.engineInfo ?? SAMPLE_ENGINE,
        },
      },
      { protocol: { minReaderVersion: 1, minWriterVersion: 2 } },
      {
        metaData: {
          id: randomUUID(),
          format: { provider: 'parquet', options: {} },
          schemaString: JSON.stringify(DELTA_EVENTS_SCHEMA),
          partitionColumns: ['date'],
          configuration: options.configuration ?? {},
          createdTime: options.now,
        },
      },
    ]),
  );
  if (written === 'exists') throw new Error(`A Delta table exists already at ${tableRoot || '(store root)'}`);
}

export interface DeltaAppend {
  /** The version that committed the batch. */
  readonly version: number;
  /** The data file's key. */
  readonly key: string;
  readonly rows: number;
}

/**
 * Appends one micro-batch of `rows` events of `day` (deterministic for a seed): writes the data file under
 * `date=<day>/`, then commits it as a blind append at the next free version (re-reading the log after a lost race).
 */
export async function appendDeltaEvents(
  store: ObjectStore,
  tableRoot: string,
  batch: {
    readonly day: string;
    readonly rows: number;
    readonly seed: number;
    readonly now: number;
    /** Footer key-value metadata of the file (see EventsBatchOptions). */
    readonly keyValueMetadata?: Readonly<Record<string, string>>;
    readonly writer?: DeltaCommitWriter;
  },
): Promise<DeltaAppend> {
  const root = rootOf(tableRoot);
  const key = `${root}date=${batch.day}/part-00000-${randomUUID()}.c000.snappy.parquet`;
  const body = generateEventsBatch(mulberry32(batch.seed), {
    rows: batch.rows,
    day: batch.day,
    ...(batch.keyValueMetadata === undefined ? {} : { keyValueMetadata: batch.keyValueMetadata }),
  });
  await store.put(key, body);
  const log = writerOf(store, batch.writer);
  for (let attempt = 0; attempt < 100; attempt += 1) {
    await log.prepareRead?.(tableRoot);
    const snapshot = await readDeltaSnapshot(store, tableRoot);
    const stats = await deltaFileStatsOf(store, key, body.length, snapshot.metadata);
    const version = snapshot.version + 1;
    const commit = lines([
      {
        commitInfo: {
          timestamp: batch.now,
          operation: 'WRITE',
          operationParameters: { mode: 'Append', partitionBy: '[]' },
          readVersion: snapshot.version,
          isBlindAppend: true,
          engineInfo: log.engineInfo ?? SAMPLE_ENGINE,
        },
      },
      {
        add: {
          path: key.slice(root.length),
          partitionValues: { date: batch.day },
          size: body.length,
          modificationTime: batch.now,
          dataChange: true,
          stats,
        },
      },
    ]);
    if ((await log.writeCommit(tableRoot, version, commit)) === 'written') {
      return { version, key, rows: batch.rows };
    }
  }
  throw new Error(`Could not commit an append to ${tableRoot} in 100 attempts`);
}
