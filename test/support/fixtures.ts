// Locates the real tables (written by Spark, delta-rs, Iceberg and Hudi writers) vendored in test/fixtures/,
// so the suite runs from a fresh clone with nothing beside it; their origins are in test/fixtures/NOTICE.md.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';

/** `test/fixtures/` of this repository. Read-only: copy a table into a temp folder before changing it. */
export const FIXTURES_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', 'fixtures');

/** The Delta Lake tables from delta-rs' test data, one folder per table root. */
export const DELTA_FIXTURES = join(FIXTURES_ROOT, 'delta');

/**
 * The Apache Iceberg tables, one folder per table root (`metadata/`, `data/`). Their metadata keeps the
 * writers' original paths: NOTICE.md lists each table's prefix to map onto the copy's location.
 */
export const ICEBERG_FIXTURES = join(FIXTURES_ROOT, 'iceberg');

/**
 * The Apache Hudi tables (hudi-rs test data), one folder per table base path (`.hoodie/` and the partitions),
 * beside `log_files/` (one log file per block type, not a table): see {@link HUDI_TABLES}.
 */
export const HUDI_FIXTURES = join(FIXTURES_ROOT, 'hudi');

/** One Hudi log file per block type (Avro data, Parquet data, delete, rollback command), outside any table. */
export const HUDI_LOG_FILES = join(HUDI_FIXTURES, 'log_files');

for (const dir of [DELTA_FIXTURES, ICEBERG_FIXTURES, HUDI_FIXTURES]) {
  if (!existsSync(dir)) {
    throw new Error(
      `Fixture tables not found at ${dir}: they are part of the repository; restore them with \`git checkout -- test/fixtures\`.`,
    );
  }
}

/** The names of the vendored Hudi tables: the folders under {@link HUDI_FIXTURES} with a `.hoodie/`, sorted. */
export const HUDI_TABLES: readonly string[] = readdirSync(HUDI_FIXTURES)
  .filter((name) => existsSync(join(HUDI_FIXTURES, name, '.hoodie')))
  .sort();

/**
 * Whether a vendored Iceberg table's metadata files carry a metastore catalog's naming (`00003-<uuid>.metadata.json`,
 * as pg_lake's Spark-written samples do) rather than `v3.metadata.json`. No catalog manages these copies, so a
 * path-catalog command on them must say so explicitly ({@link acknowledgeUuidNaming}), as a user must.
 */
export function hasCatalogNamedMetadata(table: string): boolean {
  return readdirSync(join(ICEBERG_FIXTURES, table, 'metadata')).some(
    (n) => n.endsWith('.metadata.json') && !/^v\d+/.test(n),
  );
}

/** The CLI flags saying a catalog-named fixture is a path table anyway (none for a `v<N>`-named one). */
export function acknowledgeUuidNaming(table: string): string[] {
  return hasCatalogNamedMetadata(table) ? ['--catalog', 'path', '--path-metadata-naming', 'uuid'] : [];
}

/** The PathCatalog options for a fixture (see {@link acknowledgeUuidNaming}). */
export function pathCatalogOptions(table: string): { metadataNaming?: 'uuid' } {
  return hasCatalogNamedMetadata(table) ? { metadataNaming: 'uuid' } : {};
}

/**
 * The base files of a vendored Hudi partition (`<table>/<partition path>` under {@link HUDI_FIXTURES}), stored under
 * `in/` of a fresh memory store in name order, and their keys.
 */
export async function storedHudiPartition(
  partition: string,
): Promise<{ store: MemoryObjectStore; keys: string[] }> {
  const store = new MemoryObjectStore();
  const dir = join(HUDI_FIXTURES, partition);
  const keys: string[] = [];
  for (const name of readdirSync(dir)
    .filter((n) => n.endsWith('.parquet'))
    .sort()) {
    await store.put(`in/${name}`, new Uint8Array(readFileSync(join(dir, name))));
    keys.push(`in/${name}`);
  }
  return { store, keys };
}
