// An Iceberg REST catalog (the Apache Iceberg REST Catalog API: Amazon S3 Tables, Glue's Iceberg REST endpoint,
// Polaris, Nessie, Gravitino, …) as an Iceberg catalog, over `fetch`:
//
//   config  GET  /v1/config?warehouse=…                           → the `prefix` of every other path
//   load    GET  /v1/{prefix}/namespaces/{ns}/tables/{table}      → `metadata-location` (read from the store, like
//                                                                    every other catalog's metadata file)
//   commit  POST /v1/{prefix}/namespaces/{ns}/tables/{table}      { requirements, updates }
//
// A REST catalog writes the metadata file itself, so a commit is expressed as the changes from the loaded metadata
// to ours (snapshots added and removed, refs set and removed, properties set and removed), under the requirements
// that make it atomic: the table is the one loaded (`assert-table-uuid`), and `main` — with every ref the commit
// sets or removes, and every ref at all when it removes snapshots (expire_snapshots) — is still where it was
// (`assert-ref-snapshot-id`). 409 is a lost race (`conflict`); 5xx or no answer leaves the outcome unknown (the
// catalog may have applied it) and is never cleaned up after. Requests are signed with SigV4 (S3 Tables: signing
// name `s3tables`; Glue: `glue`) or carry an OAuth2 bearer token. Redirects are followed within the configured
// origin only, and a plain `http://` uri is taken on a loopback host only (the setting's schema refuses it
// elsewhere): credentials never travel in clear nor to a host the setting does not name.
import { createHash, createHmac } from 'node:crypto';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { TransientStoreError } from '../../../core/errors.js';
import type {
  CatalogCommitOutcome,
  IcebergCatalog,
  LoadedTable,
} from '../../../core/formats/iceberg/catalog.js';
import { readMetadataText } from '../../../core/formats/iceberg/catalog.js';
import {
  describeSetting,
  IcebergCatalogError,
  loadFromMetadataLocation,
  type RestCatalogSetting,
} from '../../../core/formats/iceberg/catalogs.js';
import { parseJsonKeepingLongs, stringifyJsonKeepingLongs } from '../../../core/formats/iceberg/json.js';
import type { ObjectStore } from '../../../ports/object-store.js';

/** How requests are authenticated, with the secrets the setting only names. */
export type RestAuth =
  | {
      readonly type: 'sigv4';
      readonly signingName: string;
      readonly region: string;
      readonly credentials: AwsCredentialIdentityProvider;
    }
  | { readonly type: 'bearer'; readonly token: () => Promise<string> }
  | { readonly type: 'none' };

export interface RestIcebergCatalogOptions {
  readonly setting: RestCatalogSetting;
  readonly auth: RestAuth;
  /** Where the metadata, manifests and data files are read and written. */
  readonly store: ObjectStore;
  /** @default globalThis.fetch */
  readonly fetch?: typeof fetch;
}

/** A SHA-256 (and HMAC-SHA-256) for the signer, from node:crypto. */
class NodeSha256 {
  private hash: ReturnType<typeof createHash> | ReturnType<typeof createHmac>;
  constructor(private readonly secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = this.fresh();
  }
  private fresh() {
    if (this.secret === undefined) return createHash('sha256');
    const key =
      typeof this.secret === 'string'
        ? this.secret
        : ArrayBuffer.isView(this.secret)
          ? Buffer.from(this.secret.buffer, this.secret.byteOffset, this.secret.byteLength)
          : Buffer.from(this.secret);
    return createHmac('sha256', key);
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(
      typeof data === 'string'
        ? data
        : ArrayBuffer.isView(data)
          ? Buffer.from(data.buffer, data.byteOffset, data.byteLength)
          : Buffer.from(data),
    );
  }
  async digest(): Promise<Uint8Array> {
    return new Uint8Array(this.hash.digest());
  }
  reset(): void {
    this.hash = this.fresh();
  }
}

