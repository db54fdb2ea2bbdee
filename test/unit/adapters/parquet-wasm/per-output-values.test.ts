import { basename } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parquetWasmEngine } from '../../../../functions/adapters/parquet-wasm/engine.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { groupFingerprintSchema } from '../../../../functions/core/fingerprint/fingerprint.js';
import {
  bloomFilterOfFooter,
  HUDI_BLOOM_FILTER_KEY,
  HUDI_BLOOM_FILTER_TYPE_CODE_KEY,
  HUDI_INDEX_FOOTER_KEYS,
  HUDI_MAX_RECORD_KEY_KEY,
  HUDI_MIN_RECORD_KEY_KEY,
  HudiIndexFooterBuilder,
  hudiIndexFooterEntries,
  recordKeyRange,
} from '../../../../functions/core/formats/hudi/bloom/index.js';
import { keyValueRecord } from '../../../../functions/core/parquet/key-value.js';
import type { RewriteOptions, WrittenOutput } from '../../../../functions/ports/parquet-engine.js';
import { storedHudiPartition } from '../../../support/fixtures.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

/**
 * Partitions of vendored Hudi tables whose base files are rewritten: Avro- and Spark-written files mixed, 1.x and
 * 0.x. Avro writes decimals as FIXED_LEN_BYTE_ARRAY, which the writer cannot reproduce exactly, so those tables are
 * rewritten under `logical` fidelity (values unchanged); the trips table has no decimal and is rewritten exactly.
 */
const PARTITIONS: readonly { readonly partition: string; readonly fidelity: 'exact' | 'logical' }[] = [
  { partition: 'mor_v8_trips_8i3u1d/city=san_francisco', fidelity: 'exact' },
  { partition: 'cow_v9_txns_simple_meta/region=us', fidelity: 'logical' },
  { partition: 'cow_v6_simplekeygen_nonhivestyle/10', fidelity: 'logical' },
];
let fidelity: 'exact' | 'logical' = 'exact';

let duck: DuckWorkspace;

beforeAll(async () => {
  duck = await duckWorkspace();
});

afterAll(async () => {
  await duck.close();
});

/** The options a Hudi clustering would pass: the file name derived, the index entries computed from each output's keys. */
function hudiOptions(prefix: string, extra: Partial<RewriteOptions> = {}): RewriteOptions {
  return {
    outputKey: (i) => `${prefix}/0000000${i}-aaaa-bbbb-cccc-dddddddddddd-0_0-1-1_20260101000000000.parquet`,
    derivedColumns: [{ column: '_hoodie_file_name', value: 'output-file-name' }],
    outputFooterEntries: {
      keys: HUDI_INDEX_FOOTER_KEYS,
      column: '_hoodie_record_key',
      begin: () => new HudiIndexFooterBuilder(),
    },
    schemaFidelity: fidelity,
    ...extra,
  };
}

async function rewriteOf(
  partition: string,
  extra: Partial<RewriteOptions> = {},
): Promise<{
  store: MemoryObjectStore;
  inputs: string[];
  outputs: readonly WrittenOutput[];
  result: Awaited<ReturnType<typeof rewriteGroup>>;
}> {
  const { store, keys } = await storedHudiPartition(partition);
  const files = await Promise.all(keys.map((k) => fileOf(store, k)));
  const result = await rewriteGroup(
    { source: store, target: store },
    { groupId: partition, files, expectedOutputFiles: 2 },
    hudiOptions('out', extra),
  );
  return { store, inputs: keys, outputs: result.outputs, result };
}

