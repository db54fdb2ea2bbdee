// `lake-compactor compact --format delta` on a column-mapped table (mode `name`) that lived through a schema change:
// a column added (`score`), one dropped (`note`), one renamed (`name` → `label`, its physical name kept) and one
// widened under the typeWidening feature (`id`: integer → long). Each data file is projected onto the current
// schema by physical name, so files of both schemas compact into one file per partition, written in the current
// schema (physical names, field ids, the widened type). The oracle is DuckDB alone, over the files the log names:
// columns matched by physical name (union_by_name, as a name-mode reader resolves them), cast to the current types.
// A type change Delta does not allow, or a widening on a table without the feature, is refused by name and those
// files keep every byte; a writer that mangles the projection is caught by verification. Array and map columns are
// projected too: an element or value widened, a struct element extended, nulls kept at every level.
import { cp, mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { CompactionFailedError } from '../../functions/core/errors.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import type { ColumnProjection, ProjectedColumn } from '../../functions/core/projection.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';
import { missingRows } from '../support/multiset.js';

const NOW = Date.UTC(2024, 2, 3);

let db: DuckDb;
let dir: string | undefined;
let store: LocalObjectStore;

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-schema-'));
  store = new LocalObjectStore(dir);
});

function root(): string {
  if (dir === undefined) throw new Error('no table folder');
  return dir;
}

/** A column-mapped field of the schema: logical name, physical name and id, type. */
function field(name: string, physical: string, id: number, type: string | object, typeChanges?: object[]) {
  return {
    name,
    type,
    nullable: true,
    metadata: {
      'delta.columnMapping.id': id,
      'delta.columnMapping.physicalName': physical,
      ...(typeChanges === undefined ? {} : { 'delta.typeChanges': typeChanges }),
    },
  };
}

const DAY = field('day', 'col_day', 1, 'string');
/** The first schema: id integer, name, note. */
const SCHEMA_V1 = [
  DAY,
  field('id', 'col_id', 2, 'integer'),
  field('name', 'col_name', 3, 'string'),
  field('note', 'col_note', 4, 'string'),
];
/** The current schema: id widened to long, name renamed label, note dropped, score added. */
const SCHEMA_V2 = [
  DAY,
  field('id', 'col_id', 2, 'long', [{ fromType: 'integer', toType: 'long' }]),
  field('label', 'col_name', 3, 'string'),
  field('score', 'col_score', 5, 'double'),
];

/** The columns the current schema's files hold, as written: physical name, field id, Parquet type. */
const CURRENT_COLUMNS = [
  { name: 'col_id', field_id: '2', type: 'INT64' },
  { name: 'col_name', field_id: '3', type: 'BYTE_ARRAY' },
  { name: 'col_score', field_id: '5', type: 'DOUBLE' },
];

function metaData(fields: readonly object[]) {
  return {
    metaData: {
      id: 'b7f1c8c2-5d7e-4a0e-9d53-6a1f0e3c1a11',
      format: { provider: 'parquet', options: {} },
      schemaString: JSON.stringify({ type: 'struct', fields }),
      partitionColumns: ['day'],
      configuration: { 'delta.columnMapping.mode': 'name', 'delta.columnMapping.maxColumnId': '5' },
      createdTime: NOW,
    },
  };
}

let version = 0;

async function commit(actions: readonly object[]): Promise<void> {
  const path = join(root(), '_delta_log', `${String(version).padStart(20, '0')}.json`);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, `${actions.map((a) => JSON.stringify(a)).join('\n')}\n`);
  version++;
}

/**
 * Writes one data file of `select` (its columns by physical name, with these field ids: a number, or DuckDB's
 * nested `{__duckdb_field_id: …, field: id}` for a struct) and commits its add.
 */
async function append(
  day: string,
  name: string,
  select: string,
  ids: Record<string, number | string>,
): Promise<string> {
  const key = `day=${day}/${name}.parquet`;
  await mkdir(join(root(), `day=${day}`), { recursive: true });
  const fieldIds = Object.entries(ids)
    .map(([column, id]) => `${column}: ${id}`)
    .join(', ');
  await db.writeParquet(select, join(root(), key), { extraOptions: [`FIELD_IDS {${fieldIds}}`] });
  const { size } = await stat(join(root(), key));
  await commit([
    {
      add: {
        path: key,
        partitionValues: { col_day: day },
        size,
        modificationTime: NOW,
        dataChange: true,
      },
    },
  ]);
  return key;
}

const OLD_IDS = { col_id: 2, col_name: 3, col_note: 4 };
const NEW_IDS = { col_id: 2, col_name: 3, col_score: 5 };

/** Three files of the first schema in `day`. */
async function appendOld(day: string, idType = 'INTEGER'): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < 3; i++)
    keys.push(
      await append(
        day,
        `old-${i}`,
        `SELECT (range + ${i * 10})::${idType} AS col_id, 'old-' || range || '-${i}' AS col_name, 'note-' || range AS col_note FROM range(4)`,
        OLD_IDS,
      ),
    );
  return keys;
}

/** Three files of the current schema in `day`. */
async function appendNew(day: string): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < 3; i++)
    keys.push(
      await append(
        day,
        `new-${i}`,
        `SELECT (range + 3000000000 + ${i * 10})::BIGINT AS col_id, 'new-' || range || '-${i}' AS col_name, (range * 1.5 + ${i})::DOUBLE AS col_score FROM range(5)`,
        NEW_IDS,
      ),
    );
  return keys;
}

/** Protocol with column mapping, and type widening when `widening`. */
function protocol(widening: boolean) {
  const features = widening ? ['columnMapping', 'typeWidening'] : ['columnMapping'];
  return {
    protocol: {
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures: features,
      writerFeatures: features,
    },
  };
}

/**
 * The evolved table: version 0 with the first schema, old files in d1, the schema change, new files in d1 and d2.
 * `oldIdType` is the Parquet type the old files hold `id` in.
 */
async function evolvedTable(options: { widening: boolean; oldIdType?: string }): Promise<{ old: string[] }> {
  version = 0;
  await commit([protocol(options.widening), metaData(SCHEMA_V1)]);
  const old = await appendOld('d1', options.oldIdType);
  await commit([metaData(SCHEMA_V2)]);
  await appendNew('d1');
  await appendNew('d2');
  return { old };
}

