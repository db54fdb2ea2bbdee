// The rewrite's read loop: inputs fetched ahead in input order, decoded a row group at a time into wasm
// batches (INT96 converted), every batch fingerprinted as it is decoded, row counts checked against footers.

import type { Table } from 'apache-arrow';
import { CorruptInputError, UnsupportedInputError, VerificationError } from '../../core/errors.js';
import { combineForDecode } from '../../core/parquet/combine.js';
import { assertParquetMagic } from '../../core/parquet/footer.js';
import type { ObjectStore } from '../../ports/object-store.js';
import { type RewriteFingerprint, wasmBatchToTable } from './batch-hash.js';
import { keptPieces } from './deletes.js';
import { OrderedFetcher } from './fetch.js';
import { convertBatch, readInt96 } from './int96.js';
import { withRowLineage } from './lineage.js';
import { assertMapKeysPresent } from './map-keys.js';
import { type CheckedInput, checkDecodedSizeOf } from './preflight.js';
import { projectBatch } from './projection.js';
import type { RewriteSettings } from './settings.js';
import { decodeBatches, decodeError, pw } from './wasm.js';

/** One decoded batch; `js` (a copy in arrow-js) only when sorting, which needs the sort keys. */
export interface DecodedBatch {
  readonly batch: pw.RecordBatch;
  readonly js: Table | undefined;
}

/** A decoded batch of a run, with the input it came from (of a pack: its first input) for error messages. */
export interface RunBatch extends DecodedBatch {
  readonly key: string;
}

/** Bytes of small inputs decoded together at most (and at most a quarter of the fetch budget, so fetching goes on). */
const PACK_BYTES = 4 * 1024 * 1024;

/**
 * Whether an input may be decoded together with its neighbours (see `InputReader.decodeRun`): nothing
 * done to its rows by position (deleted rows, INT96 conversion) and small enough that several fit a batch.
 */
function packable(input: CheckedInput, batchRows: number, packBytes: number): boolean {
  return (
    input.file.deleted === undefined &&
    input.file.rowLineage === undefined &&
    input.file.projection === undefined &&
    input.int96Columns.length === 0 &&
    input.optionalMapKeys === undefined &&
    input.decodeCheckPending !== true &&
    input.footer.rows < batchRows &&
    input.file.size <= packBytes / 2
  );
}

/**
 * Consecutive inputs from `from` to decode in one call: packable ones, in order, while their rows fit one
 * batch and their bytes the pack budget. Fewer than two: decode `inputs[from]` alone.
 */
