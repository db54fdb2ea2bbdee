// Iceberg metadata the writer controls is bounded before it is decoded or walked: a gzip bomb fails by name at the
// inflation limit (a small gzip within it still loads), a schema nested 20,000 levels and a `where` of 20,000
// parentheses or 1,001 ANDs are named refusals, not stack overflows.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { MetadataTooLargeError } from '../../../../../functions/core/errors.js';
import { loadTable, readMetadataText } from '../../../../../functions/core/formats/iceberg/catalog.js';
import { IcebergUnsupportedError } from '../../../../../functions/core/formats/iceberg/errors.js';
import { readSnapshotFiles } from '../../../../../functions/core/formats/iceberg/live-files.js';
import {
  MAX_SCHEMA_DEPTH,
  parseTableMetadata,
} from '../../../../../functions/core/formats/iceberg/metadata.js';
import {
  appliedDeleteOf,
  deletesByDataFile,
  readDeletedRows,
} from '../../../../../functions/core/formats/iceberg/row-deletes.js';
import {
  InvalidWhereError,
  MAX_WHERE_DEPTH,
  parseWhere,
} from '../../../../../functions/core/formats/iceberg/where.js';
import { memoryBudget, withMemoryBudget } from '../../../../../functions/core/memory-budget.js';
import { gzipBomb, withClaimedRows } from '../../../../support/crafted-metadata.js';
import { copyFixtureTable } from './commit-harness.js';
import { ICEBERG_FIXTURES } from './fixture-tables.js';

const FIXTURE_METADATA = join(
  ICEBERG_FIXTURES,
  'spark_v1_unpartitioned_small_files',
  'metadata',
  'v2.metadata.json',
);

function failure(fn: () => unknown): Promise<Error> {
  return Promise.resolve()
    .then(fn)
    .then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err as Error,
    );
}

/** The fixture's metadata with a column whose type nests `levels` structs. */
function withDeepColumn(levels: number): string {
  const base = JSON.parse(readFileSync(FIXTURE_METADATA, 'utf8')) as { schema: { fields: unknown[] } };
  base.schema.fields.push({ id: 99_999, name: 'deep', required: false, type: 'DEEP' });
  let open = '';
  let close = '';
  for (let i = 0; i < levels; i++) {
    open += `{"type":"struct","fields":[{"id":${100_000 + i},"name":"f${i}","required":false,"type":`;
    close += '}]}';
  }
  // Built as text: JSON.stringify itself overflows on such a value.
  return JSON.stringify(base).replace('"DEEP"', `${open}"long"${close}`);
}

describe('compressed metadata inflates within the budget', () => {
  it('a 1 MB gzip of 1 GiB is refused by name at the inflation limit', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('t/metadata/v4.gz.metadata.json', gzipBomb(1024));

    // Act
    const err = await failure(() =>
      withMemoryBudget(memoryBudget(512, 'raise the memory of Lambda function vacuum (now 512 MB)'), () =>
        readMetadataText(store, 't/metadata/v4.gz.metadata.json'),
      ),
    );

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(
      /^Iceberg metadata file t\/metadata\/v4\.gz\.metadata\.json is too large for this process's memory: its 1\.\d MiB of gzip inflate to more than 32\.0 MiB\. Nothing was changed; raise the memory of Lambda function vacuum \(now 512 MB\), or have the table's owner expire old snapshots/,
    );
  });

  it('stops at 200 times the file when that is below the absolute cap', async () => {
    // Prepare: 64 MiB of spaces gzip to some 64 KB: 200 times that is about 13 MB, the cap (1 GiB / 16) far above
    const store = new MemoryObjectStore();
    await store.put('t/metadata/v4.metadata.json.gz', gzipBomb(64));

    // Act
    const err = await failure(() =>
      withMemoryBudget(memoryBudget(16_384), () => readMetadataText(store, 't/metadata/v4.metadata.json.gz')),
    );

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(/inflate to more than 1\d\.\d MiB/);
  });

  it('a gzipped metadata file within the limits loads as the plain one does', async () => {
    // Prepare
    const text = readFileSync(FIXTURE_METADATA, 'utf8');
    const store = new MemoryObjectStore();
    await store.put('t/metadata/v1.gz.metadata.json', gzipSync(text));

    // Act
    const read = await withMemoryBudget(memoryBudget(512), () =>
      readMetadataText(store, 't/metadata/v1.gz.metadata.json'),
    );

    // Assess
    expect(read).toBe(text);
  });
});

