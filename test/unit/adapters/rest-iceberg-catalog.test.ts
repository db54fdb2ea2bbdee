// An Iceberg REST catalog as the table's catalog, against a minimal REST catalog server (test/support/
// rest-catalog-server.ts: a real HTTP server on 127.0.0.1 implementing load and commit with requirement checks
// over the local folder store): commitReplace commits as requirements + updates (add-snapshot, set-snapshot-ref
// main) under the prefix `GET /v1/config` names, a commit that wins the race is rebased over (409 → reload), one
// that removed an input aborts the replace, 5xx leaves the outcome unknown with nothing removed, and requests
// carry a bearer token or a SigV4 signature the server verifies with the same signer.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  metadataUpdates,
  RestIcebergCatalog,
} from '../../../functions/adapters/formats/iceberg/rest-catalog.js';
import { TransientStoreError } from '../../../functions/core/errors.js';
import { IcebergCatalogError } from '../../../functions/core/formats/iceberg/catalogs.js';
import { commitAppend, commitReplace } from '../../../functions/core/formats/iceberg/commit.js';
import { IcebergCommitConflictError } from '../../../functions/core/formats/iceberg/errors.js';
import { parseJsonKeepingLongs } from '../../../functions/core/formats/iceberg/json.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_NOW,
  type CatalogTable,
  copyOfDataFile,
  livePaths,
} from '../../support/iceberg-catalog-table.js';
import { type RestCatalogServer, startRestCatalogServer } from '../../support/rest-catalog-server.js';

const clock = { now: () => CATALOG_TABLE_NOW + 60_000 };
const noWait = { clock, sleep: async () => {}, backoffMs: 0 };
const CREDENTIALS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'test-secret' };

let t: CatalogTable;
let server: RestCatalogServer;

async function startServer(extra: Partial<Parameters<typeof startRestCatalogServer>[0]> = {}): Promise<void> {
  server = await startRestCatalogServer({ store: t.store, now: clock.now, prefix: 'wh1', ...extra });
  await server.register('lake.web', 'events', t.root, t.metadataLocation);
}

function catalog(auth: ConstructorParameters<typeof RestIcebergCatalog>[0]['auth'] = { type: 'none' }) {
  return new RestIcebergCatalog({
    setting: {
      type: 'rest',
      uri: server.uri,
      warehouse: 'lake',
      namespace: 'lake.web',
      table: 'events',
      auth: { type: 'none' },
    },
    auth,
    store: t.store,
  });
}

function replaceOf(input: string, added: Awaited<ReturnType<typeof copyOfDataFile>>) {
  return {
    tableLocation: t.root,
    startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
    removedFiles: [input],
    addedFiles: [added],
  };
}

beforeEach(async () => {
  t = await buildCatalogTable();
});

afterEach(async () => {
  await server?.close();
  await t.remove();
});

