// Iceberg schema evolution through `lake-compactor compact --format iceberg --rewrite-option rewrite-all=true`, on a
// table crafted here: files written under an older schema are projected onto the current one by field id — an added
// column is null, a renamed column keeps its values under its new name, an int promoted to long is widened, a dropped
// column is not written — and group with the current schema's files into one output. DuckDB is the oracle: it reads
// each input by field id (its own projection, not the engine's) and the output as written. A file that cannot be
// projected (no field ids) is left alone with every byte of the table unchanged. The default bin-pack projects
// the same way (files of older schemas merge with current ones) and rewrites an unprojectable file only among files
// of its own Parquet schema.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type DataType,
  Field,
  Int32,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMicrosecond,
  TimeMillisecond,
  TimestampMicrosecond,
  TimestampMillisecond,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import {
  appendTestFile,
  createTestTable,
  evolveTestTable,
  liveTestFiles,
  type TestTable,
  treeBytes,
} from '../support/iceberg-test-table.js';

const NAME = 'evolving';
const NOW = Date.UTC(2024, 2, 1);

/** Schema 0: id long (1), amount int (2), gone string (3). */
const SCHEMA_0 = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'amount', required: false, type: 'int' },
    { id: 3, name: 'gone', required: false, type: 'string' },
  ],
};
/** Schema 1: amount renamed total and promoted to long, gone dropped, note string (4) added. */
const SCHEMA_1 = {
  type: 'struct',
  'schema-id': 1,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'total', required: false, type: 'long' },
    { id: 4, name: 'note', required: false, type: 'string' },
  ],
};

let db: DuckDb;
let dir: string;

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function field(name: string, type: DataType, id: number | undefined): Field {
  return new Field(
    name,
    type,
    true,
    id === undefined ? undefined : new Map([['PARQUET:field_id', String(id)]]),
  );
}

/** A Parquet file of `columns` with the given fields (field ids as Parquet field ids). */
function parquetOf(fields: readonly Field[], columns: Record<string, unknown[]>): Uint8Array {
  const schema = new Schema([...fields]);
  const children = fields.map((f) => vectorFromArray(columns[f.name] as unknown[], f.type).data[0]);
  const length = (columns[fields[0]?.name ?? ''] ?? []).length;
  const struct = makeData({
    type: new Struct(schema.fields),
    length,
    nullCount: 0,
    children: children as never,
  });
  const ipc = tableToIPC(new Table([new RecordBatch(schema, struct)]), 'stream');
  return pw.writeParquet(pw.Table.fromIPCStream(ipc));
}

/** The table at `<dir>/evolving`, as the shared helpers take it. */
function tableAt(store: LocalObjectStore): TestTable {
  return { store, dir, name: NAME, now: NOW };
}

/** An unpartitioned format-v2 table at `<dir>/evolving` with schema 0 and no snapshot. */
async function createTable(store: LocalObjectStore): Promise<void> {
  await createTestTable(tableAt(store), {
    formatVersion: 2,
    tableUuid: '8a1a1c5e-6d5b-4d7e-9a3f-0b9b3c6f7e21',
    schemas: [SCHEMA_0],
    lastColumnId: 3,
  });
}

/** Evolves the table to schema 1 (ALTER TABLE's metadata change): a new metadata version naming it current. */
async function evolveToSchema1(store: LocalObjectStore): Promise<void> {
  await evolveTestTable(tableAt(store), [SCHEMA_0, SCHEMA_1], 1, 4);
}

async function append(store: LocalObjectStore, file: string, bytes: Uint8Array): Promise<void> {
  const key = `${NAME}/data/${file}`;
  await store.put(key, bytes);
  await appendTestFile(tableAt(store), key);
}

/** The data files the current snapshot lists, as local paths. */
async function liveFiles(store: LocalObjectStore): Promise<string[]> {
  return liveTestFiles(tableAt(store));
}

const OLD_FIELDS = [
  field('id', new Int64(), 1),
  field('amount', new Int32(), 2),
  field('gone', new Utf8(), 3),
];
const NEW_FIELDS = [
  field('id', new Int64(), 1),
  field('total', new Int64(), 2),
  field('note', new Utf8(), 4),
];