/**
 * Every live row of the latest version under the current schema, by DuckDB alone: columns matched by physical name
 * across the files the log names (union_by_name), cast to the current types, the partition value from the log.
 */
async function liveRows(): Promise<{ keys: string[]; rows: string[] }> {
  const snapshot = await readDeltaSnapshot(store, '');
  const files = snapshot.files.map((f) => ({
    path: join(root(), f.key ?? f.path),
    day: f.partitionValues.day,
  }));
  const paths = files.map((f) => sqlString(f.path)).join(', ');
  const days = files.map((f) => `(${sqlString(f.path)}, ${sqlString(f.day ?? '')})`).join(', ');
  const rows = await db.rows(
    `SELECT col_id::BIGINT AS id, col_name AS label, col_score::DOUBLE AS score, p.day
     FROM read_parquet([${paths}], union_by_name = true, filename = true) AS t
     JOIN (VALUES ${days}) AS p(f, day) ON t.filename = p.f ORDER BY ALL`,
  );
  return {
    keys: snapshot.files.map((f) => f.key ?? f.path).sort(),
    rows: rows.map((r) => JSON.stringify(r)),
  };
}

/** Name, field id and physical type of each top-level column of a data file, by DuckDB. */
async function columnsOf(key: string): Promise<Record<string, unknown>[]> {
  const rows = await db.rows(
    `SELECT name, field_id, type FROM parquet_schema(${sqlString(join(root(), key))}) WHERE num_children IS NULL`,
  );
  return rows.map((r) => ({ name: r.name, field_id: String(r.field_id), type: r.type }));
}

