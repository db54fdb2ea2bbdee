// The partition rewrite's verification (adapters/parquet-wasm/transform-verify.ts) is its own path: outputs whose
// values are not the transformation of the inputs — an evaluator that computed a column wrongly, a copied column
// that changed — fail it, naming the output and the column, whatever the rewrite believed it wrote.
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
import { VerificationError } from '../../functions/core/errors.js';
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
  await db.writeParquet(
    `SELECT range::VARCHAR AS id, 'n' || range AS name, (range * 1.5)::DOUBLE AS amount FROM range(20)`,
    join(folder, 'in', 'part-0.parquet'),
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
      [{ key: 'in/part-0.parquet' }],
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
      [{ key: 'in/part-0.parquet' }],
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
      [{ key: 'in/part-0.parquet' }],
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
