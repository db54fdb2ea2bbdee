// `lake-compactor plan|compact --schema-evolution union` on a Hive-style folder whose partition lived through an
// added column and an int → long widening: compacted with `union` into one file of the union schema holding the
// inputs' rows (DuckDB's own union by name is the oracle, nulls for the column old files lack), TINYINT and SMALLINT
// files widened with their wider populations likewise and an unsigned byte refused; without it the two
// schema populations stay apart as always; a type change that is not a widening is refused naming file and column,
// with no byte changed; and the flag is refused on a table whose own schema decides.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  type Data,
  Field,
  Int32,
  Int64,
  List,
  Map_,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { missingRows } from '../support/multiset.js';

let root: string;
let partition: string;
let db: DuckDb;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-schema-union-'));
  partition = join(root, 'events', 'date=2024-01-01');
  await mkdir(partition, { recursive: true });
  db = await openDuckDb();
});

afterEach(async () => {
  db.close();
  await rm(root, { recursive: true, force: true });
});

/** Three files before the change (id INTEGER, name) and three after it (id BIGINT, name, score DOUBLE). */
async function writeTwoPopulations(): Promise<void> {
  for (let i = 0; i < 3; i++) {
    await db.writeParquet(
      `SELECT (range + ${i * 10})::INTEGER AS id, 'old-' || range || '-${i}' AS name FROM range(4)`,
      join(partition, `part-a${i}.parquet`),
    );
    await db.writeParquet(
      `SELECT (range + 3000000000 + ${i * 10})::BIGINT AS id, 'new-' || range || '-${i}' AS name, CASE WHEN range = 1 THEN NULL ELSE range * 1.5 END::DOUBLE AS score FROM range(5)`,
      join(partition, `part-b${i}.parquet`),
    );
  }
}

