import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { ObjectNotFoundError, PreconditionFailedError } from '../../functions/core/errors.js';
import { ConditionalPutLogStore, commitKey } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectInfo, ObjectStore } from '../../functions/ports/object-store.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';

/** One adapter under contract: how to make it and how to clean up after it. */
interface Harness {
  readonly name: string;
  open(): Promise<{ store: ObjectStore; close(): Promise<void> }>;
}

const harnesses: Harness[] = [
  {
    name: 'memory',
    async open() {
      return { store: new MemoryObjectStore(), close: async () => {} };
    },
  },
  {
    name: 'local folder',
    async open() {
      const root = await mkdtemp(join(tmpdir(), 'local-store-'));
      return { store: new LocalObjectStore(root), close: () => rm(root, { recursive: true, force: true }) };
    },
  },
  {
    name: 's3rver',
    async open() {
      const server: RunningS3Server = await startS3Server({ buckets: ['lake'] });
      return {
        store: new S3ObjectStore({ client: server.client(), bucket: 'lake' }),
        close: () => server.stop(),
      };
    },
  },
];

/** Keys that break naive encodings: space, +, =, a literal %3D, Unicode, ?, #, & and Hive partitions. */
const NASTY_KEYS = [
  'nasty/with space.parquet',
  'nasty/plus+sign.parquet',
  'nasty/eq=value.parquet',
  'nasty/literal%3Dpercent.parquet',
  'nasty/literal%2Fslash.parquet',
  'nasty/ünïcödé-日本-😀.parquet',
  'nasty/q?x=1#frag&y.parquet',
  'nasty/date=2024-01-01/k=a b+c/part-0.parquet',
];

function bytesOf(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function textOf(bytes: Uint8Array): string {
  return new TextDecoder().decode(bytes);
}

function byteOrder(keys: readonly string[]): string[] {
  return [...keys].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
}

async function collect(iterable: AsyncIterable<ObjectInfo>): Promise<string[]> {
  const keys: string[] = [];
  for await (const info of iterable) keys.push(info.key);
  return keys;
}

/** Deterministic pseudo-random bytes, so a corrupted part cannot hide behind repeated content. */
function pseudoRandom(size: number, seed: number): Uint8Array {
  const out = new Uint8Array(size);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state & 0xff;
  }
  return out;
}

