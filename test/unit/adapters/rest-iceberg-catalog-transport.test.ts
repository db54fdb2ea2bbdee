// The REST catalog's transport keeps its credentials to the configured origin: the setting takes https:// (http:// on
// a loopback host only), and redirects are followed within the origin only, against real HTTP servers on 127.0.0.1.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RestIcebergCatalog } from '../../../functions/adapters/formats/iceberg/rest-catalog.js';
import {
  IcebergCatalogError,
  icebergCatalogSchema,
} from '../../../functions/core/formats/iceberg/catalogs.js';
import { commitReplace } from '../../../functions/core/formats/iceberg/commit.js';
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
const TOKEN = 'tok-secret-123';
const CREDENTIALS = { accessKeyId: 'AKIDTEST', secretAccessKey: 'test-secret', sessionToken: 'SESSION-XYZ' };

/** A front server on 127.0.0.1 (its own origin: another port) whose every request `handle` answers. */
interface Front {
  readonly origin: string;
  readonly requests: { method: string; url: string }[];
  close(): Promise<void>;
}

async function startFront(
  handle: (req: IncomingMessage, res: ServerResponse, body: Buffer) => Promise<void> | void,
): Promise<Front> {
  const requests: Front['requests'] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    requests.push({ method: req.method ?? '', url: req.url ?? '' });
    await handle(req, res, Buffer.concat(chunks));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Forwards a request to `target` (the catalog server's origin), as a transparent proxy would. */
async function forward(
  target: string,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  path: string,
) {
  const headers = Object.fromEntries(
    Object.entries(req.headers).filter(([k]) => k !== 'host' && k !== 'content-length' && k !== 'connection'),
  ) as Record<string, string>;
  const answer = await fetch(`${target}${path}`, {
    method: req.method ?? 'GET',
    headers,
    ...(req.method === 'POST' ? { body } : {}),
  });
  res.writeHead(answer.status, { 'content-type': 'application/json' });
  res.end(await answer.text());
}

let t: CatalogTable;
let catalogServer: RestCatalogServer;
let front: Front | undefined;

function restCatalog(
  uri: string,
  auth: ConstructorParameters<typeof RestIcebergCatalog>[0]['auth'],
): RestIcebergCatalog {
  return new RestIcebergCatalog({
    setting: {
      type: 'rest',
      uri,
      warehouse: 'lake',
      namespace: 'lake.web',
      table: 'events',
      auth: { type: 'none' },
    },
    auth,
    store: t.store,
  });
}

const bearer = { type: 'bearer', token: async () => TOKEN } as const;

beforeEach(async () => {
  t = await buildCatalogTable();
  catalogServer = await startRestCatalogServer({
    store: t.store,
    now: clock.now,
    prefix: 'wh1',
    bearerToken: TOKEN,
  });
  await catalogServer.register('lake.web', 'events', t.root, t.metadataLocation);
});

afterEach(async () => {
  await front?.close();
  front = undefined;
  await catalogServer.close();
  await t.remove();
});

describe('REST catalog uri', () => {
  const parse = (uri: string) =>
    icebergCatalogSchema.safeParse({
      type: 'rest',
      uri,
      namespace: 'lake',
      table: 'events',
      auth: { type: 'oauth2' },
    });

  it('refuses http:// on a non-loopback host, saying to use https://', () => {
    // Act
    const results = ['http://catalog.example.com/iceberg', 'http://10.0.0.5:8181', 'http://128.0.0.1/x'].map(
      parse,
    );
    // Assess
    for (const r of results) {
      expect(r.success).toBe(false);
      expect(r.error?.issues[0]?.message).toMatch(/must be an https:\/\/ URL.*loopback host/);
    }
  });

  it('takes https:// anywhere and http:// on a loopback host (the named exception for tests and local catalogs)', () => {
    // Act
    const results = [
      'https://s3tables.eu-west-1.amazonaws.com/iceberg',
      'http://127.0.0.1:8181/catalog',
      'http://localhost:8181',
      'http://[::1]:8181',
    ].map(parse);
    // Assess
    expect(results.map((r) => r.success)).toEqual([true, true, true, true]);
  });

  it('takes one token source only', () => {
    // Act
    const r = icebergCatalogSchema.safeParse({
      type: 'rest',
      uri: 'https://catalog.example.com',
      namespace: 'lake',
      table: 'events',
      auth: { type: 'oauth2', tokenEnv: 'TOKEN', tokenParameter: '/lake/token' },
    });
    // Assess
    expect(r.success).toBe(false);
    expect(JSON.stringify(r.error?.issues)).toMatch(/one token source/);
  });
});

describe('REST catalog redirects', () => {
  it('refuses a redirect to another origin: the second server receives nothing, bearer or SigV4', async () => {
    // Prepare: the configured origin sends everything to the catalog server, another origin (another port).
    const target = new URL(catalogServer.uri).origin;
    front = await startFront((req, res) => {
      res.writeHead(307, { location: `${target}${req.url}` });
      res.end();
    });
    const sigv4 = {
      type: 'sigv4',
      signingName: 's3tables',
      region: 'eu-west-1',
      credentials: async () => CREDENTIALS,
    } as const;
    // Act / Assess
    for (const auth of [bearer, sigv4]) {
      const attempt = restCatalog(`${front.origin}/catalog`, auth).load(t.root);
      await expect(attempt).rejects.toBeInstanceOf(IcebergCatalogError);
      await expect(attempt).rejects.toThrow(/redirected GET .* to another origin, http:\/\/127\.0\.0\.1:\d+/);
    }
    expect(front.requests).toHaveLength(2);
    expect(catalogServer.requests).toEqual([]);
  });

  it('refuses a commit redirected to another origin: nothing committed, the POST never reaches it', async () => {
    // Prepare: reads pass through the configured origin; its commits are redirected elsewhere.
    const target = new URL(catalogServer.uri).origin;
    front = await startFront(async (req, res, body) => {
      if (req.method === 'POST') {
        res.writeHead(308, { location: `${target}${req.url}` });
        res.end();
        return;
      }
      await forward(target, req, res, body, req.url ?? '');
    });
    const before = catalogServer.metadataLocation('lake.web', 'events');
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const attempt = commitReplace(
      t.store,
      restCatalog(`${front.origin}/catalog`, bearer),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );
    // Assess
    await expect(attempt).rejects.toThrow(/to another origin.*Nothing was committed/);
    expect(catalogServer.requests.filter((r) => r.method === 'POST')).toEqual([]);
    expect(catalogServer.metadataLocation('lake.web', 'events')).toBe(before);
  });

  it('follows a redirect within the configured origin, re-sending the commit with its token (308)', async () => {
    // Prepare: the configured origin moved its catalog from /old to /catalog, and proxies /catalog.
    const target = new URL(catalogServer.uri).origin;
    front = await startFront(async (req, res, body) => {
      const url = req.url ?? '';
      if (url.startsWith('/old/')) {
        res.writeHead(308, { location: url.replace(/^\/old\//, '/catalog/') });
        res.end();
        return;
      }
      await forward(target, req, res, body, url);
    });
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const result = await commitReplace(
      t.store,
      restCatalog(`${front.origin}/old`, bearer),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );
    // Assess: every call went /old → /catalog on the same origin, the commit landed with the token.
    expect(front.requests.filter((r) => r.url.startsWith('/old/')).map((r) => r.method)).toEqual([
      'GET',
      'GET',
      'POST',
    ]);
    const post = catalogServer.requests.find((r) => r.method === 'POST');
    expect(post?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    const after = await restCatalog(catalogServer.uri, bearer).load(t.root);
    expect(after.metadata.currentSnapshotId).toBe(result.snapshotId);
    expect(await livePaths(t.store, after)).toContain(output.path);
  });

  it('refuses a commit answered with a redirect that would resend it as a GET (303), nothing committed', async () => {
    // Prepare
    const target = new URL(catalogServer.uri).origin;
    front = await startFront(async (req, res, body) => {
      if (req.method === 'POST') {
        res.writeHead(303, { location: req.url ?? '/' });
        res.end();
        return;
      }
      await forward(target, req, res, body, req.url ?? '');
    });
    const before = catalogServer.metadataLocation('lake.web', 'events');
    const [input] = await livePaths(t.store, t.initial);
    const output = await copyOfDataFile(t.store, t.initial, input as string);
    // Act
    const attempt = commitReplace(
      t.store,
      restCatalog(`${front.origin}/catalog`, bearer),
      {
        tableLocation: t.root,
        startingSnapshotId: t.initial.metadata.currentSnapshotId ?? -1n,
        removedFiles: [input as string],
        addedFiles: [output],
      },
      noWait,
    );
    // Assess
    await expect(attempt).rejects.toThrow(/303 redirect, which would resend it as a GET/);
    expect(catalogServer.metadataLocation('lake.web', 'events')).toBe(before);
    expect(front.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });
});
