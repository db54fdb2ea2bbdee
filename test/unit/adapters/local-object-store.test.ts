import { mkdir, mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore, TEMP_FILE_PREFIX } from '../../../functions/adapters/local-object-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';

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
    await writeFile(join(root, 'tmp', `${TEMP_FILE_PREFIX}abandoned`), 'half');
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

  it.each(['../escape', 'a/../../b', 'a//b', 'trailing/', '/absolute', `x/${TEMP_FILE_PREFIX}1`])(
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
