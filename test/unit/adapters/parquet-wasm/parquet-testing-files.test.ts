// Proves the engine reads what is valid in five apache/parquet-testing files that real lakes hold and that it once
// skipped, trapped on or refused, writes under schema fidelity `logical` what it can write with the same values
// (DuckDB, an independent reader, reads the outputs' rows equal to the inputs'), and refuses the rest by name with
// nothing written and the inputs' bytes unchanged. The files are REPRODUCTIONS with the originals' features
// (test/support/parquet-testing-repro.ts says how each is made and why the originals are not here).

import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { DECODER_ROW_GROUP_BYTES } from '../../../../functions/adapters/parquet-wasm/preflight.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { memoryBudget, withMemoryBudget } from '../../../../functions/core/memory-budget.js';
import { columnChunkStart, readFooter } from '../../../../functions/core/parquet/footer.js';
import type { RewriteOptions } from '../../../../functions/ports/parquet-engine.js';
import {
  columnChunkKeyValueMetadataFile,
  incorrectMapSchemaFile,
  largeStringMapFile,
  REPEATED_NO_ANNOTATION_ROWS,
  repeatedNoAnnotationFile,
  unknownLogicalTypeFile,
} from '../../../support/parquet-testing-repro.js';
import { duckWorkspace } from './helpers.js';

/** Two copies of `bytes` stored as inputs of one group. */
async function stored(bytes: Uint8Array, copies = 2) {
  const source = new MemoryObjectStore();
  const files = [];
  for (let i = 0; i < copies; i++) {
    const key = `in/${i}.parquet`;
    files.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
  }
  return { source, files };
}

/** Every row of `keys` in `store` as DuckDB reads it, as sorted JSON texts. */
async function duckRows(store: MemoryObjectStore, keys: readonly string[]): Promise<string[]> {
  const duck = await duckWorkspace();
  try {
    const list = await duck.materialise(store, keys);
    const rows = await duck.db.rows(`SELECT * FROM read_parquet(${list})`);
    return rows.map((r) => JSON.stringify(r)).sort();
  } finally {
    await duck.close();
  }
}

/** Rewrites two copies of `bytes` as one group under fidelity `logical`, verifies, and compares with DuckDB. */
async function roundTrip(bytes: Uint8Array, options: Partial<RewriteOptions> = {}, outputs?: number) {
  const { source, files } = await stored(bytes, outputs === undefined ? 2 : outputs * 2);
  const target = new MemoryObjectStore();
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'pt', files, ...(outputs !== undefined && { expectedOutputFiles: outputs }) },
    { outputKey: (i) => `out/${i}.parquet`, schemaFidelity: 'logical', ...options },
  );
  const report = await verifyOutputs(target, result.outputs, result.fingerprint, {
    ...(options.workers !== undefined && { workers: options.workers }),
  });
  const before = await duckRows(
    source,
    files.map((f) => f.key),
  );
  const after = await duckRows(
    target,
    result.outputs.map((o) => o.key),
  );
  return { result, report, before, after };
}

/** The refusal of a group of two copies of `bytes`; what was written, and whether the inputs kept their bytes. */
async function refusal(bytes: Uint8Array, options: Partial<RewriteOptions> = {}, outputs?: number) {
  const { source, files } = await stored(bytes, outputs === undefined ? 2 : outputs * 2);
  const target = new MemoryObjectStore();
  const err = await rewriteGroup(
    { source, target },
    { groupId: 'pt', files, ...(outputs !== undefined && { expectedOutputFiles: outputs }) },
    { outputKey: (i) => `out/${i}.parquet`, schemaFidelity: 'logical', ...options },
  ).catch((e: unknown) => e);
  const kept = await Promise.all(
    files.map(async (f) => Buffer.compare(await source.get(f.key), bytes) === 0),
  );
  return {
    err: err as UnsupportedInputError,
    written: (await target.list('')).objects.length,
    unchanged: kept.every(Boolean),
  };
}

describe('column_chunk_key_value_metadata.parquet (reproduction): a zero-row chunk whose data_page_offset is 0', () => {
  it('reads the footer (the chunk starts at its dictionary page), then refuses the file for its zero rows, by name', async () => {
    // Prepare
    const bytes = columnChunkKeyValueMetadataFile();
    const { source } = await stored(bytes, 1);

    // Act
    const footer = await readFooter(source, 'in/0.parquet');
    const refused = await refusal(bytes);

    // Assess: readable (not "outside the data region"), zero rows; the rewrite names why it leaves it alone.
    expect(footer.rows).toBe(0);
    expect(footer.columns.map((c) => c.path.join('.'))).toEqual(['column1', 'column2']);
    expect(refused.err).toBeInstanceOf(UnsupportedInputError);
    expect(refused.err.message).toContain('it has zero rows, so there is nothing to compact');
    expect(refused.written).toBe(0);
    expect(refused.unchanged).toBe(true);
  });

  it('takes the chunk start from whichever page offset is set: data, dictionary, or the earlier of both', () => {
    // Prepare / Act / Assess: offsets below the leading magic mean "not written".
    expect(columnChunkStart(0, 4)).toBe(4);
    expect(columnChunkStart(120, 0)).toBe(120);
    expect(columnChunkStart(120, 4)).toBe(4);
    expect(columnChunkStart(4, 120)).toBe(4);
    expect(columnChunkStart(0, 0)).toBe(0);
  });
});