/** Every column but `_hoodie_file_name`, as DuckDB reads the objects (by name, across the inputs' schemas). */
async function otherColumns(
  store: MemoryObjectStore,
  keys: readonly string[],
): Promise<Record<string, unknown>[]> {
  const list = await duck.materialise(store, keys);
  return duck.db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet(${list}, union_by_name = true) ORDER BY ALL`,
  );
}

describe.each(PARTITIONS)('a rewrite of the Hudi base files of $partition with per-output values', (p) => {
  const partition = p.partition;
  beforeAll(() => {
    fidelity = p.fidelity;
  });

  it('names each output in its own _hoodie_file_name and keeps every other column of every row', async () => {
    // Act
    const { store, inputs, outputs } = await rewriteOf(partition);
    // Assess: two outputs at least, so a name copied from a neighbour would show.
    expect(outputs.length).toBeGreaterThanOrEqual(2);
    for (const output of outputs) {
      const list = await duck.materialise(store, [output.key]);
      const names = await duck.db.rows(`SELECT DISTINCT _hoodie_file_name AS n FROM read_parquet(${list})`);
      expect(names).toEqual([{ n: basename(output.key) }]);
    }
    expect(
      await otherColumns(
        store,
        outputs.map((o) => o.key),
      ),
    ).toEqual(await otherColumns(store, inputs));
  });

  it("writes each output's bloom filter and min/max keys from its own record keys", async () => {
    // Act
    const { store, outputs } = await rewriteOf(partition);
    // Assess
    for (const output of outputs) {
      const list = await duck.materialise(store, [output.key]);
      const keys = (await duck.db.rows(`SELECT _hoodie_record_key AS k FROM read_parquet(${list})`)).map(
        (r) => String(r.k),
      );
      const footer = keyValueRecord(
        parquetMetadata((await store.get(output.key)).buffer as ArrayBuffer).key_value_metadata ?? [],
      );
      const filter = bloomFilterOfFooter(footer);
      for (const key of keys) expect(filter?.mightContain(key), key).toBe(true);
      expect(footer[HUDI_BLOOM_FILTER_KEY] === hudiIndexFooterEntries(keys)[HUDI_BLOOM_FILTER_KEY]).toBe(
        true,
      );
      expect(footer[HUDI_BLOOM_FILTER_TYPE_CODE_KEY]).toBe('DYNAMIC_V0');
      expect({ min: footer[HUDI_MIN_RECORD_KEY_KEY], max: footer[HUDI_MAX_RECORD_KEY_KEY] }).toEqual(
        recordKeyRange(keys),
      );
      // The writer's own entries are still copied from the inputs (Avro's schema, or Spark's row metadata).
      expect(
        Object.keys(footer).some((k) => k === 'parquet.avro.schema' || k === 'org.apache.spark.version'),
      ).toBe(true);
    }
  });

  it('verifies, with the fingerprint as it travels in JSON', async () => {
    // Prepare
    const { store, outputs, result } = await rewriteOf(partition);
    const travelled = groupFingerprintSchema.parse(JSON.parse(JSON.stringify(result.fingerprint)));
    // Act
    const report = await parquetWasmEngine.verifyOutputs(
      store,
      outputs,
      travelled as typeof result.fingerprint,
    );
    // Assess
    expect(travelled.derived?.columns).toEqual([{ column: '_hoodie_file_name', value: 'output-file-name' }]);
    expect(report.rows).toBe(result.fingerprint.rows);
  });

  it('fails verify on an output whose _hoodie_file_name is not its own name (stored under another key)', async () => {
    // Prepare: the same bytes under another name; nothing else differs.
    const { store, outputs, result } = await rewriteOf(partition);
    const [first, ...rest] = outputs;
    if (first === undefined) throw new Error('no output');
    const moved = `out/renamed-${basename(first.key)}`;
    await store.put(moved, await store.get(first.key));
    // Act
    const verifying = parquetWasmEngine.verifyOutputs(
      store,
      [{ ...first, key: moved }, ...rest],
      result.fingerprint,
    );
    // Assess
    await expect(verifying).rejects.toThrow(VerificationError);
    await expect(verifying).rejects.toThrow(/derived column _hoodie_file_name differ/);
  });

  it('fails verify on an output where another column was altered', async () => {
    // Prepare: the same inputs rewritten with _hoodie_commit_seqno overwritten too — same schema, same footer
    // entries, one column's values changed — checked against the honest rewrite's fingerprint.
    const honest = await rewriteOf(partition);
    const altered = await rewriteOf(partition, {
      derivedColumns: [
        { column: '_hoodie_file_name', value: 'output-file-name' },
        { column: '_hoodie_commit_seqno', value: 'output-file-name' },
      ],
    });
    // Act
    const verifying = parquetWasmEngine.verifyOutputs(
      altered.store,
      altered.outputs,
      honest.result.fingerprint,
    );
    // Assess
    await expect(verifying).rejects.toThrow(/row hash/);
  });
});

describe('per-output values', () => {
  beforeAll(() => {
    fidelity = 'logical';
  });

  it('are refused with a sort, before anything is read', async () => {
    // Prepare
    const { store, keys } = await storedHudiPartition(PARTITIONS[2]?.partition as string);
    const files = await Promise.all(keys.map((k) => fileOf(store, k)));
    // Act
    const rewriting = rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      hudiOptions('out', { sort: { columns: ['_hoodie_record_key'], memoryBudgetBytes: 1 << 30 } }),
    );
    // Assess
    await expect(rewriting).rejects.toThrow(/cannot be combined with sort/);
    expect((await store.list('out/')).objects.length).toBe(0);
  });

  it('refuse a derived column the rows do not have as a string, and leave no output', async () => {
    // Prepare
    const { store, keys } = await storedHudiPartition(PARTITIONS[2]?.partition as string);
    const files = await Promise.all(keys.map((k) => fileOf(store, k)));
    // Act
    const rewriting = rewriteGroup(
      { source: store, target: store },
      { groupId: 'g', files },
      hudiOptions('out', { derivedColumns: [{ column: 'no_such_column', value: 'output-file-name' }] }),
    );
    // Assess
    await expect(rewriting).rejects.toThrow(/no_such_column is not in the rows/);
    expect((await store.list('out/')).objects.length).toBe(0);
  });
});