describe('compact --rewrite-option rewrite-all=true on an Iceberg table whose schema evolved', () => {
  it('projects files of the older schema onto the current one (added null, renamed, int widened to long, dropped) and writes them with the current files into one output of the current schema', async () => {
    // Prepare: two files under schema 0 (amount int, one value past 2^31 / 2 to see the widening keep it), then
    // ALTER TABLE (rename amount → total, promote to long, drop gone, add note), then two files under schema 1
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    await append(
      store,
      'a.parquet',
      parquetOf(OLD_FIELDS, { id: [1n, 2n], amount: [10, 2_000_000_000], gone: ['x', 'y'] }),
    );
    await append(store, 'b.parquet', parquetOf(OLD_FIELDS, { id: [3n], amount: [-7], gone: ['z'] }));
    await evolveToSchema1(store);
    await append(
      store,
      'c.parquet',
      parquetOf(NEW_FIELDS, { id: [4n], total: [9_000_000_000n], note: ['n4'] }),
    );
    await append(
      store,
      'd.parquet',
      parquetOf(NEW_FIELDS, { id: [5n, 6n], total: [5n, 6n], note: ['n5', 'n6'] }),
    );
    const inputs = await liveFiles(store);
    // DuckDB's projection of every input by field id onto schema 1 (its own reading, not the engine's)
    const expected = await db.rows(
      `SELECT id, total, note FROM (
         SELECT id, CAST(amount AS BIGINT) AS total, CAST(NULL AS VARCHAR) AS note FROM read_parquet([${inputs
           .filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet'))
           .map(sqlString)
           .join(', ')}])
         UNION ALL
         SELECT id, total, note FROM read_parquet([${inputs
           .filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet'))
           .map(sqlString)
           .join(', ')}])
       ) ORDER BY id`,
    );
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess: one live data file holding every row as projected
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(inputs).toHaveLength(4);
    expect(outputs).toHaveLength(1);
    const output = outputs[0] as string;
    expect(
      await db.rows(`SELECT id, total, note FROM read_parquet(${sqlString(output)}) ORDER BY id`),
    ).toEqual(expected);
    // each change proven on its own: the widened value past the int range, the added column null for old rows,
    const rows = await db.rows(`SELECT id, total, note FROM read_parquet(${sqlString(output)}) ORDER BY id`);
    expect(rows.map((r) => [Number(r.id), BigInt(r.total as bigint), r.note])).toEqual([
      [1, 10n, null],
      [2, 2_000_000_000n, null],
      [3, -7n, null],
      [4, 9_000_000_000n, 'n4'],
      [5, 5n, 'n5'],
      [6, 6n, 'n6'],
    ]);
    // …and the output's schema exactly the current one: names, field ids, types; the dropped column absent
    const schema = await db.rows(
      `SELECT name, type, logical_type, field_id FROM parquet_schema(${sqlString(output)})`,
    );
    expect(schema.slice(1).map((e) => [e.name, e.type, Number(e.field_id)])).toEqual([
      ['id', 'INT64', 1],
      ['total', 'INT64', 2],
      ['note', 'BYTE_ARRAY', 4],
    ]);
    expect(schema.some((e) => e.name === 'gone' || e.name === 'amount')).toBe(false);
  });

  it('leaves files it cannot project (columns without field ids) alone, naming why, and changes no byte of the table', async () => {
    // Prepare: two schema-0 files written without Parquet field ids (a name mapping would be needed), then ALTER TABLE
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    const noIds = [
      field('id', new Int64(), undefined),
      field('amount', new Int32(), undefined),
      field('gone', new Utf8(), undefined),
    ];
    await append(store, 'a.parquet', parquetOf(noIds, { id: [1n], amount: [1], gone: ['x'] }));
    await append(store, 'b.parquet', parquetOf(noIds, { id: [2n], amount: [2], gone: ['y'] }));
    await evolveToSchema1(store);
    const before = await treeBytes(join(dir, NAME));
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout.join('\n')).toContain(
      'nothing to do (nothing to compact: 2 not projectable onto the current schema',
    );
    const after = await treeBytes(join(dir, NAME));
    const table = [...after].filter(([p]) => !p.includes('/_lake-compactor/'));
    expect(new Map(table)).toEqual(before);
  });
});

