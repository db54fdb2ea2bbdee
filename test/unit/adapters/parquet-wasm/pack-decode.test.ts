// Proves that decoding many small inputs in one decoder call changes nothing that matters: the same rows in the
// same order and of the same types as decoding them one by one, schema runs never mixed, inputs whose rows are
// touched by position (deletes) decoded alone, and a damaged input in the middle still named after its neighbours.

import { tableFromIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteFingerprint } from '../../../../functions/adapters/parquet-wasm/batch-hash.js';
import { type CheckedInput, preflight } from '../../../../functions/adapters/parquet-wasm/preflight.js';
import { InputReader, packOf, type RunBatch } from '../../../../functions/adapters/parquet-wasm/read.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { settingsOf } from '../../../../functions/adapters/parquet-wasm/settings.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { CorruptInputError } from '../../../../functions/core/errors.js';
import { combineForDecode } from '../../../../functions/core/parquet/combine.js';
import { generateEventsBatch, mulberry32 } from '../../../../functions/tools/sample-lake.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** Rows of decoded wasm batches as JSON text, one string per row, in order (bigints as text). */
function rowsOf(batches: readonly pw.RecordBatch[]): string[] {
  const rows: string[] = [];
  for (const b of batches) {
    if (b.numRows === 0) continue;
    for (const row of tableFromIPC(b.slice(0, b.numRows).intoIPCStream()).toArray()) {
      rows.push(JSON.stringify(row, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));
    }
  }
  return rows;
}

/** The Arrow schema of the first batch, serialised: exact types, nullability and metadata. */
function schemaOf(batches: readonly pw.RecordBatch[]): string {
  return Buffer.from((batches[0] as pw.RecordBatch).schema.intoIPCStream()).toString('base64');
}

function decodeAlone(bytes: Uint8Array): pw.RecordBatch[] {
  const table = pw.readParquet(bytes, { batchSize: 65_536 });
  const batches = table.recordBatches();
  table.free();
  return batches;
}

/** Small files from two independent writers: parquet-wasm (the sample lake's) and DuckDB (dictionary pages, nulls). */
async function smallFiles(): Promise<{ wasm: Uint8Array[]; duckdb: Uint8Array[] }> {
  const wasm = [0, 1, 2, 3, 4].map((i) =>
    generateEventsBatch(mulberry32(100 + i), { rows: 200 + 37 * i, day: '2024-01-01' }),
  );
  const duckdb: Uint8Array[] = [];
  for (let i = 0; i < 4; i++)
    duckdb.push(await duck.parquet(eventsSelect(150 + 11 * i, i), { rowGroupSize: 64 }));
  return { wasm, duckdb };
}

/** A store holding `files` as in/<i>.parquet, the group's entries, and their pre-flight. */
async function prepared(files: readonly Uint8Array[], deleted: Record<number, DeletedRows> = {}) {
  const source = new MemoryObjectStore();
  const entries = [];
  for (const [i, bytes] of files.entries()) {
    const key = `in/${String(i).padStart(3, '0')}.parquet`;
    await source.put(key, bytes);
    entries.push({ key, size: bytes.length, etag: '', ...(deleted[i] && { deleted: deleted[i] }) });
  }
  const settings = settingsOf({ groupId: 'g', files: entries }, { outputKey: (i) => `out/${i}` });
  const pre = await preflight(source, entries, {
    maxRequestsInFlight: 8,
    cacheBytes: 0,
    int96: 'refuse',
    settings: { codec: settings.codec, rowGroupRows: settings.rowGroupRows },
  });
  return { source, pre, settings };
}

/** Every batch of a run through `decodeRun`, or one input at a time through `decode`; with their fingerprint. */
async function readAll(files: readonly Uint8Array[], how: 'run' | 'one by one') {
  const { source, pre, settings } = await prepared(files);
  const reader = new InputReader(
    source,
    pre.inputs,
    pre.cache,
    settings,
    rewriteFingerprint('ordered-columns-v1'),
  );
  const rows = pre.inputs.reduce((n, i) => n + i.liveRows, 0);
  reader.fingerprint.startRun([rows]);
  const batches: RunBatch[] = [];
  if (how === 'run') for await (const b of reader.decodeRun(pre.inputs)) batches.push(b);
  else {
    for (const input of pre.inputs) {
      for await (const b of reader.decode(input)) batches.push({ ...b, key: input.file.key });
    }
  }
  reader.fingerprint.endRun();
  return { batches, fingerprint: reader.fingerprint.result(pre.inputs.map((i) => i.schemaKey)) };
}

