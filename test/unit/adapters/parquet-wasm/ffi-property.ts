// The FFI walker's property check, shared by its property tests and its mutation check: one seeded case is a
// random table held by parquet-wasm (decoded from Parquet, or read from Arrow IPC); the walker under test hashes
// its batches cut at random rows, the Arrow IPC path (the oracle) hashes them whole, and any difference in
// digest, multiset hash or null counts is reported.

import { type Table, tableToIPC } from 'apache-arrow';
import {
  columnsOfWasmBatchIpc,
  hashWasmBatchIpc,
} from '../../../../functions/adapters/parquet-wasm/batch-hash.js';
import {
  hashWasmBatchFfi,
  withWasmBatchColumns,
} from '../../../../functions/adapters/parquet-wasm/ffi-hash.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import {
  type ArrowColumn,
  MultisetHash,
  OrderedDigest,
} from '../../../../functions/core/fingerprint/fingerprint.js';
import { ALL_LEAVES, NESTED, Rand, randomTable, type TypeOptions } from './arrow-tables.js';

/**
 * The types of tables written to Parquet and decoded back: all of them (parquet-wasm writes each,
 * with ARROW:schema, and reads back the Arrow type it was written from).
 */
export const PARQUET_TYPES: TypeOptions = { leaves: ALL_LEAVES, nested: NESTED };

/** The types of tables parquet-wasm reads from Arrow IPC. */
export const IPC_TYPES: TypeOptions = { leaves: ALL_LEAVES, nested: NESTED };

/** The walker's two entry points, as `ffi-hash.ts` exports them (or a mutant of it does). */
export interface FfiWalker {
  readonly ordered: (
    batch: pw.RecordBatch,
    memory: { readonly buffer: ArrayBuffer },
    sink: (columns: readonly ArrowColumn[], offset: number, rows: number) => void,
  ) => void;
  readonly multiset: (
    acc: MultisetHash,
    batch: pw.RecordBatch,
    memory: { readonly buffer: ArrayBuffer },
  ) => void;
}

export const REAL_WALKER: FfiWalker = { ordered: withWasmBatchColumns, multiset: hashWasmBatchFfi };

/** One seeded case: parquet-wasm batches of a random table, and the seeded choices of where to cut them. */
export interface PropertyCase {
  readonly batches: pw.RecordBatch[];
  readonly cuts: Rand;
}

/** Parquet bytes of `table`, written by parquet-wasm with random dictionary, page and row-group settings. */
export function parquetOf(table: Table, rand: Rand): Uint8Array {
  const props = new pw.WriterPropertiesBuilder()
    .setDictionaryEnabled(rand.chance(0.5))
    .setMaxRowGroupSize(1 + rand.int(500))
    .setDataPageSizeLimit(256 + rand.int(4096))
    .setWriteBatchSize(1 + rand.int(256))
    .build();
  return pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(table, 'stream')), props);
}

/**
 * The case of `seed`: a table of up to 300 rows, as parquet-wasm batches — decoded from Parquet
 * bytes in batches of a random size, or read from Arrow IPC (the table's own batches). `seen`
 * collects the types chosen, for the tests' coverage check.
 */
export function propertyCase(seed: number, source: 'parquet' | 'ipc', seen: Set<string>): PropertyCase {
  const rand = new Rand(seed * 2_654_435_761 + (source === 'parquet' ? 1 : 2));
  const types = source === 'parquet' ? PARQUET_TYPES : IPC_TYPES;
  const kinds = [...types.leaves, ...types.nested];
  const table = randomTable(rand, types, rand.int(300), seen, kinds[seed % kinds.length]);
  let wasm: pw.Table;
  if (source === 'parquet') {
    wasm = pw.readParquet(parquetOf(table, rand), { batchSize: 1 + rand.int(300) });
  } else {
    wasm = pw.Table.fromIPCStream(tableToIPC(table, 'stream'));
  }
  const batches = wasm.recordBatches();
  wasm.free();
  return { batches, cuts: rand };
}

/** Rows [from, from + n) pieces that cover `rows`, cut at random (sometimes not at all). */
function pieces(rand: Rand, rows: number): [number, number][] {
  if (rows === 0 || rand.chance(0.2)) return [[0, rows]];
  const out: [number, number][] = [];
  for (let at = 0; at < rows; ) {
    const n = Math.min(rows - at, 1 + rand.int(Math.max(1, rows >> 1)));
    out.push([at, n]);
    at += n;
  }
  return out;
}