describe('compact --format delta on a table whose schema changed', () => {
  it('compacts files of the old and the current schema into one file per partition, written in the current schema, same rows', async () => {
    // Prepare
    await evolvedTable({ widening: true });
    const before = await liveRows();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: one live file per partition, the rows equal, each output in the current schema
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveRows();
    expect(missingRows(before.rows, after.rows)).toEqual([]);
    expect(missingRows(after.rows, before.rows)).toEqual([]);
    expect(after.rows).toHaveLength(3 * 4 + 6 * 5);
    const snapshot = await readDeltaSnapshot(store, '');
    expect(snapshot.files.map((f) => f.partitionValues.day).sort()).toEqual(['d1', 'd2']);
    for (const file of snapshot.files) expect(await columnsOf(file.key ?? '')).toEqual(CURRENT_COLUMNS);
    // The old files' rows are there, widened and with null scores; the dropped note is not.
    expect(after.rows.filter((r) => r.includes('"label":"old-') && r.includes('"score":null'))).toHaveLength(
      12,
    );
    const ops = [];
    const stats: unknown[] = [];
    for (let v = version; ; v++) {
      const actions = await readCommitActions(store, '', v);
      if (actions === undefined) break;
      const info = actions.find((a) => a.kind === 'commitInfo');
      ops.push(info?.kind === 'commitInfo' ? info.commitInfo.operation : '?');
      for (const a of actions)
        if (a.kind === 'add' && a.add.partitionValues.col_day === 'd1')
          stats.push(JSON.parse(a.add.stats ?? '{}'));
    }
    expect(ops).toEqual(['OPTIMIZE', 'OPTIMIZE']);
    // d1's add carries stats of the current schema, keyed by physical name: the old rows' ids widened, scores null.
    expect(stats).toEqual([
      expect.objectContaining({
        numRecords: 27,
        minValues: expect.objectContaining({ col_id: 0 }),
        nullCount: { col_id: 0, col_name: 0, col_score: 12 },
      }),
    ]);
  });

  it('writes a widened column (integer → long under typeWidening) in its new type, grouped with files of the new type', async () => {
    // Prepare: the old files hold id as INT32, the current files as INT64
    await evolvedTable({ widening: true });
    const planIo = captureIo();

    // Act
    const planCode = await run(
      ['plan', root(), '--format', 'delta', '--min-input-files', '2', '--json'],
      planIo,
    );

    // Assess: d1's six files, of two Parquet schemas, are one group
    expect(planCode, planIo.stderr.join('\n')).toBe(0);
    const plan = JSON.parse(planIo.stdout.join('\n')) as {
      partitions: { partition: string; groups: { files: { key: string }[] }[] }[];
    };
    const d1 = plan.partitions.find((p) => p.partition === 'day=d1');
    expect(d1?.groups.map((g) => g.files.length)).toEqual([6]);
    const outputIo = captureIo();
    await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], outputIo);
    const snapshot = await readDeltaSnapshot(store, '');
    const out = snapshot.files.find((f) => f.partitionValues.day === 'd1');
    const types = await db.rows(
      `SELECT typeof(col_id) AS t, min(col_id)::VARCHAR AS lo FROM read_parquet(${sqlString(join(root(), out?.key ?? ''))}) GROUP BY ALL`,
    );
    expect(types).toEqual([{ t: 'BIGINT', lo: '0' }]);
  });

  it('widens integer → double and date → timestamp_ntz exactly (extreme ints, dates before 1970), as DuckDB casts them', async () => {
    // Prepare: n integer and d date first, then double and timestamp_ntz
    version = 0;
    const v1 = [DAY, field('n', 'col_n', 2, 'integer'), field('d', 'col_d', 3, 'date')];
    const v2 = [DAY, field('n', 'col_n', 2, 'double'), field('d', 'col_d', 3, 'timestamp_ntz')];
    await commit([protocol(true), metaData(v1)]);
    const values = `(VALUES (2147483647, DATE '2024-02-29'), (-2147483648, DATE '1969-12-31'), (0, DATE '1900-01-01'), (NULL, NULL)) AS v(n, d)`;
    for (let i = 0; i < 2; i++)
      await append('d1', `old-${i}`, `SELECT n::INTEGER AS col_n, d AS col_d FROM ${values}`, {
        col_n: 2,
        col_d: 3,
      });
    await commit([metaData(v2)]);
    for (let i = 0; i < 2; i++)
      await append(
        'd1',
        `new-${i}`,
        `SELECT (n + 0.5)::DOUBLE AS col_n, d::TIMESTAMP + INTERVAL 1 HOUR AS col_d FROM ${values}`,
        { col_n: 2, col_d: 3 },
      );
    const oracle = async (): Promise<string[]> => {
      const snapshot = await readDeltaSnapshot(store, '');
      const paths = snapshot.files.map((f) => sqlString(join(root(), f.key ?? ''))).join(', ');
      const rows = await db.rows(
        `SELECT col_n::DOUBLE AS n, col_d::TIMESTAMP AS d FROM read_parquet([${paths}], union_by_name = true) ORDER BY ALL`,
      );
      return rows.map((r) => JSON.stringify(r));
    };
    const before = await oracle();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: one file, DOUBLE and TIMESTAMP (not adjusted to UTC), the same rows
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await oracle();
    expect(missingRows(before, after)).toEqual([]);
    expect(missingRows(after, before)).toEqual([]);
    expect(after).toContain(JSON.stringify({ n: -2147483648, d: '1969-12-31 00:00:00' }));
    const files = (await readDeltaSnapshot(store, '')).files;
    expect(files).toHaveLength(1);
    const types = await db.rows(
      `SELECT name, field_id::VARCHAR AS id, type, logical_type::VARCHAR AS logical FROM parquet_schema(${sqlString(join(root(), files[0]?.key ?? ''))}) WHERE num_children IS NULL`,
    );
    expect(types.map((t) => [t.name, t.id, t.type])).toEqual([
      ['col_n', '2', 'DOUBLE'],
      ['col_d', '3', 'INT64'],
    ]);
    expect(String(types[1]?.logical)).toMatch(/isAdjustedToUTC=0|isAdjustedToUTC=false/i);
  });

  it.each([
    ['sort', 'col_id'],
    ['zorder', 'col_id,col_name'],
  ])(
    '%s-rewrites a partition of two schema populations into one output of the current schema, the same rows',
    async (strategy, columns) => {
      // Prepare: d1 holds three files of the old schema (col_id INT32, col_note) and three of the current one
      await evolvedTable({ widening: true });
      const before = await liveRows();
      const io = captureIo();

      // Act
      const code = await run(
        [
          'compact',
          root(),
          '--format',
          'delta',
          '--min-input-files',
          '2',
          '--strategy',
          strategy,
          '--columns',
          columns,
        ],
        io,
      );

      // Assess: one file per partition, each of the current schema, the row multiset unchanged
      expect(code, io.stderr.join('\n')).toBe(0);
      const after = await liveRows();
      expect(after.rows).toHaveLength(3 * 4 + 6 * 5);
      expect(missingRows(before.rows, after.rows)).toEqual([]);
      expect(missingRows(after.rows, before.rows)).toEqual([]);
      expect(after.keys.filter((k) => k.startsWith('day=d1/'))).toHaveLength(1);
      expect(after.keys.filter((k) => k.startsWith('day=d2/'))).toHaveLength(1);
      const d1 = after.keys.find((k) => k.startsWith('day=d1/')) ?? '';
      expect(await columnsOf(d1)).toEqual(CURRENT_COLUMNS);
      if (strategy === 'sort') {
        // The output's rows, in file order, are in col_id order: the old (widened) ids among the current ones
        const ids = (
          await db.rows(`SELECT col_id::VARCHAR AS id FROM read_parquet(${sqlString(join(root(), d1))})`)
        ).map((r) => BigInt(r.id as string));
        expect(ids).toHaveLength(27);
        expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
        expect(ids[0]).toBe(0n);
      }
    },
  );

  it.each([
    [
      'a type change Delta does not allow (string → long)',
      { widening: true, oldIdType: 'VARCHAR' },
      /column id: it is int64 now but string in the file, which is not a type change Delta allows/,
    ],
    [
      'a widening on a table without the typeWidening feature',
      { widening: false },
      /column id: it is int64 now but int32 in the file, and the table does not have the typeWidening feature/,
    ],
  ])('refuses %s by name and leaves those files byte for byte', async (_what, options, reason) => {
    // Prepare
    const { old } = await evolvedTable(options);
    const bytes = await Promise.all(old.map((k) => readFile(join(root(), k))));
    const planIo = captureIo();

    // Act
    const planCode = await run(
      ['plan', root(), '--format', 'delta', '--min-input-files', '2', '--json'],
      planIo,
    );
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], captureIo());

    // Assess: each old file skipped naming the column; still live, unchanged; the current files compacted
    expect(planCode, planIo.stderr.join('\n')).toBe(0);
    const plan = JSON.parse(planIo.stdout.join('\n')) as {
      partitions: { partition: string; skipped: { key: string; reason: string }[] }[];
    };
    const skipped = plan.partitions.find((p) => p.partition === 'day=d1')?.skipped ?? [];
    expect(skipped.map((s) => s.key).sort()).toEqual(old);
    for (const s of skipped) expect(s.reason).toMatch(reason);
    expect(code).toBe(0);
    const live = (await readDeltaSnapshot(store, '')).files.map((f) => f.key);
    for (const key of old) expect(live).toContain(key);
    const after = await Promise.all(old.map((k) => readFile(join(root(), k))));
    expect(after.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(old.map(() => true));
    expect(live).toHaveLength(old.length + 2);
  });
});

