// A minimal Iceberg REST catalog for tests: a real HTTP server on 127.0.0.1 speaking the REST Catalog API
// (`GET /v1/config`, `GET` and `POST /v1/{prefix}/namespaces/{ns}/tables/{table}`) over tables whose files lie
// in a local folder store, as a REST catalog over a warehouse does: it checks a commit's requirements
// (`assert-table-uuid`, `assert-ref-snapshot-id` of any ref, null meaning the ref must not exist; 409
// CommitFailedException when one fails), applies its updates (`add-snapshot`, `set-snapshot-ref`,
// `remove-snapshot-ref`, `remove-snapshots` — which, as Iceberg's TableMetadata does, also drops refs left pointing
// at a removed snapshot and prunes the snapshot log —, `remove-statistics`, `remove-partition-statistics`,
// `set-properties`, `remove-properties`; 400 for anything else) to its current metadata, writes
// `<N+1>-<uuid>.metadata.json` and moves its pointer. Optionally it demands a bearer token, or verifies SigV4 signatures with the same signer
// (recomputing the signature from what it received). Hooks let a test run another writer's commit just before one
// is applied, or answer a commit with an error.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { AwsCredentialIdentity } from '@smithy/types';
import { restSigner } from '../../functions/adapters/formats/iceberg/rest-catalog.js';
import { readMetadataText } from '../../functions/core/formats/iceberg/catalog.js';
import { metadataVersion } from '../../functions/core/formats/iceberg/catalogs.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../functions/core/formats/iceberg/json.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';

type Raw = Record<string, unknown>;

interface Entry {
  /** The table root below the store. */
  readonly root: string;
  metadataLocation: string;
  metadata: Raw;
}

export interface RestCatalogServerOptions {
  readonly store: ObjectStore;
  /** What `GET /v1/config` answers as `overrides.prefix`. */
  readonly prefix?: string;
  /** Demand `Authorization: Bearer <token>`. */
  readonly bearerToken?: string;
  /** Verify every request's SigV4 signature for this service, region and credentials. */
  readonly sigv4?: {
    readonly signingName: string;
    readonly region: string;
    readonly credentials: AwsCredentialIdentity;
  };
  /** The clock of `last-updated-ms`. */
  readonly now: () => number;
}

export interface RestCatalogServer {
  /** `http://127.0.0.1:<port>/catalog` (a base path, as real catalogs have). */
  readonly uri: string;
  /** Registers a table by its current metadata location (`register_table`), its files under `root`. */
  register(namespace: string, table: string, root: string, metadataLocation: string): Promise<void>;
  /** The metadata location the catalog points at now. */
  metadataLocation(namespace: string, table: string): string | undefined;
  /** Every request: method, path (below the base path, with query), headers, parsed body. */
  readonly requests: { method: string; path: string; headers: IncomingMessage['headers']; body: unknown }[];
  /** Runs once just before the next commit is applied (then cleared): another writer's turn. */
  beforeCommit(hook: () => Promise<void>): void;
  /** The next commit is answered with this status and error type, not applied (then cleared). */
  failNextCommit(status: number, type: string): void;
  close(): Promise<void>;
}

const BASE = '/catalog';

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

const asText = (v: unknown) => stringifyJsonKeepingLongs(v);

/** Year, month (0-based), day, hours, minutes, seconds of an `X-Amz-Date` match. */
function dateParts(m: RegExpExecArray): [number, number, number, number, number, number] {
  const n = (i: number) => Number(m[i]);
  return [n(1), n(2) - 1, n(3), n(4), n(5), n(6)];
}

