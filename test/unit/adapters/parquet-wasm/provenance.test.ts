// Proves the rewrite says where every input's rows went: each output's sources, read back from the stored
// outputs, are exactly those rows of those inputs in order — across output cuts, schema runs, worker-encoded
// runs and stitched outputs — and a sorted rewrite, which scatters rows, says nothing.

import { tableFromArrays, tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { pw, writerProperties } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import { readFooter } from '../../../../functions/core/parquet/footer.js';
import type { RowSource } from '../../../../functions/core/parquet/provenance.js';
import type { InputFile, RewriteResult } from '../../../../functions/ports/parquet-engine.js';
import { settled } from '../../../support/settled.js';
import { fileOf } from './helpers.js';

/** Row ids say where a row came from: input `f`'s row `i` has id f·1,000,000 + i. */
const ID_BASE = 1_000_000;

interface Spec {
  readonly rows: number;
  /**
   * Written in Spark's LEGACY calendar mode: another schema run than the modern inputs (same columns; a writer stamp
   * alone would not part them, see functions/core/parquet/key-value.ts).
   */
  readonly legacyCalendar?: boolean;
  readonly codec?: 'zstd' | 'snappy';
  readonly rowGroupRows?: number;
}

async function inputs(store: MemoryObjectStore, specs: readonly Spec[]): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (const [f, spec] of specs.entries()) {
    const table = tableFromArrays({
      id: Int32Array.from({ length: spec.rows }, (_, i) => f * ID_BASE + i),
      v: Array.from({ length: spec.rows }, (_, i) => `${f}-${(i * 2_654_435_761) % 1e9}`),
    });
    const bytes = pw.writeParquet(
      pw.Table.fromIPCStream(tableToIPC(table, 'stream')),
      writerProperties({
        codec: spec.codec ?? 'snappy',
        rowGroupRows: spec.rowGroupRows ?? 100_000,
        keyValueMetadata: {
          'org.apache.spark.version': '3.5.0',
          ...(spec.legacyCalendar === true && { 'org.apache.spark.legacyDateTime': '' }),
        },
      }),
    );
    const key = `in/${String(f).padStart(2, '0')}.parquet`;
    await store.put(key, bytes);
    files.push({ ...(await fileOf(store, key)), rows: spec.rows });
  }
  return files;
}

/** The ids each output holds, in order. */
async function outputIds(store: MemoryObjectStore, result: RewriteResult): Promise<number[][]> {
  const ids: number[][] = [];
  for (const output of result.outputs) {
    const table = tableFromIPC(pw.readParquet(await store.get(output.key)).intoIPCStream());
    ids.push(Array.from(table.getChild('id')?.toArray() ?? [], Number));
  }
  return ids;
}

/** The ids the sources say an output holds, in order. */
function idsOf(sources: readonly RowSource[], files: readonly InputFile[]): number[] {
  return sources.flatMap((s) => {
    const f = files.findIndex((file) => file.key === s.key);
    return Array.from({ length: s.rows }, (_, i) => f * ID_BASE + s.firstRow + i);
  });
}

/** Rows of each input the sources account for, by key. */
function rowsPerInput(sources: readonly (readonly RowSource[])[]): Record<string, number> {
  const rows: Record<string, number> = {};
  for (const s of sources.flat()) rows[s.key] = (rows[s.key] ?? 0) + s.rows;
  return rows;
}

