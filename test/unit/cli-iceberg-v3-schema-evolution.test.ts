// Schema evolution on a format-v3 Iceberg table through `lake-compactor compact --format iceberg` (`rewrite-all`, and
// the default bin-pack), on tables crafted here: files written before an ALTER TABLE are projected onto the current
// schema by field id — a renamed int promoted to long, a date promoted to timestamp (v3), a dropped column not written,
// and columns added with an `initial-default` of every primitive type the rewrite writes reading as that default, not
// null, also inside a struct — and group with the current schema's files into one output, every row keeping its
// row lineage. DuckDB is the
// oracle: it reads each input by field id with its own casts and the defaults spelled as SQL literals (not the
// engine's values), and each row's `_row_id` / `_last_updated_sequence_number` is computed by the spec's rule.
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromIPC } from 'apache-arrow';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { pw } from '../../functions/adapters/parquet-wasm/wasm.js';
import { run } from '../../functions/cli/index.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import {
  appendTestFile,
  createTestTable,
  evolveTestTable,
  liveTestFiles,
  type TestTable,
} from '../support/iceberg-test-table.js';

const NAME = 'evolving_v3';
const NOW = Date.UTC(2026, 2, 1);
const ROW_ID = { id: 2147483540, name: '_row_id' };
const SEQ = { id: 2147483539, name: '_last_updated_sequence_number' };

/** Schema 0: id long (1), amount int (2), day date (3), gone string (4). */
const SCHEMA_0 = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'amount', required: false, type: 'int' },
    { id: 3, name: 'day', required: false, type: 'date' },
    { id: 4, name: 'gone', required: false, type: 'string' },
  ],
};

/**
 * The columns added by schema 1, each with its Iceberg type, its `initial-default` (JSON single-value) and the same
 * value as a DuckDB literal of the type the output holds it in — the oracle's own reading of the default.
 */
const ADDED = [
  { id: 5, name: 'flag', type: 'boolean', initial: true, sql: 'true' },
  { id: 6, name: 'n', type: 'int', initial: -7, sql: '(-7)::INTEGER' },
  { id: 7, name: 'big', type: 'long', initial: '9007199254740993', sql: '9007199254740993::BIGINT' },
  { id: 8, name: 'f', type: 'float', initial: 1.5, sql: '1.5::FLOAT' },
  { id: 9, name: 'dbl', type: 'double', initial: 0.1, sql: '0.1::DOUBLE' },
  { id: 10, name: 'price', type: 'decimal(9, 2)', initial: '-14.20', sql: '(-14.20)::DECIMAL(9,2)' },
  { id: 11, name: 'd', type: 'date', initial: '2017-11-16', sql: "DATE '2017-11-16'" },
  {
    id: 12,
    name: 'ts',
    type: 'timestamp',
    initial: '2017-11-16T22:31:08.123456',
    sql: "TIMESTAMP '2017-11-16 22:31:08.123456'",
  },
  {
    id: 13,
    name: 'tstz',
    type: 'timestamptz',
    // Another offset than +00:00: Iceberg's reader takes its UTC instant, 20:17:40 UTC
    initial: '1969-07-20T15:17:40-05:00',
    sql: "'1969-07-20 20:17:40+00'::TIMESTAMPTZ",
  },
  { id: 14, name: 's', type: 'string', initial: 'n/a ✓', sql: "'n/a ✓'" },
  { id: 15, name: 'bin', type: 'binary', initial: '00ff10', sql: "'\\x00\\xFF\\x10'::BLOB" },
  { id: 16, name: 'note', type: 'string', initial: null, sql: 'NULL::VARCHAR' },
] as const;

/** Schema 1: amount renamed total and promoted to long, day promoted to timestamp, gone dropped, ADDED added. */
const SCHEMA_1 = {
  type: 'struct',
  'schema-id': 1,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'total', required: false, type: 'long' },
    { id: 3, name: 'day', required: false, type: 'timestamp' },
    ...ADDED.map((a) => ({
      id: a.id,
      name: a.name,
      required: false,
      type: a.type,
      ...(a.initial === null ? {} : { 'initial-default': a.initial, 'write-default': a.initial }),
    })),
  ],
};

/** Every column of schema 1, as DuckDB selects it from a file of schema 1 (and an output). */
const CURRENT_COLUMNS = SCHEMA_1.fields.map((f) => `"${f.name}"`).join(', ');

