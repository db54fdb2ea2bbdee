// Test helper: a small unpartitioned Iceberg table in a local folder, evolved as ALTER TABLE evolves one (a new
// metadata version naming another schema current), with data files appended one snapshot each and its live data
// files listed — the scaffolding the schema-evolution tests share, so each spells only its schemas and rows.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { loadTable, PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { commitAppend } from '../../functions/core/formats/iceberg/commit.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { addedFile } from '../unit/core/formats/iceberg/commit-harness.js';

/** Where the table is: its store (rooted at `dir`), its name (folder under `dir`), and the clock its commits read. */
export interface TestTable {
  readonly store: LocalObjectStore;
  readonly dir: string;
  readonly name: string;
  readonly now: number;
}

export interface TestTableOptions {
  readonly formatVersion: 2 | 3;
  readonly tableUuid: string;
  /** Every schema the metadata lists (with its `schema-id`); `currentSchemaId` names the current one. */
  readonly schemas: readonly object[];
  readonly currentSchemaId?: number;
  readonly lastColumnId: number;
}

/**
 * Writes version 1 of the table's metadata (no snapshot; a v3 table's `next-row-id` 0) and its version hint, as the
 * tests wrote it each on its own: unpartitioned, unsorted, Parquet.
 */
export async function createTestTable(t: TestTable, options: TestTableOptions): Promise<void> {
  const v3 = options.formatVersion === 3;
  const metadata = {
    'format-version': options.formatVersion,
    'table-uuid': options.tableUuid,
    location: join(t.dir, t.name),
    'last-sequence-number': 0,
    'last-updated-ms': t.now,
    'last-column-id': options.lastColumnId,
    'current-schema-id': options.currentSchemaId ?? 0,
    schemas: options.schemas,
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: [] }],
    'last-partition-id': 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: { 'write.format.default': 'parquet' },
    'current-snapshot-id': v3 ? null : -1,
    refs: {},
    snapshots: [],
    'snapshot-log': [],
    'metadata-log': [],
    ...(v3 ? { 'next-row-id': 0 } : {}),
  };
  await t.store.put(`${t.name}/metadata/v1.metadata.json`, JSON.stringify(metadata));
  await t.store.put(`${t.name}/metadata/version-hint.text`, '1');
}

/**
 * ALTER TABLE's metadata change: a new metadata version listing `schemas`, `current` the current schema id, the
 * last column id as given, updated a millisecond after the table's clock.
 */
export async function evolveTestTable(
  t: TestTable,
  schemas: readonly object[],
  current: number,
  lastColumnId: number,
): Promise<void> {
  const hint = Number(new TextDecoder().decode(await t.store.get(`${t.name}/metadata/version-hint.text`)));
  const latest = JSON.parse(
    new TextDecoder().decode(await t.store.get(`${t.name}/metadata/v${hint}.metadata.json`)),
  ) as Record<string, unknown>;
  const next = {
    ...latest,
    'last-column-id': lastColumnId,
    'current-schema-id': current,
    schemas,
    'last-updated-ms': t.now + 1,
  };
  await t.store.put(`${t.name}/metadata/v${hint + 1}.metadata.json`, JSON.stringify(next));
  await t.store.put(`${t.name}/metadata/version-hint.text`, String(hint + 1));
}

/** Appends the data file at `key` (already in the store) as one snapshot. */
export async function appendTestFile(t: TestTable, key: string): Promise<void> {
  const table = await loadTable(t.store, t.name);
  await commitAppend(
    t.store,
    new PathCatalog(t.store),
    { tableLocation: t.name, addedFiles: [await addedFile(t.store, table, key, { specId: 0, values: [] })] },
    { clock: { now: () => t.now } },
  );
}

/** The data files the current snapshot lists, as local paths. */
export async function liveTestFiles(t: TestTable): Promise<string[]> {
  const files = await readSnapshotFiles(t.store, await loadTable(t.store, t.name));
  return files.dataFiles.map((f) => join(t.dir, f.entry.file.key));
}

/** Every file under `root` by path, with its bytes: equal before and after when no byte changed. */
export async function treeBytes(root: string): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  for (const e of await readdir(root, { recursive: true, withFileTypes: true }))
    if (e.isFile()) out.set(join(e.parentPath, e.name), await readFile(join(e.parentPath, e.name)));
  return out;
}