describe.each(harnesses)('ObjectStore contract: $name', (harness) => {
  let store: ObjectStore;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ store, close } = await harness.open());
  });

  afterAll(async () => {
    await close();
  });

  it('returns what was put, with a head that agrees on size and ETag', async () => {
    // Prepare
    const body = bytesOf('hello, lake');
    // Act
    const { etag } = await store.put('rt/a.bin', body);
    const head = await store.head('rt/a.bin');
    const got = await store.get('rt/a.bin');
    // Assess
    expect(etag).toMatch(/^[0-9a-f]{32}$/);
    expect(head).toMatchObject({ key: 'rt/a.bin', size: body.byteLength, etag, storageClass: 'STANDARD' });
    expect(head?.lastModified).toBeInstanceOf(Date);
    expect(textOf(got)).toBe('hello, lake');
  });

  it('reports a missing key as undefined on head and ObjectNotFoundError on get', async () => {
    // Act
    const head = await store.head('rt/missing.bin');
    const get = store.get('rt/missing.bin');
    // Assess
    expect(head).toBeUndefined();
    await expect(get).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('names the ETag of what a whole or ranged read returned, in the read itself', async () => {
    // Prepare
    const body = pseudoRandom(1000, 11);
    const { etag } = await store.put('read/identity.parquet', body);
    if (harness.name === 'local folder') {
      expect(store.read).toBeUndefined(); // its callers HEAD for what a read would have named
      return;
    }
    if (store.read === undefined) throw new Error(`${harness.name} should offer read`);
    // Act
    const whole = await store.read('read/identity.parquet');
    const tail = await store.read('read/identity.parquet', { start: 992, endInclusive: 999 });
    const missing = store.read('read/missing.parquet');
    // Assess
    expect(Buffer.from(whole.bytes)).toEqual(Buffer.from(body));
    expect(Buffer.from(tail.bytes)).toEqual(Buffer.from(body.subarray(992)));
    expect([whole.etag, tail.etag]).toEqual([etag, etag]);
    expect(whole.versionId).toBeUndefined(); // these buckets are unversioned
    await expect(missing).rejects.toBeInstanceOf(ObjectNotFoundError);
  });

  it('reads the last 8 bytes with an explicit range', async () => {
    // Prepare
    const body = pseudoRandom(1000, 7);
    await store.put('range/footer.parquet', body);
    // Act
    const tail = await store.getRange('range/footer.parquet', body.byteLength - 8, body.byteLength - 1);
    // Assess
    expect(Buffer.from(tail)).toEqual(Buffer.from(body.subarray(992)));
  });

  it('clamps a range past the end, refuses one that starts past it, and reports a missing key', async () => {
    // Prepare
    const body = pseudoRandom(1000, 11);
    await store.put('range/short.bin', body);
    // Act
    const clamped = await store.getRange('range/short.bin', 990, 5000);
    const pastEnd = await store.getRange('range/short.bin', 1000, 1010).catch((err: unknown) => err);
    const missing = await store.getRange('range/absent.bin', 0, 7).catch((err: unknown) => err);
    // Assess
    expect(Buffer.from(clamped)).toEqual(Buffer.from(body.subarray(990)));
    expect(String(pastEnd)).toMatch(/not satisfiable|InvalidRange|Range Not Satisfiable/i);
    expect(missing).toBeInstanceOf(ObjectNotFoundError);
  });

  it("reads small and large ranges of a 3 MiB object byte for byte (both of the local store's read paths)", async () => {
    // Prepare: the local folder reads ranges up to 1 MiB synchronously and larger ones asynchronously
    const body = pseudoRandom(3 * 1024 * 1024 + 5, 13);
    await store.put('range/large.bin', body);
    // Act
    const small = await store.getRange('range/large.bin', 1_000_000, 1_000_000 + 1024 * 1024 - 1);
    const large = await store.getRange('range/large.bin', 123, 123 + 1024 * 1024);
    const tail = await store.getRange('range/large.bin', 1024 * 1024, body.byteLength + 100);
    // Assess
    expect(small.byteLength).toBe(1024 * 1024);
    expect(Buffer.from(small).equals(Buffer.from(body.subarray(1_000_000, 1_000_000 + 1024 * 1024)))).toBe(
      true,
    );
    expect(large.byteLength).toBe(1024 * 1024 + 1);
    expect(Buffer.from(large).equals(Buffer.from(body.subarray(123, 123 + 1024 * 1024 + 1)))).toBe(true);
    expect(Buffer.from(tail).equals(Buffer.from(body.subarray(1024 * 1024)))).toBe(true);
  });

  it('pages through more than 1000 keys in byte order without losing or repeating one', async () => {
    // Prepare: shuffled insertion, names whose tree order differs from key order
    const keys = Array.from({ length: 1050 }, (_, i) => `big/${(i * 7919) % 1050}`.padEnd(9, 'x'));
    const limit = pLimit(16);
    await Promise.all(keys.map((key) => limit(() => store.put(key, key))));
    // Act
    const pages: string[][] = [];
    let token: string | undefined;
    do {
      const page = await store.list('big/', { maxKeys: 200, token });
      pages.push(page.objects.map((info) => info.key));
      token = page.nextToken;
    } while (token !== undefined);
    const all = await collect(store.listAll('big/'));
    // Assess
    expect(pages.map((page) => page.length)).toEqual([200, 200, 200, 200, 200, 50]);
    expect(pages.flat()).toEqual(byteOrder(keys));
    expect(all).toEqual(byteOrder(keys));
  });

  it('orders keys by UTF-8 bytes, across folders and beyond the BMP, when paging two at a time', async () => {
    // Prepare: '-' < '.' < '/' in bytes, and U+E000 (EE..) sorts before U+1F600 (F0..) in UTF-8
    const keys = ['ord/a!', 'ord/a-c', 'ord/a.A', 'ord/a/b', 'ord/b', 'ord/\uE000', 'ord/😀'];
    for (const key of [...keys].reverse()) await store.put(key, 'x');
    // Act
    const listed: string[] = [];
    let token: string | undefined;
    do {
      const page = await store.list('ord/', { maxKeys: 2, token });
      listed.push(...page.objects.map((info) => info.key));
      token = page.nextToken;
    } while (token !== undefined);
    // Assess
    expect(listed).toEqual(['ord/a!', 'ord/a-c', 'ord/a.A', 'ord/a/b', 'ord/b', 'ord/\uE000', 'ord/😀']);
  });

  it('groups keys under a delimiter into common prefixes, each reported once across pages', async () => {
    // Prepare
    for (const key of ['dl/date=1/a', 'dl/date=1/b', 'dl/date=2/a', 'dl/top', 'dl/x/y/z'])
      await store.put(key, 'x');
    // Act
    const whole = await store.list('dl/', { delimiter: '/' });
    const paged: string[] = [];
    let token: string | undefined;
    do {
      const page = await store.list('dl/', { delimiter: '/', maxKeys: 1, token });
      paged.push(...page.commonPrefixes, ...page.objects.map((info) => info.key));
      token = page.nextToken;
    } while (token !== undefined);
    // Assess
    expect(whole.objects.map((info) => info.key)).toEqual(['dl/top']);
    expect(whole.commonPrefixes).toEqual(['dl/date=1/', 'dl/date=2/', 'dl/x/']);
    expect(whole.nextToken).toBeUndefined();
    expect(paged).toEqual(['dl/date=1/', 'dl/date=2/', 'dl/top', 'dl/x/']);
  });

  it('lets put-if-absent win once: the second attempt fails and the first content stays', async () => {
    // Prepare
    await store.put('cond/_delta_log/00001.json', 'first', { ifNoneMatch: '*' });
    // Act
    const second = store.put('cond/_delta_log/00001.json', 'second', { ifNoneMatch: '*' });
    // Assess
    await expect(second).rejects.toBeInstanceOf(PreconditionFailedError);
    expect(textOf(await store.get('cond/_delta_log/00001.json'))).toBe('first');
  });

  it('lets exactly one of several concurrent put-if-absent writers win', async () => {
    // Act
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((n) =>
        store.put('cond/_delta_log/00002.json', `writer ${n}`, { ifNoneMatch: '*' }),
      ),
    );
    // Assess
    const winners = results.filter((result) => result.status === 'fulfilled');
    const losers = results.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(4);
    for (const loser of losers) expect(loser).toBeInstanceOf(PreconditionFailedError);
  });

  it('lets the second Delta writer of a version get exists, and keeps the first commit', async () => {
    // Prepare
    const first = new ConditionalPutLogStore(store);
    const second = new ConditionalPutLogStore(store);
    await first.writeCommit('delta/seq', 0, bytesOf('{"commitInfo":{"writer":"first"}}'));
    // Act
    const result = await second.writeCommit('delta/seq', 0, bytesOf('{"commitInfo":{"writer":"second"}}'));
    // Assess
    expect(result).toBe('exists');
    expect(textOf(await store.get(commitKey('delta/seq', 0)))).toBe('{"commitInfo":{"writer":"first"}}');
  });

  it('lets exactly one of several Delta writers racing for the same version write it', async () => {
    // Prepare
    const writers = [1, 2, 3, 4, 5].map((n) => ({ n, log: new ConditionalPutLogStore(store) }));
    // Act
    const results = await Promise.all(
      writers.map(({ n, log }) =>
        log.writeCommit('delta/race', 7, bytesOf(`{"commitInfo":{"writer":${n}}}`)),
      ),
    );
    // Assess
    expect(results.filter((result) => result === 'written')).toHaveLength(1);
    expect(results.filter((result) => result === 'exists')).toHaveLength(4);
    const winner = writers[results.indexOf('written')]?.n;
    expect(textOf(await store.get(commitKey('delta/race', 7)))).toBe(`{"commitInfo":{"writer":${winner}}}`);
  });

  it('replaces an object with If-Match only while its ETag is the one read, and refuses a missing key', async () => {
    // Prepare
    const { etag: first } = await store.put('cas/entry.json', 'revision 1');
    const { etag: second } = await store.put('cas/entry.json', 'revision 2', { ifMatch: first });
    // Act
    const stale = await store
      .put('cas/entry.json', 'lost update', { ifMatch: first })
      .catch((error: unknown) => error);
    const missing = await store
      .put('cas/missing.json', 'x', { ifMatch: second })
      .catch((error: unknown) => error);
    // Assess
    expect(stale).toBeInstanceOf(PreconditionFailedError);
    expect(missing).toBeInstanceOf(ObjectNotFoundError);
    expect(textOf(await store.get('cas/entry.json'))).toBe('revision 2');
    expect((await store.head('cas/entry.json'))?.etag).toBe(second);
    expect(await store.head('cas/missing.json')).toBeUndefined();
  });

  it('lets exactly one of several concurrent If-Match writers from the same ETag win', async () => {
    // Prepare
    const { etag } = await store.put('cas/race.json', 'base');
    // Act
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((n) => store.put('cas/race.json', `writer ${n}`, { ifMatch: etag })),
    );
    // Assess
    const winners = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i + 1] : []));
    const losers = results.flatMap((r) => (r.status === 'rejected' ? [r.reason] : []));
    expect(winners).toHaveLength(1);
    for (const loser of losers) expect(loser).toBeInstanceOf(PreconditionFailedError);
    expect(textOf(await store.get('cas/race.json'))).toBe(`writer ${winners[0]}`);
  });

  it('streams a 20 MB body in parts and lands it byte-identical', async () => {
    // Prepare
    const size = 20 * 1024 * 1024;
    const data = pseudoRandom(size, 42);
    async function* chunks(): AsyncGenerator<Uint8Array> {
      for (let offset = 0; offset < size; offset += 1024 * 1024)
        yield data.subarray(offset, offset + 1024 * 1024);
    }
    // Act
    const result = await store.putStream('stream/big.parquet', chunks(), {
      partSize: 5 * 1024 * 1024,
      queueSize: 2,
    });
    const stored = await store.get('stream/big.parquet');
    const head = await store.head('stream/big.parquet');
    // Assess
    expect(result.size).toBe(size);
    expect(head?.size).toBe(size);
    expect(head?.etag).toBe(result.etag);
    expect(createHash('sha256').update(stored).digest('hex')).toBe(
      createHash('sha256').update(data).digest('hex'),
    );
  });

  it('refuses a multipart putStream with ifNoneMatch onto an existing key and keeps the old content', async () => {
    // Prepare
    await store.put('stream/_delta_log/00003.json', 'winner');
    async function* chunks(): AsyncGenerator<Uint8Array> {
      yield pseudoRandom(5 * 1024 * 1024, 1);
      yield pseudoRandom(1024 * 1024, 2);
    }
    // Act
    const result = await store
      .putStream('stream/_delta_log/00003.json', chunks(), { partSize: 5 * 1024 * 1024, ifNoneMatch: '*' })
      .catch((error: unknown) => error);
    // Assess
    expect(result).toBeInstanceOf(PreconditionFailedError);
    expect(textOf(await store.get('stream/_delta_log/00003.json'))).toBe('winner');
  });

  it('copies when the source ETag matches and refuses a stale ETag, leaving the destination untouched', async () => {
    // Prepare
    const { etag: original } = await store.put('copy/src.parquet', 'version 1');
    await store.put('copy/dst-stale.parquet', 'untouched');
    // Act
    const copied = await store.copy('copy/src.parquet', 'copy/dst.parquet', { ifMatch: original });
    await store.put('copy/src.parquet', 'version 2');
    const stale = await store.copy('copy/src.parquet', 'copy/dst-stale.parquet', { ifMatch: original }).then(
      () => 'copied',
      (error: unknown) => error,
    );
    // Assess
    expect(textOf(await store.get('copy/dst.parquet'))).toBe('version 1');
    expect((await store.head('copy/dst.parquet'))?.etag).toBe(copied.etag);
    expect(stale).toBeInstanceOf(PreconditionFailedError);
    expect(textOf(await store.get('copy/dst-stale.parquet'))).toBe('untouched');
  });

  it('copies to an absent key only when asked (If-None-Match: *): one of several racing copies wins, an existing destination stays', async () => {
    // Prepare
    await store.put('copy-absent/a.log', 'log a');
    await store.put('copy-absent/b.log', 'log b');
    await store.put('copy-absent/taken.log', 'a writer took it');
    // Act
    const onto = await store.copy('copy-absent/a.log', 'copy-absent/taken.log', { ifNoneMatch: '*' }).then(
      () => 'copied',
      (error: unknown) => error,
    );
    const race = await Promise.allSettled(
      ['copy-absent/a.log', 'copy-absent/b.log'].map((source) =>
        store.copy(source, 'copy-absent/target.log', { ifNoneMatch: '*' }),
      ),
    );
    // Assess
    expect(onto).toBeInstanceOf(PreconditionFailedError);
    expect(textOf(await store.get('copy-absent/taken.log'))).toBe('a writer took it');
    expect(race.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const loser = race.find((r) => r.status === 'rejected');
    expect(loser?.status === 'rejected' ? loser.reason : undefined).toBeInstanceOf(PreconditionFailedError);
    expect(['log a', 'log b']).toContain(textOf(await store.get('copy-absent/target.log')));
  });

  it('deletes present and missing keys alike, reporting no errors', async () => {
    // Prepare
    await store.put('del/a', 'a');
    await store.put('del/sub/b', 'b');
    // Act
    const result = await store.deleteMany([
      { key: 'del/a' },
      { key: 'del/never-existed' },
      { key: 'del/sub/b' },
    ]);
    // Assess
    expect(result.errors).toEqual([]);
    expect(result.deleted.map((ref) => ref.key).sort()).toEqual(['del/a', 'del/never-existed', 'del/sub/b']);
    expect(await store.head('del/a')).toBeUndefined();
    expect((await store.list('del/')).objects).toEqual([]);
  });

  it('deletes conditionally: an unchanged key goes, a changed one stays and is reported, a missing one counts as deleted', async () => {
    // Prepare
    const { etag: planned } = await store.put('cdel/unchanged.parquet', 'a');
    const { etag: stale } = await store.put('cdel/changed.parquet', 'old');
    await store.put('cdel/changed.parquet', 'new, written by a live writer');
    // Act
    const result = await store.deleteMany([
      { key: 'cdel/unchanged.parquet', ifMatch: planned },
      { key: 'cdel/changed.parquet', ifMatch: stale },
      { key: 'cdel/already-gone.parquet', ifMatch: planned },
    ]);
    // Assess
    expect(result.deleted.map((ref) => ref.key).sort()).toEqual([
      'cdel/already-gone.parquet',
      'cdel/unchanged.parquet',
    ]);
    expect(result.errors).toHaveLength(1);
    expect(result.errors[0]).toMatchObject({ key: 'cdel/changed.parquet', code: 'PreconditionFailed' });
    expect(await store.head('cdel/unchanged.parquet')).toBeUndefined();
    expect(textOf(await store.get('cdel/changed.parquet'))).toBe('new, written by a live writer');
  });

  it('round-trips keys with spaces, +, =, %, Unicode and ?#& through put, list, get, copy and delete', async () => {
    // Prepare
    const etags = new Map<string, string>();
    for (const key of NASTY_KEYS) etags.set(key, (await store.put(key, `body of ${key}`)).etag);
    // Act
    const listed = await collect(store.listAll('nasty/'));
    const bodies = await Promise.all(NASTY_KEYS.map(async (key) => textOf(await store.get(key))));
    for (const key of NASTY_KEYS) await store.copy(key, `${key}.copy`, { ifMatch: etags.get(key) as string });
    const copies = await Promise.all(NASTY_KEYS.map(async (key) => textOf(await store.get(`${key}.copy`))));
    const all = [...NASTY_KEYS, ...NASTY_KEYS.map((key) => `${key}.copy`)];
    const deletion = await store.deleteMany(all.map((key) => ({ key })));
    const after = await collect(store.listAll('nasty/'));
    // Assess
    expect(listed).toEqual(byteOrder(NASTY_KEYS));
    expect(bodies).toEqual(NASTY_KEYS.map((key) => `body of ${key}`));
    expect(copies).toEqual(NASTY_KEYS.map((key) => `body of ${key}`));
    expect(deletion.errors).toEqual([]);
    expect(after).toEqual([]);
  });
});
