// H1 of the security notes, redone on the local S3 (s3rver, which resolves `..` like a normalising S3-compatible
// server: where the notes saw another table's files deleted, read and written) and on a local folder, with every
// crafted input made here (test/support/crafted-tables.ts): a Delta log adding `../other_table/…`, its `%2e%2e%2f`
// form and an absolute path; an Iceberg expire whose old snapshot names `tbl/../other_table/…`; an Iceberg partition
// field named `../../../pwn`. Each is refused by name, as a table problem (a Delta log or Iceberg manifest naming
// a file outside the root means the table's content is partly another table's: only its owner can repair it), with
// no request for any key outside the table ("nothing read": every request logged by the counting store), nothing
// written or deleted (a byte snapshot of the bucket or folder), the other table's rows in no output (DuckDB), and
// the CLI failing that table with one explained line — never "unexpected".
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import { InvalidInputError } from '../../functions/core/errors.js';
import { deltaLake } from '../../functions/core/formats/delta/format.js';
import { vacuumDeltaTable } from '../../functions/core/formats/delta/vacuum.js';
import { findCurrentMetadata, readMetadataText } from '../../functions/core/formats/iceberg/catalog.js';
import { expireSnapshots } from '../../functions/core/formats/iceberg/expire.js';
import { icebergTable } from '../../functions/core/formats/iceberg/format.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../functions/core/formats/iceberg/json.js';
import { removeOrphanFiles } from '../../functions/core/formats/iceberg/orphans.js';
import { KeyOutsideTableError } from '../../functions/core/keys.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { type CountingStore, countingStore } from '../support/counting-store.js';
import {
  CRAFTED_AT,
  craftDeltaAddingPath,
  craftIcebergOldSnapshotNaming,
  craftIcebergPartitionName,
  MAINTAINED_AT,
  storeSnapshot,
} from '../support/crafted-tables.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

let s3: RunningS3Server;
let scratch: string;
let db: DuckDb;
let bucketCount = 0;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: Array.from({ length: 24 }, (_, i) => `h1-${i}`) });
  scratch = await mkdtemp(join(tmpdir(), 'lc-h1-'));
  db = await openDuckDb();
}, 120_000);

