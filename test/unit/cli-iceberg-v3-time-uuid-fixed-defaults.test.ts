// Columns of Iceberg's `time`, `uuid` and `fixed[N]` types added to a format-v3 table with an `initial-default`, through
// `lake-compactor compact --format iceberg`: the files written before the ALTER TABLE are projected with the default
// in every row (Appendix D: a time as `HH:MM:SS.ffffff`, a uuid as its canonical text, a fixed as hex), and the output
// stores each column exactly as the current schema says — time as INT64 TIME(MICROS, not adjusted to UTC), uuid as
// FIXED_LEN_BYTE_ARRAY(16) annotated UUID, fixed[N] as FIXED_LEN_BYTE_ARRAY(N) — with its field id. DuckDB is the
// oracle: it reads each input with the defaults spelled as its own SQL literals, and the outputs as they are stored (a
// uuid column without its annotation would read as a BLOB, not the same text). A default that is not its type's
// JSON single value leaves the older files alone, named, no byte of the table changed.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Field,
  FixedSizeBinary,
  Int32,
  Int64,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimeMicrosecond,
  tableToIPC,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { withUuidAnnotations } from '../../functions/core/parquet/uuid-annotation.js';
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

const NAME = 'typed_v3';
const NOW = Date.UTC(2026, 2, 1);

/** Schema 0: id long (1), amount int (2). */
const SCHEMA_0 = {
  type: 'struct',
  'schema-id': 0,
  fields: [
    { id: 1, name: 'id', required: false, type: 'long' },
    { id: 2, name: 'amount', required: false, type: 'int' },
  ],
};

/** The columns schema 1 adds: type, `initial-default` (JSON single value) and the oracle's SQL literal of it. */
const ADDED = [
  { id: 3, name: 't', type: 'time', initial: '22:31:08.123456', sql: "TIME '22:31:08.123456'" },
  {
    id: 4,
    name: 'u',
    type: 'uuid',
    initial: 'f79c3e09-677c-4bbd-a479-3f349cb785e7',
    sql: "'f79c3e09-677c-4bbd-a479-3f349cb785e7'::UUID",
  },
  { id: 5, name: 'fx', type: 'fixed[3]', initial: '00ff10', sql: "'\\x00\\xFF\\x10'::BLOB" },
] as const;

/** Schema 1: schema 0 and ADDED, each with `initial-default` (and `write-default`) as `defaults` gives them. */
function schema1(defaults: Readonly<Record<string, unknown>> = {}) {
  return {
    type: 'struct',
    'schema-id': 1,
    fields: [
      ...SCHEMA_0.fields,
      ...ADDED.map((a) => {
        const initial = a.name in defaults ? defaults[a.name] : a.initial;
        return {
          id: a.id,
          name: a.name,
          required: false,
          type: a.type,
          'initial-default': initial,
          'write-default': initial,
        };
      }),
    ],
  };
}

let db: DuckDb;
let dir: string;

beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The table at `<dir>/typed_v3`, as the shared helpers take it. */
function tableAt(store: LocalObjectStore): TestTable {
  return { store, dir, name: NAME, now: NOW };
}

/** An unpartitioned format-v3 table with `schema` (schema 0 unless given) and no snapshot. */
async function createTable(
  store: LocalObjectStore,
  schema: { readonly fields: readonly { id: number }[] } = SCHEMA_0,
): Promise<void> {
  await mkdir(join(dir, NAME, 'data'), { recursive: true });
  await createTestTable(tableAt(store), {
    formatVersion: 3,
    tableUuid: '0d4c3f1e-2b1a-4c5d-8e7f-9a0b1c2d3e4f',
    schemas: [{ ...schema, 'schema-id': 0 }],
    lastColumnId: Math.max(...schema.fields.map((f) => f.id)),
  });
}

/** ALTER TABLE to `schema`: a new metadata version naming it current. */
async function evolve(store: LocalObjectStore, schema: ReturnType<typeof schema1>): Promise<void> {
  await evolveTestTable(tableAt(store), [SCHEMA_0, schema], 1, 5);
}

async function append(store: LocalObjectStore, file: string): Promise<void> {
  await appendTestFile(tableAt(store), `${NAME}/data/${file}`);
}

