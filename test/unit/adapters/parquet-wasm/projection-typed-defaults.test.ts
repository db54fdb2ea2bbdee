// Proves the engine writes a projection's time-of-day, uuid and fixed-length columns — here defaults of columns the
// inputs lack — stored as the projection says (INT64 TIME(MICROS, not UTC), FIXED_LEN_BYTE_ARRAY(16) annotated UUID,
// FIXED_LEN_BYTE_ARRAY(3)) on one thread, into several outputs on workers, and into one output whose row groups
// were encoded on several workers and joined (the UUID annotation is given to each written footer). DuckDB writes
// the inputs and reads the outputs back; verify re-reads them against the fingerprint.
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

/** id (field 1) kept; t, u and fx added with defaults, as a table schema that gained them after the files reads. */
const PROJECTION: ColumnProjection = {
  columns: [
    { field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' }, source: { column: 'id' } },
    { field: { name: 't', fieldId: 3, nullable: true, type: 'time-us' }, default: '81068123456' },
    {
      field: { name: 'u', fieldId: 4, nullable: true, type: 'uuid' },
      default: 'f79c3e09677c4bbda4793f349cb785e7',
    },
    { field: { name: 'fx', fieldId: 5, nullable: false, type: { fixed: 3 } }, default: '00ff10' },
  ],
  keyValueMetadata: { 'table.schema': '{"schema": 1}' },
};

const KEYS = ['in/a.parquet', 'in/b.parquet', 'in/c.parquet'];
const ROWS = 4_000;

describe('rewriteGroup with a projection adding time, uuid and fixed columns with defaults', () => {
  it.each([
    ['one output on this thread', 1, 1],
    ['two outputs encoded on workers', 2, 2],
    ['one output whose row groups were encoded on two workers and joined', 2, 1],
  ] as const)(
    'writes them exactly as the projection says (%s), every row its id and the defaults',
    async (_what, workers, outputs) => {
      // Prepare: three files of ids (a null among them), none with t, u or fx
      const source = new MemoryObjectStore();
      const target = new MemoryObjectStore();
      for (const [i, key] of KEYS.entries())
        await source.put(
          key,
          await duck.parquet(
            `SELECT CASE WHEN r = 7 THEN NULL ELSE r + ${i * ROWS} END::BIGINT AS id FROM range(${ROWS}) t(r)`,
          ),
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

      // Assess: verified; every row's id and the three defaults as DuckDB reads them; the stored types and field ids
      expect(result.outputs).toHaveLength(outputs);
      await verifyOutputs(target, result.outputs, result.fingerprint);
      const keys = result.outputs.map((o) => o.key);
      const at = await duck.materialise(target, keys);
      const rows = await duck.db.rows(
        `SELECT count(*)::VARCHAR AS n, count(id)::VARCHAR AS ids, count(DISTINCT id)::VARCHAR AS distinct_ids,
              string_agg(DISTINCT t::VARCHAR) AS t, string_agg(DISTINCT u::VARCHAR) AS u, string_agg(DISTINCT fx::VARCHAR) AS fx
       FROM read_parquet(${at})`,
      );
      expect(rows).toEqual([
        {
          n: String(3 * ROWS),
          ids: String(3 * ROWS - 3),
          distinct_ids: String(3 * ROWS - 3),
          t: '22:31:08.123456',
          u: 'f79c3e09-677c-4bbd-a479-3f349cb785e7',
          fx: '\\x00\\xFF\\x10',
        },
      ]);
      for (const key of keys) {
        const one = await duck.materialise(target, [key]);
        const stored = await duck.db.rows(
          `SELECT name, field_id::VARCHAR AS id, type, type_length::VARCHAR AS length, repetition_type AS rep,
                regexp_replace(logical_type::VARCHAR, '\\(.*', '') AS logical
         FROM parquet_schema(${one}) WHERE name IN ('t', 'u', 'fx')`,
        );
        expect(stored).toEqual([
          { name: 't', id: '3', type: 'INT64', length: null, rep: 'OPTIONAL', logical: 'TimeType' },
          {
            name: 'u',
            id: '4',
            type: 'FIXED_LEN_BYTE_ARRAY',
            length: '16',
            rep: 'OPTIONAL',
            logical: 'UUIDType',
          },
          { name: 'fx', id: '5', type: 'FIXED_LEN_BYTE_ARRAY', length: '3', rep: 'REQUIRED', logical: null },
        ]);
      }
    },
  );
});