describe('compact --format delta on a table whose columns were widened as typeWidening allows', () => {
  /** Each column: physical name, its type before and after the change, DuckDB's type of each, and test values. */
  const COLUMNS = [
    { name: 'col_b', was: 'byte', now: 'short', duckWas: 'TINYINT', duckNow: 'SMALLINT' },
    { name: 'col_bl', was: 'byte', now: 'long', duckWas: 'TINYINT', duckNow: 'BIGINT' },
    { name: 'col_s', was: 'short', now: 'integer', duckWas: 'SMALLINT', duckNow: 'INTEGER' },
    { name: 'col_sd', was: 'short', now: 'double', duckWas: 'SMALLINT', duckNow: 'DOUBLE' },
    { name: 'col_i', was: 'integer', now: 'decimal(12,2)', duckWas: 'INTEGER', duckNow: 'DECIMAL(12,2)' },
    { name: 'col_bd', was: 'byte', now: 'decimal(10,0)', duckWas: 'TINYINT', duckNow: 'DECIMAL(10,0)' },
    { name: 'col_l', was: 'long', now: 'decimal(22,1)', duckWas: 'BIGINT', duckNow: 'DECIMAL(22,1)' },
    {
      name: 'col_d',
      was: 'decimal(5,2)',
      now: 'decimal(8,4)',
      duckWas: 'DECIMAL(5,2)',
      duckNow: 'DECIMAL(8,4)',
    },
    {
      name: 'col_dl',
      was: 'decimal(16,3)',
      now: 'decimal(30,10)',
      duckWas: 'DECIMAL(16,3)',
      duckNow: 'DECIMAL(30,10)',
    },
  ] as const;
  /** Extreme, negative, zero and null values of the narrower types, one row each. */
  const VALUES = `(VALUES
    (127, 127, 32767, 32767, 2147483647, 127, 9223372036854775807, 999.99, 9999999999999.999),
    (-128, -128, -32768, -32768, -2147483648, -128, -9223372036854775808, -999.99, -9999999999999.999),
    (0, 1, -1, 7, 1, -1, 1, 0.01, -0.001),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL))
    AS v(b, bl, s, sd, i, bd, l, d, dl)`;
  const SOURCE = ['b', 'bl', 's', 'sd', 'i', 'bd', 'l', 'd', 'dl'];
  const IDS = Object.fromEntries(COLUMNS.map((c, i) => [c.name, i + 2]));

  /** The table: the first schema's files, the change, files of the current schema; all in partition d1. */
  async function widenedTable(
    columns: readonly { name: string; was: string; now: string }[],
  ): Promise<string[]> {
    version = 0;
    const schema = (now: boolean) => [
      DAY,
      ...columns.map((c, i) =>
        field(
          c.name.replace('col_', ''),
          c.name,
          i + 2,
          now ? c.now : c.was,
          now ? [{ fromType: c.was, toType: c.now }] : undefined,
        ),
      ),
    ];
    await commit([protocol(true), metaData(schema(false))]);
    const old: string[] = [];
    const ids = Object.fromEntries(columns.map((c) => [c.name, IDS[c.name] ?? 0]));
    for (let i = 0; i < 2; i++)
      old.push(
        await append(
          'd1',
          `old-${i}`,
          `SELECT ${columns.map((c) => `${SOURCE[COLUMNS.findIndex((x) => x.name === c.name)]}::${duckOf(c.name, 'was')} AS ${c.name}`).join(', ')} FROM ${VALUES}`,
          ids,
        ),
      );
    await commit([metaData(schema(true))]);
    for (let i = 0; i < 2; i++)
      await append(
        'd1',
        `new-${i}`,
        `SELECT ${columns.map((c) => `${SOURCE[COLUMNS.findIndex((x) => x.name === c.name)]}::${duckOf(c.name, 'now')} AS ${c.name}`).join(', ')} FROM ${VALUES}`,
        ids,
      );
    return old;
  }

  function duckOf(name: string, which: 'was' | 'now'): string {
    const c = COLUMNS.find((x) => x.name === name);
    if (c === undefined) throw new Error(`no column ${name}`);
    return which === 'was' ? c.duckWas : c.duckNow;
  }

  /** Every live row by DuckDB: each file read alone, each column cast from the file's own type to the current one. */
  async function castRows(): Promise<string[]> {
    const snapshot = await readDeltaSnapshot(store, '');
    const selects = snapshot.files.map(
      (f) =>
        `SELECT ${COLUMNS.map((c) => `${c.name}::${c.duckNow}::VARCHAR AS ${c.name}`).join(', ')} FROM read_parquet(${sqlString(join(root(), f.key ?? ''))})`,
    );
    const rows = await db.rows(`${selects.join(' UNION ALL ')} ORDER BY ALL`);
    return rows.map((r) => JSON.stringify(r));
  }

  it('projects byte/short → wider integers and double, integers → decimal, decimal scale and precision together: one file, the values equal to the inputs cast', async () => {
    // Prepare
    await widenedTable(COLUMNS);
    const before = await castRows();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: one file of the current types, the rows equal to DuckDB's casts of the inputs
    expect(code, io.stderr.join('\n')).toBe(0);
    const files = (await readDeltaSnapshot(store, '')).files;
    expect(files).toHaveLength(1);
    const after = await castRows();
    expect(after).toHaveLength(16);
    expect(missingRows(before, after)).toEqual([]);
    expect(missingRows(after, before)).toEqual([]);
    expect(after).toContain(
      JSON.stringify({
        col_b: '-128',
        col_bl: '-128',
        col_s: '-32768',
        col_sd: '-32768.0',
        col_i: '-2147483648.00',
        col_bd: '-128',
        col_l: '-9223372036854775808.0',
        col_d: '-999.9900',
        col_dl: '-9999999999999.9990000000',
      }),
    );
    const path = sqlString(join(root(), files[0]?.key ?? ''));
    const types = await db.rows(
      `SELECT ${COLUMNS.map((c) => `typeof(${c.name}) AS ${c.name}`).join(', ')} FROM read_parquet(${path}) LIMIT 1`,
    );
    expect(types).toEqual([Object.fromEntries(COLUMNS.map((c) => [c.name, c.duckNow]))]);
    const ids = await db.rows(
      `SELECT name, field_id::INTEGER AS id FROM parquet_schema(${path}) WHERE num_children IS NULL`,
    );
    expect(ids).toEqual(COLUMNS.map((c, i) => ({ name: c.name, id: i + 2 })));
  });

  it.each([
    ['long → integer', 'long', 'integer', 'BIGINT', /column n: it is int32 now but int64 in the file/],
    ['long → double', 'long', 'double', 'BIGINT', /column n: it is float64 now but int64 in the file/],
    [
      'integer → decimal(9,0)',
      'integer',
      'decimal(9,0)',
      'INTEGER',
      /column n: it is decimal\(9, 0\) now but int32 in the file/,
    ],
    [
      'decimal(10,2) → decimal(11,4)',
      'decimal(10,2)',
      'decimal(11,4)',
      'DECIMAL(10,2)',
      /column n: it is decimal\(11, 4\) now but decimal\(10, 2\) in the file/,
    ],
  ])(
    'refuses %s, which Delta does not allow, by name, leaving those files byte for byte',
    async (_what, was, now, duck, reason) => {
      // Prepare: old files of `was`, the schema says `now`
      version = 0;
      await commit([protocol(true), metaData([DAY, field('n', 'col_n', 2, was)])]);
      const old: string[] = [];
      for (let i = 0; i < 2; i++)
        old.push(
          await append('d1', `old-${i}`, `SELECT (range - 1)::${duck} AS col_n FROM range(3)`, { col_n: 2 }),
        );
      await commit([metaData([DAY, field('n', 'col_n', 2, now, [{ fromType: was, toType: now }])])]);
      const bytes = await Promise.all(old.map((k) => readFile(join(root(), k))));
      const planIo = captureIo();

      // Act
      const planCode = await run(
        ['plan', root(), '--format', 'delta', '--min-input-files', '2', '--json'],
        planIo,
      );
      const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], captureIo());

      // Assess: both files skipped naming the column and the types; live and unchanged
      expect(planCode, planIo.stderr.join('\n')).toBe(0);
      const plan = JSON.parse(planIo.stdout.join('\n')) as {
        partitions: { partition: string; skipped: { key: string; reason: string }[] }[];
      };
      const skipped = plan.partitions.find((p) => p.partition === 'day=d1')?.skipped ?? [];
      expect(skipped.map((s) => s.key).sort()).toEqual(old);
      for (const s of skipped) expect(s.reason).toMatch(reason);
      expect(code).toBe(0);
      expect((await readDeltaSnapshot(store, '')).files.map((f) => f.key).sort()).toEqual(old);
      const after = await Promise.all(old.map((k) => readFile(join(root(), k))));
      expect(after.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(old.map(() => true));
    },
  );
});