describe('schemas and filters have depth limits', () => {
  it('a schema nested 20,000 levels is refused by name, as a feature not supported', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('t/metadata/v1.metadata.json', withDeepColumn(20_000));

    // Act
    const err = await failure(() => loadTable(store, 't'));

    // Assess
    expect(err).toBeInstanceOf(IcebergUnsupportedError);
    expect(err.message).toMatch(
      /^Iceberg table memory:\/\/t uses a schema nested deeper than 256 levels \(schema 0, column deep\.f0\.f1…\)/,
    );
  });

  it(`a schema nested ${MAX_SCHEMA_DEPTH} levels is read`, () => {
    // Act
    const metadata = parseTableMetadata(withDeepColumn(MAX_SCHEMA_DEPTH - 1), 't');

    // Assess
    expect(metadata.schemas[0]?.fields.at(-1)?.name).toBe('deep');
  });

  it('a where of 20,000 nested parentheses is an InvalidWhereError naming the limit and the position', async () => {
    // Act
    const err = await failure(() => parseWhere(`${'('.repeat(20_000)}a = 1${')'.repeat(20_000)}`));

    // Assess
    expect(err).toBeInstanceOf(InvalidWhereError);
    expect(err.message).toMatch(/it nests NOT and parentheses deeper than 100 levels \(at position 101\)/);
  });

  it('a where of 20,000 NOTs and one of 1,001 ANDs are refused; 100 levels and 1,000 ANDs parse', async () => {
    // Act
    const nots = await failure(() => parseWhere(`${'NOT '.repeat(20_000)}a = 1`));
    const ands = await failure(() => parseWhere(Array.from({ length: 1002 }, () => 'a = 1').join(' AND ')));
    const deepest = parseWhere(`${'('.repeat(MAX_WHERE_DEPTH)}a = 1${')'.repeat(MAX_WHERE_DEPTH)}`);
    const longest = parseWhere(Array.from({ length: 1001 }, () => 'a = 1').join(' AND '));

    // Assess
    expect(nots.message).toMatch(/deeper than 100 levels/);
    expect(ands.message).toMatch(/it joins more than 1000 conditions with AND and OR/);
    expect(deepest).toEqual({
      op: 'compare',
      field: 'a',
      comparison: '=',
      literal: { kind: 'number', value: 1, text: '1' },
    });
    expect(longest.op).toBe('and');
  });
});

describe('position-delete files are bounded before their rows are decoded', () => {
  it('a delete file whose footer claims 10^9 rows is a MetadataTooLargeError naming it', async () => {
    // Prepare: the fixture's first position-delete file, its footer rewritten to claim 10^9 rows
    const copy = copyFixtureTable('spark_v2_position_deletes');
    try {
      const table = await loadTable(copy.store, copy.table);
      const files = await readSnapshotFiles(copy.store, table);
      const first = files.deleteFiles[0]?.entry.file.key as string;
      writeFileSync(copy.file(first), withClaimedRows(readFileSync(copy.file(first)), 1_000_000_000n));
      const byData = deletesByDataFile(files);
      const targets = files.dataFiles
        .filter((f) => byData.has(f.entry.file.path))
        .map((f) => ({
          dataPath: f.entry.file.path,
          dataKey: f.entry.file.key,
          recordCount: Number(f.entry.file.recordCount),
          deletes: (byData.get(f.entry.file.path) ?? []).map(appliedDeleteOf),
        }));

      // Act
      const err = await failure(() =>
        withMemoryBudget(memoryBudget(512), () => readDeletedRows(copy.store, table.name, targets)),
      );

      // Assess
      expect(err).toBeInstanceOf(MetadataTooLargeError);
      expect(err.message).toContain(`position-delete file ${first} is too large for this process's memory`);
      expect(err.message).toMatch(
        /its footer claims 1000000000 rows, which would take more than the 128 MiB/,
      );
    } finally {
      copy.remove();
    }
  });
});