async function dataFiles(): Promise<string[]> {
  return (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
}

/** Every row of the partition's files as DuckDB reads them unified by name, one JSON text per row. */
async function unionRows(): Promise<string[]> {
  const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
  const rows = await db.rows(
    `SELECT id, name, score FROM read_parquet([${files}], union_by_name = true, hive_partitioning = false) ORDER BY name`,
  );
  return rows.map((r) => JSON.stringify(r));
}

async function columnsOf(name: string): Promise<string[]> {
  const types = await db.columnTypes(
    `SELECT * FROM read_parquet(${sqlString(join(partition, name))}, hive_partitioning = false)`,
  );
  return types.map((t) => `${t.name} ${t.type}`);
}

describe('lake-compactor compact --schema-evolution union (Hive-style Parquet)', () => {
  it('compacts two schema populations into one file of the union schema holding exactly the inputs’ rows', async () => {
    // Prepare
    await writeTwoPopulations();
    const before = await unionRows();

    // Act
    const code = await run(
      ['compact', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '3'],
      captureIo(),
    );

    // Assess
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(1);
    expect(await columnsOf(after[0] as string)).toEqual(['id BIGINT', 'name VARCHAR', 'score DOUBLE']);
    const rows = await unionRows();
    expect(rows).toHaveLength(27);
    expect(missingRows(before, rows)).toEqual([]);
    expect(missingRows(rows, before)).toEqual([]);
    // The old files' rows carry nulls for the column they lacked, their ids widened.
    expect(rows).toContain(JSON.stringify({ id: '10', name: 'old-0-1', score: null }));
  });

  it('unifies populations holding uuid and time columns into one file that keeps them UUID and TIME(MICROS) (the annotation given back after the write), exactly the inputs’ rows', async () => {
    // Prepare: three files (id, u UUID, t TIME) and three that added note VARCHAR, a null row among them
    for (let i = 0; i < 3; i++) {
      await db.writeParquet(
        `SELECT range + ${i * 10} AS id, CASE WHEN range = 1 THEN NULL ELSE uuid() END AS u, TIME '01:02:03.000004' + INTERVAL (range) SECOND AS t FROM range(3)`,
        join(partition, `part-a${i}.parquet`),
      );
      await db.writeParquet(
        `SELECT range + ${100 + i * 10} AS id, uuid() AS u, NULL::TIME AS t, 'n' || range AS note FROM range(2)`,
        join(partition, `part-b${i}.parquet`),
      );
    }
    const read = async () => {
      const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
      return (
        await db.rows(
          `SELECT id::VARCHAR AS id, u::VARCHAR AS u, t::VARCHAR AS t, note FROM read_parquet([${files}], union_by_name = true, hive_partitioning = false)`,
        )
      )
        .map((r) => JSON.stringify(r))
        .sort();
    };
    const before = await read();

    // Act
    const code = await run(
      ['compact', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '3'],
      captureIo(),
    );

    // Assess: one file, the same rows, u still a UUID and t a TIME to DuckDB
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(1);
    expect(await columnsOf(after[0] as string)).toEqual(['id BIGINT', 'u UUID', 't TIME', 'note VARCHAR']);
    expect(before).toHaveLength(15);
    expect(await read()).toEqual(before);
    const logical = await db.rows(
      `SELECT name, logical_type::VARCHAR AS l FROM parquet_schema(${sqlString(join(partition, after[0] as string))}) WHERE name IN ('u', 't')`,
    );
    expect(logical.map((e) => [e.name, String(e.l).replace(/\(.*/, '')])).toEqual([
      ['u', 'UUIDType'],
      ['t', 'TimeType'],
    ]);
  });

  it('unifies populations holding list and map columns — one writer naming the list element `item` — into one file of the union schema, exactly the inputs’ rows', async () => {
    // Prepare: three files (id, tags VARCHAR[], m MAP) by DuckDB, with null, empty and holed lists, a null map and a
    // null value; three that added note VARCHAR, written by parquet-wasm from Arrow with the list element `item`
    for (let i = 0; i < 3; i++) {
      await db.writeParquet(
        `SELECT range + ${i * 10} AS id,
           CASE range WHEN 0 THEN NULL WHEN 1 THEN []::VARCHAR[] ELSE ['t' || range, NULL] END AS tags,
           CASE range WHEN 1 THEN NULL ELSE MAP {'k' || range: range::INTEGER, 'z': NULL::INTEGER} END AS m
         FROM range(3)`,
        join(partition, `part-a${i}.parquet`),
      );
      const schema = new Schema([
        new Field('id', new Int64(), true),
        new Field('tags', new List(new Field('item', new Utf8(), true)), true),
        new Field(
          'm',
          new Map_(
            new Field(
              'entries',
              new Struct([
                new Field('key', new Utf8(), false),
                new Field('value', new Int32(), true),
              ] as never[]),
              false,
            ),
          ),
          true,
        ),
        new Field('note', new Utf8(), true),
      ]);
      const rows = [
        { id: BigInt(100 + i), tags: [`u${i}`, null], m: new Map([[`n${i}`, i]]), note: `n${i}` },
        { id: BigInt(200 + i), tags: null, m: null, note: null },
      ];
      const children = schema.fields.map(
        (f) =>
          vectorFromArray(rows.map((r) => r[f.name as keyof (typeof rows)[number]]) as never[], f.type)
            .data[0] as Data,
      );
      const batch = new RecordBatch(
        schema,
        makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }),
      );
      await writeFile(
        join(partition, `part-b${i}.parquet`),
        pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(new Table([batch]), 'stream'))),
      );
    }
    const read = async () => {
      const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
      return (
        await db.rows(
          `SELECT id::VARCHAR AS id, tags::VARCHAR AS tags, m::VARCHAR AS m, note FROM read_parquet([${files}], union_by_name = true, hive_partitioning = false)`,
        )
      )
        .map((r) => JSON.stringify(r))
        .sort();
    };
    const before = await read();

    // Act
    const code = await run(
      ['compact', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '3'],
      captureIo(),
    );

    // Assess: one file, the same rows, the list and map in their standard forms
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(1);
    expect(before).toHaveLength(15);
    expect(await read()).toEqual(before);
    expect(before).toContain(
      JSON.stringify({ id: '2', tags: '[t2, NULL]', m: '{k2=2, z=NULL}', note: null }),
    );
    expect(before).toContain(JSON.stringify({ id: '101', tags: '[u1, NULL]', m: '{n1=1}', note: 'n1' }));
    expect(await columnsOf(after[0] as string)).toEqual([
      'id BIGINT',
      'tags VARCHAR[]',
      'm MAP(VARCHAR, INTEGER)',
      'note VARCHAR',
    ]);
    const levels = await db.rows(
      `SELECT name FROM parquet_schema(${sqlString(join(partition, after[0] as string))}) WHERE name IN ('list', 'element', 'item', 'key_value')`,
    );
    expect(levels.map((e) => e.name)).toEqual(['list', 'element', 'key_value']);
  });

  it('sorts two schema populations into one file of the union schema, rows in key order, exactly the inputs’ rows', async () => {
    // Prepare
    await writeTwoPopulations();
    const before = await unionRows();

    // Act
    const code = await run(
      [
        'compact',
        join(root, 'events'),
        '--schema-evolution',
        'union',
        '--min-input-files',
        '3',
        '--strategy',
        'sort',
        '--columns',
        'name',
      ],
      captureIo(),
    );

    // Assess: one file of the union schema, its rows (in file order) sorted by name, the multiset unchanged
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(1);
    expect(await columnsOf(after[0] as string)).toEqual(['id BIGINT', 'name VARCHAR', 'score DOUBLE']);
    const rows = await unionRows();
    expect(rows).toHaveLength(27);
    expect(missingRows(before, rows)).toEqual([]);
    expect(missingRows(rows, before)).toEqual([]);
    const names = (
      await db.rows(
        `SELECT name FROM read_parquet(${sqlString(join(partition, after[0] as string))}, hive_partitioning = false)`,
      )
    ).map((r) => r.name as string);
    expect(names).toEqual([...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))));
  });

  it('widens TINYINT and SMALLINT files (INT(8), INT(16) annotated INT32) with their wider populations into one file holding exactly the inputs’ rows', async () => {
    // Prepare: DuckDB writes TINYINT as INT32 INT(8) and SMALLINT as INT32 INT(16); b goes byte → short, c byte → bigint
    const populations = [
      ['TINYINT', 'TINYINT'],
      ['SMALLINT', 'INTEGER'],
      ['SMALLINT', 'BIGINT'],
    ];
    for (const [p, [b, c]] of populations.entries())
      for (let i = 0; i < 2; i++)
        await db.writeParquet(
          `SELECT (range + ${p * 10 + i})::${b} AS b, (CASE WHEN range = 2 THEN NULL ELSE -range - ${p * 10 + i} END)::${c} AS c,
                  'p${p}-' || range || '-${i}' AS name FROM range(4)`,
          join(partition, `part-${p}${i}.parquet`),
        );
    const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
    const rowsNow = async (list: string) =>
      (
        await db.rows(
          `SELECT b::BIGINT AS b, c::BIGINT AS c, name FROM read_parquet([${list}], union_by_name = true, hive_partitioning = false)`,
        )
      )
        .map((r) => JSON.stringify(r))
        .sort();
    const before = await rowsNow(files);

    // Act
    const code = await run(
      ['compact', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '3'],
      captureIo(),
    );

    // Assess: one file, b widened to SMALLINT (its widest), c to BIGINT; the rows are the inputs'
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(1);
    expect(await columnsOf(after[0] as string)).toEqual(['b SMALLINT', 'c BIGINT', 'name VARCHAR']);
    const rows = await rowsNow(sqlString(join(partition, after[0] as string)));
    expect(rows).toHaveLength(24);
    expect(missingRows(before, rows)).toEqual([]);
    expect(missingRows(rows, before)).toEqual([]);
  });

  it('refuses an unsigned byte beside signed ones, naming file and column, and changes no byte', async () => {
    // Prepare: UTINYINT is INT32 annotated INT(8, unsigned), no widening of a signed byte
    for (let i = 0; i < 2; i++)
      await db.writeParquet(`SELECT range::TINYINT AS b FROM range(3)`, join(partition, `s${i}.parquet`));
    await db.writeParquet(`SELECT range::UTINYINT AS b FROM range(3)`, join(partition, 'u0.parquet'));
    await db.writeParquet(`SELECT range::SMALLINT AS b FROM range(3)`, join(partition, 'w0.parquet'));
    const names = await dataFiles();
    const bytes = await Promise.all(names.map((n) => readFile(join(partition, n))));
    const planIo = captureIo();

    // Act
    const planCode = await run(
      ['plan', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '5', '--json'],
      planIo,
    );

    // Assess
    expect(planCode).toBe(0);
    const plan = JSON.parse(planIo.stdout.join('\n')) as {
      partitions: { skipped: { key: string; reason: string }[] }[];
    };
    const reasons = new Map(plan.partitions[0]?.skipped.map((s) => [s.key.split('/').pop(), s.reason]));
    expect(reasons.get('u0.parquet')).toMatch(
      /u0\.parquet cannot join .*column b: its INT32 .* type is not one the union describes/,
    );
    expect(reasons.get('s0.parquet')).not.toContain('cannot join');
    const after = await Promise.all(names.map((n) => readFile(join(partition, n))));
    expect(after.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(names.map(() => true));
  });

  it('leaves the populations apart without the option: each compacts in its own schema, as always', async () => {
    // Prepare
    await writeTwoPopulations();
    const before = await unionRows();

    // Act
    const code = await run(['compact', join(root, 'events'), '--min-input-files', '3'], captureIo());

    // Assess
    expect(code).toBe(0);
    const after = await dataFiles();
    expect(after).toHaveLength(2);
    const schemas = await Promise.all(after.map((n) => columnsOf(n)));
    expect(schemas.map((s) => s.join(', ')).sort()).toEqual([
      'id BIGINT, name VARCHAR, score DOUBLE',
      'id INTEGER, name VARCHAR',
    ]);
    const rows = await unionRows();
    expect(missingRows(before, rows)).toEqual([]);
    expect(missingRows(rows, before)).toEqual([]);
  });

  it('refuses a type change that is not a widening, naming file and column, and changes no byte', async () => {
    // Prepare
    await db.writeParquet(
      `SELECT range::INTEGER AS id, 'a' AS v FROM range(3)`,
      join(partition, 'x1.parquet'),
    );
    await db.writeParquet(
      `SELECT range::INTEGER AS id, 'b' AS v, 7::INTEGER AS extra FROM range(3)`,
      join(partition, 'x2.parquet'),
    );
    await db.writeParquet(
      `SELECT range::INTEGER AS id, 42::INTEGER AS v FROM range(3)`,
      join(partition, 'x3.parquet'),
    );
    const names = await dataFiles();
    const bytes = await Promise.all(names.map((n) => readFile(join(partition, n))));
    const planIo = captureIo();

    // Act
    const planCode = await run(
      ['plan', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '2', '--json'],
      planIo,
    );
    const compactCode = await run(
      ['compact', join(root, 'events'), '--schema-evolution', 'union', '--min-input-files', '2'],
      captureIo(),
    );

    // Assess
    expect(planCode).toBe(0);
    const plan = JSON.parse(planIo.stdout.join('\n')) as {
      partitions: { groups: unknown[]; skipped: { key: string; reason: string }[] }[];
    };
    expect(plan.partitions[0]?.groups).toEqual([]);
    const reasons = new Map(plan.partitions[0]?.skipped.map((s) => [s.key.split('/').pop(), s.reason]));
    expect(reasons.get('x1.parquet')).toMatch(
      /x1\.parquet cannot join .*column v: it is string here but int32 in .*x3\.parquet/,
    );
    expect(reasons.get('x3.parquet')).toMatch(
      /x3\.parquet cannot join .*column v: it is int32 here but string in /,
    );
    expect(reasons.get('x2.parquet')).toContain('column v:');
    expect(compactCode).toBe(0);
    expect(await dataFiles()).toEqual(names);
    const after = await Promise.all(names.map((n) => readFile(join(partition, n))));
    expect(after.map((b, i) => b.equals(bytes[i] as Buffer))).toEqual(names.map(() => true));
  });

  it('refuses the flag on a table whose own schema decides, before anything is listed', async () => {
    // Prepare
    const io = captureIo();

    // Act
    const code = await run(
      ['plan', join(root, 'events'), '--format', 'iceberg', '--schema-evolution', 'union'],
      io,
    );

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain('--schema-evolution applies to Hive-style Parquet tables');
  });
});
