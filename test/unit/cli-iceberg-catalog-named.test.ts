// An Iceberg table whose metadata a metastore catalog names (`00000-<uuid>.metadata.json`, as Glue, REST catalogs,
// Hive and S3 Tables write them) is refused under the path catalog — the default — by every command that would read
// it as a path table: plan, profile, compact (dry run too), vacuum and settle, each with a message naming
// `--catalog glue|rest` and the `catalog` setting, and no byte of the table changed. The fixture is made here from
// the vendored `spark_v1_unpartitioned_small_files` table, its metadata files renamed as a catalog writer names
// them. A user whose table really is a path table named that way says so (`--catalog path --path-metadata-naming
// uuid`), and then compacts and settles it with every row kept (DuckDB reading the files the snapshot names).
import { randomUUID } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { ICEBERG_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';
import { catalogNamedCopy } from '../support/iceberg-catalog-named.js';

const SOURCE = 'spark_v1_unpartitioned_small_files';
const NOW = Date.UTC(2026, 0, 2);
const IO = { out: () => {}, clock: { now: () => NOW }, env: {} };
const ACKNOWLEDGE = ['--catalog', 'path', '--path-metadata-naming', 'uuid'];

let db: DuckDb;
let dir: string;
let table: string;

/** Every live row of the table's current snapshot (read as a path table), canonically ordered. */
async function liveRows(root: string): Promise<string[]> {
  const store = new LocalObjectStore(dir);
  const loaded = await loadTable(store, root.slice(dir.length + 1));
  const files = await readSnapshotFiles(store, loaded);
  const list = files.dataFiles.map((f) => sqlString(join(dir, f.entry.file.key))).join(', ');
  return (await db.rows(`SELECT * FROM read_parquet([${list}]) ORDER BY ALL`)).map((r) => JSON.stringify(r));
}

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-catalog-named-'));
  table = await catalogNamedCopy(SOURCE, dir);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The one-line refusal every command prints (exit 1). */
function expectRefusal(io: ReturnType<typeof captureIo>, code: number): void {
  // settle lists each group it could not settle, with why, before its one-line summary
  const text = [...io.stdout, ...io.stderr].join('\n');
  expect(code, text).toBe(1);
  expect(text).toMatch(
    /is read through the path catalog \(the default\), but its metadata\/ folder holds no/,
  );
  expect(text).toMatch(/00000-[0-9a-f-]{36}\.metadata\.json/);
  expect(text).toContain('--catalog glue --glue-database D --glue-table T');
  expect(text).toContain('--catalog rest --rest-uri U');
  expect(text).toContain('the table setting "catalog"');
  expect(text).toContain('--rest-signing-name s3tables');
  expect(text).toContain('--catalog path --path-metadata-naming uuid');
  expect(text).toContain('Nothing was planned, committed or deleted');
}

describe('an Iceberg table with catalog-named metadata under the path catalog', () => {
  for (const [command, args] of [
    ['plan', ['plan']],
    ['profile', ['profile']],
    ['compact --dry-run', ['compact', '--dry-run']],
    ['compact', ['compact']],
    ['vacuum --dry-run', ['vacuum', '--dry-run']],
    ['vacuum --yes', ['vacuum', '--yes']],
  ] as const) {
    it(`${command} is refused, naming --catalog glue|rest and the catalog setting, and changes no byte`, async () => {
      // Prepare
      const before = await folderContentSnapshot(dir);
      const io = captureIo();

      // Act
      const code = await run([args[0], table, ...args.slice(1), '--format', 'iceberg'], io);

      // Assess
      expectRefusal(io, code);
      expect(await folderContentSnapshot(dir)).toEqual(before);
    });
  }

  it('settle is refused for a group a crash left published, changing no byte; said to be a path table, it rolls forward with every row kept', async () => {
    // Prepare: a compaction the user acknowledged dies at its commit (the put of the next metadata file)
    const rows = await liveRows(table);
    const crashed = await runCompact(
      table,
      { format: 'iceberg', catalog: 'path', pathMetadataNaming: 'uuid' },
      IO,
      {
        wrapStore: (store) =>
          dyingStore(
            store,
            (call) => call.method === 'put' && /(^|\/)metadata\/v\d+\.metadata\.json$/.test(call.key),
          ),
      },
    ).catch((err: unknown) => err);
    expect(JSON.stringify(crashed)).not.toMatch(/"state":"done"/);
    expect((await readdir(join(table, 'metadata'))).filter((n) => n.startsWith('v'))).toEqual([]);
    const before = await folderContentSnapshot(dir);
    const refused = captureIo();

    // Act: settle as a plain path table, then as the acknowledged one
    const refusedCode = await run(['settle', table, '--format', 'iceberg'], refused);
    const afterRefusal = await folderContentSnapshot(dir);
    const settled = captureIo();
    const settledCode = await run(['settle', table, '--format', 'iceberg', ...ACKNOWLEDGE], settled);

    // Assess
    expectRefusal(refused, refusedCode);
    expect(afterRefusal).toEqual(before);
    expect(settledCode, settled.stderr.join('\n')).toBe(0);
    const metadata = await readdir(join(table, 'metadata'));
    expect(metadata.filter((n) => /^v\d+\.metadata\.json$/.test(n))).toEqual(['v2.metadata.json']);
    expect(await liveRows(table)).toEqual(rows);
    const current = await loadTable(new LocalObjectStore(dir), 'events');
    expect(current.metadataKey).toBe('events/metadata/v2.metadata.json');
    expect(current.metadata.snapshots.at(-1)?.summary.operation).toBe('replace');
  });

  it('compacts once told it is a path table: one replace committed as v2.metadata.json, every row kept', async () => {
    // Prepare
    const rows = await liveRows(table);
    const io = captureIo();

    // Act
    const code = await run(['compact', table, '--format', 'iceberg', ...ACKNOWLEDGE], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await liveRows(table)).toEqual(rows);
    const current = await loadTable(new LocalObjectStore(dir), 'events');
    expect(current.metadataKey).toBe('events/metadata/v2.metadata.json');
    const files = await readSnapshotFiles(new LocalObjectStore(dir), current);
    expect(files.dataFiles.length).toBeLessThan(20);
  });

  it('refuses --path-metadata-naming with another catalog, and an unknown naming, before reading anything', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const glue = captureIo();
    const unknown = captureIo();

    // Act
    const glueCode = await run(
      ['plan', table, '--format', 'iceberg', '--catalog', 'glue', '--path-metadata-naming', 'uuid'],
      glue,
    );
    const unknownCode = await run(
      ['plan', table, '--format', 'iceberg', '--path-metadata-naming', 'any'],
      unknown,
    );

    // Assess
    expect(glueCode).toBe(2);
    expect(glue.stderr.join('\n')).toMatch(
      /--path-metadata-naming is an option of --catalog path, not of --catalog glue/,
    );
    expect(unknownCode).toBe(2);
    expect(unknown.stderr.join('\n')).toMatch(
      /--path-metadata-naming must be "hadoop" \(v<N>\.metadata\.json, the default\) or "uuid".*not "any"/,
    );
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});

// A catalog writer taking over a path table: its file beside the v<N> ones is refused as well.
describe('a path table a catalog writer has written into', () => {
  it('is refused when a 000NN-<uuid> file lies beside v<N>.metadata.json, naming both counts', async () => {
    // Prepare: the original v-named table, plus one metadata file a Glue writer committed
    const root = join(dir, 'mixed');
    await cp(join(ICEBERG_FIXTURES, SOURCE), root, { recursive: true });
    const v2 = await readFile(join(root, 'metadata', 'v2.metadata.json'));
    await writeFile(join(root, 'metadata', `00002-${randomUUID()}.metadata.json`), v2);
    const before = await folderContentSnapshot(dir);
    const io = captureIo();

    // Act
    const code = await run(['compact', root, '--format', 'iceberg'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(
      /holds 1 metadata file named as a metastore catalog names them \(00002-[0-9a-f-]{36}\.metadata\.json\) beside 2 v<N>\.metadata\.json/,
    );
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});