describe('repeated_no_annotation.parquet (reproduction): a repeated group without a LIST annotation', () => {
  it('round-trips under fidelity logical: DuckDB reads the same rows from the outputs as from the inputs', async () => {
    // Prepare
    const bytes = repeatedNoAnnotationFile();

    // Act
    const { report, before, after } = await roundTrip(bytes);

    // Assess
    expect(report.rows).toBe(2 * REPEATED_NO_ANNOTATION_ROWS.length);
    expect(before).toHaveLength(12);
    expect(after).toEqual(before);
    expect(before.filter((r) => r.includes('"mobile"'))).toHaveLength(2);
  });
});

describe('incorrect_map_schema.parquet (reproduction): a MAP whose key is OPTIONAL (Presto/Trino, Athena)', () => {
  it.each([
    { threads: 'one thread', workers: 1, outputs: undefined },
    { threads: 'workers', workers: 2, outputs: 2 },
  ])(
    'round-trips on $threads as a standard map: same rows, null and empty maps kept',
    async ({ workers, outputs }) => {
      // Prepare
      const bytes = incorrectMapSchemaFile();

      // Act
      const { before, after } = await roundTrip(bytes, { workers }, outputs);

      // Assess
      expect(after).toEqual(before);
      expect(before).toContain(
        JSON.stringify({
          my_map: [
            { key: 'name', value: 'report' },
            { key: 'parent', value: 'another' },
          ],
        }),
      );
      expect(before).toContain(JSON.stringify({ my_map: null }));
      expect(before).toContain(JSON.stringify({ my_map: [] }));
    },
  );

  it.each([
    { threads: 'one thread', workers: 1, outputs: undefined },
    { threads: 'workers', workers: 2, outputs: 2 },
  ])(
    'refuses on $threads a map holding a null key, naming the column, nothing written',
    async ({ workers, outputs }) => {
      // Prepare: a null key, which the OPTIONAL key allows and a REQUIRED one cannot hold.
      const bytes = incorrectMapSchemaFile([
        [
          { key: 'a', value: 'b' },
          { key: null, value: 'x' },
        ],
      ]);

      // Act
      const refused = await refusal(bytes, { workers }, outputs);

      // Assess
      expect(refused.err).toBeInstanceOf(UnsupportedInputError);
      expect(refused.err.message).toContain('map column my_map holds a null key');
      expect(refused.written).toBe(0);
      expect(refused.unchanged).toBe(true);
    },
  );
});

describe('unknown-logical-type.parquet (reproduction): a LogicalType union member no reader knows yet', () => {
  it.each(['exact', 'logical'] as const)(
    'is refused in fidelity %s, naming the column and why, nothing written',
    async (schemaFidelity) => {
      // Prepare
      const bytes = unknownLogicalTypeFile();

      // Act
      const refused = await refusal(bytes, { schemaFidelity });

      // Assess
      expect(refused.err).toBeInstanceOf(UnsupportedInputError);
      expect(refused.err.message).toContain(
        'column column with unknown type (UNKNOWN:{"field_2555":{}}) carries a logical type this engine does not know',
      );
      expect(refused.written).toBe(0);
      expect(refused.unchanged).toBe(true);
    },
  );
});

describe('large_string_map.brotli.parquet (reproduction): a string column chunk of more than 2 GiB', () => {
  it('is refused by name before decoding even where the memory would allow the row group, nothing written', async () => {
    // Prepare: 10,240 MB (Lambda's largest) lets a row group decode to 2.5 GiB by memory alone.
    const bytes = await largeStringMapFile();

    // Act
    const refused = await withMemoryBudget(memoryBudget(10_240), () => refusal(bytes));

    // Assess: the decoder's own limit, not a trap ("unreachable").
    expect(memoryBudget(10_240).memoryMb * 1024 * 1024 * 0.25).toBeGreaterThan(DECODER_ROW_GROUP_BYTES);
    expect(refused.err).toBeInstanceOf(UnsupportedInputError);
    expect(refused.err.message).toContain(
      'row group 0 could decode to 2048 MiB (column arr.key_value.key the most), more than the 2048 MiB the decoder can hold for one row group whatever the memory',
    );
    expect(refused.written).toBe(0);
    expect(refused.unchanged).toBe(true);
  }, 60_000);
});