/** The SigV4 signer for `auth` (exported so a test server can verify with the same one). */
export function restSigner(auth: Extract<RestAuth, { type: 'sigv4' }>): SignatureV4 {
  return new SignatureV4({
    service: auth.signingName,
    region: auth.region,
    credentials: auth.credentials,
    sha256: NodeSha256,
  });
}

/** What a load read and the commit must assert. */
interface RestBase {
  readonly raw: Record<string, unknown>;
}

/** A REST catalog's error body: `{ error: { message, type, code } }`. */
interface RestError {
  readonly error?: { readonly message?: string; readonly type?: string; readonly code?: number };
}

/** The statuses that redirect (with a `location`); 304 and 300 are not followed by fetch either. */
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** Hops followed within the catalog's origin before giving up (fetch's own limit is 20; a catalog needs one). */
const MAX_REDIRECTS = 5;

/** Top-level metadata fields the catalog maintains itself when it applies updates (never sent as changes). */
const MAINTAINED = new Set([
  'last-updated-ms',
  'last-sequence-number',
  'current-snapshot-id',
  'snapshot-log',
  'metadata-log',
  'snapshots',
  'refs',
  'properties',
  'statistics',
  'partition-statistics',
]);

/** The update removing a statistics entry of each statistics field (Iceberg REST's names). */
const REMOVE_STATISTICS: Readonly<Record<string, string>> = {
  statistics: 'remove-statistics',
  'partition-statistics': 'remove-partition-statistics',
};

/**
 * The updates turning the metadata `from` into `to` (both as parsed with longs kept), as the REST protocol names
 * them. Only the changes a maintenance commit makes are expressible; any other field that differs (schemas,
 * specs, location, …) is refused rather than silently dropped.
 * @throws Error naming the field when the change is not expressible.
 */
export function metadataUpdates(
  from: Record<string, unknown>,
  to: Record<string, unknown>,
): Record<string, unknown>[] {
  // A field or ref absent on one side (a ref set for the first time) differs from any value on the other.
  const text = (v: unknown) => (v === undefined ? 'absent' : stringifyJsonKeepingLongs(v));
  const same = (a: unknown, b: unknown) => text(a) === text(b);
  const differing = [...new Set([...Object.keys(from), ...Object.keys(to)])].filter(
    (k) => !MAINTAINED.has(k) && !same(from[k], to[k]),
  );
  if (differing.length > 0)
    throw new Error(
      `a change of ${differing.join(', ')} cannot be committed through the REST catalog by this writer`,
    );
  const idOf = (s: unknown) => stringifyJsonKeepingLongs((s as Record<string, unknown>)['snapshot-id']);
  const before = (from.snapshots as unknown[] | undefined) ?? [];
  const after = (to.snapshots as unknown[] | undefined) ?? [];
  const beforeIds = new Set(before.map(idOf));
  const afterIds = new Set(after.map(idOf));
  const updates: Record<string, unknown>[] = [];
  for (const s of after) if (!beforeIds.has(idOf(s))) updates.push({ action: 'add-snapshot', snapshot: s });
  const refsBefore = (from.refs as Record<string, Record<string, unknown>> | undefined) ?? {};
  const refsAfter = (to.refs as Record<string, Record<string, unknown>> | undefined) ?? {};
  for (const [name, ref] of Object.entries(refsAfter))
    if (!same(refsBefore[name], ref)) updates.push({ action: 'set-snapshot-ref', 'ref-name': name, ...ref });
  for (const name of Object.keys(refsBefore))
    if (refsAfter[name] === undefined) updates.push({ action: 'remove-snapshot-ref', 'ref-name': name });
  const removed = before.filter((s) => !afterIds.has(idOf(s)));
  if (removed.length > 0)
    updates.push({
      action: 'remove-snapshots',
      'snapshot-ids': removed.map((s) => (s as Record<string, unknown>)['snapshot-id']),
    });
  // Statistics files of expired snapshots leave with them; adding or replacing one is not this writer's change.
  for (const [field, action] of Object.entries(REMOVE_STATISTICS)) {
    const was = (from[field] as Record<string, unknown>[] | undefined) ?? [];
    const is = (to[field] as Record<string, unknown>[] | undefined) ?? [];
    const kept = was.filter((w) => is.some((i) => idOf(i) === idOf(w)));
    if (!same(kept, is))
      throw new Error(`a change of ${field} cannot be committed through the REST catalog by this writer`);
    for (const w of was) if (!kept.includes(w)) updates.push({ action, 'snapshot-id': w['snapshot-id'] });
  }
  const propsBefore = (from.properties as Record<string, string> | undefined) ?? {};
  const propsAfter = (to.properties as Record<string, string> | undefined) ?? {};
  const set = Object.fromEntries(Object.entries(propsAfter).filter(([k, v]) => propsBefore[k] !== v));
  if (Object.keys(set).length > 0) updates.push({ action: 'set-properties', updates: set });
  const gone = Object.keys(propsBefore).filter((k) => !(k in propsAfter));
  if (gone.length > 0) updates.push({ action: 'remove-properties', removals: gone });
  return updates;
}

