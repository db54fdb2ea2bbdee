// Inputs planned without their footers (`InputFile.footerDeferred`): the engine learns from its own read what
// planning would have — which schema each input is (one output set per schema population, whatever the key order),
// its rows, and whether it can be rewritten at all — and leaves out, reported, what planning would have skipped,
// instead of failing the group. A group planned from footers keeps failing on such an input, as before.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parquetWasmEngine } from '../../../../functions/adapters/parquet-wasm/engine.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { CorruptInputError } from '../../../../functions/core/errors.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;

beforeAll(async () => {
  duck = await duckWorkspace();
});

afterAll(async () => {
  await duck.close();
});

const A = (n: number) => `SELECT i AS id, 'a-' || i AS name FROM range(${n * 10}, ${n * 10 + 10}) t(i)`;
const B = (n: number) =>
  `SELECT i AS id, CAST(i AS DOUBLE) / 2 AS score FROM range(${n * 10}, ${n * 10 + 10}) t(i)`;

/** A Parquet trailer whose footer length points outside the file. */
function corruptBytes(): Uint8Array {
  const bytes = new Uint8Array(64);
  bytes.set([0x50, 0x41, 0x52, 0x31]);
  bytes.set([0xff, 0xff, 0x00, 0x00, 0x50, 0x41, 0x52, 0x31], 56);
  return bytes;
}

/** Stores each `[key, select or bytes]` and returns the group's inputs, each planned without its footer or not. */
async function stored(
  store: MemoryObjectStore,
  files: readonly (readonly [string, string | Uint8Array])[],
  deferred: boolean,
) {
  const inputs = [];
  for (const [key, what] of files) {
    await store.put(key, typeof what === 'string' ? await duck.parquet(what) : what);
    inputs.push({ ...(await fileOf(store, key)), ...(deferred && { footerDeferred: true }) });
  }
  return inputs;
}

async function rowsOf(store: MemoryObjectStore, keys: readonly string[]): Promise<string[]> {
  const rows = await duck.db.rows(
    `SELECT * FROM read_parquet(${await duck.materialise(store, keys)}, union_by_name = true) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

describe('inputs planned without their footers', () => {
  it('writes interleaved schemas as one output per population, reporting each input’s rows, verified', async () => {
    // Prepare: A and B alternate in key order.
    const store = new MemoryObjectStore();
    const files = await stored(
      store,
      [
        ['in/p0.parquet', A(0)],
        ['in/p1.parquet', B(1)],
        ['in/p2.parquet', A(2)],
        ['in/p3.parquet', B(3)],
      ],
      true,
    );
    const before = await rowsOf(
      store,
      files.map((f) => f.key),
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g1', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess: two outputs, not four; every row once; the rows each input held; the outputs verify.
    expect(result.outputs.map((o) => o.rows)).toEqual([20, 20]);
    expect(result.leftOut).toBeUndefined();
    expect(result.inputRows).toEqual({
      'in/p0.parquet': 10,
      'in/p1.parquet': 10,
      'in/p2.parquet': 10,
      'in/p3.parquet': 10,
    });
    expect(
      await rowsOf(
        store,
        result.outputs.map((o) => o.key),
      ),
    ).toEqual(before);
    await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
  });

  it('leaves out a corrupt, a zero-row and a lone-schema input, naming why, and rewrites the rest', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const files = await stored(
      store,
      [
        ['in/a0.parquet', A(0)],
        ['in/a1.parquet', A(1)],
        ['in/b0.parquet', B(0)],
        ['in/bad.parquet', corruptBytes()],
        ['in/empty.parquet', `${A(9)} LIMIT 0`],
      ],
      true,
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g1', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    expect(result.outputs.map((o) => o.rows)).toEqual([20]);
    expect(result.leftOut?.map((l) => [l.key, l.kind, l.errorName])).toEqual([
      ['in/bad.parquet', 'unreadable', 'CorruptInputError'],
      ['in/empty.parquet', 'empty', 'UnsupportedInputError'],
      ['in/b0.parquet', 'alone', undefined],
    ]);
    expect(result.inputRows).toEqual({ 'in/a0.parquet': 10, 'in/a1.parquet': 10 });
    await parquetWasmEngine.verifyOutputs(store, result.outputs, result.fingerprint);
  });

  it('writes nothing when every input is left out', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const files = await stored(
      store,
      [
        ['in/bad.parquet', corruptBytes()],
        ['in/a0.parquet', A(0)],
      ],
      true,
    );

    // Act
    const result = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'g1', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    expect(result.outputs).toEqual([]);
    expect(result.fingerprint.rows).toBe(0);
    expect(result.leftOut?.map((l) => l.kind)).toEqual(['unreadable', 'alone']);
    expect(store.keys().filter((k) => k.startsWith('out/'))).toEqual([]);
  });

  it('still fails a group planned from footers on a corrupt input, as before', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    const files = await stored(
      store,
      [
        ['in/a0.parquet', A(0)],
        ['in/bad.parquet', corruptBytes()],
      ],
      false,
    );

    // Act
    const act = rewriteGroup(
      { source: store, target: store },
      { groupId: 'g1', files },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(act).rejects.toBeInstanceOf(CorruptInputError);
  });
});