export async function startRestCatalogServer(options: RestCatalogServerOptions): Promise<RestCatalogServer> {
  const tables = new Map<string, Entry>();
  const requests: RestCatalogServer['requests'] = [];
  let hook: (() => Promise<void>) | undefined;
  let failure: { status: number; type: string } | undefined;
  const prefix = options.prefix ?? 'warehouse';
  const signer =
    options.sigv4 === undefined
      ? undefined
      : restSigner({
          type: 'sigv4',
          signingName: options.sigv4.signingName,
          region: options.sigv4.region,
          credentials: async () => options.sigv4?.credentials as AwsCredentialIdentity,
        });
  const keyOf = (ns: string, table: string) => `${ns}\u0000${table}`;

  /** Whether the request's Authorization is the one the signer computes from what was received. */
  async function signatureValid(req: IncomingMessage, url: URL, body: string): Promise<boolean> {
    const authorization = String(req.headers.authorization ?? '');
    const signedHeaders = /SignedHeaders=([^,]+)/.exec(authorization)?.[1]?.split(';') ?? [];
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
    if (signer === undefined || m === null || !signedHeaders.includes('host')) return false;
    const headers = Object.fromEntries(
      signedHeaders
        .filter((h) => h !== 'x-amz-date' && h !== 'authorization')
        .map((h) => [h, String(req.headers[h] ?? '')]),
    );
    const resigned = await signer.sign(
      {
        method: req.method ?? 'GET',
        protocol: 'http:',
        hostname: url.hostname,
        port: Number(url.port),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        ...(body === '' ? {} : { body }),
      },
      { signingDate: new Date(Date.UTC(...dateParts(m))) },
    );
    return resigned.headers.authorization === authorization;
  }

  /** Applies a commit's requirements and updates; undefined when applied, else [status, type, message]. */
  async function commit(entry: Entry, request: Raw): Promise<[number, string, string] | undefined> {
    const current = entry.metadata;
    const refs = (current.refs as Record<string, Raw> | undefined) ?? {};
    for (const r of (request.requirements as Raw[] | undefined) ?? []) {
      if (r.type === 'assert-table-uuid' && r.uuid !== current['table-uuid'])
        return [409, 'CommitFailedException', `Requirement failed: UUID does not match`];
      if (
        r.type === 'assert-ref-snapshot-id' &&
        asText(r['snapshot-id'] ?? null) !== asText(refs[String(r.ref)]?.['snapshot-id'] ?? null)
      )
        return [409, 'CommitFailedException', `Requirement failed: ref ${String(r.ref)} has changed`];
      if (r.type !== 'assert-table-uuid' && r.type !== 'assert-ref-snapshot-id')
        return [400, 'BadRequestException', `unknown requirement ${String(r.type)}`];
    }
    const next = structuredClone(current);
    const timestamp = options.now();
    for (const u of (request.updates as Raw[] | undefined) ?? []) {
      switch (u.action) {
        case 'add-snapshot': {
          const s = u.snapshot as Raw;
          next.snapshots = [...((next.snapshots as Raw[] | undefined) ?? []), s];
          if (s['sequence-number'] !== undefined) next['last-sequence-number'] = s['sequence-number'];
          break;
        }
        case 'set-snapshot-ref': {
          const { action: _a, 'ref-name': name, ...ref } = u;
          next.refs = { ...(next.refs as Raw), [String(name)]: ref };
          if (name === 'main') {
            next['current-snapshot-id'] = ref['snapshot-id'];
            next['snapshot-log'] = [
              ...((next['snapshot-log'] as Raw[] | undefined) ?? []),
              { 'timestamp-ms': timestamp, 'snapshot-id': ref['snapshot-id'] },
            ];
          }
          break;
        }
        case 'remove-snapshot-ref': {
          const refs = { ...(next.refs as Raw) };
          delete refs[String(u['ref-name'])];
          next.refs = refs;
          break;
        }
        case 'remove-snapshots': {
          const gone = new Set((u['snapshot-ids'] as unknown[]).map(asText));
          next.snapshots = ((next.snapshots as Raw[] | undefined) ?? []).filter(
            (s) => !gone.has(asText(s['snapshot-id'])),
          );
          next.refs = Object.fromEntries(
            Object.entries((next.refs as Record<string, Raw> | undefined) ?? {}).filter(
              ([, ref]) => !gone.has(asText(ref['snapshot-id'])),
            ),
          );
          const log: Raw[] = [];
          for (const e of (next['snapshot-log'] as Raw[] | undefined) ?? []) {
            if (gone.has(asText(e['snapshot-id']))) log.length = 0;
            else log.push(e);
          }
          next['snapshot-log'] = log;
          break;
        }
        case 'remove-statistics':
        case 'remove-partition-statistics': {
          const field = u.action === 'remove-statistics' ? 'statistics' : 'partition-statistics';
          next[field] = ((next[field] as Raw[] | undefined) ?? []).filter(
            (s) => asText(s['snapshot-id']) !== asText(u['snapshot-id']),
          );
          break;
        }
        case 'set-properties':
          next.properties = { ...(next.properties as Raw), ...(u.updates as Raw) };
          break;
        case 'remove-properties': {
          const props = { ...(next.properties as Raw) };
          for (const k of u.removals as string[]) delete props[k];
          next.properties = props;
          break;
        }
        default:
          return [
            400,
            'BadRequestException',
            `update ${String(u.action)} is not implemented by this test catalog`,
          ];
      }
    }
    next['last-updated-ms'] = timestamp;
    next['metadata-log'] = [
      ...((next['metadata-log'] as Raw[] | undefined) ?? []),
      { 'timestamp-ms': current['last-updated-ms'], 'metadata-file': entry.metadataLocation },
    ];
    const version = metadataVersion(entry.metadataLocation) + 1;
    const name = `${String(version).padStart(5, '0')}-${randomUUID()}.metadata.json`;
    const key = `${entry.root}/metadata/${name}`;
    await options.store.put(key, asText(next), { ifNoneMatch: '*' });
    entry.metadata = next;
    entry.metadataLocation = `${String(current.location)}/metadata/${name}`;
    return undefined;
  }

  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      const text = asText(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    const error = (status: number, type: string, message: string) =>
      send(status, { error: { message, type, code: status } });
    void (async () => {
      const url = new URL(req.url ?? '/', `http://${req.headers.host}`);
      const text = await bodyOf(req);
      const body = text === '' ? undefined : parseJsonKeepingLongs(text);
      const path = `${url.pathname.slice(BASE.length)}${url.search}`;
      requests.push({ method: req.method ?? '', path, headers: req.headers, body });
      if (options.bearerToken !== undefined && req.headers.authorization !== `Bearer ${options.bearerToken}`)
        return error(401, 'NotAuthorizedException', 'Not authorized');
      if (signer !== undefined && !(await signatureValid(req, url, text)))
        return error(403, 'ForbiddenException', 'The request signature does not match');
      if (!url.pathname.startsWith(`${BASE}/v1/`)) return error(404, 'NotFoundException', 'no such route');
      if (req.method === 'GET' && url.pathname === `${BASE}/v1/config`)
        return send(200, { defaults: {}, overrides: { prefix } });
      const m = new RegExp(`^${BASE}/v1/${prefix}/namespaces/([^/]+)/tables/([^/]+)$`).exec(url.pathname);
      if (m === null) return error(404, 'NotFoundException', `no route ${url.pathname}`);
      const ns = decodeURIComponent(m[1] as string)
        .split('\u001f')
        .join('.');
      const entry = tables.get(keyOf(ns, decodeURIComponent(m[2] as string)));
      if (entry === undefined)
        return error(404, 'NoSuchTableException', `Table does not exist: ${ns}.${m[2]}`);
      if (req.method === 'GET')
        return send(200, {
          'metadata-location': entry.metadataLocation,
          metadata: entry.metadata,
          config: {},
        });
      if (req.method !== 'POST') return error(405, 'MethodNotAllowed', String(req.method));
      if (hook !== undefined) {
        const run = hook;
        hook = undefined;
        await run();
      }
      if (failure !== undefined) {
        const f = failure;
        failure = undefined;
        return error(f.status, f.type, 'injected by the test');
      }
      const refused = await commit(entry, body as Raw);
      if (refused !== undefined) return error(...refused);
      return send(200, { 'metadata-location': entry.metadataLocation, metadata: entry.metadata });
    })().catch((err: unknown) => error(500, 'ServerError', String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    uri: `http://127.0.0.1:${port}${BASE}`,
    register: async (namespace, table, root, metadataLocation) => {
      const key = `${root}/${metadataLocation.slice(metadataLocation.lastIndexOf('/metadata/') + 1)}`;
      const metadata = parseJsonKeepingLongs(await readMetadataText(options.store, key)) as Raw;
      tables.set(keyOf(namespace, table), { root, metadataLocation, metadata });
    },
    metadataLocation: (namespace, table) => tables.get(keyOf(namespace, table))?.metadataLocation,
    requests,
    beforeCommit: (h) => {
      hook = h;
    },
    failNextCommit: (status, type) => {
      failure = { status, type };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