describe('compact on an Iceberg table whose schema evolved, with the default bin-pack (no rewrite-all)', () => {
  it('projects small files of the older schema onto the current one and merges them with the current files into one output, rows unchanged', async () => {
    // Prepare: two small schema-0 files, ALTER TABLE, two small schema-1 files: two populations of two files each,
    // so with min-input-files 4 only a group of all four (the older ones projected) is worth rewriting
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    await append(
      store,
      'a.parquet',
      parquetOf(OLD_FIELDS, { id: [1n, 2n], amount: [10, 2_000_000_000], gone: ['x', 'y'] }),
    );
    await append(store, 'b.parquet', parquetOf(OLD_FIELDS, { id: [3n], amount: [-7], gone: ['z'] }));
    await evolveToSchema1(store);
    await append(
      store,
      'c.parquet',
      parquetOf(NEW_FIELDS, { id: [4n], total: [9_000_000_000n], note: ['n4'] }),
    );
    await append(
      store,
      'd.parquet',
      parquetOf(NEW_FIELDS, { id: [5n, 6n], total: [5n, 6n], note: ['n5', 'n6'] }),
    );
    const inputs = await liveFiles(store);
    const old = inputs.filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet'));
    const current = inputs.filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet'));
    // DuckDB's projection of every input by field id onto schema 1 (its own reading, not the engine's)
    const expected = await db.rows(
      `SELECT id, total, note FROM (
         SELECT id, CAST(amount AS BIGINT) AS total, CAST(NULL AS VARCHAR) AS note FROM read_parquet([${old.map(sqlString).join(', ')}])
         UNION ALL
         SELECT id, total, note FROM read_parquet([${current.map(sqlString).join(', ')}])
       ) ORDER BY id, total, note`,
    );
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'min-input-files=4'],
      io,
    );

    // Assess: one live data file of the current schema holding every row as DuckDB projects it
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(old).toHaveLength(2);
    expect(current).toHaveLength(2);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    const output = outputs[0] as string;
    expect(expected).toHaveLength(6);
    expect(
      await db.rows(
        `SELECT id, total, note FROM read_parquet(${sqlString(output)}) ORDER BY id, total, note`,
      ),
    ).toEqual(expected);
    const schema = await db.rows(`SELECT name, type, field_id FROM parquet_schema(${sqlString(output)})`);
    expect(schema.slice(1).map((e) => [e.name, e.type, Number(e.field_id)])).toEqual([
      ['id', 'INT64', 1],
      ['total', 'INT64', 2],
      ['note', 'BYTE_ARRAY', 4],
    ]);
  });

  it('leaves files it cannot project (columns without field ids) apart: they are rewritten in their own schema, never mixed with the current files', async () => {
    // Prepare: two schema-0 files without Parquet field ids, ALTER TABLE, two schema-1 files with them
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    const noIds = [
      field('id', new Int64(), undefined),
      field('amount', new Int32(), undefined),
      field('gone', new Utf8(), undefined),
    ];
    await append(store, 'a.parquet', parquetOf(noIds, { id: [1n], amount: [1], gone: ['x'] }));
    await append(store, 'b.parquet', parquetOf(noIds, { id: [2n], amount: [2], gone: ['y'] }));
    await evolveToSchema1(store);
    await append(store, 'c.parquet', parquetOf(NEW_FIELDS, { id: [3n], total: [3n], note: ['n3'] }));
    await append(store, 'd.parquet', parquetOf(NEW_FIELDS, { id: [4n], total: [4n], note: ['n4'] }));
    const inputs = await liveFiles(store);
    const rowsOf = async (paths: readonly string[], columns: string) =>
      db.rows(`SELECT ${columns} FROM read_parquet([${paths.map(sqlString).join(', ')}]) ORDER BY ALL`);
    const oldBefore = await rowsOf(
      inputs.filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet')),
      'id, amount, gone',
    );
    const currentBefore = await rowsOf(
      inputs.filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet')),
      'id, total, note',
    );
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'min-input-files=2'],
      io,
    );

    // Assess: two outputs, one per population, each holding its population's rows under its own columns
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(2);
    expect(outputs.some((p) => inputs.includes(p))).toBe(false);
    const columnsOf = async (path: string) =>
      (await db.rows(`SELECT name FROM parquet_schema(${sqlString(path)})`)).slice(1).map((e) => e.name);
    const byColumns = new Map<string, string>();
    for (const o of outputs) byColumns.set((await columnsOf(o)).join(','), o);
    expect([...byColumns.keys()].sort()).toEqual(['id,amount,gone', 'id,total,note']);
    expect(await rowsOf([byColumns.get('id,amount,gone') as string], 'id, amount, gone')).toEqual(oldBefore);
    expect(await rowsOf([byColumns.get('id,total,note') as string], 'id, total, note')).toEqual(
      currentBefore,
    );
    expect(oldBefore).toHaveLength(2);
    expect(currentBefore).toHaveLength(2);
  });

  it('sorts a partition of two schema populations into one output of the current schema, the older files projected, rows unchanged', async () => {
    // Prepare: two schema-0 files, ALTER TABLE, two schema-1 files, ids interleaved between the populations
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    await append(
      store,
      'a.parquet',
      parquetOf(OLD_FIELDS, { id: [6n, 1n], amount: [6, 2_000_000_000], gone: ['f', 'a'] }),
    );
    await append(store, 'b.parquet', parquetOf(OLD_FIELDS, { id: [3n], amount: [-3], gone: ['c'] }));
    await evolveToSchema1(store);
    await append(
      store,
      'c.parquet',
      parquetOf(NEW_FIELDS, { id: [5n, 2n], total: [9_000_000_000n, 2n], note: ['n5', 'n2'] }),
    );
    await append(store, 'd.parquet', parquetOf(NEW_FIELDS, { id: [4n], total: [4n], note: ['n4'] }));
    const inputs = await liveFiles(store);
    const old = inputs.filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet'));
    const current = inputs.filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet'));
    // DuckDB's projection of every input by field id onto schema 1, in id order
    const expected = await db.rows(
      `SELECT id, total, note FROM (
         SELECT id, CAST(amount AS BIGINT) AS total, CAST(NULL AS VARCHAR) AS note FROM read_parquet([${old.map(sqlString).join(', ')}])
         UNION ALL
         SELECT id, total, note FROM read_parquet([${current.map(sqlString).join(', ')}])
       ) ORDER BY id`,
    );
    const io = captureIo();

    // Act
    const code = await run(
      [
        'compact',
        join(dir, NAME),
        '--format',
        'iceberg',
        '--rewrite-option',
        'min-input-files=4',
        '--strategy',
        'sort',
        '--columns',
        'id',
      ],
      io,
    );

    // Assess: one output of the current schema whose rows, in file order, are DuckDB's projection sorted by id
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    const output = outputs[0] as string;
    expect(expected).toHaveLength(6);
    expect(await db.rows(`SELECT id, total, note FROM read_parquet(${sqlString(output)})`)).toEqual(expected);
    const schema = await db.rows(`SELECT name, type, field_id FROM parquet_schema(${sqlString(output)})`);
    expect(schema.slice(1).map((e) => [e.name, e.type, Number(e.field_id)])).toEqual([
      ['id', 'INT64', 1],
      ['total', 'INT64', 2],
      ['note', 'BYTE_ARRAY', 4],
    ]);
  });

  it('still sorts a table whose files are all of its current schema (nothing to project), rows unchanged', async () => {
    // Prepare: three schema-0 files, out of id order, and no schema change
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    await append(
      store,
      'a.parquet',
      parquetOf(OLD_FIELDS, { id: [5n, 1n], amount: [5, 1], gone: ['e', 'a'] }),
    );
    await append(store, 'b.parquet', parquetOf(OLD_FIELDS, { id: [4n], amount: [4], gone: ['d'] }));
    await append(
      store,
      'c.parquet',
      parquetOf(OLD_FIELDS, { id: [3n, 2n], amount: [3, 2], gone: ['c', 'b'] }),
    );
    const inputs = await liveFiles(store);
    const expected = await db.rows(
      `SELECT id, amount, gone FROM read_parquet([${inputs.map(sqlString).join(', ')}]) ORDER BY id`,
    );
    const io = captureIo();

    // Act
    const code = await run(
      [
        'compact',
        join(dir, NAME),
        '--format',
        'iceberg',
        '--rewrite-option',
        'min-input-files=2',
        '--strategy',
        'sort',
        '--columns',
        'id',
      ],
      io,
    );

    // Assess: one output, its rows the inputs' multiset in id order
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    expect(expected).toHaveLength(5);
    expect(
      await db.rows(`SELECT id, amount, gone FROM read_parquet(${sqlString(outputs[0] as string)})`),
    ).toEqual(expected);
  });
});