/**
 * `batch` with its first `k` rows hidden by the C Data Interface's `offset` rather than by slicing:
 * arrow-rs exports a slice with its buffers moved and offset 0 (but for bitmaps), so an array offset
 * on anything else is only reached this way. Either every column gets offset `k` (its length and null
 * count adjusted: -1, "unknown") or the batch's struct array does (its columns then start at `k`). A
 * consumer may set these fields: they belong to the exported struct, not to the data.
 */
function shifted(batch: pw.RecordBatch, k: number, where: 'columns' | 'batch'): pw.RecordBatch {
  const n = batch.numRows - k;
  return {
    numRows: n,
    toFFI() {
      const ffi = batch.toFFI();
      const m = new DataView(pw.wasmMemory().buffer);
      const top = ffi.arrayAddr();
      const set = (addr: number, length: number, offset: number, nulls: number) => {
        m.setBigInt64(addr, BigInt(length), true);
        m.setBigInt64(addr + 8, BigInt(nulls), true);
        m.setBigInt64(addr + 16, BigInt(offset), true);
      };
      if (where === 'batch') {
        set(top, n, k, 0);
      } else {
        set(top, n, 0, 0);
        const children = m.getUint32(top + 44, true);
        for (let i = 0; i < Number(m.getBigInt64(top + 32, true)); i++) {
          const child = m.getUint32(children + 4 * i, true);
          set(child, n, Number(m.getBigInt64(child + 16, true)) + k, -1);
        }
      }
      return ffi;
    },
  } as unknown as pw.RecordBatch;
}

/**
 * What differs between `walker` and the IPC oracle over the case's batches — ordered digest and
 * null counts, then multiset hash and null counts — or undefined when nothing does. The walker reads
 * the batches cut into random pieces, and once more each batch's rows after a random `k` through an
 * array offset (`shifted`); the oracle reads whole batches, and the same rows sliced. A walker that
 * throws is a difference too. Frees the batches.
 */
export function walkerDisagreement(c: PropertyCase, walker: FfiWalker = REAL_WALKER): string | undefined {
  const plain = compare(c, walker, 'pieces');
  if (plain !== undefined) return plain;
  const viaOffsets = compare(c, walker, 'offsets');
  for (const batch of c.batches) batch.free();
  return viaOffsets === undefined ? undefined : `with array offsets: ${viaOffsets}`;
}

function compare(c: PropertyCase, walker: FfiWalker, how: 'pieces' | 'offsets'): string | undefined {
  const oracle = new OrderedDigest();
  const candidate = new OrderedDigest();
  const oracleSet = new MultisetHash();
  const candidateSet = new MultisetHash();
  try {
    for (const batch of c.batches) {
      if (how === 'offsets') {
        if (batch.numRows < 2) continue;
        const k = 1 + c.cuts.int(batch.numRows - 1);
        const rest = batch.slice(k, batch.numRows - k);
        columnsOfWasmBatchIpc(rest, (columns, offset, n) => oracle.add(columns, offset, n));
        hashWasmBatchIpc(oracleSet, rest);
        rest.free();
        const view = shifted(batch, k, c.cuts.chance(0.5) ? 'columns' : 'batch');
        walker.ordered(view, pw.wasmMemory(), (columns, offset, rows) =>
          candidate.add(columns, offset, rows),
        );
        walker.multiset(candidateSet, view, pw.wasmMemory());
        continue;
      }
      columnsOfWasmBatchIpc(batch, (columns, offset, n) => oracle.add(columns, offset, n));
      hashWasmBatchIpc(oracleSet, batch);
      for (const [from, n] of pieces(c.cuts, batch.numRows)) {
        const piece = batch.slice(from, n);
        try {
          walker.ordered(piece, pw.wasmMemory(), (columns, offset, rows) =>
            candidate.add(columns, offset, rows),
          );
          walker.multiset(candidateSet, piece, pw.wasmMemory());
        } finally {
          piece.free();
        }
      }
    }
  } catch (err) {
    for (const batch of c.batches) batch.free();
    return `threw ${String(err)}`;
  }
  const a = oracle.finish();
  const b = candidate.finish();
  if (JSON.stringify(a) !== JSON.stringify(b)) return `ordered: ${JSON.stringify(b)} vs ${JSON.stringify(a)}`;
  const set = (m: MultisetHash) => JSON.stringify([m.rows, m.digest(), m.nullCountsRecord()]);
  if (set(oracleSet) !== set(candidateSet)) return `multiset: ${set(candidateSet)} vs ${set(oracleSet)}`;
  return undefined;
}
