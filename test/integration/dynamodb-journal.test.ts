// The DynamoDB journal against DynamoDB Local, on the table the synthesized template defines:
// conditional transitions let exactly one writer win, and oversized file lists round-trip via S3.
import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoJournal } from '../../functions/adapters/dynamodb-journal.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { JournalConflictError, JournalManifestMismatchError } from '../../functions/core/errors.js';
import type { GroupJournalEntry } from '../../functions/ports/journal.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { settled } from '../support/settled.js';

let ddb: DynamoDbLocalEndpoint;
let tableName: string;

beforeAll(async () => {
  ddb = await startTestDynamoDb();
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'JournalTest', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const created = await createTablesFromTemplate(
    ddb.client(),
    new TemplateModel(Template.fromStack(stack).toJSON()),
  );
  const name = [...created.values()][0];
  if (!name) throw new Error('the template defines no DynamoDB table');
  tableName = name;
});

afterAll(async () => {
  await ddb?.stop();
});

function entry(runId: string, inputs = 3): Omit<GroupJournalEntry, 'revision'> {
  return {
    runId,
    groupId: 'g0001',
    table: 'events',
    partition: 'date=2024-01-01',
    state: 'planned',
    inputs: Array.from({ length: inputs }, (_, i) => ({
      key: `events/date=2024-01-01/part-${String(i).padStart(6, '0')}-0f3c9a1e-5d2b-4c1a-9e8f-2b7d6c5a4e3f.c000.snappy.parquet`,
      etag: 'd41d8cd98f00b204e9800998ecf8427e',
      size: 8192,
    })),
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: `_lake-compactor/staging/${runId}/g0001/`,
    trashPrefix: `_lake-compactor/trash/${runId}/`,
    createdAt: 1,
    updatedAt: 1,
  };
}

describe('DynamoJournal', () => {
  it('creates an entry once and refuses a second create of the same group', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    // Act
    const created = await journal.create(entry('run-create'));
    const again = journal.create(entry('run-create'));
    // Assess
    expect(created.revision).toBe(1);
    await expect(again).rejects.toBeInstanceOf(JournalConflictError);
    expect((await journal.get('run-create', 'g0001'))?.inputs).toHaveLength(3);
  });

  it('lets only one of two concurrent transitions from the same revision win', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    const created = await journal.create(entry('run-race'));
    // Act
    const results = await Promise.allSettled([
      journal.transition(created, 'staged', {}, 2),
      journal.transition(created, 'aborted', { reason: 'other' }, 2),
    ]);
    // Assess
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(rejected.reason).toBeInstanceOf(JournalConflictError);
    expect((await journal.get('run-race', 'g0001'))?.revision).toBe(2);
  });

  it('keeps a group of 20,000 inputs by moving its file lists to an S3 manifest', async () => {
    // Prepare
    const manifests = new MemoryObjectStore();
    const journal = new DynamoJournal({
      client: ddb.client(),
      tableName,
      manifests: { store: manifests, prefix: '_lake-compactor/journal/' },
    });
    const big = entry('run-big', 20_000);
    // Act
    const created = await journal.create(big);
    const moved = await journal.transition(created, 'staged', {}, 5);
    const read = await journal.get('run-big', 'g0001');
    // Assess
    expect(read?.inputs).toEqual(big.inputs);
    expect(read?.state).toBe('staged');
    expect(moved.revision).toBe(2);
    expect(manifests.keys()).toEqual([
      '_lake-compactor/journal/run-big/g0001/r1.json',
      '_lake-compactor/journal/run-big/g0001/r2.json',
    ]);
  });

  it('refuses a manifest changed after the journal wrote it: its digest is in the item, not in the work area', async () => {
    // Prepare: a group's lists go to a manifest; then someone rewrites that object, naming another version
    const manifests = new MemoryObjectStore();
    const journal = new DynamoJournal({
      client: ddb.client(),
      tableName,
      manifests: { store: manifests, prefix: '_lake-compactor/journal/' },
    });
    const big = entry('run-tampered', 20_000);
    await journal.create(big);
    const key = '_lake-compactor/journal/run-tampered/g0001/r1.json';
    const lists = JSON.parse(new TextDecoder().decode(await manifests.get(key))) as {
      inputs: { versionId?: string }[];
    };
    (lists.inputs[0] as { versionId?: string }).versionId = 'someone-elses-version';
    await manifests.put(key, JSON.stringify(lists));
    // Act
    const read = journal.get('run-tampered', 'g0001');
    const listed = journal.listRun('run-tampered');
    await settled(read, listed);
    // Assess
    await expect(read).rejects.toThrow(JournalManifestMismatchError);
    await expect(listed).rejects.toThrow(/do not match the SHA-256 the journal recorded/);
  });

  it('reads a manifest of an item without a digest (written before it), unless told to require one', async () => {
    // Prepare: an item as the journal wrote it before digests: the same item without `manifestSha256`
    const manifests = new MemoryObjectStore();
    const options = { client: ddb.client(), tableName, manifests: { store: manifests, prefix: 'm/' } };
    const journal = new DynamoJournal(options);
    const big = entry('run-legacy', 20_000);
    await journal.create(big);
    await ddb.client().send(
      new UpdateItemCommand({
        TableName: tableName,
        Key: { pk: { S: 'RUN#run-legacy' }, sk: { S: 'GROUP#g0001' } },
        UpdateExpression: 'REMOVE manifestSha256',
      }),
    );
    // Act
    const lenient = await journal.get('run-legacy', 'g0001');
    const strict = new DynamoJournal({ ...options, requireManifestDigest: true }).get('run-legacy', 'g0001');
    // Assess
    expect(lenient?.inputs).toEqual(big.inputs);
    await expect(strict).rejects.toThrow(/written before the journal recorded their digest/);
  });

  it('refuses an oversized group without a manifest store, saying what to configure', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    // Act / Assess
    await expect(journal.create(entry('run-nomanifest', 20_000))).rejects.toThrow(
      /configure a manifest store/,
    );
  });

  it('lists every group of a run', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    await journal.create(entry('run-list'));
    await journal.create({ ...entry('run-list'), groupId: 'g0002' });
    // Act
    const groups = await journal.listRun('run-list');
    // Assess
    expect(groups.map((g) => g.groupId).sort()).toEqual(['g0001', 'g0002']);
  });
});

