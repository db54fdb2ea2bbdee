// Locates the real tables (written by Spark, delta-rs, Iceberg and Hudi writers) vendored in test/fixtures/,
// so the suite runs from a fresh clone with nothing beside it; their origins are in test/fixtures/NOTICE.md.
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

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
 * The Apache Hudi tables (hudi-rs test data), one folder per table base path (`.hoodie/` and the partitions):
 * recognised and refused, never compacted, until Hudi is a supported format.
 */
export const HUDI_FIXTURES = join(FIXTURES_ROOT, 'hudi');

for (const dir of [DELTA_FIXTURES, ICEBERG_FIXTURES, HUDI_FIXTURES]) {
  if (!existsSync(dir)) {
    throw new Error(
      `Fixture tables not found at ${dir}: they are part of the repository; restore them with \`git checkout -- test/fixtures\`.`,
    );
  }
}