let db: DuckDb;
let dir: string;

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The table at `<dir>/evolving_v3`, as the shared helpers take it. */
function tableAt(store: LocalObjectStore): TestTable {
  return { store, dir, name: NAME, now: NOW };
}

/** An unpartitioned format-v3 table at `<dir>/evolving_v3` with schema 0, no snapshot, next-row-id 0. */
async function createTable(store: LocalObjectStore): Promise<void> {
  await mkdir(join(dir, NAME, 'data'), { recursive: true });
  await createTestTable(tableAt(store), {
    formatVersion: 3,
    tableUuid: '5c7e0c1a-3a57-4f25-9d0e-7f5f7a1b2c3d',
    schemas: [SCHEMA_0],
    lastColumnId: 4,
  });
}

/** ALTER TABLE to schema 1: a new metadata version naming it current. */
async function evolveToSchema1(store: LocalObjectStore): Promise<void> {
  await evolveTestTable(tableAt(store), [SCHEMA_0, SCHEMA_1], 1, 16);
}

/** Writes `select` as data file `file` with DuckDB (field ids as given) and appends it as one snapshot. */
async function appendSelect(store: LocalObjectStore, file: string, select: string, ids: string) {
  const key = `${NAME}/data/${file}`;
  await db.writeParquet(select, join(dir, key), { extraOptions: [`FIELD_IDS ${ids}`] });
  await appendTestFile(tableAt(store), key);
}

/**
 * Every live row as JSON: schema 1's columns as text (the old files projected by DuckDB: `amount` cast to BIGINT,
 * `day` to TIMESTAMP, each added column its default literal), then `_row_id` and `_last_updated_sequence_number` by
 * the spec's rule (the value stored in the file, else first_row_id + position and the data sequence number). Sorted.
 */
async function projectedRows(store: LocalObjectStore): Promise<string[]> {
  const table = await loadTable(store, NAME);
  const files = await readSnapshotFiles(store, table);
  const rows: string[] = [];
  for (const f of files.dataFiles) {
    const file = f.entry.file;
    const path = sqlString(join(dir, file.key));
    const ids = new Set(
      (await db.rows(`SELECT field_id::VARCHAR AS id FROM parquet_schema(${path})`)).map((r) => String(r.id)),
    );
    const own = (c: { id: number; name: string }) => (ids.has(String(c.id)) ? `"${c.name}"` : 'NULL');
    const columns = ids.has('4')
      ? `id, amount::BIGINT AS total, day::TIMESTAMP AS day, ${ADDED.map((a) => `${a.sql} AS "${a.name}"`).join(', ')}`
      : CURRENT_COLUMNS;
    if (file.firstRowId === undefined) throw new Error(`${file.key} has no first_row_id`);
    const found = await db.rows(
      `SELECT COLUMNS(* EXCLUDE (__row_id, __seq))::VARCHAR, __row_id, __seq FROM (
         SELECT ${columns},
                COALESCE(${own(ROW_ID)}, ${file.firstRowId}::BIGINT + file_row_number)::VARCHAR AS __row_id,
                COALESCE(${own(SEQ)}, ${f.entry.dataSequenceNumber}::BIGINT)::VARCHAR AS __seq
         FROM read_parquet(${path}, file_row_number = true))`,
    );
    for (const r of found) rows.push(JSON.stringify(r));
  }
  return rows.sort();
}

async function liveFiles(store: LocalObjectStore): Promise<string[]> {
  return liveTestFiles(tableAt(store));
}

