// The vendored Iceberg tables (test/fixtures/iceberg/, see NOTICE.md) behind a read-only local ObjectStore, and
// what their writers recorded, read with plain JSON.parse — an oracle independent of the reader under test.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { ICEBERG_FIXTURES } from '../../../../support/fixtures.js';

export { ICEBERG_FIXTURES };

/** The file path of a store key of {@link fixtureStore} (`<table>/data/…`), for DuckDB. */
export function fixturePath(key: string): string {
  return join(ICEBERG_FIXTURES, key);
}

/** Every vendored table, by folder name. */
export const FIXTURE_TABLES = readdirSync(ICEBERG_FIXTURES, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();

/** A store whose keys are `<table>/metadata/…` and `<table>/data/…`. Only read from. */
export function fixtureStore(): LocalObjectStore {
  return new LocalObjectStore(ICEBERG_FIXTURES);
}

/** One snapshot's writer-recorded facts: sequence number and the summary's counters (strings, as written). */
export interface RecordedSnapshot {
  readonly sequenceNumber: number | undefined;
  readonly summary: Readonly<Record<string, string>>;
}

/**
 * The snapshots of a metadata file as the writer recorded them, in file order, read with JSON.parse. Snapshot ids
 * are deliberately not taken from here (JSON.parse rounds them); callers pair snapshots by position.
 */
export function recordedSnapshots(table: string, metadataFile: string): RecordedSnapshot[] {
  const json = JSON.parse(readFileSync(join(ICEBERG_FIXTURES, table, 'metadata', metadataFile), 'utf8')) as {
    snapshots?: { 'sequence-number'?: number; summary?: Record<string, string> }[];
  };
  return (json.snapshots ?? []).map((s) => ({
    sequenceNumber: s['sequence-number'],
    summary: s.summary ?? {},
  }));
}

/** The raw text of a fixture's metadata file. */
export function metadataText(table: string, metadataFile: string): string {
  return readFileSync(join(ICEBERG_FIXTURES, table, 'metadata', metadataFile), 'utf8');
}

/** The last path segment (file name) of a writer path or key. */
export function fileName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
