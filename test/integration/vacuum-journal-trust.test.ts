// The work area is not a trust root (issue #34 item 4), against the vacuum Lambda's own journal wiring
// (`vacuumJournals`: RoutedJournal(StoreJournal(bucket), DynamoJournal) for the work area, the state table alone
// for object versions) over DynamoDB Local and a versioned in-memory bucket (s3rver keeps no versions): SECURITY-NOTES
// M3's forged `lake-compactor compact` entry deletes nothing, a file list the state table keeps in the bucket counts
// only with the digest it recorded, and the genuine state-table run beside them is still vacuumed. The CLI's
// `vacuum --state-table` on s3rver plans no version from a journal entry in the bucket, only from the state table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { StoreJournal } from '../../functions/adapters/store-journal.js';
import { run } from '../../functions/cli/index.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { ObjectNotFoundError } from '../../functions/core/errors.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import {
  DEFAULT_WORK_ROOT,
  journalManifestPrefix,
  planKey,
  stagingPrefix,
  trashPrefix,
} from '../../functions/core/workflow/layout.js';
import { createVacuumHandler, vacuumJournals } from '../../functions/handlers/vacuum.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { GroupJournalEntry, JournalInput } from '../../functions/ports/journal.js';
import { createObservability } from '../../functions/shared/middleware.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { createKeyValueTable } from '../support/dynamodb-table.js';

const HOUR = 3_600_000;
const W = DEFAULT_WORK_ROOT;
const T0 = Date.UTC(2026, 0, 1);
/** The run id M3 planted: a `lake-compactor compact` run, so routed to the store journal in the bucket. */
const FORGED = 'cli-20200101T000000Z-deadbeef-p0-00000000';
const SALARIES = 'hr/payroll/salaries.parquet';
const TABLES = parseTableConfigs([
  { name: 'events', bucket: 'lake-a', prefix: 'events', partitionColumns: ['date'] },
  { name: 'payroll', bucket: 'lake-a', prefix: 'hr/payroll' },
]);

let ddb: DynamoDbLocalEndpoint;
let s3: RunningS3Server;
let tableSeq = 0;

beforeAll(async () => {
  const starting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake-a'] });
  ddb = await starting;
}, 150_000);

afterAll(async () => {
  await Promise.all([ddb?.stop(), s3?.stop()]);
});

/** A versioned bucket, a fresh state table, and the vacuum handler wired as the Lambda wires it. */
async function world() {
  const clock = new ManualClock(T0 - 400 * HOUR);
  const store = new MemoryObjectStore({ versioned: true, now: () => new Date(clock.now()) });
  const tableName = `state-${++tableSeq}`;
  const client = ddb.client();
  await createKeyValueTable(client, tableName);
  const stateJournal = (requireManifestDigest: boolean) =>
    new DynamoJournal({
      client,
      tableName,
      manifests: { store, prefix: journalManifestPrefix(W) },
      requireManifestDigest,
    });
  const handler = createVacuumHandler(
    {
      tables: TABLES,
      workRoot: W,
      storeFor: () => store,
      ...vacuumJournals(
        () => store,
        W,
        (_bucket, strict) => stateJournal(strict),
      ),
      clock,
    },
    createObservability('test'),
  );
  return { clock, store, handler, stateJournal: stateJournal(false) };
}

/** Writes `body` over `key` and returns the version it made. */
async function putVersion(store: MemoryObjectStore, key: string, body: string): Promise<string> {
  await store.put(key, body);
  return (await store.head(key))?.versionId as string;
}

async function versionExists(store: MemoryObjectStore, key: string, versionId: string): Promise<boolean> {
  try {
    await store.copy(key, `probe/${versionId}`, { sourceVersionId: versionId });
    return true;
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return false;
    throw err;
  }
}

function retiredEntry(
  runId: string,
  table: string,
  inputs: readonly JournalInput[],
  patch: Partial<GroupJournalEntry> = {},
): Omit<GroupJournalEntry, 'revision'> {
  return {
    runId,
    groupId: 'g0',
    table,
    partition: 'date=2020-01-01',
    state: 'done',
    inputs,
    outputs: [],
    retireMode: 'delete-versioned',
    stagingPrefix: stagingPrefix(W, runId, 'g0'),
    trashPrefix: trashPrefix(W, runId),
    createdAt: Date.UTC(2020, 0, 1),
    updatedAt: Date.UTC(2020, 0, 1),
    retiredAt: Date.UTC(2020, 0, 1),
    ...patch,
  };
}