afterAll(async () => {
  db?.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

/** Where a case runs: a fresh bucket of s3rver, or a fresh folder (the table is `<folder>/<root>`). */
interface Backend {
  readonly name: 's3rver' | 'folder';
  /** The store holding the table and the other table beside it (bucket or parent folder). */
  readonly store: ObjectStore;
  /** The CLI's location of the table at `root`. */
  uri(root: string): string;
  /** What the CLI needs in its environment. */
  readonly env: Record<string, string>;
  /** Every byte of the bucket or folder. */
  snapshot(): Promise<string[]>;
  /** The bytes of the object at `key`, for DuckDB. */
  file(key: string): Promise<string>;
}

async function s3Backend(): Promise<Backend> {
  const bucket = `h1-${bucketCount++}`;
  const store = new S3ObjectStore({ client: s3.client(), bucket });
  return {
    name: 's3rver',
    store,
    uri: (root) => `s3://${bucket}/${root}`,
    env: {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
    snapshot: () => storeSnapshot(store),
    file: async (key) => {
      const path = join(scratch, `${bucket}-${key.replaceAll('/', '_')}`);
      await writeFile(path, await store.get(key));
      return path;
    },
  };
}

async function folderBackend(): Promise<Backend> {
  const dir = await mkdtemp(join(scratch, 'folder-'));
  return {
    name: 'folder',
    store: new LocalObjectStore(dir),
    uri: (root) => join(dir, root),
    env: {},
    snapshot: () => folderContentSnapshot(dir),
    file: async (key) => join(dir, key),
  };
}

const BACKENDS = [
  { name: 's3rver', make: s3Backend },
  { name: 'folder', make: folderBackend },
] as const;

async function refusalOf(attempt: Promise<unknown>): Promise<unknown> {
  return attempt.then(
    () => {
      throw new Error('expected a refusal');
    },
    (err: unknown) => err,
  );
}

/** Requests of `counted` that named a key (or prefix) outside `root/`, or wrote or deleted anything. */
function outsideOrChanging(counted: CountingStore, root: string): string[] {
  return counted
    .requests()
    .filter((r) => !r.key.startsWith(`${root}/`) || r.op === 'put' || r.op === 'delete' || r.op === 'copy')
    .map((r) => `${r.op} ${r.key}`);
}

/** Every row of every Parquet object under `prefix`, as JSON text, by DuckDB. */
async function rowsUnder(backend: Backend, prefix: string): Promise<string[]> {
  const rows: string[] = [];
  for await (const o of backend.store.listAll(prefix))
    if (o.key.endsWith('.parquet'))
      for (const row of await db.rows(`SELECT * FROM read_parquet(${sqlString(await backend.file(o.key))})`))
        rows.push(JSON.stringify(row));
  return rows;
}

/** Another Delta table, `other_table`, written by its own writer: the file the crafted log points at. */
async function otherDeltaTable(store: ObjectStore): Promise<string> {
  await createDeltaEventsTable(store, 'other_table', { now: CRAFTED_AT });
  const { key } = await appendDeltaEvents(store, 'other_table', {
    day: '2024-03-01',
    rows: 10,
    seed: 9000,
    now: CRAFTED_AT,
  });
  return key;
}

describe.each(BACKENDS)('H1 on $name', ({ make }) => {
  describe('Delta: a log adding a file outside the table root (reproduction 2)', () => {
    const variants = [
      { what: 'a ".." path', path: (secret: string) => `../${secret}` },
      {
        what: 'its %2e%2e%2f form',
        path: (secret: string) => `%2e%2e%2f${secret.replaceAll('/', '%2f')}`,
      },
      { what: 'an absolute path', path: (secret: string) => `/${secret}` },
    ];

    for (const variant of variants) {
      it(`${variant.what}: compaction and vacuum refuse the table by name; nothing outside it is read, nothing changes`, async () => {
        // Prepare
        const backend = await make();
        const secret = await otherDeltaTable(backend.store);
        const path = variant.path(secret);
        await craftDeltaAddingPath(backend.store, 'events', path);
        const secretRows = await rowsUnder(backend, 'other_table/');
        const before = await backend.snapshot();
        const counted = countingStore(backend.store);

        // Act
        const planned = await refusalOf(
          deltaLake.snapshot(counted.store, 'events', { now: MAINTAINED_AT, readFooters: true }),
        );
        const vacuumed = await refusalOf(
          vacuumDeltaTable(counted.store, 'events', { now: MAINTAINED_AT, dryRun: false }),
        );
        const compactIo = captureIo({ now: MAINTAINED_AT, env: backend.env });
        const compactCode = await run(
          ['compact', backend.uri('events'), '--format', 'delta', '--delta-log-store', 's3-conditional'],
          compactIo,
        );
        const vacuumIo = captureIo({ now: MAINTAINED_AT, env: backend.env });
        const vacuumCode = await run(
          [
            'vacuum',
            backend.uri('events'),
            '--format',
            'delta',
            '--delta-log-store',
            's3-conditional',
            '--yes',
          ],
          vacuumIo,
        );

        // Assess: the table is refused by name with the reason
        for (const err of [planned, vacuumed]) {
          expect(err).toBeInstanceOf(KeyOutsideTableError);
          expect((err as KeyOutsideTableError).path).toBe(path);
        }
        expect(compactCode).toBe(1);
        expect(compactIo.stderr).toHaveLength(1);
        expect(compactIo.stderr[0]).toContain(`a live add action of its Delta log names the file "${path}"`);
        expect(compactIo.stderr[0]).not.toContain('unexpected');
        expect(vacuumCode).toBe(1);
        expect(vacuumIo.stderr.join('\n')).toContain(`names the file "${path}"`);
        expect(vacuumIo.stderr.join('\n')).not.toContain('unexpected');
        // nothing read outside the table's log, nothing written or deleted anywhere
        expect(outsideOrChanging(counted, 'events')).toEqual([]);
        expect(counted.requests().filter((r) => r.op === 'get' && !r.key.includes('/_delta_log/'))).toEqual(
          [],
        );
        expect(await backend.snapshot()).toEqual(before);
        // the other table's rows are in no file of this table
        const tableRows = await rowsUnder(backend, 'events/');
        expect(tableRows.length).toBeGreaterThan(0);
        expect(tableRows.filter((r) => secretRows.includes(r))).toEqual([]);
      }, 120_000);
    }
  });

  it('Iceberg expire_snapshots of a snapshot naming tbl/../other_table/… refuses the table before committing or deleting (reproduction 1)', async () => {
    // Prepare
    const backend = await make();
    await backend.store.put('other_table/secret.parquet', 'SECRET');
    await backend.store.put('other_table/canary.txt', 'canary');
    await craftIcebergOldSnapshotNaming(backend.store, 'tbl', [
      '../other_table/secret.parquet',
      'data/../../other_table/canary.txt',
    ]);
    const before = await backend.snapshot();
    const counted = countingStore(backend.store);

    // Act
    const expired = await refusalOf(
      expireSnapshots(counted.store, 'tbl', { now: MAINTAINED_AT, dryRun: false }),
    );
    const orphaned = await refusalOf(
      removeOrphanFiles(counted.store, 'tbl', { now: MAINTAINED_AT, dryRun: false }),
    );
    const io = captureIo({ now: MAINTAINED_AT, env: backend.env });
    const code = await run(['vacuum', backend.uri('tbl'), '--format', 'iceberg', '--yes'], io);

    // Assess
    for (const err of [expired, orphaned]) {
      expect(err).toBeInstanceOf(KeyOutsideTableError);
      expect((err as KeyOutsideTableError).path).toMatch(/\/tbl\/\.\.\/other_table\/secret\.parquet$/);
      expect((err as KeyOutsideTableError).source).toMatch(/^manifest tbl\/metadata\/evil-m0\.avro$/);
    }
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toContain('/tbl/../other_table/secret.parquet", which has a ".." segment');
    expect(io.stderr.join('\n')).not.toContain('unexpected');
    expect(outsideOrChanging(counted, 'tbl')).toEqual([]);
    expect(await backend.snapshot()).toEqual(before);
  }, 120_000);

  it('Iceberg partition field "../../../pwn": compaction refuses the table before reading a data file or writing (reproduction 3)', async () => {
    // Prepare
    const backend = await make();
    await craftIcebergPartitionName(backend.store, 'tbl', '../../../pwn');
    const before = await backend.snapshot();
    const counted = countingStore(backend.store);

    // Act
    const planned = await refusalOf(
      icebergTable.snapshot(counted.store, 'tbl', { now: MAINTAINED_AT, readFooters: true }),
    );
    const io = captureIo({ now: MAINTAINED_AT, env: backend.env });
    const code = await run(['compact', backend.uri('tbl'), '--format', 'iceberg'], io);

    // Assess: Iceberg's escaping keeps the name one segment; the rule refuses it because it climbs out decoded
    expect(planned).toBeInstanceOf(KeyOutsideTableError);
    expect((planned as KeyOutsideTableError).path).toBe('data/..%2F..%2F..%2Fpwn=2024-03-01');
    expect(code).toBe(1);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toContain(
      'the partition spec 0 (as its partition folder) names the file "data/..%2F..%2F..%2Fpwn=2024-03-01"',
    );
    expect(io.stderr[0]).not.toContain('unexpected');
    expect(outsideOrChanging(counted, 'tbl')).toEqual([]);
    expect(counted.requests().filter((r) => r.key.startsWith('tbl/data/'))).toEqual([]);
    expect(await backend.snapshot()).toEqual(before);
  }, 120_000);
});

describe('the S3 store itself (defence in depth)', () => {
  it('s3rver really resolves ".." (what makes H1 reachable there), and S3ObjectStore never sends such a key', async () => {
    // Prepare
    const bucket = `h1-${bucketCount++}`;
    const client = s3.client();
    const store = new S3ObjectStore({ client, bucket });
    await store.put('other_table/secret.parquet', 'SECRET');
    await store.put('events/keep.parquet', 'KEEP');

    // Act: the raw SDK request, then the store
    const raw = await client.send(
      new GetObjectCommand({ Bucket: bucket, Key: 'events/../other_table/secret.parquet' }),
    );
    const rawBytes = await raw.Body?.transformToString();
    const read = await refusalOf(store.get('events/../other_table/secret.parquet'));
    const head = await refusalOf(store.head('events//x.parquet'));
    const put = await refusalOf(store.put('events/./x.parquet', 'X'));
    const copy = await refusalOf(store.copy('events/keep.parquet', 'events/../other_table/secret.parquet'));
    const deleted = await store.deleteMany([
      { key: 'events/../other_table/secret.parquet' },
      { key: 'events/keep.parquet' },
    ]);

    // Assess
    expect(rawBytes).toBe('SECRET');
    for (const err of [read, head, put, copy]) {
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toContain('was not sent to S3');
    }
    expect(deleted.deleted.map((r) => r.key)).toEqual(['events/keep.parquet']);
    expect(deleted.errors).toMatchObject([
      { key: 'events/../other_table/secret.parquet', code: 'InvalidKey' },
    ]);
    expect(new TextDecoder().decode(await store.get('other_table/secret.parquet'))).toBe('SECRET');
  });
});

describe('an Iceberg location in another bucket (L5)', () => {
  it('is refused on S3 by name before any data file is read, instead of being relocated into the table', async () => {
    // Prepare: a table written at s3://<bucket>/tbl whose newest metadata records another bucket as its location
    const backend = await s3Backend();
    await craftIcebergPartitionName(backend.store, 'tbl', 'event_timestamp_day');
    const current = await findCurrentMetadata(backend.store, 'tbl');
    const raw = parseJsonKeepingLongs(await readMetadataText(backend.store, current.key)) as Record<
      string,
      unknown
    >;
    raw.location = 's3://other-bucket/tbl';
    await backend.store.put(
      `tbl/metadata/v${current.version + 1}.metadata.json`,
      stringifyJsonKeepingLongs(raw),
    );
    await backend.store.put('tbl/metadata/version-hint.text', String(current.version + 1));
    const before = await backend.snapshot();
    const counted = countingStore(backend.store);

    // Act
    const planned = await refusalOf(icebergTable.snapshot(counted.store, 'tbl', { now: MAINTAINED_AT }));
    const io = captureIo({ now: MAINTAINED_AT, env: backend.env });
    const code = await run(['compact', backend.uri('tbl'), '--format', 'iceberg'], io);

    // Assess
    expect((planned as Error).name).toBe('IcebergUnsupportedError');
    expect((planned as Error).message).toContain(
      `the table location s3://other-bucket/tbl while it is configured at ${backend.uri('tbl')}`,
    );
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toContain('s3://other-bucket/tbl while it is configured at');
    expect(counted.requests().filter((r) => r.key.startsWith('tbl/data/'))).toEqual([]);
    expect(await backend.snapshot()).toEqual(before);
  }, 120_000);
});

describe('the local CLI and symbolic links (L2)', () => {
  it('Iceberg vacuum through a symlinked data folder refuses the table and deletes nothing outside it', async () => {
    // Prepare: the old snapshot names data/lnk/secret.parquet, and data/lnk -> ../../other_table
    const dir = await mkdtemp(join(scratch, 'links-'));
    const store = new LocalObjectStore(dir);
    await mkdir(join(dir, 'other_table'));
    await writeFile(join(dir, 'other_table', 'secret.parquet'), 'SECRET');
    await craftIcebergOldSnapshotNaming(store, 'tbl', ['data/lnk/secret.parquet']);
    await symlink('../../other_table', join(dir, 'tbl', 'data', 'lnk'));
    const io = captureIo({ now: MAINTAINED_AT });

    // Act
    const code = await run(['vacuum', join(dir, 'tbl'), '--format', 'iceberg', '--yes'], io);

    // Assess: the link is refused by name; the sibling's file is there
    expect(io.stdout.concat(io.stderr).join('\n')).toContain('goes through a symbolic link to');
    expect(code).toBe(1);
    expect(await readFile(join(dir, 'other_table', 'secret.parquet'), 'utf8')).toBe('SECRET');
  }, 120_000);
});