describe('fences of unsettled groups (DynamoDB Local)', () => {
  const partition = { table: 'events', partition: 'date=2024-01-01' };

  it('lists a group from its partition from creation until it settles, written in one transaction with the entry', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    const a = await journal.create(entry('fence-a'));
    const b = await journal.create(entry('fence-b'));

    // Act: a is published, then done; b is aborted while undoing (outputs were visible), then undone
    const published = await journal.transition(
      await journal.transition(
        await journal.transition(await journal.transition(a, 'staged', {}, 2), 'verified', {}, 3),
        'publishing',
        {},
        4,
      ),
      'published',
      {},
      5,
    );
    const openWhilePublished = await journal.listOpen(partition);
    await journal.transition(published, 'done', {}, 6);
    const undoing = await journal.transition(b, 'aborted', { undo: 'pending' }, 7);
    const openWhileUndoing = await journal.listOpen(partition);
    await journal.transition(undoing, 'aborted', { undo: 'done' }, 8);

    // Assess
    const ids = (open: { runId: string }[]) => open.map((g) => g.runId).filter((r) => r.startsWith('fence-'));
    expect(ids(openWhilePublished)).toEqual(['fence-a', 'fence-b']);
    expect(ids(openWhileUndoing)).toEqual(['fence-b']);
    expect(ids(await journal.listOpen(partition))).toEqual([]);
  });

  it('keeps the fence when the settling transition loses its race (the entry did not change)', async () => {
    // Prepare
    const journal = new DynamoJournal({ client: ddb.client(), tableName });
    const created = await journal.create(entry('fence-race'));
    await journal.transition(created, 'staged', {}, 2);

    // Act: a stale writer tries to settle from revision 1
    const stale = journal.transition(created, 'aborted', { reason: 'stale' }, 3);

    // Assess
    await expect(stale).rejects.toBeInstanceOf(JournalConflictError);
    expect((await journal.get('fence-race', 'g0001'))?.state).toBe('staged');
    expect((await journal.listOpen(partition)).map((g) => g.runId)).toContain('fence-race');
    await journal.closeFence(partition, { runId: 'fence-race', groupId: 'g0001' });
    expect((await journal.listOpen(partition)).map((g) => g.runId)).not.toContain('fence-race');
  });
});