/** Two files under schema 0, written by DuckDB with field ids (one row's amount null). */
async function appendOldFiles(store: LocalObjectStore): Promise<void> {
  for (const [file, select] of [
    [
      'a.parquet',
      `SELECT * FROM (VALUES (1::BIGINT, 10::INTEGER), (2::BIGINT, NULL::INTEGER)) t(id, amount)`,
    ],
    ['b.parquet', `SELECT 3::BIGINT AS id, (-3)::INTEGER AS amount`],
  ] as const) {
    await db.writeParquet(select, join(dir, NAME, 'data', file), {
      extraOptions: ['FIELD_IDS {id: 1, amount: 2}'],
    });
    await append(store, file);
  }
}

/**
 * A file of schema 1 with values of its own (a second row all null but its id), as an Arrow writer stores these
 * types, its uuid column annotated UUID as Iceberg's writers do. DuckDB writes no fixed-length binary of 3 bytes.
 */
async function appendCurrentFile(store: LocalObjectStore): Promise<void> {
  const meta = (id: number) => new Map([['PARQUET:field_id', String(id)]]);
  const fields = [
    new Field('id', new Int64(), true, meta(1)),
    new Field('amount', new Int32(), true, meta(2)),
    new Field('t', new TimeMicrosecond(), true, meta(3)),
    new Field('u', new FixedSizeBinary(16), true, meta(4)),
    new Field('fx', new FixedSizeBinary(3), true, meta(5)),
  ];
  const n = 2;
  const valid = Uint8Array.of(0b01);
  const children = [
    makeData({ type: fields[0]?.type as Int64, length: n, nullCount: 0, data: BigInt64Array.of(4n, 5n) }),
    makeData({
      type: fields[1]?.type as Int32,
      length: n,
      nullCount: 1,
      nullBitmap: valid,
      data: Int32Array.of(40, 0),
    }),
    makeData({
      type: fields[2]?.type as TimeMicrosecond,
      length: n,
      nullCount: 1,
      nullBitmap: valid,
      data: BigInt64Array.of(1n, 0n),
    }),
    makeData({
      type: fields[3]?.type as FixedSizeBinary,
      length: n,
      nullCount: 1,
      nullBitmap: valid,
      data: Uint8Array.from([
        ...Buffer.from('00112233445566778899aabbccddeeff', 'hex'),
        ...new Uint8Array(16),
      ]),
    }),
    makeData({
      type: fields[4]?.type as FixedSizeBinary,
      length: n,
      nullCount: 1,
      nullBitmap: valid,
      data: Uint8Array.of(1, 2, 3, 0, 0, 0),
    }),
  ];
  const schema = new Schema(fields);
  const struct = makeData({ type: new Struct(schema.fields), length: n, nullCount: 0, children });
  const ipc = tableToIPC(new Table([new RecordBatch(schema, struct)]), 'stream');
  const bytes = withUuidAnnotations(pw.writeParquet(pw.Table.fromIPCStream(ipc)), [['u']]);
  await store.put(`${NAME}/data/c.parquet`, bytes);
  await append(store, 'c.parquet');
}

/** Every live row as JSON text, schema 1's columns as DuckDB reads them (a file's missing columns: the literals). */
async function projectedRows(store: LocalObjectStore): Promise<string[]> {
  const files = await readSnapshotFiles(store, await loadTable(store, NAME));
  const rows: string[] = [];
  for (const f of files.dataFiles) {
    const path = sqlString(join(dir, f.entry.file.key));
    const ids = new Set(
      (await db.rows(`SELECT field_id::VARCHAR AS id FROM parquet_schema(${path})`)).map((r) => String(r.id)),
    );
    const columns = ADDED.map(
      (a) => `${ids.has(String(a.id)) ? `"${a.name}"` : a.sql}::VARCHAR AS "${a.name}"`,
    );
    for (const r of await db.rows(
      `SELECT id::VARCHAR AS id, amount::VARCHAR AS amount, ${columns.join(', ')} FROM read_parquet(${path})`,
    ))
      rows.push(JSON.stringify(r));
  }
  return rows.sort();
}