describe('compact on a format-v3 Iceberg table whose schema evolved', () => {
  it('rewrite-all projects older files onto the current schema (renamed and promoted int, date → timestamp, dropped column, added columns as their initial-default) into one output of the current schema, rows and row lineage equal', async () => {
    // Prepare: two files under schema 0 (one row's amount and day null, a day before 1970), the ALTER TABLE, two
    // files under schema 1 (every added column with values of its own, or null)
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-v3-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    const oldIds = '{id: 1, amount: 2, day: 3, gone: 4}';
    await appendSelect(
      store,
      'a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT, 2000000000::INTEGER, DATE '2024-02-29', 'x'),
                             (2::BIGINT, NULL::INTEGER, NULL::DATE, 'y')) t(id, amount, day, gone)`,
      oldIds,
    );
    await appendSelect(
      store,
      'b.parquet',
      `SELECT 3::BIGINT AS id, (-3)::INTEGER AS amount, DATE '1960-01-01' AS day, 'z' AS gone`,
      oldIds,
    );
    await evolveToSchema1(store);
    const newIds = `{${SCHEMA_1.fields.map((f) => `"${f.name}": ${f.id}`).join(', ')}}`;
    await appendSelect(
      store,
      'c.parquet',
      `SELECT 4::BIGINT AS id, 9000000000::BIGINT AS total, TIMESTAMP '2025-01-01 12:00:00.5' AS day,
              false AS flag, 4::INTEGER AS n, 4::BIGINT AS big, 0.25::FLOAT AS f, 4.5::DOUBLE AS dbl,
              4.44::DECIMAL(9,2) AS price, DATE '2004-04-04' AS d, TIMESTAMP '2004-04-04 04:04:04' AS ts,
              '2004-04-04 04:04:04+00'::TIMESTAMPTZ AS tstz, 'four' AS s, '\\x04'::BLOB AS bin, 'n4' AS note`,
      newIds,
    );
    await appendSelect(
      store,
      'd.parquet',
      `SELECT 5::BIGINT AS id, NULL::BIGINT AS total, NULL::TIMESTAMP AS day, NULL::BOOLEAN AS flag,
              NULL::INTEGER AS n, NULL::BIGINT AS big, NULL::FLOAT AS f, NULL::DOUBLE AS dbl,
              NULL::DECIMAL(9,2) AS price, NULL::DATE AS d, NULL::TIMESTAMP AS ts, NULL::TIMESTAMPTZ AS tstz,
              NULL::VARCHAR AS s, NULL::BLOB AS bin, NULL::VARCHAR AS note`,
      newIds,
    );
    const inputs = await liveFiles(store);
    const before = await projectedRows(store);
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess: one live data file whose rows, with their lineage, are the inputs' as DuckDB projects them
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(inputs).toHaveLength(4);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    const output = outputs[0] as string;
    expect(inputs).not.toContain(output);
    const after = await projectedRows(store);
    expect(before).toHaveLength(5);
    expect(after).toEqual(before);
    // the defaults themselves, not null, in the rows of files written before the columns existed
    const old = await db.rows(
      `SELECT ${ADDED.map((a) => `"${a.name}"::VARCHAR AS "${a.name}"`).join(', ')}, day::VARCHAR AS day
       FROM read_parquet(${sqlString(output)}) WHERE id = 3`,
    );
    expect(old).toEqual([
      {
        flag: 'true',
        n: '-7',
        big: '9007199254740993',
        f: '1.5',
        dbl: '0.1',
        price: '-14.20',
        d: '2017-11-16',
        ts: '2017-11-16 22:31:08.123456',
        tstz: (await db.scalar(`SELECT ('1969-07-20 20:17:40+00'::TIMESTAMPTZ)::VARCHAR`)) as string,
        s: 'n/a ✓',
        bin: '\\x00\\xFF\\x10',
        note: null,
        day: '1960-01-01 00:00:00',
      },
    ]);
    // every row carries its lineage, each row id once
    const lineage = await db.rows(
      `SELECT count(*) AS n, count(DISTINCT _row_id) AS ids, count(_last_updated_sequence_number) AS seqs
       FROM read_parquet(${sqlString(output)})`,
    );
    expect(lineage.map((r) => [Number(r.n), Number(r.ids), Number(r.seqs)])).toEqual([[5, 5, 5]]);
    // …and the output's schema is exactly the current one (names, field ids, types), then the lineage columns
    const schema = await db.rows(
      `SELECT name, type, logical_type::VARCHAR AS logical, field_id FROM parquet_schema(${sqlString(output)})`,
    );
    expect(schema.slice(1).map((e) => [e.name, Number(e.field_id)])).toEqual([
      ...SCHEMA_1.fields.map((f) => [f.name, f.id]),
      [ROW_ID.name, ROW_ID.id],
      [SEQ.name, SEQ.id],
    ]);
    const types = await db.rows(`DESCRIBE SELECT * FROM read_parquet(${sqlString(output)})`);
    expect(types.map((t) => [t.column_name, t.column_type])).toEqual([
      ['id', 'BIGINT'],
      ['total', 'BIGINT'],
      ['day', 'TIMESTAMP'],
      ['flag', 'BOOLEAN'],
      ['n', 'INTEGER'],
      ['big', 'BIGINT'],
      ['f', 'FLOAT'],
      ['dbl', 'DOUBLE'],
      ['price', 'DECIMAL(9,2)'],
      ['d', 'DATE'],
      ['ts', 'TIMESTAMP'],
      ['tstz', 'TIMESTAMP WITH TIME ZONE'],
      ['s', 'VARCHAR'],
      ['bin', 'BLOB'],
      ['note', 'VARCHAR'],
      [ROW_ID.name, 'BIGINT'],
      [SEQ.name, 'BIGINT'],
    ]);
  });

  it("with the default bin-pack, fills a struct field added with an initial-default inside the older files' structs (a null struct stays null) and a struct column added with {} as its fields' defaults, rows and row lineage equal", async () => {
    // Prepare: p{x int} under schema 0 (one row's p null), then p.y long added with initial-default 7, then a file
    // with p{x, y} of its own values
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-v3-evolution-'));
    const store = new LocalObjectStore(dir);
    const struct0 = {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: false, type: 'long' },
        {
          id: 2,
          name: 'p',
          required: false,
          type: { type: 'struct', fields: [{ id: 3, name: 'x', required: false, type: 'int' }] },
        },
      ],
    };
    const struct1 = {
      ...struct0,
      'schema-id': 1,
      fields: [
        struct0.fields[0],
        {
          id: 2,
          name: 'p',
          required: false,
          type: {
            type: 'struct',
            fields: [
              { id: 3, name: 'x', required: false, type: 'int' },
              { id: 4, name: 'y', required: false, type: 'long', 'initial-default': 7, 'write-default': 7 },
            ],
          },
        },
        {
          id: 5,
          name: 'q',
          required: false,
          'initial-default': {},
          'write-default': {},
          type: {
            type: 'struct',
            fields: [
              { id: 6, name: 'a', required: false, type: 'long', 'initial-default': 5, 'write-default': 5 },
              { id: 7, name: 'b', required: false, type: 'string' },
            ],
          },
        },
      ],
    };
    await createTable(store);
    const hint = async () =>
      Number(new TextDecoder().decode(await store.get(`${NAME}/metadata/version-hint.text`)));
    const setSchemas = async (schemas: object[], current: number) => {
      const v = await hint();
      const latest = JSON.parse(
        new TextDecoder().decode(await store.get(`${NAME}/metadata/v${v}.metadata.json`)),
      ) as Record<string, unknown>;
      await store.put(
        `${NAME}/metadata/v${v + 1}.metadata.json`,
        JSON.stringify({ ...latest, schemas, 'current-schema-id': current, 'last-column-id': 7 }),
      );
      await store.put(`${NAME}/metadata/version-hint.text`, String(v + 1));
    };
    await setSchemas([struct0], 0);
    const oldIds = '{id: 1, p: {__duckdb_field_id: 2, x: 3}}';
    await appendSelect(
      store,
      'a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT, {'x': 10}), (2::BIGINT, NULL)) t(id, p)`,
      oldIds,
    );
    await appendSelect(store, 'b.parquet', `SELECT 3::BIGINT AS id, {'x': NULL::INTEGER} AS p`, oldIds);
    await setSchemas([struct0, struct1], 1);
    await appendSelect(
      store,
      'c.parquet',
      `SELECT 4::BIGINT AS id, {'x': 40, 'y': 400::BIGINT} AS p, {'a': 44::BIGINT, 'b': 'b4'} AS q`,
      '{id: 1, p: {__duckdb_field_id: 2, x: 3, y: 4}, q: {__duckdb_field_id: 5, a: 6, b: 7}}',
    );
    /**
     * Every live row with its lineage (as in projectedRows), p and q as text; in the old files p.y is its default
     * and q the struct of its fields' defaults.
     */
    const rowsNow = async () => {
      const table = await loadTable(store, NAME);
      const files = await readSnapshotFiles(store, table);
      const rows: string[] = [];
      for (const f of files.dataFiles) {
        const path = sqlString(join(dir, f.entry.file.key));
        const names = new Set((await db.rows(`SELECT name FROM parquet_schema(${path})`)).map((r) => r.name));
        const p = names.has('y')
          ? 'p::VARCHAR'
          : `CASE WHEN p IS NULL THEN NULL ELSE {'x': p.x, 'y': 7::BIGINT} END::VARCHAR`;
        const q = names.has('q') ? 'q::VARCHAR' : `{'a': 5::BIGINT, 'b': NULL::VARCHAR}::VARCHAR`;
        const own = (c: { name: string }) => (names.has(c.name) ? `"${c.name}"` : 'NULL');
        const found = await db.rows(
          `SELECT id::VARCHAR AS id, ${p} AS p, ${q} AS q,
                  COALESCE(${own(ROW_ID)}, ${f.entry.file.firstRowId}::BIGINT + file_row_number)::VARCHAR AS r,
                  COALESCE(${own(SEQ)}, ${f.entry.dataSequenceNumber}::BIGINT)::VARCHAR AS s
           FROM read_parquet(${path}, file_row_number = true)`,
        );
        for (const r of found) rows.push(JSON.stringify(r));
      }
      return rows.sort();
    };
    const before = await rowsNow();
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'min-input-files=3'],
      io,
    );

    // Assess: one output of the current struct holding every row as projected, lineage kept
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    const after = await rowsNow();
    expect(before).toHaveLength(4);
    expect(after).toEqual(before);
    const output = sqlString(outputs[0] as string);
    expect(
      await db.rows(
        `SELECT id::VARCHAR AS id, p::VARCHAR AS p, q::VARCHAR AS q FROM read_parquet(${output}) ORDER BY id`,
      ),
    ).toEqual([
      { id: '1', p: "{'x': 10, 'y': 7}", q: "{'a': 5, 'b': NULL}" },
      { id: '2', p: null, q: "{'a': 5, 'b': NULL}" },
      { id: '3', p: "{'x': NULL, 'y': 7}", q: "{'a': 5, 'b': NULL}" },
      { id: '4', p: "{'x': 40, 'y': 400}", q: "{'a': 44, 'b': b4}" },
    ]);
    const schema = await db.rows(`SELECT name, field_id FROM parquet_schema(${output})`);
    expect(schema.slice(1).map((e) => [e.name, Number(e.field_id)])).toEqual([
      ['id', 1],
      ['p', 2],
      ['x', 3],
      ['y', 4],
      ['q', 5],
      ['a', 6],
      ['b', 7],
      [ROW_ID.name, ROW_ID.id],
      [SEQ.name, SEQ.id],
    ]);
  });
  it('writes no column for an unknown-typed column, and reads a column promoted from unknown as null in the files written before, rows and row lineage equal', async () => {
    // Prepare: schema 0 id long (1), w unknown (2) — never stored —; schema 1 promotes w to long and adds u unknown (3)
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-v3-evolution-'));
    const store = new LocalObjectStore(dir);
    const id = { id: 1, name: 'id', required: false, type: 'long' };
    const unknown0 = {
      type: 'struct',
      'schema-id': 0,
      fields: [id, { id: 2, name: 'w', required: false, type: 'unknown' }],
    };
    const unknown1 = {
      type: 'struct',
      'schema-id': 1,
      fields: [
        id,
        { id: 2, name: 'w', required: false, type: 'long' },
        { id: 3, name: 'u', required: false, type: 'unknown' },
      ],
    };
    await createTable(store);
    const setSchemas = async (schemas: object[], current: number) => {
      const v = Number(new TextDecoder().decode(await store.get(`${NAME}/metadata/version-hint.text`)));
      const latest = JSON.parse(
        new TextDecoder().decode(await store.get(`${NAME}/metadata/v${v}.metadata.json`)),
      ) as Record<string, unknown>;
      await store.put(
        `${NAME}/metadata/v${v + 1}.metadata.json`,
        JSON.stringify({ ...latest, schemas, 'current-schema-id': current, 'last-column-id': 3 }),
      );
      await store.put(`${NAME}/metadata/version-hint.text`, String(v + 1));
    };
    await setSchemas([unknown0], 0);
    await appendSelect(
      store,
      'a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT), (2::BIGINT)) t(id)`,
      '{id: 1}',
    );
    await setSchemas([unknown0, unknown1], 1);
    await appendSelect(
      store,
      'b.parquet',
      `SELECT * FROM (VALUES (3::BIGINT, 30::BIGINT), (4::BIGINT, NULL::BIGINT)) t(id, w)`,
      '{id: 1, w: 2}',
    );
    /** Every live row: id, w (null where the file lacks it), u (always null), lineage by the spec's rule. */
    const rowsNow = async () => {
      const files = await readSnapshotFiles(store, await loadTable(store, NAME));
      const rows: string[] = [];
      for (const f of files.dataFiles) {
        const path = sqlString(join(dir, f.entry.file.key));
        const names = new Set((await db.rows(`SELECT name FROM parquet_schema(${path})`)).map((r) => r.name));
        const own = (c: { name: string }) => (names.has(c.name) ? `"${c.name}"` : 'NULL');
        const found = await db.rows(
          `SELECT id::VARCHAR AS id, ${own({ name: 'w' })}::VARCHAR AS w, ${own({ name: 'u' })}::VARCHAR AS u,
                  COALESCE(${own(ROW_ID)}, ${f.entry.file.firstRowId}::BIGINT + file_row_number)::VARCHAR AS r,
                  COALESCE(${own(SEQ)}, ${f.entry.dataSequenceNumber}::BIGINT)::VARCHAR AS s
           FROM read_parquet(${path}, file_row_number = true)`,
        );
        for (const r of found) rows.push(JSON.stringify(r));
      }
      return rows.sort();
    };
    const before = await rowsNow();
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess: one output of id, w and the lineage columns (no u), every row as before
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    expect(before).toHaveLength(4);
    expect(await rowsNow()).toEqual(before);
    const output = sqlString(outputs[0] as string);
    const schema = await db.rows(`SELECT name, field_id FROM parquet_schema(${output})`);
    expect(schema.slice(1).map((e) => [e.name, Number(e.field_id)])).toEqual([
      ['id', 1],
      ['w', 2],
      [ROW_ID.name, ROW_ID.id],
      [SEQ.name, SEQ.id],
    ]);
    expect(
      await db.rows(`SELECT id::VARCHAR AS id, w::VARCHAR AS w FROM read_parquet(${output}) ORDER BY id`),
    ).toEqual([
      { id: '1', w: null },
      { id: '2', w: null },
      { id: '3', w: '30' },
      { id: '4', w: null },
    ]);
  });
  it('projects date → timestamp_ns (each day its midnight in nanoseconds) and writes timestamp_ns / timestamptz_ns columns and defaults exactly as INT64 TIMESTAMP(NANOS), rows and row lineage equal', async () => {
    // Prepare: two files under schema 0 (a day before 1970, a null); schema 2 promotes day to timestamp_ns and adds
    // tn timestamp_ns and tzn timestamptz_ns (default at another offset than UTC); a file of tn's own nanoseconds
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-v3-evolution-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    const oldIds = '{id: 1, amount: 2, day: 3, gone: 4}';
    await appendSelect(
      store,
      'a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT, 1::INTEGER, DATE '2024-02-29', 'x'),
                             (2::BIGINT, 2::INTEGER, NULL::DATE, 'y'),
                             (3::BIGINT, 3::INTEGER, DATE '1969-12-31', 'z')) t(id, amount, day, gone)`,
      oldIds,
    );
    const schema2 = {
      type: 'struct',
      'schema-id': 2,
      fields: [
        { id: 1, name: 'id', required: false, type: 'long' },
        { id: 2, name: 'amount', required: false, type: 'int' },
        { id: 3, name: 'day', required: false, type: 'timestamp_ns' },
        { id: 4, name: 'gone', required: false, type: 'string' },
        {
          id: 17,
          name: 'tn',
          required: false,
          type: 'timestamp_ns',
          'initial-default': '2017-11-16T22:31:08.123456789',
          'write-default': '2017-11-16T22:31:08.123456789',
        },
        {
          id: 18,
          name: 'tzn',
          required: false,
          type: 'timestamptz_ns',
          'initial-default': '2017-11-16T23:31:08.000000001+01:00',
          'write-default': '2017-11-16T23:31:08.000000001+01:00',
        },
      ],
    };
    const v = Number(new TextDecoder().decode(await store.get(`${NAME}/metadata/version-hint.text`)));
    const latest = JSON.parse(
      new TextDecoder().decode(await store.get(`${NAME}/metadata/v${v}.metadata.json`)),
    ) as Record<string, unknown>;
    await store.put(
      `${NAME}/metadata/v${v + 1}.metadata.json`,
      JSON.stringify({
        ...latest,
        schemas: [SCHEMA_0, schema2],
        'current-schema-id': 2,
        'last-column-id': 18,
      }),
    );
    await store.put(`${NAME}/metadata/version-hint.text`, String(v + 1));
    await appendSelect(
      store,
      'b.parquet',
      `SELECT 4::BIGINT AS id, 4::INTEGER AS amount, '2001-02-03 04:05:06.123456789'::TIMESTAMP_NS AS day, 'w' AS gone,
              '1960-01-01 00:00:00.000000001'::TIMESTAMP_NS AS tn`,
      '{id: 1, amount: 2, day: 3, gone: 4, tn: 17}',
    );
    /** Every live row: day and tn as their nanoseconds since 1970 (DuckDB's epoch_ns), tzn's int64, lineage. */
    const rowsNow = async () => {
      const files = await readSnapshotFiles(store, await loadTable(store, NAME));
      const rows: string[] = [];
      for (const f of files.dataFiles) {
        const path = sqlString(join(dir, f.entry.file.key));
        const types = new Map(
          (await db.rows(`DESCRIBE SELECT * FROM read_parquet(${path})`)).map((r) => [
            r.column_name,
            r.column_type,
          ]),
        );
        const own = (c: { name: string }) => (types.has(c.name) ? `"${c.name}"` : 'NULL');
        // The oracle's own reading: a DATE is its midnight (DuckDB's cast), a missing column the default's literal
        const day = types.get('day') === 'DATE' ? 'epoch_ns(day::TIMESTAMP_NS)' : 'epoch_ns(day)';
        const tn = types.has('tn')
          ? 'epoch_ns(tn)'
          : `epoch_ns('2017-11-16 22:31:08.123456789'::TIMESTAMP_NS)`;
        const found = await db.rows(
          `SELECT id::VARCHAR AS id, ${day}::VARCHAR AS day, ${tn}::VARCHAR AS tn,
                  COALESCE(${own(ROW_ID)}, ${f.entry.file.firstRowId}::BIGINT + file_row_number)::VARCHAR AS r,
                  COALESCE(${own(SEQ)}, ${f.entry.dataSequenceNumber}::BIGINT)::VARCHAR AS s
           FROM read_parquet(${path}, file_row_number = true)`,
        );
        for (const r of found) rows.push(JSON.stringify(r));
      }
      return rows.sort();
    };
    const before = await rowsNow();
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess: one output; every row's day and tn to the nanosecond, lineage equal
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    expect(before).toHaveLength(4);
    expect(await rowsNow()).toEqual(before);
    const output = sqlString(outputs[0] as string);
    // day, tn and tzn are INT64 TIMESTAMP(NANOS), tzn adjusted to UTC
    const schema = await db.rows(
      `SELECT name, type, logical_type::VARCHAR AS logical FROM parquet_schema(${output}) WHERE name IN ('day', 'tn', 'tzn') ORDER BY name`,
    );
    expect(
      schema.map((e) => [
        e.name,
        e.type,
        /NANOS=NanoSeconds\(\)/.test(String(e.logical)),
        /isAdjustedToUTC=1/.test(String(e.logical)),
      ]),
    ).toEqual([
      ['day', 'INT64', true, false],
      ['tn', 'INT64', true, false],
      ['tzn', 'INT64', true, true],
    ]);
    // the values and defaults to the nanosecond
    const raw = await db.rows(
      `SELECT id::VARCHAR AS id, epoch_ns(tn)::VARCHAR AS tn, epoch_ns(day)::VARCHAR AS day
       FROM read_parquet(${output}) ORDER BY id`,
    );
    expect(raw).toEqual([
      { id: '1', tn: '1510871468123456789', day: '1709164800000000000' },
      { id: '2', tn: '1510871468123456789', day: null },
      { id: '3', tn: '1510871468123456789', day: '-86400000000000' },
      { id: '4', tn: '-315619199999999999', day: '981173106123456789' },
    ]);
    // DuckDB reads a zoned nanosecond column in microseconds: the stored int64s themselves, decoded by arrow-rs
    const decoded = tableFromIPC(
      pw.readParquet(new Uint8Array(await readFile(outputs[0] as string))).intoIPCStream(),
    );
    const tzn = decoded.getChild('tzn');
    expect(String(tzn?.type)).toBe('Timestamp<NANOSECOND, UTC>');
    expect([...new Set(tzn?.data.flatMap((d) => [...(d.values as BigInt64Array)]))]).toEqual([
      1510871468000000001n,
    ]);
  });
});