describe('rewrite provenance', () => {
  it('locates an input split across an output boundary in both outputs, row for row', async () => {
    // Prepare: 3 × 3,000 rows into 2 outputs of 4,500: input 1 is cut in the middle.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source, [{ rows: 3_000 }, { rows: 3_000 }, { rows: 3_000 }]);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files, expectedOutputFiles: 2 },
      { outputKey: (i) => `o/${i}`, batchRows: 1_000 },
    );

    // Assess
    expect(result.sources).toEqual([
      [
        { key: files[0]?.key, firstRow: 0, rows: 3_000 },
        { key: files[1]?.key, firstRow: 0, rows: 1_500 },
      ],
      [
        { key: files[1]?.key, firstRow: 1_500, rows: 1_500 },
        { key: files[2]?.key, firstRow: 0, rows: 3_000 },
      ],
    ]);
    const ids = await outputIds(target, result);
    expect(ids).toEqual((result.sources ?? []).map((s) => idsOf(s, files)));
  });

  it('locates every input of several schema runs, some encoded on worker threads, packed small inputs included', async () => {
    // Prepare: tiny inputs (decoded several per call), a run of larger ones cut into several outputs, then
    // a run written in Spark's LEGACY calendar mode: rows of unequal counts, so cuts fall inside inputs.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const specs: Spec[] = [
      ...Array.from({ length: 6 }, (_, i) => ({ rows: 37 + i * 11 })),
      { rows: 2_500 },
      { rows: 1_700 },
      { rows: 3_100 },
      { rows: 900, legacyCalendar: true },
      { rows: 1_300, legacyCalendar: true },
      { rows: 50 },
    ];
    const files = await inputs(source, specs);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      {
        outputKey: (i) => `o/${i}`,
        workers: 2,
        batchRows: 1_000,
        targetFileSizeBytes: Math.floor(Math.max(...files.map((f) => f.size)) / 3),
      },
    );

    // Assess: three runs (a, b, a), the first cut into several outputs; every output holds its sources.
    expect(result.outputs.length).toBeGreaterThan(3);
    const ids = await outputIds(target, result);
    expect(ids).toEqual((result.sources ?? []).map((s) => idsOf(s, files)));
    expect(rowsPerInput(result.sources ?? [])).toEqual(
      Object.fromEntries(files.map((f, i) => [f.key, specs[i]?.rows])),
    );
    expect(result.sources?.some((s) => s.some((r) => r.firstRow > 0))).toBe(true);
  });

  it('locates stitched inputs whole, in the outputs that follow the re-encoded ones', async () => {
    // Prepare: two inputs with large row groups in the target's codec (stitched) between small ones.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const specs: Spec[] = [
      { rows: 800 },
      { rows: 12_000, codec: 'zstd', rowGroupRows: 6_000 },
      { rows: 600 },
      { rows: 10_000, codec: 'zstd', rowGroupRows: 5_000 },
    ];
    const files = await inputs(source, specs);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      { outputKey: (i) => `o/${i}`, stitch: { minRowGroupRows: 5_000, minRowGroupBytes: 1 << 30 } },
    );

    // Assess: the re-encoded inputs first, then the stitched ones, each output row for row as located.
    const last = result.outputs.at(-1)?.key as string;
    expect((await readFooter(target, last)).rowGroups.map((g) => g.rows)).toEqual([
      6_000, 6_000, 5_000, 5_000,
    ]);
    expect(result.sources).toEqual([
      [
        { key: files[0]?.key, firstRow: 0, rows: 800 },
        { key: files[2]?.key, firstRow: 0, rows: 600 },
      ],
      [
        { key: files[1]?.key, firstRow: 0, rows: 12_000 },
        { key: files[3]?.key, firstRow: 0, rows: 10_000 },
      ],
    ]);
    expect(await outputIds(target, result)).toEqual((result.sources ?? []).map((s) => idsOf(s, files)));
  });

  it('says nothing about where rows went when the rewrite sorts them', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source, [{ rows: 500 }, { rows: 700 }]);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      { outputKey: (i) => `o/${i}`, sort: { columns: ['id'], memoryBudgetBytes: 64 * 1024 * 1024 } },
    );

    // Assess
    expect(result.outputs).toHaveLength(1);
    expect(result.sources).toBeUndefined();
  });

  it('cuts outputs at exactly the rows asked for, dropping deleted rows first', async () => {
    // Prepare: two inputs; rows 100..199 of the second are deleted.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source, [{ rows: 300 }, { rows: 400 }]);
    const deleted = DeletedRows.of(Array.from({ length: 100 }, (_, i) => 100 + i));
    const group = { groupId: 'g', files: [files[0] as InputFile, { ...(files[1] as InputFile), deleted }] };

    // Act
    const result = await rewriteGroup({ source, target }, group, {
      outputKey: (i) => `o/${i}`,
      outputRows: [250, 50, 300],
    });

    // Assess
    const ids = await outputIds(target, result);
    expect(ids.map((o) => o.length)).toEqual([250, 50, 300]);
    const kept = [
      ...Array.from({ length: 300 }, (_, i) => i),
      ...Array.from({ length: 400 }, (_, i) => ID_BASE + i).filter(
        (id) => id < ID_BASE + 100 || id >= ID_BASE + 200,
      ),
    ];
    expect(ids.flat()).toEqual(kept);
  });

  it('refuses cuts that do not add up to the rows kept, or over several schema runs, before writing anything', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await inputs(source, [{ rows: 30 }, { rows: 40, legacyCalendar: true }]);

    // Act
    const tooMany = rewriteGroup(
      { source, target },
      { groupId: 'g', files: [files[0] as InputFile] },
      {
        outputKey: (i) => `o/${i}`,
        outputRows: [20, 20],
      },
    );
    const twoRuns = rewriteGroup(
      { source, target },
      { groupId: 'g', files },
      {
        outputKey: (i) => `o/${i}`,
        outputRows: [30, 40],
      },
    );
    await settled(tooMany, twoRuns);

    // Assess
    await expect(tooMany).rejects.toThrow(InvalidInputError);
    await expect(twoRuns).rejects.toThrow(/2 schema run/);
    expect(target.keys()).toEqual([]);
  });
});
