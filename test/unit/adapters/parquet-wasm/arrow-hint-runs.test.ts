// Files of one Parquet schema whose writers recorded different Arrow types for it (the footer's ARROW:schema: a
// string or a large string, a dictionary-encoded string, a UTC timestamp labelled with another zone) decode to
// different Arrow schemas. They are one run and one output: each batch is converted to the output's Arrow type,
// values unchanged, and verified — nested ones too (a list of strings beside a list of large strings, a large list, a
// struct's dictionary-encoded field). A difference the rewrite does not convert exactly (a list of integers beside a
// list of durations) is refused naming the file and the column, as an unsupported input — never as a corrupt one.
import {
  DataType,
  Dictionary,
  DurationMicrosecond,
  Field,
  Int32,
  Int64,
  LargeList,
  LargeUtf8,
  List,
  Map_,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMicrosecond,
  tableFromIPC,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parquetWasmEngine } from '../../../../functions/adapters/parquet-wasm/engine.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { parseFooter } from '../../../../functions/core/parquet/footer.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;

beforeAll(async () => {
  duck = await duckWorkspace();
});

afterAll(async () => {
  await duck.close();
});

/** A Parquet file written by parquet-wasm from `columns` (name, Arrow type, values): its ARROW:schema says those types. */
function parquetOf(columns: readonly (readonly [string, DataType, readonly unknown[]])[]): Uint8Array {
  const fields = columns.map(([name, type]) => new Field(name, type, true));
  const schema = new Schema(fields);
  const rows = columns[0]?.[2].length ?? 0;
  const children = columns.map(([, type, values]) => vectorFromArray([...values] as never[], type).data[0]);
  const batch = new RecordBatch(
    schema,
    makeData({ type: new Struct(fields), length: rows, nullCount: 0, children: children as never }),
  );
  return pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(new Table([batch]), 'stream')));
}

