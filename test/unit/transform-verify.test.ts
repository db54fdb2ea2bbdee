// The partition rewrite's verification (adapters/parquet-wasm/transform-verify.ts) is its own path: outputs whose
// values are not the transformation of the inputs — an evaluator that computed a column wrongly, a copied column
// that changed, an output holding other inputs than the plan packed into it — fail it, naming the output and the
// column, whatever the rewrite believed it wrote. Inputs packed several to an output are verified output by output.
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { transformingEngine } from '../../functions/adapters/parquet-wasm/transform-rewrite.js';
import {
  expectedFingerprint,
  partitionColumns,
  verifyTransformOutputs,
} from '../../functions/adapters/parquet-wasm/transform-verify.js';
import { InvalidInputError, VerificationError } from '../../functions/core/errors.js';
import { type InputColumn, planTransform, type TransformPlan } from '../../functions/core/transform/spec.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { type DuckDb, openDuckDb } from '../support/duckdb.js';

let folder: string;
let store: LocalObjectStore;
let db: DuckDb;
let columns: InputColumn[];

const plan = (expression: string): TransformPlan =>
  planTransform(
    {
      steps: [
        { op: 'cast', column: 'id', to: 'int64' },
        { op: 'addColumn', name: 'twice', type: 'float64', expression },
      ],
    },
    columns,
  );

/** Rewrites the input through `written`'s plan and returns the outputs as stored. */
async function rewriteWith(written: TransformPlan): Promise<{ key: string; size: number }[]> {
  const engine = transformingEngine(written, columns, defaultParquetEngine);
  const result = await engine.rewriteGroup(
    { source: store, target: store },
    { groupId: 'g0001', files: [{ key: 'in/part-0.parquet', size: 0, etag: '' }] },
    { outputKey: (i) => `out/${written.columns.length}-${i}.parquet` },
  );
  return result.outputs.map((o) => ({ key: o.key, size: o.size }));
}

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'lc-transform-verify-'));
  store = new LocalObjectStore(folder);
  await mkdir(join(folder, 'in'));
  db = await openDuckDb();
  for (let i = 0; i < 3; i++)
    await db.writeParquet(
      `SELECT (range + ${i * 100})::VARCHAR AS id, 'n' || range || '-' || ${i} AS name, (range * 1.5 + ${i})::DOUBLE AS amount FROM range(${20 + i * 5})`,
      join(folder, 'in', `part-${i}.parquet`),
    );
  columns = await partitionColumns(store, 'in/part-0.parquet');
});

afterAll(async () => {
  db.close();
  await rm(folder, { recursive: true, force: true });
});

describe('verifyTransformOutputs', () => {
  it('passes outputs that hold the transformation of the inputs', async () => {
    // Prepare
    const outputs = await rewriteWith(plan('amount * 2'));
    const expected = await expectedFingerprint(
      store,
      [[{ key: 'in/part-0.parquet' }]],
      plan('amount * 2'),
      columns,
    );

    // Act
    const report = await verifyTransformOutputs(store, outputs, expected);

    // Assess
    expect(report.rows).toBe(20);
    expect(report.outputs).toBe(1);
  });

  it('fails outputs whose derived column was computed otherwise, naming the output and the column', async () => {
    // Prepare: the "rewrite" evaluated amount * 3 where the transformation says amount * 2
    const outputs = await rewriteWith(plan('amount * 3'));
    const expected = await expectedFingerprint(
      store,
      [[{ key: 'in/part-0.parquet' }]],
      plan('amount * 2'),
      columns,
    );

    // Act
    const act = verifyTransformOutputs(store, outputs, expected);

    // Assess
    await expect(act).rejects.toThrow(VerificationError);
    await expect(act).rejects.toThrow(`${outputs[0]?.key}: column(s) twice differ`);
  });

  it('fails outputs that lost or changed a copied column', async () => {
    // Prepare: a rewrite that lost the copied column name (written by a plan that drops it)
    const changed = planTransform(
      {
        steps: [
          { op: 'cast', column: 'id', to: 'int64' },
          { op: 'drop', column: 'name' },
          { op: 'addColumn', name: 'twice', type: 'float64', expression: 'amount * 2' },
        ],
      },
      columns,
      ['name'],
    );
    const outputs = await rewriteWith(changed);
    const expected = await expectedFingerprint(
      store,
      [[{ key: 'in/part-0.parquet' }]],
      plan('amount * 2'),
      columns,
    );

    // Act
    const act = verifyTransformOutputs(store, outputs, expected);

    // Assess
    await expect(act).rejects.toThrow('are not the transformation');
    await expect(act).rejects.toThrow('name');
  });
});

describe('a rewrite packing several inputs into each output', () => {
  const inputs = [0, 1, 2].map((i) => ({ key: `in/part-${i}.parquet`, size: 0, etag: '' }));

  async function packedRewrite(inputsPerOutput: number[], prefix: string) {
    const engine = transformingEngine(plan('amount * 2'), columns, defaultParquetEngine, inputsPerOutput);
    return engine.rewriteGroup(
      { source: store, target: store },
      { groupId: 'g0001', files: inputs },
      { outputKey: (i) => `${prefix}/${i}.parquet` },
    );
  }

  it('writes the inputs into the outputs the plan packed them in, each verified against its own inputs', async () => {
    // Prepare / Act
    const result = await packedRewrite([2, 1], 'packed');
    const report = await verifyTransformOutputs(store, result.outputs, result.fingerprint as never);

    // Assess: 20 + 25 rows in the first output, 30 in the second, in input order
    expect(result.outputs.map((o) => o.rows)).toEqual([45, 30]);
    expect(report.outputs).toBe(2);
    expect(report.rows).toBe(75);
    const ids = await db.rows(`SELECT id FROM read_parquet('${join(folder, 'packed', '0.parquet')}')`);
    expect(ids.map((r) => r.id)).toEqual([
      ...Array.from({ length: 20 }, (_, n) => String(n)),
      ...Array.from({ length: 25 }, (_, n) => String(n + 100)),
    ]);
  });

  it('fails outputs that hold other inputs than the expected packing, naming each output', async () => {
    // Prepare: outputs packed [2, 1], expectation packed [1, 2] (the same rows in all, cut elsewhere)
    const result = await packedRewrite([2, 1], 'other');
    const expected = await expectedFingerprint(
      store,
      [[inputs[0] as (typeof inputs)[0]], [inputs[1] as (typeof inputs)[0], inputs[2] as (typeof inputs)[0]]],
      plan('amount * 2'),
      columns,
    );

    // Act
    const act = verifyTransformOutputs(store, result.outputs, expected);

    // Assess
    await expect(act).rejects.toThrow(VerificationError);
    await expect(act).rejects.toThrow(`${result.outputs[0]?.key}: 45 rows, 20 expected`);
    await expect(act).rejects.toThrow(`${result.outputs[1]?.key}: 30 rows, 55 expected`);
  });

  it("refuses a packing that does not account for exactly the group's inputs, writing nothing", async () => {
    // Act
    const act = packedRewrite([2, 2], 'refused');

    // Assess
    await expect(act).rejects.toThrow(InvalidInputError);
    await expect(act).rejects.toThrow('packs 4 inputs into 2 outputs, but its group has 3');
    expect(await store.list('refused/').then((l) => l.objects)).toEqual([]);
  });
});