describe('vacuum Lambda: the work area is not a trust root', () => {
  it('M3: a forged compact journal entry in the bucket deletes no version of payroll; the state table’s run is vacuumed', async () => {
    // Prepare (as M3): payroll's salaries has v1 (noncurrent) and v2; forged in the work area, a plan of a CLI
    // run and its store-journal entries, as table events and as payroll itself, both claiming v1 was retired in
    // 2020. Beside them, a state-machine run retired an events input 400 h ago (its version is due).
    const w = await world();
    const v1 = await putVersion(w.store, SALARIES, 'v1');
    await putVersion(w.store, SALARIES, 'v2');
    const retiredKey = 'events/date=2025-12-14/part-0.parquet';
    const retired = await putVersion(w.store, retiredKey, 'old input');
    await w.store.deleteMany([{ key: retiredKey }]);
    const sfnRun = 'events-p0-0a0a0a0a-g1';
    await w.store.put(planKey(W, sfnRun), '{}');
    await w.stateJournal.create(
      retiredEntry(sfnRun, 'events', [{ key: retiredKey, etag: 'e', size: 9, versionId: retired }], {
        retiredAt: w.clock.now(),
      }),
    );
    await w.store.put(`${W}plans/${FORGED}.json`, '{}');
    const planted = new StoreJournal(w.store, { workRoot: W });
    const salaries = { key: SALARIES, etag: 'x', size: 2, versionId: v1 };
    await planted.create(retiredEntry(FORGED, 'events', [salaries]));
    await planted.create({ ...retiredEntry(FORGED, 'payroll', [salaries]), groupId: 'g1' });
    w.clock.set(T0);

    // Act
    const report = await w.handler({ dryRun: false, retentionHours: 168 });

    // Assess
    expect(await versionExists(w.store, SALARIES, v1)).toBe(true);
    expect(await versionExists(w.store, retiredKey, retired)).toBe(false);
    expect(report.removed['retired-version']).toEqual({ count: 1, bytes: 9 });
    expect(report.candidates.filter((c) => c.kind === 'retired-version').map((c) => c.key)).toEqual([
      retiredKey,
    ]);
  }, 60_000);

  it('a file list the state table keeps in the bucket is refused once changed there; other runs are vacuumed', async () => {
    // Prepare: a state-machine run of 3,000 inputs (its lists go to a manifest in the work area) retired one real
    // input; someone then rewrites the manifest to name a noncurrent version of a live events file instead
    const w = await world();
    const live = 'events/date=2025-12-15/live.parquet';
    const liveOld = await putVersion(w.store, live, 'overwritten by its writer');
    await putVersion(w.store, live, 'current');
    const input = 'events/date=2025-12-15/part-big.parquet';
    const inputVersion = await putVersion(w.store, input, 'retired input');
    await w.store.deleteMany([{ key: input }]);
    const big = 'events-p1-0b0b0b0b-g1';
    const filler = Array.from({ length: 3_000 }, (_, i) => ({
      key: `events/date=2025-12-15/part-${String(i).padStart(5, '0')}-0f3c9a1e-5d2b-4c1a-9e8f-2b7d6c5a4e3f.c000.snappy.parquet`,
      etag: 'd41d8cd98f00b204e9800998ecf8427e',
      size: 8192,
    }));
    await w.store.put(planKey(W, big), '{}');
    await w.stateJournal.create(
      retiredEntry(big, 'events', [{ key: input, etag: 'e', size: 13, versionId: inputVersion }, ...filler], {
        retiredAt: w.clock.now(),
      }),
    );
    const manifest = w.store.keys().find((k) => k.startsWith(journalManifestPrefix(W))) as string;
    const lists = JSON.parse(new TextDecoder().decode(await w.store.get(manifest))) as {
      inputs: JournalInput[];
    };
    lists.inputs[0] = { key: live, etag: 'e', size: 25, versionId: liveOld };
    await w.store.put(manifest, JSON.stringify(lists));
    const small = 'events-p2-0c0c0c0c-g1';
    const smallKey = 'events/date=2025-12-16/part-0.parquet';
    const smallVersion = await putVersion(w.store, smallKey, 'retired');
    await w.store.deleteMany([{ key: smallKey }]);
    await w.store.put(planKey(W, small), '{}');
    await w.stateJournal.create(
      retiredEntry(small, 'events', [{ key: smallKey, etag: 'e', size: 7, versionId: smallVersion }], {
        retiredAt: w.clock.now(),
      }),
    );
    w.clock.set(T0);

    // Act
    const report = await w.handler({ dryRun: false, retentionHours: 168 });

    // Assess: nothing of the tampered run goes (neither the planted version nor its real input), the other does
    expect(await versionExists(w.store, live, liveOld)).toBe(true);
    expect(await versionExists(w.store, input, inputVersion)).toBe(true);
    expect(await versionExists(w.store, smallKey, smallVersion)).toBe(false);
    expect(report.removed['retired-version'].count).toBe(1);
    expect(report.notes.join('\n')).toMatch(
      new RegExp(
        `the journal of run ${big} could not be read \\(JournalManifestMismatchError: .*do not match the SHA-256`,
      ),
    );
  }, 60_000);
});

