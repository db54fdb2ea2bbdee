// Locates the shared fixtures (real tables written by Spark and delta-rs) relative to the
// repository, because CI clones the project elsewhere with `shared/` beside it.
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `../shared/fixtures` beside the repository root. Read-only: copy before changing anything. */
export const SHARED_FIXTURES = resolve(repoRoot, '..', 'shared', 'fixtures');

/** The Delta Lake tables from delta-rs' test data. */
export const DELTA_FIXTURES = resolve(SHARED_FIXTURES, 'delta');

/** The Apache Iceberg tables (Spark and the Iceberg Java library; sources in `iceberg/README.md`). */
export const ICEBERG_FIXTURES = resolve(SHARED_FIXTURES, 'iceberg');

if (!existsSync(DELTA_FIXTURES)) {
  throw new Error(`Shared fixtures not found at ${DELTA_FIXTURES}: the repository must sit beside shared/.`);
}
