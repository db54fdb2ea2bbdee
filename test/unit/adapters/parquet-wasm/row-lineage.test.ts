// Proves the rewrite writes every row's lineage (Iceberg v3 `_row_id`, `_last_updated_sequence_number`) into its
// outputs: a value the input stores is kept, a missing or null one is inherited from the file (first row id +
// position counted before deletes, the file's sequence number), on the calling thread and on workers, and verify
// checks the values written — outputs read back by DuckDB.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import type { InputFile } from '../../../../functions/ports/parquet-engine.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

const ROW_ID = 2147483540;
const SEQ = 2147483539;

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** A file of `rows` rows with `id` = position + `base` (field id 1), without lineage columns. */
async function plainFile(
  store: MemoryObjectStore,
  key: string,
  rows: number,
  base: number,
): Promise<InputFile> {
  await store.put(
    key,
    await duck.parquet(`SELECT (i + ${base})::BIGINT AS id FROM range(${rows}) t(i)`, {
      extraOptions: ['FIELD_IDS {id: 1}'],
    }),
  );
  return fileOf(store, key);
}

/** A file that stores lineage: row i has `_row_id` 1000 + i except every third row (null), sequence 7 or null. */
async function storedFile(
  store: MemoryObjectStore,
  key: string,
  rows: number,
  base: number,
): Promise<InputFile> {
  await store.put(
    key,
    await duck.parquet(
      `SELECT (i + ${base})::BIGINT AS id,
              CASE WHEN i % 3 = 0 THEN NULL ELSE 1000 + i END::BIGINT AS _row_id,
              CASE WHEN i % 2 = 0 THEN NULL ELSE 7 END::BIGINT AS _last_updated_sequence_number
       FROM range(${rows}) t(i)`,
      { extraOptions: [`FIELD_IDS {id: 1, _row_id: ${ROW_ID}, _last_updated_sequence_number: ${SEQ}}`] },
    ),
  );
  return fileOf(store, key);
}

interface Row {
  id: number;
  rowId: string;
  seq: string;
}

async function outputRows(store: MemoryObjectStore, keys: readonly string[]): Promise<Row[]> {
  const files = await duck.materialise(store, keys);
  const rows = await duck.db.rows(
    `SELECT id, _row_id::VARCHAR AS r, _last_updated_sequence_number::VARCHAR AS s
     FROM read_parquet(${files}, file_row_number = true, filename = true)
     ORDER BY list_position(${files}, filename), file_row_number`,
  );
  return rows.map((r) => ({ id: Number(r.id), rowId: String(r.r), seq: String(r.s) }));
}

async function lineageFieldIds(store: MemoryObjectStore, key: string): Promise<Record<string, string>> {
  const files = await duck.materialise(store, [key]);
  const rows = await duck.db.rows(
    `SELECT name, field_id::VARCHAR AS id, type FROM parquet_schema(${files}) WHERE name LIKE '\\_%' ESCAPE '\\'`,
  );
  return Object.fromEntries(rows.map((r) => [String(r.name), `${r.id}:${r.type}`]));
}

describe('rewriteGroup with row lineage', () => {
  it('writes inherited ids (first row id + position before deletes) and the file sequence number into files that had none', async () => {
    // Prepare: a 3,000-row file whose ids start at 2^53 + 5 (beyond a double's exact range), rows 0, 1,500 and 2,999 deleted
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const first = 2n ** 53n + 5n;
    const a = await plainFile(source, 'in/a.parquet', 3_000, 0);
    const b = await plainFile(source, 'in/b.parquet', 10, 10_000);
    const deleted = [0, 1_500, 2_999];

    // Act
    const result = await rewriteGroup(
      { source, target },
      {
        groupId: 'g1',
        files: [
          { ...a, deleted: DeletedRows.of(deleted), rowLineage: { firstRowId: first, sequenceNumber: 3n } },
          { ...b, rowLineage: { firstRowId: 40n, sequenceNumber: 4n } },
        ],
      },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 1_000 },
    );
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: each row's id is its file's first row id plus its position in the file, deleted rows gone with theirs
    const rows = await outputRows(
      target,
      result.outputs.map((o) => o.key),
    );
    const expected: Row[] = [];
    for (let p = 0; p < 3_000; p++)
      if (!deleted.includes(p)) expected.push({ id: p, rowId: String(first + BigInt(p)), seq: '3' });
    for (let p = 0; p < 10; p++) expected.push({ id: 10_000 + p, rowId: String(40 + p), seq: '4' });
    expect(rows).toEqual(expected);
    expect(report.rows).toBe(expected.length);
    expect(await lineageFieldIds(target, result.outputs[0]?.key ?? '')).toEqual({
      _row_id: `${ROW_ID}:INT64`,
      _last_updated_sequence_number: `${SEQ}:INT64`,
    });
  });

  it('keeps the lineage an input stores and inherits only where it is null', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await storedFile(source, 'in/a.parquet', 12, 0);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, rowLineage: { firstRowId: 500n, sequenceNumber: 9n } }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const expected = Array.from({ length: 12 }, (_, i) => ({
      id: i,
      rowId: String(i % 3 === 0 ? 500 + i : 1000 + i),
      seq: i % 2 === 0 ? '9' : '7',
    }));
    expect(
      await outputRows(
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(expected);
  });

  it('writes the same lineage when outputs are encoded on workers', async () => {
    // Prepare: two outputs, so the run goes to worker threads
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const a = await plainFile(source, 'in/a.parquet', 4_000, 0);
    const deleted = [1, 2_000, 3_999];

    // Act
    const result = await rewriteGroup(
      { source, target },
      {
        groupId: 'g1',
        files: [
          { ...a, deleted: DeletedRows.of(deleted), rowLineage: { firstRowId: 77n, sequenceNumber: 2n } },
        ],
        expectedOutputFiles: 2,
      },
      { outputKey: (i) => `out/${i}.parquet`, workers: 2, batchRows: 1_000 },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(result.outputs).toHaveLength(2);
    const expected: Row[] = [];
    for (let p = 0; p < 4_000; p++)
      if (!deleted.includes(p)) expected.push({ id: p, rowId: String(77 + p), seq: '2' });
    expect(
      await outputRows(
        target,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(expected);
  });

  it('refuses an input whose column named _row_id is not the lineage column (no field id), writing nothing', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    await source.put(
      'in/a.parquet',
      await duck.parquet('SELECT i::BIGINT AS id, i::BIGINT AS _row_id FROM range(5) t(i)', {
        extraOptions: ['FIELD_IDS {id: 1, _row_id: 2}'],
      }),
    );
    const a = await fileOf(source, 'in/a.parquet');

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, rowLineage: { firstRowId: 0n, sequenceNumber: 1n } }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedInputError);
    await expect(attempt).rejects.toThrow(/has not the row lineage field id 2147483540/);
    expect((await target.list('out/')).objects).toEqual([]);
  });
});