describe('combineForDecode', () => {
  it.each(['wasm', 'duckdb'] as const)(
    'gives the decoder the rows of %s-written inputs in order and of the same types as decoding each alone',
    async (writer) => {
      // Prepare
      const files = (await smallFiles())[writer];
      const alone = files.flatMap(decodeAlone);

      // Act
      const combined = combineForDecode(files.map((bytes, i) => ({ key: `f${i}`, bytes })));

      // Assess
      if (combined.refused !== undefined) throw new Error(combined.refused);
      const together = decodeAlone(combined.bytes);
      expect(combined.rows).toBe(rowsOf(alone).length);
      expect(rowsOf(together)).toEqual(rowsOf(alone));
      expect(schemaOf(together)).toBe(schemaOf(alone));
      expect(together.length).toBeLessThan(files.length);
    },
  );

  it('refuses inputs whose footers differ beyond their row groups, naming the first that differs', async () => {
    // Prepare: same columns, another writer — the schema and key-value metadata differ.
    const { wasm, duckdb } = await smallFiles();

    // Act
    const combined = combineForDecode([
      { key: 'a', bytes: wasm[0] as Uint8Array },
      { key: 'b', bytes: wasm[1] as Uint8Array },
      { key: 'c', bytes: duckdb[0] as Uint8Array },
    ]);

    // Assess
    expect(combined.refused).toMatch(/^c: its footer differs from a's/);
  });

  it('refuses an input that is not Parquet, naming it, instead of guessing its layout', async () => {
    // Prepare
    const { wasm } = await smallFiles();
    const bad = (wasm[2] as Uint8Array).slice(0, (wasm[2] as Uint8Array).length - 50);

    // Act
    const combined = combineForDecode([
      { key: 'a', bytes: wasm[0] as Uint8Array },
      { key: 'bad', bytes: bad },
    ]);

    // Assess
    expect(combined.refused).toMatch(/^bad: /);
  });
});

describe('packOf', () => {
  function input(key: string, rows: number, size: number, extra: Partial<CheckedInput> = {}): CheckedInput {
    return {
      file: { key, size, etag: '' },
      footer: { rows, rowGroups: [], keyValueMetadata: {} },
      schemaKey: 's',
      runKey: 'r',
      int96Columns: [],
      liveRows: rows,
      ...extra,
    };
  }

  it('takes consecutive small inputs while their rows fit one batch and their bytes the budget', () => {
    // Prepare
    const inputs = [0, 1, 2, 3, 4].map((i) => input(`k${i}`, 400, 1_000));

    // Act
    const byRows = packOf(inputs, 1, 1_000, 1_000_000).map((i) => i.file.key);
    const byBytes = packOf(inputs, 0, 100_000, 3_000).map((i) => i.file.key);

    // Assess
    expect(byRows).toEqual(['k1', 'k2']);
    expect(byBytes).toEqual(['k0', 'k1', 'k2']);
  });

  it('stops at an input with deleted rows or INT96 columns: those are decoded alone', () => {
    // Prepare
    const inputs = [
      input('a', 10, 100),
      input('b', 10, 100),
      input('deletes', 10, 100, {
        file: { key: 'deletes', size: 100, etag: '', deleted: DeletedRows.of([3]) },
      }),
      input('c', 10, 100),
      input('int96', 10, 100, { int96Columns: ['ts'] }),
    ];

    // Act
    const first = packOf(inputs, 0, 65_536, 1 << 20).map((i) => i.file.key);
    const atDeletes = packOf(inputs, 2, 65_536, 1 << 20);
    const beforeInt96 = packOf(inputs, 3, 65_536, 1 << 20).map((i) => i.file.key);

    // Assess
    expect(first).toEqual(['a', 'b']);
    expect(atDeletes).toEqual([]);
    expect(beforeInt96).toEqual(['c']);
  });
});

describe('InputReader.decodeRun', () => {
  it('decodes small inputs together into fewer batches with the same rows, order and fingerprint as one by one', async () => {
    // Prepare
    const files = (await smallFiles()).wasm;
    const alone = await readAll(files, 'one by one');

    // Act
    const run = await readAll(files, 'run');

    // Assess
    expect(run.batches.length).toBeLessThan(alone.batches.length);
    expect(rowsOf(run.batches.map((b) => b.batch))).toEqual(rowsOf(alone.batches.map((b) => b.batch)));
    expect(run.fingerprint).toEqual(alone.fingerprint);
    expect(run.batches[0]?.key).toBe('in/000.parquet');
  });

  it('still names a damaged input in the middle, after handing out the rows of the inputs before it', async () => {
    // Prepare: a page of the third of five inputs overwritten (the footer still reads).
    const files = (await smallFiles()).duckdb.slice(0, 4);
    files.splice(2, 0, (await duck.parquet(eventsSelect(120, 50))).slice());
    const bad = files[2] as Uint8Array;
    bad.fill(0xff, 4, Math.min(bad.length - 400, 200));
    const { source, pre, settings } = await prepared(files);
    const reader = new InputReader(
      source,
      pre.inputs,
      pre.cache,
      settings,
      rewriteFingerprint('ordered-columns-v1'),
    );
    reader.fingerprint.startRun([pre.inputs.reduce((n, i) => n + i.liveRows, 0)]);
    const seen: RunBatch[] = [];

    // Act
    const err = await (async () => {
      for await (const b of reader.decodeRun(pre.inputs)) seen.push(b);
    })().then(
      () => undefined,
      (e: unknown) => e,
    );

    // Assess
    expect(err).toBeInstanceOf(CorruptInputError);
    expect((err as CorruptInputError).key).toBe('in/002.parquet');
    expect(rowsOf(seen.map((b) => b.batch))).toEqual(rowsOf(files.slice(0, 2).flatMap(decodeAlone)));
    expect(new Set(seen.map((b) => b.key))).toEqual(new Set(['in/000.parquet', 'in/001.parquet']));
  });
});

describe('rewriteGroup with small inputs', () => {
  it('keeps schema runs apart: inputs of another schema between small ones start their own outputs', async () => {
    // Prepare: A A B B A — three runs, each small enough to be decoded together.
    const { wasm, duckdb } = await smallFiles();
    const files = [wasm[0], wasm[1], duckdb[0], duckdb[1], wasm[2]] as Uint8Array[];
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const entries = [];
    for (const [i, bytes] of files.entries()) {
      const key = `in/${i}.parquet`;
      entries.push({ key, size: bytes.length, ...(await source.put(key, bytes)) });
    }

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'runs', files: entries },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    const rows = (bytes: readonly Uint8Array[]) => rowsOf(bytes.flatMap(decodeAlone));
    expect(result.outputs.map((o) => o.rows)).toEqual([
      rows([wasm[0], wasm[1]] as Uint8Array[]).length,
      rows([duckdb[0], duckdb[1]] as Uint8Array[]).length,
      rows([wasm[2]] as Uint8Array[]).length,
    ]);
    const out = await Promise.all(result.outputs.map(async (o) => decodeAlone(await target.get(o.key))));
    expect(rowsOf(out[0] ?? [])).toEqual(rows([wasm[0], wasm[1]] as Uint8Array[]));
    expect(rowsOf(out[1] ?? [])).toEqual(rows([duckdb[0], duckdb[1]] as Uint8Array[]));
    expect(schemaOf(out[0] ?? [])).toBe(schemaOf(decodeAlone(wasm[0] as Uint8Array)));
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);
    expect(report.fingerprint).toEqual(result.fingerprint);
  });

  it('honours deleted rows of a small input between packable neighbours', async () => {
    // Prepare
    const files = (await smallFiles()).wasm;
    const deleted = DeletedRows.of([0, 5, 6, 7]);
    const { source } = await prepared(files);
    const target = new MemoryObjectStore();
    const entries = await Promise.all(
      files.map(async (bytes, i) => {
        const key = `in/${String(i).padStart(3, '0')}.parquet`;
        return { key, size: bytes.length, etag: '', ...(i === 2 && { deleted }) };
      }),
    );

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'dv', files: entries },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    const third = rowsOf(decodeAlone(files[2] as Uint8Array)).filter((_, i) => ![0, 5, 6, 7].includes(i));
    const expected = [
      ...rowsOf(files.slice(0, 2).flatMap(decodeAlone)),
      ...third,
      ...rowsOf(files.slice(3).flatMap(decodeAlone)),
    ];
    const written = (
      await Promise.all(result.outputs.map(async (o) => rowsOf(decodeAlone(await target.get(o.key)))))
    ).flat();
    expect(written).toEqual(expected);
  });
});