/**
 * Runs `compact --rewrite-option rewrite-all=true` on the table (Iceberg's promise: every file rewritten into the
 * current schema), expects it to succeed and to leave one live data file, and returns that file's path.
 */
async function rewriteAllIntoOneFile(store: LocalObjectStore): Promise<string> {
  const io = captureIo();
  const code = await run(
    ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
    io,
  );
  expect(code, io.stderr.join('\n')).toBe(0);
  const outputs = await liveFiles(store);
  expect(outputs).toHaveLength(1);
  return outputs[0] as string;
}

/** An unpartitioned format-v2 table with `schemas`, `current` the current one, and no snapshot. */
async function putMetadata(
  store: LocalObjectStore,
  schemas: readonly { readonly fields: readonly object[] }[],
  current: number,
  lastColumnId = 8,
) {
  await createTestTable(tableAt(store), {
    formatVersion: 2,
    tableUuid: '8a1a1c5e-6d5b-4d7e-9a3f-0b9b3c6f7e22',
    schemas,
    currentSchemaId: current,
    lastColumnId,
  });
}

/** Writes `select` as data file `file` with DuckDB (nested field ids as given) and appends it. */
async function appendSelect(store: LocalObjectStore, file: string, select: string, ids: string) {
  const key = `${NAME}/data/${file}`;
  await db.writeParquet(select, join(dir, key), { extraOptions: [`FIELD_IDS ${ids}`] });
  await appendTestFile(tableAt(store), key);
}

