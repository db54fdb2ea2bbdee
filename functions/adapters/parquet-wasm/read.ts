// The rewrite's read loop: inputs fetched ahead in input order, decoded a row group at a time into wasm
// batches (INT96 converted), every batch fingerprinted as it is decoded, row counts checked against footers.

import type { Table } from 'apache-arrow';
import { CorruptInputError, VerificationError } from '../../core/errors.js';
import { assertParquetMagic } from '../../core/parquet/footer.js';
import type { ObjectStore } from '../../ports/object-store.js';
import { type RewriteFingerprint, wasmBatchToTable } from './batch-hash.js';
import { keptPieces } from './deletes.js';
import { OrderedFetcher } from './fetch.js';
import { convertBatch, readInt96Micros } from './int96.js';
import type { CheckedInput } from './preflight.js';
import type { RewriteSettings } from './settings.js';
import { decodeBatches, decodeError, type pw } from './wasm.js';

/** One decoded batch; `js` (a copy in arrow-js) only when sorting, which needs the sort keys. */
export interface DecodedBatch {
  readonly batch: pw.RecordBatch;
  readonly js: Table | undefined;
}

/**
 * Reads `inputs` in their order and fingerprints every row it hands out, so the fingerprint is of what
 * was read, whoever writes it. Fetching starts as soon as it is constructed, and `decode` must be called
 * for exactly these inputs, in this order: the fetcher hands out the next bytes it fetched.
 */
export class InputReader {
  private readonly fetcher: OrderedFetcher;
  private readonly inputs: readonly CheckedInput[];
  private next = 0;

  constructor(
    source: ObjectStore,
    inputs: readonly CheckedInput[],
    cache: Map<string, Uint8Array>,
    private readonly settings: RewriteSettings,
    /** Gets every row decoded, in read order. */
    readonly fingerprint: RewriteFingerprint,
  ) {
    this.inputs = inputs;
    this.fetcher = new OrderedFetcher(
      source,
      inputs.map((i) => i.file),
      cache,
      {
        maxRequestsInFlight: settings.maxRequestsInFlight,
        maxBytesInFlight: settings.maxBytesInFlight,
        ...(settings.signal !== undefined && { signal: settings.signal }),
      },
    );
  }

  /** Bytes this reader fetched (pre-flight's are counted by pre-flight). */
  get bytesRead(): number {
    return this.fetcher.bytesRead;
  }

  /**
   * Decodes the next input, which must be `input`, into wasm batches, fingerprinting each as it comes.
   * `onBytes` gets the input's whole bytes before decoding (stitching copies the very bytes decoded).
   */
  async *decode(input: CheckedInput, onBytes?: (bytes: Uint8Array) => void): AsyncGenerator<DecodedBatch> {
    const key = input.file.key;
    // The fetcher hands out bytes in its own order: decoding them as another input would fingerprint
    // and write the wrong rows consistently, which no later check could see.
    const expected = this.inputs[this.next++]?.file.key;
    if (expected !== key) throw new Error(`InputReader: asked for ${key}, but the next input is ${expected}`);
    const bytes = await this.fetcher.take();
    onBytes?.(bytes);
    let decodedRows = 0;
    let keptRows = 0;
    try {
      assertParquetMagic(key, bytes);
      const micros =
        input.int96Columns.length > 0 ? await readInt96Micros(key, bytes, input.int96Columns) : undefined;
      for await (let batch of decodeBatches(
        key,
        bytes,
        this.settings.batchRows,
        input.footer.rowGroups.length,
      )) {
        const n = batch.numRows;
        try {
          // INT96 conversion and deletes both go by the row's position in the file: convert first.
          if (micros !== undefined && n > 0) batch = convertBatch(batch, decodedRows, micros);
        } catch (err) {
          batch.free();
          throw decodeError(key, err);
        }
        let pieces: pw.RecordBatch[];
        try {
          pieces = keptPieces(key, batch, decodedRows, input.file.deleted); // frees `batch` if it throws
        } catch (err) {
          throw err instanceof VerificationError ? err : decodeError(key, err);
        }
        decodedRows += n;
        for (const [i, piece] of pieces.entries()) {
          let js: Table | undefined;
          try {
            this.fingerprint.add(piece);
            // Only sorting needs the rows in JS (for the sort keys); copying them costs time.
            if (this.settings.sort !== undefined && piece.numRows > 0) js = wasmBatchToTable(piece);
          } catch (err) {
            for (const p of pieces.slice(i)) p.free();
            throw decodeError(key, err);
          }
          keptRows += piece.numRows;
          yield { batch: piece, js };
        }
      }
    } finally {
      // The bytes stay counted against the fetch budget until the whole file is decoded.
      this.fetcher.release(input.file.size);
    }
    if (decodedRows !== input.footer.rows) {
      throw new CorruptInputError(
        key,
        `decoded ${decodedRows} rows where the footer says ${input.footer.rows}`,
      );
    }
    if (keptRows !== input.liveRows) {
      throw new VerificationError(
        `${key}: kept ${keptRows} of its ${decodedRows} rows, but ${input.liveRows} are not deleted`,
        { key, keptRows, liveRows: input.liveRows },
      );
    }
  }
}
