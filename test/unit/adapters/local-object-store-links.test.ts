// L2: a local folder's keys never leave it through a symbolic link. A link planted inside the table folder (a shared
// NFS/EFS mount) that points outside is refused for reads, writes and deletes, with nothing done there; a link that
// stays inside the folder is followed as before.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../functions/adapters/local-object-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { folderContentSnapshot } from '../../support/folder-snapshot.js';

let dir: string;
let table: string;
let other: string;

beforeEach(() => {
  // Prepare: <dir>/tbl (the store root) with data/lnk -> ../../other_table, and the sibling other_table
  dir = mkdtempSync(join(tmpdir(), 'links-'));
  table = join(dir, 'tbl');
  other = join(dir, 'other_table');
  mkdirSync(join(table, 'data', 'real'), { recursive: true });
  mkdirSync(other);
  writeFileSync(join(other, 'secret.parquet'), 'SECRET');
  writeFileSync(join(table, 'data', 'real', 'a.parquet'), 'A');
  symlinkSync('../../other_table', join(table, 'data', 'lnk'));
  symlinkSync(join(other, 'secret.parquet'), join(table, 'data', 'file-link.parquet'));
  symlinkSync('real', join(table, 'data', 'alias'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function refusal(attempt: () => Promise<unknown>): Promise<unknown> {
  try {
    await attempt();
  } catch (err) {
    return err;
  }
  throw new Error('expected a refusal');
}

describe('LocalObjectStore and symbolic links', () => {
  it('refuses to read, head, write or copy through a folder link that leaves the root', async () => {
    // Prepare
    const store = new LocalObjectStore(table);
    const before = await folderContentSnapshot(other);

    // Act
    const errors = [
      await refusal(() => store.get('data/lnk/secret.parquet')),
      await refusal(() => store.getRange('data/lnk/secret.parquet', 0, 1)),
      await refusal(() => store.head('data/lnk/secret.parquet')),
      await refusal(() => store.put('data/lnk/planted.parquet', 'X')),
      await refusal(() => store.copy('data/real/a.parquet', 'data/lnk/copied.parquet')),
      await refusal(() => store.copy('data/lnk/secret.parquet', 'data/real/stolen.parquet')),
    ];

    // Assess
    for (const err of errors) {
      expect(err).toBeInstanceOf(InvalidInputError);
      expect((err as Error).message).toContain(`goes through a symbolic link to ${other}`);
    }
    expect(await folderContentSnapshot(other)).toEqual(before);
  });

  it('refuses to delete through a folder link that leaves the root, and deletes the rest of the batch', async () => {
    // Prepare
    const store = new LocalObjectStore(table);

    // Act
    const outcome = await store.deleteMany([
      { key: 'data/lnk/secret.parquet' },
      { key: 'data/real/a.parquet' },
    ]);

    // Assess
    expect(outcome.deleted.map((r) => r.key)).toEqual(['data/real/a.parquet']);
    expect(outcome.errors).toMatchObject([{ key: 'data/lnk/secret.parquet', code: 'InvalidKey' }]);
    expect(readFileSync(join(other, 'secret.parquet'), 'utf8')).toBe('SECRET');
  });

  it('refuses to read a file link that leaves the root; deleting it removes the link, never its target', async () => {
    // Prepare
    const store = new LocalObjectStore(table);

    // Act
    const readErr = await refusal(() => store.get('data/file-link.parquet'));
    const headErr = await refusal(() => store.head('data/file-link.parquet'));
    const outcome = await store.deleteMany([{ key: 'data/file-link.parquet' }]);

    // Assess
    expect(readErr).toBeInstanceOf(InvalidInputError);
    expect(headErr).toBeInstanceOf(InvalidInputError);
    expect(outcome.errors).toEqual([]);
    expect(readFileSync(join(other, 'secret.parquet'), 'utf8')).toBe('SECRET');
  });

  it('follows a link that stays inside the root', async () => {
    // Prepare
    const store = new LocalObjectStore(table);

    // Act
    const bytes = await store.get('data/alias/a.parquet');
    const head = await store.head('data/alias/a.parquet');

    // Assess
    expect(new TextDecoder().decode(bytes)).toBe('A');
    expect(head?.size).toBe(1);
  });

  it('never lists what a link points at', async () => {
    // Prepare
    const store = new LocalObjectStore(table);

    // Act
    const keys: string[] = [];
    for await (const o of store.listAll('')) keys.push(o.key);

    // Assess
    expect(keys).toEqual(['data/real/a.parquet']);
  });
});