describe('compact on an Iceberg table whose struct column evolved (nested fields by field id)', () => {
  /** Schema 0: id long (1), p struct (2) {x int (3), gone string (4), q struct (5) {a long (6)}}. */
  const NESTED_0 = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      {
        id: 2,
        name: 'p',
        required: false,
        type: {
          type: 'struct',
          fields: [
            { id: 3, name: 'x', required: false, type: 'int' },
            { id: 4, name: 'gone', required: false, type: 'string' },
            {
              id: 5,
              name: 'q',
              required: false,
              type: { type: 'struct', fields: [{ id: 6, name: 'a', required: false, type: 'long' }] },
            },
          ],
        },
      },
    ],
  };
  /** Schema 1: p.x renamed ex and promoted to long, p.gone dropped, p.y double (7) and p.q.b string (8) added. */
  const NESTED_1 = {
    type: 'struct',
    'schema-id': 1,
    fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      {
        id: 2,
        name: 'p',
        required: false,
        type: {
          type: 'struct',
          fields: [
            { id: 3, name: 'ex', required: false, type: 'long' },
            {
              id: 5,
              name: 'q',
              required: false,
              type: {
                type: 'struct',
                fields: [
                  { id: 6, name: 'a', required: false, type: 'long' },
                  { id: 8, name: 'b', required: false, type: 'string' },
                ],
              },
            },
            { id: 7, name: 'y', required: false, type: 'double' },
          ],
        },
      },
    ],
  };

  /** Rows as schema 1 reads them: the struct's nullness and every current leaf, as text. */
  const CURRENT =
    'id, (p IS NULL) AS p_null, p.ex::VARCHAR AS ex, p.q.a::VARCHAR AS a, p.q.b AS b, p.y::VARCHAR AS y';

  it('projects files of the older struct (field added null, dropped, renamed and promoted, nested struct extended) with the current ones into one output of the current schema, rows equal', async () => {
    // Prepare: two files under schema 0 (one row with p null), the schema change, two files under schema 1
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-nested-'));
    const store = new LocalObjectStore(dir);
    await mkdir(join(dir, NAME, 'data'), { recursive: true });
    await putMetadata(store, [NESTED_0], 0);
    const oldIds = '{id: 1, p: {__duckdb_field_id: 2, x: 3, gone: 4, q: {__duckdb_field_id: 5, a: 6}}}';
    for (const [file, base] of [
      ['a.parquet', 0],
      ['b.parquet', 10],
    ] as const)
      await appendSelect(
        store,
        file,
        `SELECT (range + ${base})::BIGINT AS id,
           CASE WHEN range = 2 THEN NULL ELSE {'x': (2147483647 - range)::INTEGER, 'gone': 'g' || range, 'q': {'a': (range * 1000)::BIGINT}} END AS p
         FROM range(3)`,
        oldIds,
      );
    await evolveTestTable(tableAt(store), [NESTED_0, NESTED_1], 1, 8);
    const newIds = '{id: 1, p: {__duckdb_field_id: 2, ex: 3, q: {__duckdb_field_id: 5, a: 6, b: 8}, y: 7}}';
    for (const [file, base] of [
      ['c.parquet', 100],
      ['d.parquet', 110],
    ] as const)
      await appendSelect(
        store,
        file,
        `SELECT (range + ${base})::BIGINT AS id,
           {'ex': (range + 5000000000)::BIGINT, 'q': {'a': range::BIGINT, 'b': 'b' || range}, 'y': (range * 0.5)::DOUBLE} AS p
         FROM range(2)`,
        newIds,
      );
    const inputs = await liveFiles(store);
    const old = inputs.filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet'));
    const current = inputs.filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet'));
    // DuckDB's own projection of the old files onto schema 1 (by the ids it wrote them with)
    const expected = (
      await db.rows(
        `SELECT * FROM (
           SELECT id, (p IS NULL) AS p_null, p.x::BIGINT::VARCHAR AS ex, p.q.a::VARCHAR AS a, NULL::VARCHAR AS b, NULL::VARCHAR AS y
           FROM read_parquet([${old.map(sqlString).join(', ')}])
           UNION ALL
           SELECT ${CURRENT} FROM read_parquet([${current.map(sqlString).join(', ')}])
         ) ORDER BY ALL`,
      )
    ).map((r) => JSON.stringify(r));
    // Act
    const output = await rewriteAllIntoOneFile(store);

    // Assess: one output, the rows DuckDB projects, the current schema's nested names and field ids
    expect(old).toHaveLength(2);
    const after = (
      await db.rows(`SELECT ${CURRENT} FROM read_parquet(${sqlString(output)}) ORDER BY ALL`)
    ).map((r) => JSON.stringify(r));
    expect(after).toHaveLength(10);
    expect(after).toEqual(expected);
    expect(after).toContain(
      JSON.stringify({ id: '0', p_null: false, ex: '2147483647', a: '0', b: null, y: null }),
    );
    expect(after).toContain(JSON.stringify({ id: '2', p_null: true, ex: null, a: null, b: null, y: null }));
    const schema = await db.rows(`SELECT name, type, field_id FROM parquet_schema(${sqlString(output)})`);
    expect(schema.slice(1).map((e) => [e.name, e.type ?? null, Number(e.field_id)])).toEqual([
      ['id', 'INT64', 1],
      ['p', null, 2],
      ['ex', 'INT64', 3],
      ['q', null, 5],
      ['a', 'INT64', 6],
      ['b', 'BYTE_ARRAY', 8],
      ['y', 'DOUBLE', 7],
    ]);
  });
});

