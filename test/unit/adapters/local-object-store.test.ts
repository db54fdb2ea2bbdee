import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  LEGACY_TEMP_FILE_PREFIX,
  LocalObjectStore,
  TEMP_FILE_HOST,
} from '../../../functions/adapters/local-object-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';

const HOUR = 3_600_000;
/** Above Linux's largest pid (2^22): `kill(pid, 0)` answers ESRCH, as for a process that has exited. */
const DEAD_PID = 4_194_399;

describe('LocalObjectStore', () => {
  let root: string;
  let store: LocalObjectStore;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'local-store-unit-'));
    store = new LocalObjectStore(root);
  });

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('never lists in-flight temp files', async () => {
    // Prepare
    await store.put('tmp/real.parquet', 'x');
    await writeFile(join(root, 'tmp', `${LEGACY_TEMP_FILE_PREFIX}abandoned`), 'half');
    // Act
    const listed = (await store.list('tmp/')).objects.map((o) => o.key);
    // Assess
    expect(listed).toEqual(['tmp/real.parquet']);
  });

  it('shows a streamed object only once it is complete, never half-written', async () => {
    // Prepare
    const seenDuringWrite: unknown[] = [];
    async function* body(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(1000);
      seenDuringWrite.push(await store.head('stream/out.parquet'));
      seenDuringWrite.push((await store.list('stream/')).objects.length);
      yield new Uint8Array(1000);
    }
    // Act
    const { size } = await store.putStream('stream/out.parquet', body());
    // Assess
    expect(seenDuringWrite).toEqual([undefined, 0]);
    expect(size).toBe(2000);
    expect((await store.head('stream/out.parquet'))?.size).toBe(2000);
  });

  it('changes the ETag on a rewrite of the same size, even with the same mtime', async () => {
    // Prepare
    await store.put('etag/f', 'aaaa');
    const when = new Date('2024-01-01T00:00:00Z');
    await utimes(join(root, 'etag/f'), when, when);
    const before = (await store.head('etag/f'))?.etag;
    // Act
    await store.put('etag/f', 'bbbb');
    await utimes(join(root, 'etag/f'), when, when);
    const after = (await store.head('etag/f'))?.etag;
    // Assess
    expect(after).not.toBe(before);
  });

  it.each(['../escape', 'a/../../b', 'a//b', 'trailing/', '/absolute', `x/${LEGACY_TEMP_FILE_PREFIX}1`])(
    'refuses the key %j with InvalidInputError',
    async (key) => {
      // Act
      const put = store.put(key, 'x');
      // Assess
      await expect(put).rejects.toBeInstanceOf(InvalidInputError);
    },
  );

  it('removes folders left empty by a delete, up to but not including the root', async () => {
    // Prepare
    await store.put('prune/date=1/hour=2/a.parquet', 'a');
    await store.put('prune/keep.parquet', 'k');
    // Act
    await store.deleteMany([{ key: 'prune/date=1/hour=2/a.parquet' }]);
    // Assess
    expect(await readdir(join(root, 'prune'))).toEqual(['keep.parquet']);
    expect((await stat(root)).isDirectory()).toBe(true);
  });

  it('reports a folder with files deep inside as one common prefix and ignores empty folders', async () => {
    // Prepare
    await store.put('deep/a/b/c/d.parquet', 'x');
    await mkdir(join(root, 'deep', 'empty', 'nested'), { recursive: true });
    // Act
    const page = await store.list('deep/', { delimiter: '/' });
    // Assess
    expect(page.commonPrefixes).toEqual(['deep/a/']);
    expect(page.objects).toEqual([]);
  });

  it('refuses a key whose folder is already a file, saying why', async () => {
    // Prepare
    await store.put('clash/a', 'file');
    // Act
    const put = store.put('clash/a/b', 'x');
    // Assess
    await expect(put).rejects.toThrow(/cannot hold both/);
  });

  it('refuses to copy a version, since a folder keeps none', async () => {
    // Prepare
    await store.put('ver/a', 'x');
    // Act
    const copy = store.copy('ver/a', 'ver/b', { sourceVersionId: 'v1' });
    // Assess
    await expect(copy).rejects.toBeInstanceOf(InvalidInputError);
  });

  it('writes through a temp file in _lake-compactor/tmp/ named by host and pid, never beside the target', async () => {
    // Prepare
    const seen: { partition: string[]; temp: string[] }[] = [];
    async function* body(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(100);
      seen.push({
        partition: await readdir(join(root, 'tmpwrite', 'date=1')).catch(() => []),
        temp: await readdir(join(root, '_lake-compactor', 'tmp')),
      });
      yield new Uint8Array(100);
    }
    // Act
    await store.putStream('tmpwrite/date=1/out.parquet', body());
    // Assess
    expect(seen[0]?.partition).toEqual([]);
    expect(seen[0]?.temp).toEqual([
      expect.stringMatching(new RegExp(`^${TEMP_FILE_HOST}\\.${process.pid}\\.`)),
    ]);
    expect(await readdir(join(root, 'tmpwrite', 'date=1'))).toEqual(['out.parquet']);
    expect(await readdir(join(root, '_lake-compactor', 'tmp'))).toEqual([]);
  });

  it('removes temp files of dead processes of this host and old ones, and keeps young ones of live writers', async () => {
    // Prepare
    const temp = join(root, '_lake-compactor', 'tmp');
    await mkdir(temp, { recursive: true });
    const name = (host: string, pid: number) => `${host}.${pid}.${randomUUID()}`;
    const dead = name(TEMP_FILE_HOST, DEAD_PID);
    const live = name(TEMP_FILE_HOST, process.pid);
    const liveButOld = name(TEMP_FILE_HOST, process.pid);
    const otherHost = name('some-other-host', DEAD_PID);
    const otherHostOld = name('some-other-host', DEAD_PID);
    for (const file of [dead, live, liveButOld, otherHost, otherHostOld])
      await writeFile(join(temp, file), 'half');
    const now = Date.now();
    const twoDaysAgo = new Date(now - 48 * HOUR);
    await utimes(join(temp, liveButOld), twoDaysAgo, twoDaysAgo);
    await utimes(join(temp, otherHostOld), twoDaysAgo, twoDaysAgo);
    // Act
    const removed = await store.removeStaleTempFiles(now);
    // Assess
    expect(removed.map((r) => r.key).sort()).toEqual(
      [dead, liveButOld, otherHostOld].map((n) => `_lake-compactor/tmp/${n}`).sort(),
    );
    expect(removed.find((r) => r.key.endsWith(dead))?.reason).toMatch(/no longer running/);
    expect((await readdir(temp)).sort()).toEqual([live, otherHost].sort());
    await rm(temp, { recursive: true });
  });

  it('finds temp files older versions left beside their targets, and deletes them by key', async () => {
    // Prepare
    await store.put('legacy/date=1/part-0.parquet', 'data');
    await writeFile(join(root, 'legacy', 'date=1', `${LEGACY_TEMP_FILE_PREFIX}abc`), 'half');
    // Act
    const found = await store.legacyTempFiles('legacy/');
    const result = await store.deleteMany(found.map((f) => ({ key: f.key, ifMatch: f.etag })));
    // Assess
    expect(found.map((f) => f.key)).toEqual([`legacy/date=1/${LEGACY_TEMP_FILE_PREFIX}abc`]);
    expect(result.errors).toEqual([]);
    expect(await readdir(join(root, 'legacy', 'date=1'))).toEqual(['part-0.parquet']);
  });

  it('refuses to write into its temp area', async () => {
    // Act
    const put = store.put('_lake-compactor/tmp/not-a-key', 'x');
    // Assess
    await expect(put).rejects.toThrow(/reserved for in-flight writes/);
  });

  it('puts a changed file back when a conditional delete loses, without leaving temp files', async () => {
    // Prepare
    const { etag } = await store.put('cdel/f', 'old');
    await store.put('cdel/f', 'new');
    // Act
    const result = await store.deleteMany([{ key: 'cdel/f', ifMatch: etag }]);
    // Assess
    expect(result.errors.map((e) => e.code)).toEqual(['PreconditionFailed']);
    expect(await readdir(join(root, 'cdel'))).toEqual(['f']);
    expect(new TextDecoder().decode(await store.get('cdel/f'))).toBe('new');
  });
});