describe('compact --format delta on a column-mapped table whose struct column evolved', () => {
  /** The struct `p` (physical col_p, id 2) with the given fields. */
  const struct = (fields: object[]) => field('p', 'col_p', 2, { type: 'struct', fields });

  it('projects the older struct (a field added null, one dropped, one renamed and widened) with the current files into one file of the current schema, rows equal', async () => {
    // Prepare: p{x integer, gone string} first; then p{ex long (x renamed, widened), y double (added)}
    version = 0;
    const v1 = [DAY, struct([field('x', 'col_x', 3, 'integer'), field('gone', 'col_gone', 4, 'string')])];
    const v2 = [
      DAY,
      struct([
        field('ex', 'col_x', 3, 'long', [{ fromType: 'integer', toType: 'long' }]),
        field('y', 'col_y', 5, 'double'),
      ]),
    ];
    await commit([protocol(true), metaData(v1)]);
    for (let i = 0; i < 2; i++)
      await append(
        'd1',
        `old-${i}`,
        `SELECT CASE WHEN range = 1 THEN NULL ELSE {'col_x': (-2147483648 + range + ${i})::INTEGER, 'col_gone': 'g' || range} END AS col_p FROM range(3)`,
        { col_p: '{__duckdb_field_id: 2, col_x: 3, col_gone: 4}' },
      );
    await commit([metaData(v2)]);
    for (let i = 0; i < 2; i++)
      await append(
        'd1',
        `new-${i}`,
        `SELECT {'col_x': (range + 5000000000 + ${i})::BIGINT, 'col_y': (range * 0.25)::DOUBLE} AS col_p FROM range(2)`,
        { col_p: '{__duckdb_field_id: 2, col_x: 3, col_y: 5}' },
      );
    /** Each live file read alone by DuckDB as the current schema reads it. */
    const rows = async (): Promise<string[]> => {
      const files = (await readDeltaSnapshot(store, '')).files.map((f) => join(root(), f.key ?? ''));
      const selects = [];
      for (const f of files) {
        const names = (
          await db.rows(
            `SELECT name FROM parquet_schema(${sqlString(f)}) WHERE name IN ('col_y', 'col_gone')`,
          )
        ).map((r) => r.name);
        const y = names.includes('col_y') ? 'col_p.col_y::VARCHAR' : 'NULL::VARCHAR';
        selects.push(
          `SELECT (col_p IS NULL) AS p_null, col_p.col_x::BIGINT::VARCHAR AS ex, ${y} AS y FROM read_parquet(${sqlString(f)})`,
        );
      }
      return (await db.rows(`${selects.join(' UNION ALL ')} ORDER BY ALL`)).map((r) => JSON.stringify(r));
    };
    const before = await rows();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: one file whose struct is the current one (physical names, ids), the rows equal
    expect(code, io.stderr.join('\n')).toBe(0);
    const files = (await readDeltaSnapshot(store, '')).files;
    expect(files).toHaveLength(1);
    const after = await rows();
    expect(after).toHaveLength(10);
    expect(missingRows(before, after)).toEqual([]);
    expect(missingRows(after, before)).toEqual([]);
    expect(after).toContain(JSON.stringify({ p_null: false, ex: '-2147483648', y: null }));
    expect(after).toContain(JSON.stringify({ p_null: true, ex: null, y: null }));
    const schema = await db.rows(
      `SELECT name, type, field_id FROM parquet_schema(${sqlString(join(root(), files[0]?.key ?? ''))})`,
    );
    expect(schema.slice(1).map((e) => [e.name, e.type ?? null, Number(e.field_id)])).toEqual([
      ['col_p', null, 2],
      ['col_x', 'INT64', 3],
      ['col_y', 'DOUBLE', 5],
    ]);
  });
});