async function liveFiles(store: LocalObjectStore): Promise<string[]> {
  return liveTestFiles(tableAt(store));
}

/** Every string inside a JSON value. */
function stringsOf(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (typeof value !== 'object' || value === null) return [];
  return Object.values(value).flatMap(stringsOf);
}

describe('compact on a format-v3 Iceberg table that added time, uuid and fixed columns with an initial-default', () => {
  it('projects the older files with the defaults in every row into one output storing each column as the current schema says (field ids, physical and logical types), rows equal', async () => {
    // Prepare: two files under schema 0, the ALTER TABLE adding t, u and fx with defaults, one file of schema 1
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-typed-defaults-'));
    const store = new LocalObjectStore(dir);
    await createTable(store);
    await appendOldFiles(store);
    await evolve(store, schema1());
    await appendCurrentFile(store);
    const inputs = await liveFiles(store);
    const before = await projectedRows(store);
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
      io,
    );

    // Assess: one output, the rows DuckDB reads from it equal the inputs' projected by DuckDB itself
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(inputs).toHaveLength(3);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    expect(inputs).not.toContain(outputs[0]);
    expect(before).toHaveLength(5);
    expect(await projectedRows(store)).toEqual(before);
    // the defaults themselves in every row of the older files, the current file's own values (and nulls) kept
    const output = sqlString(outputs[0] as string);
    expect(
      await db.rows(
        `SELECT id::VARCHAR AS id, t::VARCHAR AS t, u::VARCHAR AS u, fx::VARCHAR AS fx FROM read_parquet(${output}) ORDER BY id`,
      ),
    ).toEqual([
      ...['1', '2', '3'].map((id) => ({
        id,
        t: '22:31:08.123456',
        u: 'f79c3e09-677c-4bbd-a479-3f349cb785e7',
        fx: '\\x00\\xFF\\x10',
      })),
      { id: '4', t: '00:00:00.000001', u: '00112233-4455-6677-8899-aabbccddeeff', fx: '\\x01\\x02\\x03' },
      { id: '5', t: null, u: null, fx: null },
    ]);
    // each column stored exactly as schema 1 says, with its field id, then the row lineage columns
    const stored = await db.rows(
      `SELECT name, field_id::VARCHAR AS id, type, type_length::VARCHAR AS length, logical_type::VARCHAR AS logical
       FROM parquet_schema(${output}) WHERE name IN ('id', 'amount', 't', 'u', 'fx')`,
    );
    expect(stored.map((e) => [e.name, e.id, e.type, e.length])).toEqual([
      ['id', '1', 'INT64', null],
      ['amount', '2', 'INT32', null],
      ['t', '3', 'INT64', null],
      ['u', '4', 'FIXED_LEN_BYTE_ARRAY', '16'],
      ['fx', '5', 'FIXED_LEN_BYTE_ARRAY', '3'],
    ]);
    const logical = new Map(stored.map((e) => [e.name, e.logical]));
    expect(logical.get('t')).toMatch(
      /^TimeType\(isAdjustedToUTC=0, unit=TimeUnit\(.*MICROS=MicroSeconds\(\)/,
    );
    expect(logical.get('u')).toBe('UUIDType()');
    expect(logical.get('fx')).toBeNull();
  });

  it.each([
    ['u', 'f79c3e09677c4bbda4793f349cb785e7', 'is not a uuid', 'canonical 8-4-4-4-12'],
    ['t', '22:31:08.123456789', 'is not a time', 'at most microseconds'],
    ['fx', '00ff', 'is not a fixed[3]', 'exactly 3 bytes'],
  ] as const)(
    'leaves the older files alone when %s has the malformed initial-default %s, naming the column, and changes no byte of the table',
    async (column, initial, what, why) => {
      // Prepare
      dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-typed-defaults-'));
      const store = new LocalObjectStore(dir);
      await createTable(store);
      await appendOldFiles(store);
      await evolve(store, schema1({ [column]: initial }));
      const before = await treeBytes(join(dir, NAME));

      // Act
      const io = captureIo();
      const code = await run(
        ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true'],
        io,
      );
      const planIo = captureIo();
      const planCode = await run(
        ['plan', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'rewrite-all=true', '--json'],
        planIo,
      );

      // Assess: nothing compacted, each older file's reason names the column and what is wrong with its default
      expect(code, io.stderr.join('\n')).toBe(0);
      expect(io.stdout.join('\n')).toContain('2 not projectable onto the current schema');
      expect(planCode, planIo.stderr.join('\n')).toBe(0);
      const reasons = stringsOf(JSON.parse(planIo.stdout.join('\n'))).filter((r) =>
        r.includes('cannot be projected onto the current one'),
      );
      expect(reasons).toHaveLength(2);
      for (const reason of reasons) {
        expect(reason).toContain(`column ${column}: its initial-default ${JSON.stringify(initial)} ${what}`);
        expect(reason).toContain(why);
      }
      const after = await treeBytes(join(dir, NAME));
      expect(new Map([...after].filter(([p]) => !p.includes('/_lake-compactor/')))).toEqual(before);
    },
  );

  it('compacts, with the default bin-pack, a table that never evolved whose files hold time and uuid columns, keeping the UUID annotation (a file with a uuid is projected, not rewritten as written), rows equal', async () => {
    // Prepare: schema id long, t time, u uuid; three small files written by DuckDB (UUID-annotated, a null row)
    dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-typed-defaults-'));
    const store = new LocalObjectStore(dir);
    await createTable(store, {
      type: 'struct',
      'schema-id': 0,
      fields: [
        { id: 1, name: 'id', required: false, type: 'long' },
        { id: 3, name: 't', required: false, type: 'time' },
        { id: 4, name: 'u', required: false, type: 'uuid' },
      ],
    } as unknown as typeof SCHEMA_0);
    const rows = [
      `(1::BIGINT, TIME '00:00:00', 'f79c3e09-677c-4bbd-a479-3f349cb785e7'::UUID)`,
      `(2::BIGINT, NULL::TIME, NULL::UUID)`,
      `(3::BIGINT, TIME '23:59:59.999999', '00000000-0000-0000-0000-000000000000'::UUID)`,
    ];
    for (const [i, row] of rows.entries()) {
      await db.writeParquet(
        `SELECT * FROM (VALUES ${row}) v(id, t, u)`,
        join(dir, NAME, 'data', `${i}.parquet`),
        {
          extraOptions: ['FIELD_IDS {id: 1, t: 3, u: 4}'],
        },
      );
      await append(store, `${i}.parquet`);
    }
    const inputs = await liveFiles(store);
    const read = async (files: readonly string[]) =>
      (
        await db.rows(
          `SELECT id::VARCHAR AS id, t::VARCHAR AS t, u::VARCHAR AS u FROM read_parquet([${files.map(sqlString).join(', ')}]) ORDER BY id`,
        )
      ).map((r) => JSON.stringify(r));
    const before = await read(inputs);
    const io = captureIo();

    // Act
    const code = await run(
      ['compact', join(dir, NAME), '--format', 'iceberg', '--rewrite-option', 'min-input-files=3'],
      io,
    );

    // Assess: one output of the same rows, u still annotated UUID, t still TIME(MICROS) not adjusted to UTC
    expect(code, io.stderr.join('\n')).toBe(0);
    const outputs = await liveFiles(store);
    expect(outputs).toHaveLength(1);
    expect(inputs).not.toContain(outputs[0]);
    expect(before).toHaveLength(3);
    expect(await read(outputs)).toEqual(before);
    const stored = await db.rows(
      `SELECT name, field_id::VARCHAR AS id, type, logical_type::VARCHAR AS logical
       FROM parquet_schema(${sqlString(outputs[0] as string)}) WHERE name IN ('t', 'u')`,
    );
    expect(stored.map((e) => [e.name, e.id, e.type])).toEqual([
      ['t', '3', 'INT64'],
      ['u', '4', 'FIXED_LEN_BYTE_ARRAY'],
    ]);
    expect(String(stored[0]?.logical)).toMatch(/^TimeType\(isAdjustedToUTC=0, .*MICROS=MicroSeconds\(\)/);
    expect(stored[1]?.logical).toBe('UUIDType()');
  });
});