/** The id `main` points at in parsed metadata, or null for a table without a snapshot. */
function mainSnapshotId(raw: Record<string, unknown>): unknown {
  const refs = raw.refs as Record<string, Record<string, unknown>> | undefined;
  const main = refs?.main?.['snapshot-id'] ?? raw['current-snapshot-id'];
  return main === undefined || main === -1 ? null : main;
}

/**
 * The `assert-ref-snapshot-id` requirements of a commit from `from` to `updates`: `main` always (every commit of
 * this writer is planned on main's snapshot); every ref the updates set or remove, at the id it had when loaded
 * (null: it must not exist yet); and, when the updates remove snapshots, every ref of `from`. Why all of them then:
 * which snapshots may go was decided from where each branch and tag pointed, and a ref moved meanwhile (a
 * rollback, a tag set on an old snapshot) may now point at one of them — the catalog must refuse rather than leave
 * that ref dangling or drop it.
 */
export function refRequirements(
  from: Record<string, unknown>,
  updates: readonly Record<string, unknown>[],
): Record<string, unknown>[] {
  const refs = (from.refs as Record<string, Record<string, unknown>> | undefined) ?? {};
  const names = new Set<string>(['main']);
  for (const u of updates)
    if (u.action === 'set-snapshot-ref' || u.action === 'remove-snapshot-ref')
      names.add(String(u['ref-name']));
  if (updates.some((u) => u.action === 'remove-snapshots'))
    for (const name of Object.keys(refs)) names.add(name);
  return [...names].map((ref) => ({
    type: 'assert-ref-snapshot-id',
    ref,
    'snapshot-id': ref === 'main' ? mainSnapshotId(from) : (refs[ref]?.['snapshot-id'] ?? null),
  }));
}

/**
 * One table of an Iceberg REST catalog as an {@link IcebergCatalog}. `load(tableRoot)` takes the table root (key
 * prefix of `store`) the catalog's metadata location must lie under.
 */
export class RestIcebergCatalog implements IcebergCatalog {
  /** The catalog's pointer makes a file current, not the file's existence (see {@link IcebergCatalog}). */
  readonly metastore = true;
  private readonly bases = new WeakMap<LoadedTable, RestBase>();
  private readonly name: string;
  private readonly fetch: typeof fetch;
  private readonly signer: SignatureV4 | undefined;
  private prefix: Promise<string> | undefined;

  constructor(private readonly options: RestIcebergCatalogOptions) {
    this.name = describeSetting(options.setting);
    this.fetch = options.fetch ?? globalThis.fetch;
    this.signer = options.auth.type === 'sigv4' ? restSigner(options.auth) : undefined;
  }