describe('compact --format delta on a column-mapped table with array and map columns whose schema evolved', () => {
  /** A type change of an array's element or a map's value, as the schema records it (PROTOCOL.md "Type Change Metadata"). */
  const widened = (fieldPath: string) => [{ fromType: 'integer', toType: 'long', fieldPath }];
  const pts = (fields: object[]) => ({
    type: 'array',
    elementType: { type: 'struct', fields },
    containsNull: true,
  });
  /** id long; tags array<integer>; props map<string, integer>; pts array<struct<x integer>>. */
  const V1 = [
    DAY,
    field('id', 'col_id', 2, 'long'),
    field('tags', 'col_tags', 3, { type: 'array', elementType: 'integer', containsNull: true }),
    field('props', 'col_props', 4, {
      type: 'map',
      keyType: 'string',
      valueType: 'integer',
      valueContainsNull: true,
    }),
    field('pts', 'col_pts', 5, pts([field('x', 'col_x', 6, 'integer')])),
  ];
  /** tags' element and props' value widened to long, pts' element gains y (its x widened), note added. */
  const V2 = [
    DAY,
    field('id', 'col_id', 2, 'long'),
    field(
      'tags',
      'col_tags',
      3,
      { type: 'array', elementType: 'long', containsNull: true },
      widened('element'),
    ),
    field(
      'props',
      'col_props',
      4,
      { type: 'map', keyType: 'string', valueType: 'long', valueContainsNull: true },
      widened('value'),
    ),
    field(
      'pts',
      'col_pts',
      5,
      pts([
        field('x', 'col_x', 6, 'long', [{ fromType: 'integer', toType: 'long' }]),
        field('y', 'col_y', 7, 'double'),
      ]),
    ),
    field('note', 'col_note', 8, 'string'),
  ];
  /** The current schema's columns as a row of VARCHARs (lists and maps as DuckDB prints them). */
  const CURRENT = `col_id::VARCHAR AS id, col_tags::VARCHAR AS tags, col_props::VARCHAR AS props, col_pts::VARCHAR AS pts, col_note AS note`;
  /** An old file's columns as the current schema reads them, by DuckDB's own casts. */
  const PROJECTED_OLD = `col_id::VARCHAR AS id, col_tags::BIGINT[]::VARCHAR AS tags,
    col_props::MAP(VARCHAR, BIGINT)::VARCHAR AS props,
    list_transform(col_pts, s -> CASE WHEN s IS NULL THEN NULL ELSE {'col_x': s.col_x::BIGINT, 'col_y': NULL::DOUBLE} END)::VARCHAR AS pts,
    NULL::VARCHAR AS note`;

  /** Every live row, each file read alone by DuckDB as the current schema reads it, with its partition. */
  async function rows(): Promise<string[]> {
    const snapshot = await readDeltaSnapshot(store, '');
    const selects = [];
    for (const f of snapshot.files) {
      const path = join(root(), f.key ?? '');
      const current =
        (await db.rows(`SELECT name FROM parquet_schema(${sqlString(path)}) WHERE name = 'col_note'`))
          .length > 0;
      selects.push(
        `SELECT ${current ? CURRENT : PROJECTED_OLD}, ${sqlString(f.partitionValues.day ?? '')} AS day FROM read_parquet(${sqlString(path)})`,
      );
    }
    return (await db.rows(`${selects.join(' UNION ALL ')} ORDER BY ALL`)).map((r) => JSON.stringify(r));
  }

  it('projects the older files (element and value widened, a struct element extended, a column added) with the current ones into one file per partition of the current schema, rows equal', async () => {
    // Prepare: per partition, two files of V1 — a null and an empty array, a null element, a null map, a null
    // value, a null struct element and a null field in one — then the schema change and two files of V2
    version = 0;
    await commit([protocol(true), metaData(V1)]);
    const oldIds = {
      col_id: 2,
      col_tags: 3,
      col_props: 4,
      col_pts: '{__duckdb_field_id: 5, element: {col_x: 6}}',
    };
    for (const day of ['d1', 'd2'])
      for (let i = 0; i < 2; i++)
        await append(
          day,
          `old-${i}`,
          `SELECT (range + ${i * 10})::BIGINT AS col_id,
             CASE range WHEN 0 THEN NULL WHEN 1 THEN []::INTEGER[] ELSE [2147483647 - range, NULL, -2147483648 + range]::INTEGER[] END AS col_tags,
             CASE range WHEN 0 THEN MAP {'k': 1::INTEGER} WHEN 1 THEN NULL ELSE MAP {'k' || range: (-range)::INTEGER, 'z': NULL::INTEGER} END AS col_props,
             CASE range WHEN 1 THEN NULL ELSE [{'col_x': (range * 7 + ${i})::INTEGER}, NULL, {'col_x': NULL::INTEGER}] END AS col_pts
           FROM range(4)`,
          oldIds,
        );
    await commit([metaData(V2)]);
    const newIds = {
      col_id: 2,
      col_tags: 3,
      col_props: 4,
      col_pts: '{__duckdb_field_id: 5, element: {col_x: 6, col_y: 7}}',
      col_note: 8,
    };
    for (const day of ['d1', 'd2'])
      for (let i = 0; i < 2; i++)
        await append(
          day,
          `new-${i}`,
          `SELECT (range + 100 + ${i * 10})::BIGINT AS col_id,
             [(range + 5000000000)::BIGINT, NULL] AS col_tags,
             MAP {'n' || range: (range * 10000000000)::BIGINT} AS col_props,
             [{'col_x': range::BIGINT, 'col_y': (range * 0.5)::DOUBLE}] AS col_pts,
             'note ' || range AS col_note
           FROM range(2)`,
          newIds,
        );
    const before = await rows();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: one file per partition, the rows equal, nulls at every level kept, the current schema's names and ids
    expect(code, io.stderr.join('\n')).toBe(0);
    const files = (await readDeltaSnapshot(store, '')).files;
    expect(files.map((f) => f.partitionValues.day).sort()).toEqual(['d1', 'd2']);
    const after = await rows();
    expect(after).toHaveLength(2 * (2 * 4 + 2 * 2));
    expect(missingRows(before, after)).toEqual([]);
    expect(missingRows(after, before)).toEqual([]);
    const row = (r: object) => JSON.stringify({ ...r, day: 'd1' });
    expect(after).toContain(
      row({
        id: '0',
        tags: null,
        props: '{k=1}',
        pts: "[{'col_x': 0, 'col_y': NULL}, NULL, {'col_x': NULL, 'col_y': NULL}]",
        note: null,
      }),
    );
    expect(after).toContain(row({ id: '1', tags: '[]', props: null, pts: null, note: null }));
    expect(after).toContain(
      row({
        id: '13',
        tags: '[2147483644, NULL, -2147483645]',
        props: '{k3=-3, z=NULL}',
        pts: "[{'col_x': 22, 'col_y': NULL}, NULL, {'col_x': NULL, 'col_y': NULL}]",
        note: null,
      }),
    );
    for (const f of files) {
      const schema = await db.rows(
        `SELECT name, type, repetition_type, field_id FROM parquet_schema(${sqlString(join(root(), f.key ?? ''))})`,
      );
      expect(
        schema
          .slice(1)
          .map((e) => [
            e.name,
            e.type ?? null,
            e.repetition_type,
            e.field_id === null ? null : Number(e.field_id),
          ]),
      ).toEqual([
        ['col_id', 'INT64', 'OPTIONAL', 2],
        ['col_tags', null, 'OPTIONAL', 3],
        ['list', null, 'REPEATED', null],
        ['element', 'INT64', 'OPTIONAL', null],
        ['col_props', null, 'OPTIONAL', 4],
        ['key_value', null, 'REPEATED', null],
        ['key', 'BYTE_ARRAY', 'REQUIRED', null],
        ['value', 'INT64', 'OPTIONAL', null],
        ['col_pts', null, 'OPTIONAL', 5],
        ['list', null, 'REPEATED', null],
        ['element', null, 'OPTIONAL', null],
        ['col_x', 'INT64', 'OPTIONAL', 6],
        ['col_y', 'DOUBLE', 'OPTIONAL', 7],
        ['col_note', 'BYTE_ARRAY', 'OPTIONAL', 8],
      ]);
    }
  });
});