export function packOf(
  inputs: readonly CheckedInput[],
  from: number,
  batchRows: number,
  packBytes: number,
): readonly CheckedInput[] {
  const pack: CheckedInput[] = [];
  let rows = 0;
  let bytes = 0;
  for (let i = from; i < inputs.length; i++) {
    const input = inputs[i] as CheckedInput;
    if (!packable(input, batchRows, packBytes)) break;
    if (rows + input.footer.rows > batchRows || bytes + input.file.size > packBytes) break;
    pack.push(input);
    rows += input.footer.rows;
    bytes += input.file.size;
  }
  return pack;
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
   * Decodes a run's inputs, which must be the next ones, in order, fingerprinting every batch as it comes —
   * consecutive small inputs together, in one call of the decoder (`packOf`, `combineForDecode`): per input,
   * the decoder's set-up (footer, schema, reader) costs about as much as decoding a few hundred rows, and
   * the writer, the schema check and the fingerprint each pay per batch. Batches then span inputs; rows
   * come out in the same order, of the same types (a pack's footers agree on everything but their row
   * groups), and are fingerprinted the same way. A pack the combiner refuses, or whose decode fails or
   * yields other than its footers' rows, is decoded input by input from the bytes already fetched, exactly
   * as `decode` does: a damaged input is named by its own error, after its neighbours before it.
   */
  async *decodeRun(inputs: readonly CheckedInput[]): AsyncGenerator<RunBatch> {
    const packBytes = Math.min(PACK_BYTES, Math.floor(this.settings.maxBytesInFlight / 4));
    for (let i = 0; i < inputs.length; ) {
      const pack = packOf(inputs, i, this.settings.batchRows, packBytes);
      if (pack.length < 2) {
        const input = inputs[i] as CheckedInput;
        for await (const b of this.decode(input)) yield { ...b, key: input.file.key };
        i++;
      } else {
        yield* this.decodePack(pack);
        i += pack.length;
      }
    }
  }

  private async *decodePack(pack: readonly CheckedInput[]): AsyncGenerator<RunBatch> {
    const files: Uint8Array[] = [];
    try {
      for (const input of pack) files.push(await this.take(input));
      const key = (pack[0] as CheckedInput).file.key;
      const rows = pack.reduce((n, i) => n + i.footer.rows, 0);
      const batches = this.decodeTogether(pack, files, rows);
      if (batches === undefined) {
        for (const [j, input] of pack.entries()) {
          for await (const b of this.decodeBytes(input, files[j] as Uint8Array)) {
            yield { ...b, key: input.file.key };
          }
        }
        return;
      }
      try {
        while (batches.length > 0) {
          const batch = batches.shift() as pw.RecordBatch;
          let js: Table | undefined;
          try {
            this.fingerprint.add(batch);
            if (this.settings.sort !== undefined && batch.numRows > 0) js = wasmBatchToTable(batch);
          } catch (err) {
            batch.free();
            throw decodeError(key, err);
          }
          yield { batch, js, key };
        }
      } finally {
        for (const b of batches) b.free();
      }
    } finally {
      for (const input of pack) this.fetcher.release(input.file.size);
    }
  }

  /** The pack's batches from one decoder call, or undefined when it must be decoded input by input. */
  private decodeTogether(
    pack: readonly CheckedInput[],
    files: readonly Uint8Array[],
    rows: number,
  ): pw.RecordBatch[] | undefined {
    const combined = combineForDecode(
      pack.map((input, j) => ({ key: input.file.key, bytes: files[j] as Uint8Array })),
    );
    if (combined.refused !== undefined || combined.rows !== rows) return undefined;
    let batches: pw.RecordBatch[];
    try {
      const table = pw.readParquet(combined.bytes, { batchSize: this.settings.batchRows });
      batches = table.recordBatches();
      table.free();
    } catch {
      return undefined;
    }
    if (batches.reduce((n, b) => n + b.numRows, 0) !== rows) {
      for (const b of batches) b.free();
      return undefined;
    }
    return batches;
  }

  /** The next input's bytes, which must be `input`'s. */
  private async take(input: CheckedInput): Promise<Uint8Array> {
    const key = input.file.key;
    // The fetcher hands out bytes in its own order: decoding them as another input would fingerprint
    // and write the wrong rows consistently, which no later check could see.
    const expected = this.inputs[this.next++]?.file.key;
    if (expected !== key) throw new Error(`InputReader: asked for ${key}, but the next input is ${expected}`);
    return this.fetcher.take();
  }

  /**
   * The next input's whole bytes, which must be `input`'s, handed to `use` without decoding them (stitching
   * copies them; verify proves the copy from the objects themselves): nothing is fingerprinted. The bytes stay
   * counted against the fetch budget until `use` is done with them.
   */
  async *undecoded<T>(input: CheckedInput, use: (bytes: Uint8Array) => Iterable<T>): AsyncGenerator<T> {
    const bytes = await this.take(input);
    try {
      yield* use(bytes);
    } finally {
      this.fetcher.release(input.file.size);
    }
  }

  /** Decodes the next input, which must be `input`, into wasm batches, fingerprinting each as it comes. */
  async *decode(input: CheckedInput): AsyncGenerator<DecodedBatch> {
    const bytes = await this.take(input);
    try {
      yield* this.decodeBytes(input, bytes);
    } finally {
      // The bytes stay counted against the fetch budget until the whole file is decoded.
      this.fetcher.release(input.file.size);
    }
  }

  /** Decodes one input's whole bytes, fingerprinting each batch, and checks its rows against its footer. */
  private async *decodeBytes(input: CheckedInput, bytes: Uint8Array): AsyncGenerator<DecodedBatch> {
    const key = input.file.key;
    let decodedRows = 0;
    let keptRows = 0;
    assertParquetMagic(key, bytes);
    checkDecodedSizeOf(input, bytes);
    const micros =
      input.int96Columns.length > 0 ? await readInt96(key, bytes, input.int96Columns) : undefined;
    const lineage = input.file.rowLineage;
    const projection = input.file.projection;
    for await (let batch of decodeBatches(
      key,
      bytes,
      this.settings.batchRows,
      input.footer.rowGroups.length,
    )) {
      const n = batch.numRows;
      // The batch this loop must free on failure: none while a conversion that consumes its input runs (freeing a
      // consumed batch fails, and that failure would hide the error that says what is wrong with the input).
      let owned: pw.RecordBatch | undefined = batch;
      try {
        // INT96 conversion, row lineage and deletes all go by the row's position in the file: deletes last.
        if (input.optionalMapKeys !== undefined) assertMapKeysPresent(key, batch);
        if (micros !== undefined && n > 0) {
          owned = undefined;
          batch = convertBatch(batch, decodedRows, micros);
          owned = batch;
        }
        if (lineage !== undefined && n > 0) {
          owned = undefined;
          batch = withRowLineage(key, batch, decodedRows, lineage);
          owned = batch;
        }
      } catch (err) {
        owned?.free();
        throw err instanceof UnsupportedInputError ? err : decodeError(key, err);
      }
      let pieces: pw.RecordBatch[];
      try {
        pieces = keptPieces(key, batch, decodedRows, input.file.deleted); // frees `batch` if it throws
      } catch (err) {
        throw err instanceof VerificationError ? err : decodeError(key, err);
      }
      decodedRows += n;
      for (const [i, decoded] of pieces.entries()) {
        let js: Table | undefined;
        let piece = decoded;
        let owned: pw.RecordBatch | undefined = piece; // as above: never a batch the projection consumed
        try {
          // A projected input is fingerprinted as decoded, through the projection's own application (see
          // RewriteFingerprint.add), and only then projected for the writer.
          this.fingerprint.add(piece, projection);
          if (projection !== undefined) {
            owned = undefined;
            piece = projectBatch(key, piece, projection);
            owned = piece;
          }
          // Only sorting needs the rows in JS (for the sort keys); copying them costs time.
          if (this.settings.sort !== undefined && piece.numRows > 0) js = wasmBatchToTable(piece);
        } catch (err) {
          for (const p of pieces.slice(i + 1)) p.free();
          owned?.free();
          throw err instanceof UnsupportedInputError ? err : decodeError(key, err);
        }
        keptRows += piece.numRows;
        yield { batch: piece, js };
      }
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