  async load(tableRoot: string): Promise<LoadedTable> {
    const { status, body } = await this.request('GET', await this.tablePath());
    if (status !== 200) throw this.failure('load', status, body, false);
    const location = (body as Record<string, unknown>)['metadata-location'];
    if (typeof location !== 'string')
      throw new IcebergCatalogError(this.name, 'the load answer has no metadata-location');
    const loaded = await loadFromMetadataLocation(this.options.store, tableRoot, location);
    const raw = parseJsonKeepingLongs(
      await readMetadataText(this.options.store, loaded.metadataKey),
    ) as Record<string, unknown>;
    this.bases.set(loaded, { raw });
    return loaded;
  }

  async commit(base: LoadedTable, metadataText: string): Promise<CatalogCommitOutcome> {
    const read = this.bases.get(base);
    if (read === undefined)
      throw new IcebergCatalogError(this.name, 'commit on a table this catalog did not load');
    const next = parseJsonKeepingLongs(metadataText) as Record<string, unknown>;
    let updates: Record<string, unknown>[];
    try {
      updates = metadataUpdates(read.raw, next);
    } catch (err) {
      throw new IcebergCatalogError(this.name, (err as Error).message);
    }
    const s = this.options.setting;
    const body = {
      identifier: { namespace: s.namespace.split('.'), name: s.table },
      requirements: [
        { type: 'assert-table-uuid', uuid: read.raw['table-uuid'] },
        ...refRequirements(read.raw, updates),
      ],
      updates,
    };
    let answer: { status: number; body: unknown };
    try {
      answer = await this.request('POST', await this.tablePath(), stringifyJsonKeepingLongs(body));
    } catch (err) {
      // A refused redirect: the catalog answered without taking the commit, and nothing was sent elsewhere.
      if (err instanceof IcebergCatalogError) throw err;
      throw new TransientStoreError(
        `Iceberg REST commit to ${this.name} got no answer (${(err as Error).message}): the commit state is unknown, nothing was removed. Retry`,
      );
    }
    if (answer.status === 409) return { outcome: 'conflict' };
    if (answer.status !== 200) throw this.failure('commit', answer.status, answer.body, true);
    const location = (answer.body as Record<string, unknown>)['metadata-location'];
    if (typeof location !== 'string')
      throw new TransientStoreError(
        `Iceberg REST commit to ${this.name} was accepted without a metadata-location: the commit state is unknown. Retry`,
      );
    const at = location.lastIndexOf('/metadata/');
    return {
      outcome: 'committed',
      metadataKey: `${base.tableRoot === '' ? '' : `${base.tableRoot}/`}${location.slice(at + 1)}`,
    };
  }

  /** `/v1/{prefix}/namespaces/{ns}/tables/{table}`, the prefix from `GET /v1/config` (asked once). */
  private async tablePath(): Promise<string> {
    this.prefix ??= this.configPrefix().catch((err: unknown) => {
      this.prefix = undefined;
      throw err;
    });
    const prefix = await this.prefix;
    const s = this.options.setting;
    // Namespace levels are joined by the unit separator (0x1F) in one path segment.
    const ns = encodeURIComponent(s.namespace.split('.').join('\u001f'));
    return `/v1/${prefix === '' ? '' : `${prefix}/`}namespaces/${ns}/tables/${encodeURIComponent(s.table)}`;
  }

  private async configPrefix(): Promise<string> {
    const warehouse = this.options.setting.warehouse;
    const query = warehouse === undefined ? '' : `?warehouse=${encodeURIComponent(warehouse)}`;
    const { status, body } = await this.request('GET', `/v1/config${query}`);
    if (status !== 200) throw this.failure('config', status, body, false);
    const config = body as { overrides?: Record<string, string>; defaults?: Record<string, string> };
    const prefix = config.overrides?.prefix ?? config.defaults?.prefix ?? '';
    // A prefix that is already percent-encoded (an ARN as S3 Tables sends it) is a path as it is; else encode it.
    return prefix.includes('%') ? prefix : prefix.split('/').map(encodeURIComponent).join('/');
  }