describe('compact --format delta on the vendored column-mapped table (Databricks) after a column is added', () => {
  const NAME = 'col-3877fd94-0973-4941-ac6b-646849a1ff65';
  const COMPANY = 'col-173b4db9-b5ad-427f-9e75-516aae37fbbb';
  const AMOUNT = 'col-9c1d2e3f-0a4b-4c5d-8e6f-7a8b9c0d1e2f';

  it('projects the Databricks file (null in the added column) and two files of the new schema into one file of the current schema, same rows', async () => {
    // Prepare: the fixture's version 0, then a metaData adding `Amount` and two appends to partition BMS
    await cp(join(DELTA_FIXTURES, 'table_with_column_mapping'), root(), { recursive: true });
    const v0 = (await readFile(join(root(), '_delta_log', `${'0'.padStart(20, '0')}.json`), 'utf8'))
      .split('\n')
      .filter((l) => l.includes('"metaData"'))
      .map((l) => JSON.parse(l) as { metaData: { schemaString: string; configuration: object } })[0];
    if (v0 === undefined) throw new Error('the fixture has no metaData');
    const schema = JSON.parse(v0.metaData.schemaString) as { fields: object[] };
    version = 1;
    await commit([
      {
        metaData: {
          ...v0.metaData,
          schemaString: JSON.stringify({
            type: 'struct',
            fields: [...schema.fields, field('Amount', AMOUNT, 3, 'long')],
          }),
          configuration: { ...v0.metaData.configuration, 'delta.columnMapping.maxColumnId': '3' },
        },
      },
    ]);
    for (let i = 0; i < 2; i++) {
      const key = `Zq/new-${i}.parquet`;
      await mkdir(join(root(), 'Zq'), { recursive: true });
      await db.writeParquet(
        `SELECT 'Added ' || range || '-${i}' AS "${NAME}", (range * 1000 + ${i})::BIGINT AS "${AMOUNT}" FROM range(3)`,
        join(root(), key),
        { extraOptions: [`FIELD_IDS {"${NAME}": 2, "${AMOUNT}": 3}`] },
      );
      const { size } = await stat(join(root(), key));
      await commit([
        {
          add: {
            path: key,
            partitionValues: { [COMPANY]: 'BMS' },
            size,
            modificationTime: NOW,
            dataChange: true,
          },
        },
      ]);
    }
    const rows = async (): Promise<string[]> => {
      const snapshot = await readDeltaSnapshot(store, '');
      const files = snapshot.files.map((f) => ({
        path: join(root(), f.key ?? ''),
        company: f.partitionValues['Company Very Short'],
      }));
      const result = await db.rows(
        `SELECT "${NAME}" AS super_name, "${AMOUNT}"::BIGINT AS amount, p.company
         FROM read_parquet([${files.map((f) => sqlString(f.path)).join(', ')}], union_by_name = true, filename = true) AS t
         JOIN (VALUES ${files.map((f) => `(${sqlString(f.path)}, ${sqlString(f.company ?? '')})`).join(', ')}) AS p(f, company)
         ON t.filename = p.f ORDER BY ALL`,
      );
      return result.map((r) => JSON.stringify(r));
    };
    const before = await rows();
    const io = captureIo();

    // Act
    const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

    // Assess: BMS is one file of the current schema holding its 4 + 6 rows; BME (one file) untouched
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await rows();
    expect(missingRows(before, after)).toEqual([]);
    expect(missingRows(after, before)).toEqual([]);
    expect(after).toHaveLength(5 + 6);
    const files = (await readDeltaSnapshot(store, '')).files;
    const bms = files.filter((f) => f.partitionValues['Company Very Short'] === 'BMS');
    expect(bms).toHaveLength(1);
    expect(await columnsOf(bms[0]?.key ?? '')).toEqual([
      { name: NAME, field_id: '2', type: 'BYTE_ARRAY' },
      { name: AMOUNT, field_id: '3', type: 'INT64' },
    ]);
    expect(files.map((f) => f.key)).toContain(
      '8v/part-00001-69b4a452-aeac-4ffa-bf5c-a0c2833d05eb.c000.zstd.parquet',
    );
  });
});

/** A store whose process dies right after the first request `kills` matches completed: every later request fails. */
function diesAfter(inner: ObjectStore, kills: (call: StoreCall) => boolean): ObjectStore {
  let dead = false;
  return observedStore(inner, {
    before: (call) => {
      if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
    },
    after: (call) => {
      if (kills(call)) dead = true;
    },
  });
}

