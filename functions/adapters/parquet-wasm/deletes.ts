// Dropping an input's deleted rows from its decoded batches: the kept rows as zero-copy slices, and a check,
// by a separate route, that what was kept is exactly the batch minus its deleted rows.

import type { DeletedRows } from '../../core/deletes/deleted-rows.js';
import { VerificationError } from '../../core/errors.js';
import { MultisetHash } from '../../core/fingerprint/fingerprint.js';
import { hashWasmBatch } from './batch-hash.js';
import type { pw } from './wasm.js';

/**
 * The kept rows of a decoded batch holding rows `[from, from + batch.numRows)` of input `key`, as slices of it in
 * order (the batch itself when none of its rows is deleted). Takes ownership of `batch`: it is returned, or freed
 * once sliced; the caller owns the pieces.
 *
 * Why the check: the fingerprint the rewrite records is of the rows it kept, and verify compares the outputs
 * with it, so a filter that keeps the wrong rows (an off-by-one that keeps a deleted row and drops its
 * neighbour) would be written, fingerprinted and verified consistently. So wherever rows are dropped, the
 * batch's row multiset must equal the kept pieces' plus the deleted rows' — the deleted rows sliced straight
 * from the deleted positions (`deletedIn`), the kept pieces from their complement (`keptIn`): a wrong
 * complement shows up as a different sum. Costs two multiset hashes of the batches that lose rows, none of
 * the others. (That the right number of rows is dropped overall is verify's check, from the plan.)
 * @throws VerificationError when the pieces are not the batch minus its deleted rows.
 */
export function keptPieces(
  key: string,
  batch: pw.RecordBatch,
  from: number,
  deleted: DeletedRows | undefined,
): pw.RecordBatch[] {
  const n = batch.numRows;
  if (deleted === undefined || deleted.count === 0 || n === 0) return [batch];
  const dropped = deleted.deletedIn(from, n);
  if (dropped.length === 0) return [batch];
  const kept = deleted.keptIn(from, n);
  const pieces: pw.RecordBatch[] = [];
  try {
    const whole = new MultisetHash();
    hashWasmBatch(whole, batch);
    const split = new MultisetHash();
    for (const d of dropped) {
      const slice = batch.slice(d.offset, d.length);
      try {
        hashWasmBatch(split, slice);
      } finally {
        slice.free();
      }
    }
    for (const k of kept) {
      const piece = batch.slice(k.offset, k.length);
      pieces.push(piece);
      if (piece.numRows !== k.length) fail(key, from, `a slice of ${k.length} rows holds ${piece.numRows}`);
      hashWasmBatch(split, piece);
    }
    if (split.rows !== n || split.digest() !== whole.digest()) {
      fail(
        key,
        from,
        `the kept and deleted rows (${split.rows - deleted.countIn(from, from + n)} + ${deleted.countIn(from, from + n)}) are not the batch's ${n} rows`,
      );
    }
  } catch (err) {
    for (const p of pieces) p.free();
    batch.free();
    throw err;
  }
  batch.free();
  return pieces;
}

function fail(key: string, from: number, reason: string): never {
  throw new VerificationError(
    `dropping the deleted rows of ${key} (batch from row ${from}) went wrong: ${reason}`,
    { key, from },
  );
}
