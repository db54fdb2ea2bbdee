// Proves the engine writes a projection's list and map columns as the projection says — a list element widened
// (int → long), a list of uuids copied (the UUID annotation given to the nested element after the write), a map
// added null — on one thread, into several outputs on workers, and into one output whose row groups were encoded
// on several workers and joined. DuckDB writes the inputs (with nulls at every level) and reads the outputs back;
// verify re-reads them against the fingerprint, which projects the decoded inputs on its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import type { ColumnProjection } from '../../../../functions/core/projection.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** id kept; tags' int elements widened to long; us (a list of uuids) copied; extra, a map, added since (null). */
const PROJECTION: ColumnProjection = {
  columns: [
    { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
    {
      field: {
        name: 'tags',
        fieldId: 2,
        nullable: true,
        type: { list: { name: 'element', fieldId: 5, nullable: true, type: 'int64' } },
      },
      source: { column: 'tags', element: { widen: 'int32-int64' } },
    },
    {
      field: {
        name: 'us',
        fieldId: 3,
        nullable: true,
        type: { list: { name: 'element', fieldId: 6, nullable: true, type: 'uuid' } },
      },
      source: { column: 'us' },
    },
    {
      field: {
        name: 'extra',
        fieldId: 4,
        nullable: true,
        type: {
          map: {
            key: { name: 'key', fieldId: 7, nullable: false, type: 'string' },
            value: { name: 'value', fieldId: 8, nullable: true, type: 'float64' },
          },
        },
      },
    },
  ],
  keyValueMetadata: { 'table.schema': '{"schema": 2}' },
};

const KEYS = ['in/a.parquet', 'in/b.parquet', 'in/c.parquet'];
const ROWS = 3_000;
/** Each row's values as text, so lists, maps and uuids compare alike whatever file they come from. */
const AS_TEXT = 'id, tags::BIGINT[]::VARCHAR AS tags, us::VARCHAR AS us';

describe('rewriteGroup with a projection of list and map columns', () => {
  it.each([
    ['one output on this thread', 1, 1],
    ['two outputs encoded on workers', 2, 2],
    ['one output whose row groups were encoded on two workers and joined', 2, 1],
  ] as const)(
    'writes them exactly as the projection says (%s), every row as the inputs hold it',
    async (_what, workers, outputs) => {
      // Prepare: three files of ids, int lists (null, empty, holed) and uuid lists, none with extra
      const source = new MemoryObjectStore();
      const target = new MemoryObjectStore();
      for (const [i, key] of KEYS.entries())
        await source.put(
          key,
          await duck.parquet(
            `SELECT (r + ${i * ROWS})::BIGINT AS id,
               CASE r % 4 WHEN 0 THEN NULL WHEN 1 THEN []::INTEGER[] ELSE [(2147483647 - r)::INTEGER, NULL, (-r)::INTEGER] END AS tags,
               CASE WHEN r % 3 = 0 THEN NULL
                    ELSE [('00000000-0000-4000-8000-' || lpad((r + ${i * ROWS})::VARCHAR, 12, '0'))::UUID, NULL] END AS us
             FROM range(${ROWS}) t(r)`,
          ),
        );
      const expected = await duck.db.rows(
        `SELECT ${AS_TEXT} FROM read_parquet(${await duck.materialise(source, KEYS)}) ORDER BY id`,
      );
      const files = (await Promise.all(KEYS.map((k) => fileOf(source, k)))).map((f) => ({
        ...f,
        projection: PROJECTION,
      }));

      // Act
      const result = await rewriteGroup(
        { source, target },
        { groupId: 'g', files, expectedOutputFiles: outputs },
        { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd', workers, rowGroupRows: 1_000 },
      );

      // Assess: verified; every row as the inputs hold it, extra null; the nested types and field ids as projected
      expect(result.outputs).toHaveLength(outputs);
      await verifyOutputs(target, result.outputs, result.fingerprint);
      const keys = result.outputs.map((o) => o.key);
      const at = await duck.materialise(target, keys);
      expect(await duck.db.rows(`SELECT ${AS_TEXT} FROM read_parquet(${at}) ORDER BY id`)).toEqual(expected);
      expect(expected).toHaveLength(3 * ROWS);
      expect(await duck.db.rows(`SELECT count(extra)::VARCHAR AS n FROM read_parquet(${at})`)).toEqual([
        { n: '0' },
      ]);
      for (const key of keys) {
        const one = await duck.materialise(target, [key]);
        const stored = await duck.db.rows(
          `SELECT name, field_id::VARCHAR AS id, type, repetition_type AS rep,
                regexp_replace(logical_type::VARCHAR, '\\(.*', '') AS logical
           FROM parquet_schema(${one}) WHERE field_id IS NOT NULL OR name IN ('list', 'key_value')`,
        );
        expect(stored).toEqual([
          { name: 'id', id: '1', type: 'INT64', rep: 'OPTIONAL', logical: null },
          { name: 'tags', id: '2', type: null, rep: 'OPTIONAL', logical: 'ListType' },
          { name: 'list', id: null, type: null, rep: 'REPEATED', logical: null },
          { name: 'element', id: '5', type: 'INT64', rep: 'OPTIONAL', logical: null },
          { name: 'us', id: '3', type: null, rep: 'OPTIONAL', logical: 'ListType' },
          { name: 'list', id: null, type: null, rep: 'REPEATED', logical: null },
          { name: 'element', id: '6', type: 'FIXED_LEN_BYTE_ARRAY', rep: 'OPTIONAL', logical: 'UUIDType' },
          { name: 'extra', id: '4', type: null, rep: 'OPTIONAL', logical: 'MapType' },
          { name: 'key_value', id: null, type: null, rep: 'REPEATED', logical: null },
          { name: 'key', id: '7', type: 'BYTE_ARRAY', rep: 'REQUIRED', logical: 'StringType' },
          { name: 'value', id: '8', type: 'DOUBLE', rep: 'OPTIONAL', logical: null },
        ]);
      }
    },
  );
});