  /**
   * One REST call to the configured origin. Redirects are followed by hand (`redirect: 'manual'`), and only within
   * that origin, each hop signed afresh for its own path: a redirect to any other origin is refused before anything
   * is sent there, so neither the bearer token nor a SigV4 `x-amz-security-token` (which fetch's own cross-origin
   * handling forwards) ever reaches a host the setting did not name. A POST follows only 307/308, which keep the
   * method and body; 301/302/303 would turn a commit into a GET.
   * @throws IcebergCatalogError on a redirect off the origin, a commit redirect that changes the method, or more
   * than {@link MAX_REDIRECTS} hops.
   */
  private async request(
    method: 'GET' | 'POST',
    path: string,
    body?: string,
  ): Promise<{ status: number; body: unknown }> {
    const base = new URL(this.options.setting.uri.replace(/\/+$/, ''));
    const [pathPart, queryPart] = `${base.pathname.replace(/\/+$/, '')}${path}`.split('?');
    let url = new URL(`${base.origin}${pathPart}${queryPart === undefined ? '' : `?${queryPart}`}`);
    for (let hop = 0; ; hop++) {
      const response = await this.send(method, url, body);
      const location = response.headers.get('location');
      if (!REDIRECT_STATUSES.has(response.status) || location === null) {
        const text = await response.text();
        let parsed: unknown = {};
        try {
          parsed = text === '' ? {} : parseJsonKeepingLongs(text);
        } catch {
          parsed = { error: { message: text.slice(0, 200) } };
        }
        return { status: response.status, body: parsed };
      }
      await response.body?.cancel();
      const next = new URL(location, url);
      if (next.origin !== base.origin)
        throw new IcebergCatalogError(
          this.name,
          `the catalog redirected ${method} ${url.pathname} (${response.status}) to another origin, ${next.origin}, and a request carrying credentials is never sent to an origin the setting does not name: if the catalog lives there, set the catalog's uri to it`,
        );
      if (method === 'POST' && response.status !== 307 && response.status !== 308)
        throw new IcebergCatalogError(
          this.name,
          `the catalog answered the commit with a ${response.status} redirect, which would resend it as a GET: set the catalog's uri to the address that takes the commit`,
        );
      if (hop + 1 >= MAX_REDIRECTS)
        throw new IcebergCatalogError(
          this.name,
          `the catalog redirected ${MAX_REDIRECTS} times in a row: set the catalog's uri to where it answers`,
        );
      url = next;
    }
  }

  /** One hop: `url` as is, with the auth this catalog uses computed for it, redirects not followed. */
  private async send(method: 'GET' | 'POST', url: URL, body: string | undefined): Promise<Response> {
    let headers: Record<string, string> = {
      host: url.host,
      accept: 'application/json',
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    };
    const auth = this.options.auth;
    if (auth.type === 'bearer') headers.authorization = `Bearer ${await auth.token()}`;
    if (this.signer !== undefined) {
      const signed = await this.signer.sign({
        method,
        protocol: url.protocol,
        hostname: url.hostname,
        ...(url.port === '' ? {} : { port: Number(url.port) }),
        path: url.pathname,
        query: Object.fromEntries(url.searchParams),
        headers,
        ...(body === undefined ? {} : { body }),
      });
      headers = signed.headers;
    }
    const { host: _host, ...sent } = headers;
    return await this.fetch(url, {
      method,
      headers: sent,
      redirect: 'manual',
      ...(body === undefined ? {} : { body }),
    });
  }

  private failure(operation: string, status: number, body: unknown, afterCommit: boolean): Error {
    const e = (body as RestError).error;
    const what = `${status}${e?.type === undefined ? '' : ` ${e.type}`}${e?.message === undefined ? '' : `: ${e.message}`}`;
    if (status >= 500 || status === 429 || status === 408)
      return new TransientStoreError(
        `Iceberg REST ${operation} of ${this.name} failed (${what})${afterCommit ? '; the commit state is unknown (the catalog may have applied it), nothing was removed' : ''}. Retry`,
      );
    return new IcebergCatalogError(this.name, `the ${operation} was refused (${what})`);
  }
}