describe('RestIcebergCatalog', () => {
  it('commits a replace as requirements on the loaded table and main, and add-snapshot + set-snapshot-ref updates', async () => {
    // Prepare
    await startServer();
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const result = await commitReplace(t.store, catalog(), replaceOf(input as string, output), noWait);
    // Assess: the config was asked with the warehouse, the table addressed under its prefix with 0x1F levels.
    expect(server.requests[0]?.path).toBe('/v1/config?warehouse=lake');
    const post = server.requests.find((r) => r.method === 'POST');
    expect(post?.path).toBe('/v1/wh1/namespaces/lake%1Fweb/tables/events');
    const body = post?.body as { requirements: unknown[]; updates: { action: string }[] };
    expect(body.requirements).toEqual([
      { type: 'assert-table-uuid', uuid: t.initial.metadata.tableUuid },
      { type: 'assert-ref-snapshot-id', ref: 'main', 'snapshot-id': expect.anything() },
    ]);
    expect(body.updates.map((u) => u.action)).toEqual(['add-snapshot', 'set-snapshot-ref']);
    // The catalog's new pointer is the replace, which reads back through the catalog.
    expect(server.metadataLocation('lake.web', 'events')).toMatch(
      /\/metadata\/\d{5}-[0-9a-f-]{36}\.metadata\.json$/,
    );
    const after = await catalog().load(t.root);
    expect(after.metadataKey).toBe(result.metadataKey);
    expect(after.metadata.currentSnapshotId).toBe(result.snapshotId);
    expect(await livePaths(t.store, after)).toContain(output.path);
    expect(await livePaths(t.store, after)).not.toContain(input);
  });

  it('rebases over an append that won the race (409 on the first attempt)', async () => {
    // Prepare
    await startServer();
    const [input, other] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    const appended = await copyOfDataFile(t.store, t.initial, other as string);
    let appendSnapshot: bigint | undefined;
    server.beforeCommit(async () => {
      appendSnapshot = (
        await commitAppend(t.store, catalog(), { tableLocation: t.root, addedFiles: [appended] }, noWait)
      ).snapshotId;
    });
    // Act
    const result = await commitReplace(t.store, catalog(), replaceOf(input as string, output), noWait);
    // Assess
    expect(result.attempts).toBe(2);
    const after = await catalog().load(t.root);
    expect(after.metadata.snapshots.find((s) => s.snapshotId === result.snapshotId)?.parentSnapshotId).toBe(
      appendSnapshot,
    );
    expect(await livePaths(t.store, after)).toEqual(expect.arrayContaining([appended.path, output.path]));
    expect(server.requests.filter((r) => r.method === 'POST')).toHaveLength(3);
  });

  it('aborts when the commit that won the race removed one of its inputs', async () => {
    // Prepare
    await startServer();
    const [input] = await livePaths(t.store, t.initial);
    const ours = await copyOfDataFile(t.store, t.initial, input as string);
    const theirs = await copyOfDataFile(t.store, t.initial, input as string);
    server.beforeCommit(async () => {
      await commitReplace(t.store, catalog(), replaceOf(input as string, theirs), noWait);
    });
    // Act / Assess
    await expect(
      commitReplace(t.store, catalog(), replaceOf(input as string, ours), noWait),
    ).rejects.toBeInstanceOf(IcebergCommitConflictError);
    expect(await livePaths(t.store, await catalog().load(t.root))).toContain(theirs.path);
  });

  it('leaves the outcome unknown on a 5xx (retryable, its manifests kept) and refuses a 4xx as the config’s problem', async () => {
    // Prepare
    await startServer();
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    const manifestsBefore = (await t.store.list(`${t.root}/metadata/`)).objects.length;
    // Act / Assess
    server.failNextCommit(503, 'CommitStateUnknownException');
    await expect(
      commitReplace(t.store, catalog(), replaceOf(input as string, output), noWait),
    ).rejects.toBeInstanceOf(TransientStoreError);
    expect((await t.store.list(`${t.root}/metadata/`)).objects.length).toBeGreaterThan(manifestsBefore);
    server.failNextCommit(403, 'ForbiddenException');
    await expect(
      commitReplace(t.store, catalog(), replaceOf(input as string, output), noWait),
    ).rejects.toBeInstanceOf(IcebergCatalogError);
    expect(server.metadataLocation('lake.web', 'events')).toBe(t.metadataLocation);
  });

  it('sends the bearer token, and is refused without it', async () => {
    // Prepare
    await startServer({ bearerToken: 'tok-123' });
    // Act / Assess
    await expect(
      catalog({ type: 'bearer', token: async () => 'tok-123' }).load(t.root),
    ).resolves.toMatchObject({
      metadataKey: t.initial.metadataKey,
    });
    await expect(catalog().load(t.root)).rejects.toThrow(/401 NotAuthorizedException/);
  });

  it('signs every request with SigV4 for the signing name and region, which the server verifies', async () => {
    // Prepare
    await startServer({ sigv4: { signingName: 's3tables', region: 'eu-west-1', credentials: CREDENTIALS } });
    const sigv4 = (signingName: string, secretAccessKey: string) =>
      catalog({
        type: 'sigv4',
        signingName,
        region: 'eu-west-1',
        credentials: async () => ({ ...CREDENTIALS, secretAccessKey }),
      });
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const result = await commitReplace(
      t.store,
      sigv4('s3tables', CREDENTIALS.secretAccessKey),
      replaceOf(input as string, output),
      noWait,
    );
    // Assess: every request (config, load, commit) was signed for s3tables in eu-west-1 and verified.
    expect(result.attempts).toBe(1);
    for (const r of server.requests) {
      expect(r.headers.authorization).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDTEST\/\d{8}\/eu-west-1\/s3tables\/aws4_request, SignedHeaders=[^ ]*host[^ ]*, Signature=[0-9a-f]{64}$/,
      );
      expect(r.headers['x-amz-date']).toMatch(/^\d{8}T\d{6}Z$/);
    }
    // A wrong secret or signing name is refused by the verifying server.
    await expect(sigv4('s3tables', 'wrong').load(t.root)).rejects.toThrow(/403 ForbiddenException/);
    await expect(sigv4('glue', CREDENTIALS.secretAccessKey).load(t.root)).rejects.toThrow(/403/);
  });
});

describe('metadataUpdates', () => {
  it('expresses expired snapshots, a removed ref and property changes, and refuses a schema change', () => {
    // Prepare
    const from = parseJsonKeepingLongs(
      '{"schemas":[1],"snapshots":[{"snapshot-id":1234567890123456789},{"snapshot-id":2}],"refs":{"main":{"snapshot-id":2,"type":"branch"},"old":{"snapshot-id":1234567890123456789,"type":"tag"}},"properties":{"a":"1","b":"2"}}',
    ) as Record<string, unknown>;
    const to = parseJsonKeepingLongs(
      '{"schemas":[1],"snapshots":[{"snapshot-id":2}],"refs":{"main":{"snapshot-id":2,"type":"branch"}},"properties":{"a":"1","c":"3"},"last-updated-ms":5}',
    ) as Record<string, unknown>;
    // Act
    const updates = metadataUpdates(from, to);
    // Assess
    expect(JSON.parse(JSON.stringify(updates).replace(/\\u0000long:/g, ''))).toEqual([
      { action: 'remove-snapshot-ref', 'ref-name': 'old' },
      { action: 'remove-snapshots', 'snapshot-ids': ['1234567890123456789'] },
      { action: 'set-properties', updates: { c: '3' } },
      { action: 'remove-properties', removals: ['b'] },
    ]);
    expect(() => metadataUpdates(from, { ...to, schemas: [1, 2] })).toThrow(/a change of schemas/);
  });
});