describe('compact on an Iceberg table with list and map columns whose schema evolved (elements, keys, values by field id)', () => {
  /** An optional-element list of `element` (id `elementId`), as the metadata spells it. */
  const list = (elementId: number, element: unknown) => ({
    type: 'list',
    'element-id': elementId,
    element,
    'element-required': false,
  });
  /** A string-keyed map of optional `value`s (key id `keyId`, value id `keyId + 1`). */
  const map = (keyId: number, value: unknown) => ({
    type: 'map',
    'key-id': keyId,
    key: 'string',
    'value-id': keyId + 1,
    value,
    'value-required': false,
  });
  const column = (id: number, name: string, type: unknown) => ({ id, name, required: false, type });
  /**
   * Schema 0: id long (1), tags list<int> (2; element 5), props map<string, int> (3; key 6, value 7),
   * pts list<struct<x int (9)>> (4; element 8), words list<string> (10; element 11).
   */
  const LISTS_0 = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      column(1, 'id', 'long'),
      column(2, 'tags', list(5, 'int')),
      column(3, 'props', map(6, 'int')),
      column(4, 'pts', list(8, { type: 'struct', fields: [column(9, 'x', 'int')] })),
      column(10, 'words', list(11, 'string')),
    ],
  };
  /**
   * Schema 1: tags' element promoted to long, props' value promoted to long, pts' element struct with x renamed ex
   * and promoted to long and y double (12) added, words unchanged, note string (13) and labels map<string, string>
   * (14; key 15, value 16) added.
   */
  const LISTS_1 = {
    type: 'struct',
    'schema-id': 1,
    fields: [
      column(1, 'id', 'long'),
      column(2, 'tags', list(5, 'long')),
      column(3, 'props', map(6, 'long')),
      column(
        4,
        'pts',
        list(8, { type: 'struct', fields: [column(9, 'ex', 'long'), column(12, 'y', 'double')] }),
      ),
      column(10, 'words', list(11, 'string')),
      column(13, 'note', 'string'),
      column(14, 'labels', map(15, 'string')),
    ],
  };

  /** Every column as schema 1 reads it, as DuckDB's text of the value (lists, maps and structs included). */
  const CURRENT =
    'id, tags::VARCHAR AS tags, props::VARCHAR AS props, pts::VARCHAR AS pts, words::VARCHAR AS words, note, labels::VARCHAR AS labels';

  it('projects files of the older schema (element and value promoted, a struct element extended and renamed, a column and a map column added) with the current ones into one output of the current schema, rows equal', async () => {
    // Prepare: two files under schema 0 — null, empty and holed lists, a null map, a null value, a null struct
    // element — the schema change, two files under schema 1
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-lists-'));
    const store = new LocalObjectStore(dir);
    await mkdir(join(dir, NAME, 'data'), { recursive: true });
    await putMetadata(store, [LISTS_0], 0, 11);
    const oldIds =
      '{id: 1, tags: {__duckdb_field_id: 2, element: 5}, props: {__duckdb_field_id: 3, key: 6, value: 7}, pts: {__duckdb_field_id: 4, element: {__duckdb_field_id: 8, x: 9}}, words: {__duckdb_field_id: 10, element: 11}}';
    for (const [file, base] of [
      ['a.parquet', 0],
      ['b.parquet', 10],
    ] as const)
      await appendSelect(
        store,
        file,
        `SELECT (range + ${base})::BIGINT AS id,
           CASE range WHEN 0 THEN NULL WHEN 1 THEN []::INTEGER[] ELSE [2147483647 - range, NULL, -range]::INTEGER[] END AS tags,
           CASE range WHEN 0 THEN NULL ELSE MAP {'k' || range: range::INTEGER, 'z': NULL::INTEGER} END AS props,
           CASE range WHEN 1 THEN NULL ELSE [{'x': (range * 7)::INTEGER}, NULL, {'x': NULL::INTEGER}] END AS pts,
           CASE range WHEN 2 THEN NULL ELSE ['w' || range, NULL] END AS words
         FROM range(4)`,
        oldIds,
      );
    await evolveTestTable(tableAt(store), [LISTS_0, LISTS_1], 1, 16);
    const newIds =
      '{id: 1, tags: {__duckdb_field_id: 2, element: 5}, props: {__duckdb_field_id: 3, key: 6, value: 7}, pts: {__duckdb_field_id: 4, element: {__duckdb_field_id: 8, ex: 9, y: 12}}, words: {__duckdb_field_id: 10, element: 11}, note: 13, labels: {__duckdb_field_id: 14, key: 15, value: 16}}';
    for (const [file, base] of [
      ['c.parquet', 100],
      ['d.parquet', 110],
    ] as const)
      await appendSelect(
        store,
        file,
        `SELECT (range + ${base})::BIGINT AS id,
           [(range + 5000000000)::BIGINT] AS tags,
           MAP {'n' || range: (range * 10000000000)::BIGINT} AS props,
           [{'ex': range::BIGINT, 'y': (range * 0.5)::DOUBLE}] AS pts,
           ['v' || range] AS words,
           'note ' || range AS note,
           MAP {'l': 'v' || range} AS labels
         FROM range(2)`,
        newIds,
      );
    const inputs = await liveFiles(store);
    const old = inputs.filter((p) => p.endsWith('a.parquet') || p.endsWith('b.parquet'));
    const current = inputs.filter((p) => p.endsWith('c.parquet') || p.endsWith('d.parquet'));
    // DuckDB's own projection of the old files onto schema 1
    const expected = (
      await db.rows(
        `SELECT * FROM (
           SELECT id, tags::BIGINT[]::VARCHAR AS tags, props::MAP(VARCHAR, BIGINT)::VARCHAR AS props,
             list_transform(pts, s -> CASE WHEN s IS NULL THEN NULL ELSE {'ex': s.x::BIGINT, 'y': NULL::DOUBLE} END)::VARCHAR AS pts,
             words::VARCHAR AS words, NULL::VARCHAR AS note, NULL::VARCHAR AS labels
           FROM read_parquet([${old.map(sqlString).join(', ')}])
           UNION ALL
           SELECT ${CURRENT} FROM read_parquet([${current.map(sqlString).join(', ')}])
         ) ORDER BY ALL`,
      )
    ).map((r) => JSON.stringify(r));
    // Act
    const output = await rewriteAllIntoOneFile(store);

    // Assess: one output, the rows DuckDB projects, the current schema's nested names and field ids
    expect(old).toHaveLength(2);
    const after = (
      await db.rows(`SELECT ${CURRENT} FROM read_parquet(${sqlString(output)}) ORDER BY ALL`)
    ).map((r) => JSON.stringify(r));
    expect(after).toHaveLength(12);
    expect(after).toEqual(expected);
    expect(after).toContain(
      JSON.stringify({
        id: '3',
        tags: '[2147483644, NULL, -3]',
        props: '{k3=3, z=NULL}',
        pts: "[{'ex': 21, 'y': NULL}, NULL, {'ex': NULL, 'y': NULL}]",
        words: '[w3, NULL]',
        note: null,
        labels: null,
      }),
    );
    const schema = await db.rows(
      `SELECT name, type, repetition_type, field_id FROM parquet_schema(${sqlString(output)})`,
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
      ['id', 'INT64', 'OPTIONAL', 1],
      ['tags', null, 'OPTIONAL', 2],
      ['list', null, 'REPEATED', null],
      ['element', 'INT64', 'OPTIONAL', 5],
      ['props', null, 'OPTIONAL', 3],
      ['key_value', null, 'REPEATED', null],
      ['key', 'BYTE_ARRAY', 'REQUIRED', 6],
      ['value', 'INT64', 'OPTIONAL', 7],
      ['pts', null, 'OPTIONAL', 4],
      ['list', null, 'REPEATED', null],
      ['element', null, 'OPTIONAL', 8],
      ['ex', 'INT64', 'OPTIONAL', 9],
      ['y', 'DOUBLE', 'OPTIONAL', 12],
      ['words', null, 'OPTIONAL', 10],
      ['list', null, 'REPEATED', null],
      ['element', 'BYTE_ARRAY', 'OPTIONAL', 11],
      ['note', 'BYTE_ARRAY', 'OPTIONAL', 13],
      ['labels', null, 'OPTIONAL', 14],
      ['key_value', null, 'REPEATED', null],
      ['key', 'BYTE_ARRAY', 'REQUIRED', 15],
      ['value', 'BYTE_ARRAY', 'OPTIONAL', 16],
    ]);
  });
});