describe('a projected Delta compaction killed mid-way', () => {
  it.each([
    [
      'right after its output is copied into the partition, before the log commit',
      (call: StoreCall) => call.method === 'copy' && call.key.startsWith('day=d1/'),
      0,
    ],
    [
      'right after its log commit, before the journal knows',
      (call: StoreCall) =>
        call.method === 'put' && call.key.includes('_delta_log/') && call.key.endsWith('.json'),
      1,
    ],
  ])(
    'leaves the old or the new partition when killed %s, and the next run finishes it',
    async (_when, kills, committed) => {
      // Prepare
      await evolvedTable({ widening: true });
      const before = await liveRows();
      const versionBefore = (await readDeltaSnapshot(store, '')).version;

      // Act: the first run dies; the table is read between the runs; the next run settles and compacts
      const first = await runCompact(
        root(),
        { format: 'delta', partition: 'day=d1', minInputFiles: 2 },
        { out: () => {}, clock: { now: () => NOW }, env: {} },
        { wrapStore: (inner) => diesAfter(inner, kills) },
      ).catch((err: unknown) => err);
      const between = await liveRows();
      const betweenVersion = (await readDeltaSnapshot(store, '')).version;
      const io = captureIo();
      const code = await run(['compact', root(), '--format', 'delta', '--min-input-files', '2'], io);

      // Assess: between the runs the partition is wholly old or wholly new; after, one file per partition
      expect(first).toBeInstanceOf(Error);
      expect(betweenVersion).toBe(versionBefore + committed);
      expect(between.keys.filter((k) => k.startsWith('day=d1/'))).toHaveLength(committed === 1 ? 1 : 6);
      expect(missingRows(before.rows, between.rows)).toEqual([]);
      expect(missingRows(between.rows, before.rows)).toEqual([]);
      expect(code, io.stderr.join('\n')).toBe(0);
      const after = await liveRows();
      expect(after.keys).toHaveLength(2);
      expect(missingRows(before.rows, after.rows)).toEqual([]);
      expect(missingRows(after.rows, before.rows)).toEqual([]);
      expect((await readDeltaSnapshot(store, '')).version).toBe(versionBefore + 2);
    },
  );
});

type Mangle = (projection: ColumnProjection) => ColumnProjection;

/** The projection with the added column `col_score` written null whatever the input holds. */
const dropAddedColumn: Mangle = (p) => ({
  ...p,
  columns: p.columns.map((c): ProjectedColumn => (c.field.name === 'col_score' ? { field: c.field } : c)),
});

/** The projection with the widened column `col_id` written null: its values lost in the widening. */
const loseWidenedColumn: Mangle = (p) => ({
  ...p,
  columns: p.columns.map((c): ProjectedColumn => (c.field.name === 'col_id' ? { field: c.field } : c)),
});

/**
 * The default engine with a fault in what it writes for projected groups: the outputs are built from the mangled
 * projection, but the fingerprint returned is the one of the planned projection (a rewrite of the same group into a
 * scratch store), as the engine's independent fingerprint path takes it.
 */
function mangling(mangle: Mangle): { engine: ParquetEngine; mangled: () => number } {
  let mangled = 0;
  const engine: ParquetEngine = {
    ...defaultParquetEngine,
    rewriteGroup: async (io, group, options) => {
      if (!group.files.some((f) => f.projection !== undefined))
        return defaultParquetEngine.rewriteGroup(io, group, options);
      const planned = await defaultParquetEngine.rewriteGroup(
        { source: io.source, target: new MemoryObjectStore() },
        group,
        options,
      );
      const faulty = await defaultParquetEngine.rewriteGroup(
        io,
        {
          ...group,
          files: group.files.map((f) =>
            f.projection === undefined ? f : { ...f, projection: mangle(f.projection) },
          ),
        },
        options,
      );
      mangled++;
      return { ...faulty, fingerprint: planned.fingerprint };
    },
  };
  return { engine, mangled: () => mangled };
}

describe('verification of a Delta compaction whose writer mangles the projection', () => {
  it.each([
    ['drops the added column’s values', dropAddedColumn],
    ['loses the widened column’s values', loseWidenedColumn],
  ])(
    'fails the group when the writer %s: nothing committed, rows and inputs unchanged',
    async (_what, mangle) => {
      // Prepare
      const { old } = await evolvedTable({ widening: true });
      const before = await liveRows();
      const bytes = await Promise.all(old.map((k) => readFile(join(root(), k))));
      const versionBefore = (await readDeltaSnapshot(store, '')).version;
      const { engine, mangled } = mangling(mangle);
      const io = captureIo();

      // Act
      const outcome = runCompact(root(), { format: 'delta', minInputFiles: 2 }, io, { engine });

      // Assess: d1's projected group fails verification; d2 (as written) commits; d1 is as it was
      await expect(outcome).rejects.toBeInstanceOf(CompactionFailedError);
      expect(mangled()).toBe(1);
      expect(io.stdout.join('\n')).toMatch(
        /day=d1 g0001: FAILED VerificationError: Verification failed: .*between inputs and outputs: .*\(aborted\)/,
      );
      const after = await liveRows();
      expect(missingRows(before.rows, after.rows)).toEqual([]);
      expect(missingRows(after.rows, before.rows)).toEqual([]);
      const snapshot = await readDeltaSnapshot(store, '');
      expect(snapshot.version).toBe(versionBefore + 1);
      expect(snapshot.files.filter((f) => f.partitionValues.day === 'd1')).toHaveLength(6);
      const now = await Promise.all(old.map((k) => readFile(join(root(), k))));
      expect(now.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(old.map(() => true));
    },
  );

  it('commits the same group when the writer follows the planned projection (the fault is what fails it)', async () => {
    // Prepare
    await evolvedTable({ widening: true });
    const before = await liveRows();
    const { engine, mangled } = mangling((p) => p);

    // Act
    await runCompact(root(), { format: 'delta', minInputFiles: 2 }, captureIo(), { engine });

    // Assess
    expect(mangled()).toBe(1);
    const after = await liveRows();
    expect(after.keys).toHaveLength(2);
    expect(missingRows(before.rows, after.rows)).toEqual([]);
    expect(missingRows(after.rows, before.rows)).toEqual([]);
  });
});