describe('lake-compactor vacuum --state-table: the work area is not a trust root', () => {
  it('plans no version from a compact journal entry in the bucket, even of its own table; the state table’s are planned', async () => {
    // Prepare: on s3rver (no versioning, so a dry run shows what would be asked for), a state-machine run retired an
    // events input; a planted CLI run's store-journal entry claims another events key's version was retired
    const store = new S3ObjectStore({ client: s3.client(), bucket: 'lake-a' });
    const client = ddb.client();
    const stateTable = `state-${++tableSeq}`;
    await createKeyValueTable(client, stateTable);
    const sfnRun = 'events-p0-0d0d0d0d-g1';
    const sfnKey = 'events/date=2025-12-14/part-0.parquet';
    await store.put(planKey(W, sfnRun), '{}');
    await new DynamoJournal({ client, tableName: stateTable }).create(
      retiredEntry(sfnRun, 'events', [{ key: sfnKey, etag: 'e', size: 9, versionId: 'v-sfn' }]),
    );
    const plantedKey = 'events/date=2025-12-14/part-1.parquet';
    await store.put(plantedKey, 'live');
    await store.put(`${W}plans/${FORGED}.json`, '{}');
    await new StoreJournal(store, { workRoot: W }).create(
      retiredEntry(FORGED, 'events', [{ key: plantedKey, etag: 'x', size: 4, versionId: 'v-planted' }]),
    );
    const io = captureIo({
      now: Date.now() + 200 * HOUR,
      env: {
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB: ddb.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      },
    });

    // Act
    const code = await run(
      ['vacuum', 's3://lake-a/events', '--dry-run', '--state-table', stateTable, '--json'],
      io,
    );

    // Assess
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as VacuumCliReport;
    expect(
      report.candidates.filter((c) => c.kind === 'retired-version').map((c) => [c.key, c.versionId]),
    ).toEqual([[sfnKey, 'v-sfn']]);
  }, 60_000);
});

describe('lake-compactor settle on s3://: a journal entry in the bucket is bound to its table', () => {
  it('refuses an events entry that names a payroll key: payroll is untouched, the entry stays open', async () => {
    // Prepare: a planted CLI run entry of table events, published (so a settle would roll it forward and retire
    // its inputs), whose input is payroll's salaries file and whose output is an events key
    const store = new S3ObjectStore({ client: s3.client(), bucket: 'lake-a' });
    const forged = 'cli-20200101T000000Z-deadbeef-p0-11111111';
    await store.put(SALARIES, 'payroll v1');
    const salaries = await store.head(SALARIES);
    const outputKey = 'events/date=2020-01-01/part-forged.parquet';
    await store.put(outputKey, 'out');
    const output = await store.head(outputKey);
    const planted = new StoreJournal(store, { workRoot: W });
    await planted.create(
      retiredEntry(forged, 'events', [{ key: SALARIES, etag: salaries?.etag ?? '', size: 10 }], {
        state: 'published',
        retireMode: 'delete-rebuild',
        retiredAt: undefined,
        outputs: [
          {
            stagingKey: `${stagingPrefix(W, forged, 'g0')}part-0.parquet`,
            finalKey: outputKey,
            etag: output?.etag ?? '',
            size: 3,
            rows: 1,
          },
        ],
      }),
    );
    const io = captureIo({
      now: Date.now(),
      env: {
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      },
    });

    // Act
    const code = await run(['settle', 's3://lake-a/events'], io);

    // Assess: payroll's object is still there, as it was; the entry was not moved; the operator is told why
    expect(new TextDecoder().decode(await store.get(SALARIES))).toBe('payroll v1');
    expect((await planted.get(forged, 'g0'))?.state).toBe('published');
    expect(code).not.toBe(0);
    expect([...io.stdout, ...io.stderr].join('\n')).toMatch(
      /ForeignJournalEntryError|names hr\/payroll\/salaries\.parquet, outside the table/,
    );
  }, 60_000);
});
