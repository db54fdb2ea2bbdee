// Fingerprinting of parquet-wasm record batches: zero-copy through the Arrow C Data Interface in wasm memory,
// or through Arrow IPC and arrow-js (the reference path); both feed the same kernels: equal rows hash equal.

import { type Table, tableFromIPC } from 'apache-arrow';
import type { RecordBatch as WasmRecordBatch } from 'parquet-wasm';
import * as pw from 'parquet-wasm';
import type { MultisetHash } from '../../core/fingerprint/row-hash.js';
import { FfiLayoutUnsupported, hashWasmBatchFfi } from './ffi-hash.js';

/**
 * Copies a wasm record batch out as an Arrow JS table through Arrow IPC, without consuming it (a
 * slice is consumed, not the original). Slower than FFI views, but a separate decoder of the
 * batch's memory: verification uses it so that a bug in the FFI walker cannot cancel out.
 */
export function wasmBatchToTable(batch: WasmRecordBatch): Table {
  return tableFromIPC(batch.slice(0, batch.numRows).intoIPCStream());
}

/** Adds a wasm record batch's rows to `acc` through Arrow IPC and arrow-js (the reference path). */
export function hashWasmBatchIpc(acc: MultisetHash, batch: WasmRecordBatch): void {
  if (batch.numRows === 0) return;
  for (const b of wasmBatchToTable(batch).batches) acc.addBatch(b);
}

/**
 * Adds a wasm record batch's rows to `acc` without consuming the batch: zero-copy through the C
 * Data Interface, or through Arrow IPC for the rare layouts the FFI walker does not read. Both
 * give the same hash.
 */
export function hashWasmBatch(acc: MultisetHash, batch: WasmRecordBatch): void {
  try {
    hashWasmBatchFfi(acc, batch, pw.wasmMemory());
  } catch (err) {
    if (!(err instanceof FfiLayoutUnsupported)) throw err;
    hashWasmBatchIpc(acc, batch);
  }
}