/** Every row of the stored objects as text, canonically ordered (read by DuckDB). */
async function rowsOf(store: MemoryObjectStore, keys: readonly string[]): Promise<string[]> {
  const rows = await duck.db.rows(
    `SELECT COLUMNS(*)::VARCHAR FROM read_parquet(${await duck.materialise(store, keys)}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

/** Epoch milliseconds (arrow-js builds timestamps from them). */
const MS = 1_700_000_000_123;

describe('inputs of one Parquet schema decoded to different Arrow types', () => {
  it.each([
    ['one output, on this thread', 1, undefined],
    ['two outputs, encoded on worker threads', 2, 2],
  ] as const)(
    'are written into %s, each batch converted to its Arrow type with every value unchanged, and verified',
    async (_what, workers, expectedOutputFiles) => {
      // Prepare: three files of one Parquet schema (id INT64, s STRING, ts TIMESTAMP(MICROS, UTC)) from writers that
      // recorded s as utf8 / large_utf8 / dictionary<int32, utf8> and ts as UTC / Europe/Berlin
      const store = new MemoryObjectStore();
      const ts = (zone: string) => new TimestampMicrosecond(zone);
      await store.put(
        'in/a.parquet',
        parquetOf([
          ['id', new Int64(), [1n, 2n]],
          ['s', new Utf8(), ['a', null]],
          ['ts', ts('UTC'), [MS, null]],
        ]),
      );
      await store.put(
        'in/b.parquet',
        parquetOf([
          ['id', new Int64(), [3n, 4n, 5n]],
          ['s', new LargeUtf8(), ['b', 'ünï', null]],
          ['ts', ts('Europe/Berlin'), [MS + 1, null, -MS]],
        ]),
      );
      await store.put(
        'in/c.parquet',
        parquetOf([
          ['id', new Int64(), [6n, 7n, 8n]],
          ['s', new Dictionary(new Utf8(), new Int32()), ['c', 'c', null]],
          ['ts', ts('UTC'), [null, MS + 2, MS + 2]],
        ]),
      );
      const keys = ['in/a.parquet', 'in/b.parquet', 'in/c.parquet'];
      const files = await Promise.all(keys.map((k) => fileOf(store, k)));
      const before = await rowsOf(store, keys);

      // Act
      const result = await rewriteGroup(
        { source: store, target: store },
        { groupId: 'g', files, ...(expectedOutputFiles !== undefined && { expectedOutputFiles }) },
        { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd', workers },
      );

      // Assess: the outputs asked for, verified from the objects, holding the inputs' row multiset as DuckDB reads it
      const outputs = result.outputs.map((o) => o.key);
      expect(outputs).toHaveLength(expectedOutputFiles ?? 1);
      await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
      expect(before).toHaveLength(8);
      expect(await rowsOf(store, outputs)).toEqual(before);
      const types = await duck.db.rows(
        `DESCRIBE SELECT * FROM read_parquet(${await duck.materialise(store, outputs)})`,
      );
      expect(types.map((t) => [t.column_name, t.column_type])).toEqual([
        ['id', 'BIGINT'],
        ['s', 'VARCHAR'],
        ['ts', 'TIMESTAMP WITH TIME ZONE'],
      ]);
    },
  );

  it.each([
    ['dictionary first, plain after it, one output on this thread', true, 1, undefined],
    ['plain first, dictionary after it, one output on this thread', false, 1, undefined],
    ['dictionary first, plain after it, two outputs encoded on worker threads', true, 2, 2],
    ['plain first, dictionary after it, two outputs encoded on worker threads', false, 2, 2],
  ] as const)(
    'writes a string column some inputs hold dictionary-encoded and others plain as plain strings (%s), its Parquet schema unchanged',
    async (_what, dictionaryFirst, workers, expectedOutputFiles) => {
      // Prepare: three files of one Parquet schema (id INT64, s STRING), s recorded alternately as
      // dictionary<int32, utf8> and utf8; with two outputs of 4 and 3 rows, each holds rows of both, one starting
      // with each kind
      const store = new MemoryObjectStore();
      const dictionary = new Dictionary(new Utf8(), new Int32());
      const kinds = dictionaryFirst
        ? [dictionary, new Utf8(), dictionary]
        : [new Utf8(), dictionary, new Utf8()];
      const keys = ['in/a.parquet', 'in/b.parquet', 'in/c.parquet'];
      const values = [
        ['x', null],
        ['y', 'ünï', 'x'],
        [null, 'z'],
      ];
      let id = 0n;
      for (const [i, key] of keys.entries()) {
        const s = values[i] ?? [];
        await store.put(
          key,
          parquetOf([
            ['id', new Int64(), s.map(() => id++)],
            ['s', kinds[i] as DataType, s],
          ]),
        );
      }
      const files = await Promise.all(keys.map((k) => fileOf(store, k)));
      const before = await rowsOf(store, keys);
      const input = await store.get('in/a.parquet');

      // Act
      const result = await rewriteGroup(
        { source: store, target: store },
        { groupId: 'g', files, ...(expectedOutputFiles !== undefined && { expectedOutputFiles }) },
        { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd', workers },
      );

      // Assess: verified, the inputs' row multiset, the inputs' Parquet schema, and a plain utf8 Arrow hint
      const outputs = result.outputs.map((o) => o.key);
      expect(outputs).toHaveLength(expectedOutputFiles ?? 1);
      await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
      expect(before).toHaveLength(7);
      expect(await rowsOf(store, outputs)).toEqual(before);
      const inputSchema = parseFooter('in/a.parquet', input.length, input).schemaFingerprint;
      for (const key of outputs) {
        const bytes = await store.get(key);
        const footer = parseFooter(key, bytes.length, bytes);
        expect(footer.schemaFingerprint).toBe(inputSchema);
        const hint = pw.readParquet(bytes).intoIPCStream();
        expect(String(tableFromIPC(hint).schema.fields[1]?.type)).toBe('Utf8');
      }
    },
  );

  const list = (item: DataType) => new List(new Field('item', item, true));
  const largeList = (item: DataType) => new LargeList(new Field('item', item, true));
  const dictionary = () => new Dictionary(new Utf8(), new Int32());
  const struct = (s: DataType) => new Struct([new Field('s', s, true), new Field('n', new Int32(), true)]);
  const map = (value: DataType) =>
    new Map_(
      new Field(
        'entries',
        new Struct<{ key: DataType; value: DataType }>([
          new Field('key', new Utf8(), false) as Field<DataType>,
          new Field('value', value, true),
        ] as never),
        false,
      ),
    );

  it.each([
    [
      'list<utf8> first, list<large_utf8> after it',
      [list(new Utf8()), list(new LargeUtf8()), list(new Utf8())],
      1,
    ],
    [
      'list<utf8> first, list<large_utf8> after it, two outputs encoded on worker threads',
      [list(new Utf8()), list(new LargeUtf8()), list(new Utf8())],
      2,
    ],
    [
      'list<large_utf8> first, list<utf8> after it',
      [list(new LargeUtf8()), list(new Utf8()), list(new Utf8())],
      1,
    ],
    [
      'list<utf8>, large_list<utf8> and list<dictionary<utf8>>',
      [list(new Utf8()), largeList(new Utf8()), list(dictionary())],
      1,
    ],
    [
      'struct<s: dictionary<utf8>> first, struct<s: utf8> and struct<s: large_utf8> after it',
      [struct(dictionary()), struct(new Utf8()), struct(new LargeUtf8())],
      1,
    ],
    [
      'struct<s: dictionary<utf8>> first, struct<s: utf8> after it, two outputs encoded on worker threads',
      [struct(dictionary()), struct(new Utf8()), struct(dictionary())],
      2,
    ],
    [
      'struct<s: utf8> first, struct<s: dictionary<utf8>> after it',
      [struct(new Utf8()), struct(dictionary()), struct(new Utf8())],
      1,
    ],
    [
      'map<utf8, utf8> first, map<utf8, large_utf8> after it',
      [map(new Utf8()), map(new LargeUtf8()), map(new Utf8())],
      1,
    ],
  ] as const)(
    'conforms nested columns whose hints differ only in offset width or dictionary encoding (%s) into verified outputs, every row unchanged',
    async (_what, kinds, workers) => {
      // Prepare: three files of one Parquet schema (id INT64, c a list of strings, a map or a struct holding them), their
      // writers' Arrow hints differing only inside c; nulls at the column, item and field level
      const store = new MemoryObjectStore();
      const keys = ['in/a.parquet', 'in/b.parquet', 'in/c.parquet'];
      const lists = [[['x', 'y'], null, []], [['ünï', null]], [['x'], ['z', 'z', 'z']]];
      const maps = [
        [new Map([['a', 'x']]), null, new Map<string, string | null>([['b', null]])],
        [new Map([['ü', 'ünï']])],
        [
          new Map(),
          new Map([
            ['a', 'z'],
            ['c', 'z'],
          ]),
        ],
      ];
      const structs = [
        [{ s: 'x', n: 1 }, null, { s: null, n: 2 }],
        [{ s: 'ünï', n: null }],
        [
          { s: 'x', n: 3 },
          { s: 'z', n: 3 },
        ],
      ];
      let id = 0n;
      for (const [i, key] of keys.entries()) {
        const type = kinds[i] as DataType;
        const values =
          (DataType.isStruct(type) ? structs[i] : DataType.isMap(type) ? maps[i] : lists[i]) ?? [];
        await store.put(
          key,
          parquetOf([
            ['id', new Int64(), values.map(() => id++)],
            ['c', type, values],
          ]),
        );
      }
      const inputSchema = await Promise.all(
        keys.map(async (k) => {
          const bytes = await store.get(k);
          return parseFooter(k, bytes.length, bytes).schemaFingerprint;
        }),
      );
      expect(new Set(inputSchema).size).toBe(1);
      const files = await Promise.all(keys.map((k) => fileOf(store, k)));
      const before = await rowsOf(store, keys);

      // Act
      const result = await rewriteGroup(
        { source: store, target: store },
        { groupId: 'g', files, ...(workers > 1 && { expectedOutputFiles: workers }) },
        { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd', workers },
      );

      // Assess: the outputs asked for, verified from the objects, the inputs' row multiset (DuckDB) and their
      // Parquet schema
      const outputs = result.outputs.map((o) => o.key);
      expect(outputs).toHaveLength(workers);
      await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
      expect(before).toHaveLength(6);
      expect(await rowsOf(store, outputs)).toEqual(before);
      for (const key of outputs) {
        const bytes = await store.get(key);
        expect(parseFooter(key, bytes.length, bytes).schemaFingerprint).toBe(inputSchema[0]);
      }
    },
  );

  it('refuses, naming the file and the column, a nested difference that is more than an encoding (a list of int64 beside a list of durations), writing nothing', async () => {
    // Prepare: both lists store INT64 items, but one writer's hint says they are durations
    const store = new MemoryObjectStore();
    await store.put(
      'in/a.parquet',
      parquetOf([
        ['id', new Int64(), [1n]],
        ['spans', list(new Int64()), [[1n, 2n]]],
      ]),
    );
    await store.put(
      'in/b.parquet',
      parquetOf([
        ['id', new Int64(), [2n]],
        ['spans', list(new DurationMicrosecond()), [[3n]]],
      ]),
    );
    const files = await Promise.all(['in/a.parquet', 'in/b.parquet'].map((k) => fileOf(store, k)));

    // Act
    const run = rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd' },
    );

    // Assess: an unsupported input named with its column and what to do; no output object; inputs as they were
    const err = await run.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect((err as UnsupportedInputError).key).toBe('in/b.parquet');
    expect((err as Error).message).toMatch(/column spans\[\] decodes as Duration/);
    expect((err as Error).message).toMatch(/ARROW:schema/);
    expect((err as Error).message).toMatch(/compact this file apart/);
    expect((await store.list('out/')).objects).toEqual([]);
    expect((await store.list('in/')).objects.map((o) => o.key).sort()).toEqual([
      'in/a.parquet',
      'in/b.parquet',
    ]);
  });
});