describe('compact on an Iceberg table whose files hold timestamps and times in milliseconds', () => {
  /** id long (1), instant timestamptz (2), wall timestamp (3), t time (4): Iceberg's types are all in microseconds. */
  const SCHEMA = {
    type: 'struct',
    'schema-id': 0,
    fields: [
      { id: 1, name: 'id', required: false, type: 'long' },
      { id: 2, name: 'instant', required: false, type: 'timestamptz' },
      { id: 3, name: 'wall', required: false, type: 'timestamp' },
      { id: 4, name: 't', required: false, type: 'time' },
    ],
  };
  const MILLIS = [
    field('id', new Int64(), 1),
    field('instant', new TimestampMillisecond('UTC'), 2),
    field('wall', new TimestampMillisecond(), 3),
    field('t', new TimeMillisecond(), 4),
  ];
  const MICROS = [
    field('id', new Int64(), 1),
    field('instant', new TimestampMicrosecond('UTC'), 2),
    field('wall', new TimestampMicrosecond(), 3),
    field('t', new TimeMicrosecond(), 4),
  ];
  const AS_TEXT = 'id, instant::VARCHAR AS instant, wall::VARCHAR AS wall, t::VARCHAR AS t';

  it('projects a file in milliseconds onto the schema in microseconds (times 1,000) and writes it with the others into one output, every value equal', async () => {
    // Prepare: a file written in milliseconds (an Avro-based writer's, imported) beside one in microseconds
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-millis-'));
    const store = new LocalObjectStore(dir);
    await mkdir(join(dir, NAME, 'data'), { recursive: true });
    await putMetadata(store, [SCHEMA], 0, 4);
    const noon = Date.UTC(2024, 0, 31, 12, 34, 56, 789);
    await append(
      store,
      'a.parquet',
      parquetOf(MILLIS, {
        id: [1n, 2n, 3n],
        instant: [noon, null, Date.UTC(1969, 11, 31, 23, 59, 59, 1)],
        wall: [noon + 1, Date.UTC(2262, 3, 11, 0, 0, 0, 1), null],
        t: [45_296_789, null, 86_399_999],
      }),
    );
    await append(
      store,
      'b.parquet',
      parquetOf(MICROS, { id: [4n], instant: [noon], wall: [noon], t: [45_296_789_123n] }),
    );
    const inputs = await liveFiles(store);
    const expected = await db.rows(
      `SELECT ${AS_TEXT} FROM read_parquet([${inputs.map(sqlString).join(', ')}]) ORDER BY id`,
    );
    // Act
    const output = await rewriteAllIntoOneFile(store);

    // Assess: one output, every value as DuckDB reads the inputs, stored in microseconds as the schema says
    expect(await db.rows(`SELECT ${AS_TEXT} FROM read_parquet(${sqlString(output)}) ORDER BY id`)).toEqual(
      expected,
    );
    expect(expected[0]).toEqual({
      id: '1',
      instant: '2024-01-31 12:34:56.789+00',
      wall: '2024-01-31 12:34:56.79',
      t: '12:34:56.789',
    });
    const schema = await db.rows(
      `SELECT name, type, regexp_replace(logical_type::VARCHAR, '\\(.*', '') AS logical, logical_type::VARCHAR AS detail
       FROM parquet_schema(${sqlString(output)}) WHERE field_id IS NOT NULL`,
    );
    expect(schema.map((e) => [e.name, e.type, e.logical, /MICROS/.test(String(e.detail))])).toEqual([
      ['id', 'INT64', null, false],
      ['instant', 'INT64', 'TimestampType', true],
      ['wall', 'INT64', 'TimestampType', true],
      ['t', 'INT64', 'TimeType', true],
    ]);
  });
});
