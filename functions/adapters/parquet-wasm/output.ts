// One output file being written: record batches in, Parquet bytes streamed to the store as a
// multipart upload; every batch's schema is checked, rows are counted in and out, and a stall is an error.

import { type Schema, tableFromIPC } from 'apache-arrow';
import { RewriteStalledError, VerificationError } from '../../core/errors.js';
import { withDecimalAnnotations } from '../../core/parquet/decimal-form.js';
import { parseFooter } from '../../core/parquet/footer.js';
import { withFooterEntries } from '../../core/parquet/footer-entries.js';
import { compressPages } from '../../core/parquet/page-compress.js';
import { withUuidAnnotations } from '../../core/parquet/uuid-annotation.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { WrittenOutput } from '../../ports/parquet-engine.js';
import { conformBatch, withPlainTypes } from './conform.js';
import { arrowSchemaEntry, toStoredDecimals } from './decimal-form.js';
import { nativeZstd } from './native-zstd.js';
import { pw, type WriterSettings, writerProperties } from './wasm.js';

/**
 * Footer entries set once the output's rows are all encoded (`RewriteOptions.outputFooterEntries`): `entries` is
 * asked when the encoder has produced its last bytes, whose footer then gets them (`drop` removed first). It may
 * answer later: on an engine worker the entries come from the calling thread, which holds the footer hook.
 */
export interface FinalFooterEntries {
  readonly entries: () => Readonly<Record<string, string>> | Promise<Readonly<Record<string, string>>>;
  readonly drop: readonly string[];
}

/** Bytes of the output's end kept in memory to read back its footer (row count check). */
const TAIL_KEEP_BYTES = 4 * 1024 * 1024;
/** Encoded chunks (row groups) held ahead of the upload. */
const READ_AHEAD_CHUNKS = 2;

/** Serialised Arrow schema of a batch, for exact comparison (types, nullability, field metadata). */
export function batchSchemaBytes(batch: pw.RecordBatch): Uint8Array {
  return batch.schema.intoIPCStream();
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Streams record batches into one Parquet object. parquet-wasm's `transformParquetStream` drops
 * batches whose types differ and hangs on others (docs, "Engine"), so: each batch must match
 * the first batch's schema byte for byte, rows written are compared with the footer's row count,
 * and a watchdog fails the write when neither input is taken nor output produced for `stallMs`.
 */
export class OutputWriter {
  rowsIn = 0;
  bytesOut = 0;
  /** What compressed the pages: the wasm encoder, or a native ZSTD (set when the write starts). */
  pageCompressor: 'encoder' | 'node:zlib' | '@mongodb-js/zstd' = 'encoder';
  private schema: Uint8Array | undefined;
  /** `schema` decoded, once a batch of another Arrow schema arrives (see conformBatch). */
  private arrowSchema: Schema | undefined;
  /** With decimal forms: the `ARROW:schema` entry of the rows as decoded (decimals), set from the first batch. */
  private decodedSchemaEntry: string | undefined;
  private waitingPull: (() => void) | undefined;
  private pendingBatch: { batch: pw.RecordBatch; taken: () => void } | undefined;
  private closed = false;
  private failure: Error | undefined;
  private lastProgress = 0;
  private progressTick = 0;
  private readonly watchdog: NodeJS.Timeout;
  private readonly done: Promise<{ etag: string; size: number }>;
  private readonly tail: Uint8Array[] = [];
  private tailBytes = 0;
  private controller: ReadableStreamDefaultController<pw.RecordBatch> | undefined;
  /** Rejecters of the waits in progress (see `orFailure`): all called once, when the write fails. */
  private readonly waits = new Set<(err: Error) => void>();
  /** Decimal columns written in their input's physical form (`WriterSettings.decimalForms`). */
  private readonly decimalForms: NonNullable<WriterSettings['decimalForms']>;

  constructor(
    private readonly store: ObjectStore,
    readonly key: string,
    private readonly settings: WriterSettings,
    private readonly stallMs: number,
    private readonly finalFooter?: FinalFooterEntries,
  ) {
    this.decimalForms = settings.decimalForms ?? [];
    const input = new ReadableStream<pw.RecordBatch>(
      {
        start: (controller) => {
          this.controller = controller;
        },
        pull: (controller) => {
          this.tick();
          if (this.pendingBatch !== undefined) {
            const { batch, taken } = this.pendingBatch;
            this.pendingBatch = undefined;
            controller.enqueue(batch);
            taken();
            return;
          }
          if (this.closed) {
            controller.close();
            return;
          }
          return new Promise<void>((resolve) => {
            this.waitingPull = () => {
              this.waitingPull = undefined;
              resolve();
              // Re-enter pull's logic now that a batch or the close is there.
              const pending = this.pendingBatch as { batch: pw.RecordBatch; taken: () => void } | undefined;
              if (pending !== undefined) {
                this.pendingBatch = undefined;
                controller.enqueue(pending.batch);
                pending.taken();
              } else if (this.closed) controller.close();
            };
          });
        },
      },
      { highWaterMark: 0 },
    );
    this.done = this.run(input, settings);
    // Swallow here; the rejection is observed by close()/abort().
    this.done.catch(() => undefined);
    this.watchdog = setInterval(() => {
      // Only a writer that holds work (a batch not taken, or a close not finished) can stall;
      // a writer waiting for a slow producer is idle, not stuck.
      const holdsWork = this.pendingBatch !== undefined || this.closed;
      if (holdsWork && this.progressTick === this.lastProgress) {
        this.fail(
          new RewriteStalledError(
            `The Parquet writer for ${key} made no progress for ${stallMs} ms (parquet-wasm hang on a malformed batch?). Nothing was published; retry, and report the group's inputs if it repeats.`,
          ),
        );
      }
      this.lastProgress = this.progressTick;
    }, stallMs);
    this.watchdog.unref();
  }

  private tick(): void {
    this.progressTick++;
  }

  /**
   * `p`, or the write's failure if that comes first, so no wait hangs on a failed write. Not
   * `Promise.race([p, failure$])` with one long-lived failure promise: every race leaves a reaction
   * on that promise which keeps the race's settled result reachable — here each encoded output
   * chunk — until the writer itself is dropped. That held the whole output (~100 MB per 128 MB
   * file) in memory. A wait's rejecter is registered only while it is pending.
   */
  private orFailure<T>(p: Promise<T>): Promise<T> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    return new Promise<T>((resolve, reject) => {
      this.waits.add(reject);
      p.then(resolve, reject).finally(() => this.waits.delete(reject));
    });
  }

  private async run(input: ReadableStream<pw.RecordBatch>, settings: WriterSettings) {
    // Native page compression: the encoder writes pages uncompressed and they are compressed on the thread pool
    // as they stream out (core/parquet/page-compress.ts). Without a native ZSTD here, the encoder compresses.
    const native =
      settings.pageCompression === 'native' && settings.codec === 'zstd' ? await nativeZstd() : undefined;
    this.pageCompressor = native?.source ?? 'encoder';
    const bytes = await pw.transformParquetStream(
      input,
      writerProperties(settings, { uncompressed: native !== undefined }),
    );
    const reader = (bytes as ReadableStream<Uint8Array>).getReader();
    async function* encoded(): AsyncGenerator<Uint8Array> {
      for (;;) {
        const next = await reader.read();
        if (next.done) return;
        yield next.value;
      }
    }
    const chunks: AsyncIterator<Uint8Array> =
      native === undefined ? encoded() : compressPages(encoded(), native);
    // Read ahead of the upload: the encoder keeps working on the next row group while the store
    // is still sending the previous one, instead of waiting for each part's request to finish.
    const ready: Uint8Array[] = [];
    let ended = false;
    let wake: (() => void) | undefined;
    let space: (() => void) | undefined;
    const emit = (chunk: Uint8Array) => {
      this.bytesOut += chunk.length;
      this.keepTail(chunk);
      ready.push(chunk);
      wake?.();
    };
    // With footer entries to set, or decimal or uuid annotations to give back, the last chunk (which ends with the footer)
    // is held back until the encoder is done, then emitted with its footer rewritten: the bytes before the footer
    // never change.
    const uuids = settings.uuidColumns ?? [];
    const rewritesFooter = this.finalFooter !== undefined || this.decimalForms.length > 0 || uuids.length > 0;
    const lastChunk = async (chunk: Uint8Array): Promise<Uint8Array> => {
      const entries =
        this.finalFooter === undefined
          ? chunk
          : withFooterEntries(
              chunk,
              await this.orFailure(Promise.resolve(this.finalFooter.entries())),
              this.finalFooter.drop,
            );
      const decimals =
        this.decimalForms.length === 0
          ? entries
          : withDecimalAnnotations(entries, this.decimalForms, this.decodedSchemaEntry);
      return withUuidAnnotations(decimals, uuids);
    };
    let held: Uint8Array | undefined;
    const pump = (async () => {
      for (;;) {
        while (ready.length >= READ_AHEAD_CHUNKS) {
          await this.orFailure(new Promise<void>((r) => (space = r)));
        }
        const next = await this.orFailure(chunks.next());
        if (next.done) break;
        this.tick();
        if (!rewritesFooter) emit(next.value);
        else {
          if (held !== undefined) emit(held);
          held = next.value;
        }
      }
      if (held !== undefined) emit(await lastChunk(held));
      ended = true;
      wake?.();
    })();
    pump.catch(() => undefined);
    const self = this;
    async function* body(): AsyncGenerator<Uint8Array> {
      try {
        for (;;) {
          if (self.failure !== undefined) throw self.failure;
          const chunk = ready.shift();
          if (chunk !== undefined) {
            space?.();
            self.tick();
            yield chunk;
            continue;
          }
          if (ended) break;
          await self.orFailure(new Promise<void>((r) => (wake = r)));
        }
        await pump;
      } finally {
        reader.releaseLock();
      }
    }
    return this.store.putStream(this.key, body(), { contentType: 'application/vnd.apache.parquet' });
  }

  private keepTail(whole: Uint8Array): void {
    // Copy the end of a large chunk: keeping a view would pin the whole row group in memory.
    const chunk = whole.length > TAIL_KEEP_BYTES ? whole.slice(whole.length - TAIL_KEEP_BYTES) : whole;
    this.tail.push(chunk);
    this.tailBytes += chunk.length;
    while (this.tail.length > 1 && this.tailBytes - (this.tail[0]?.length ?? 0) >= TAIL_KEEP_BYTES) {
      this.tailBytes -= this.tail.shift()?.length ?? 0;
    }
  }

  private fail(err: Error): void {
    if (this.failure !== undefined) return;
    this.failure = err;
    clearInterval(this.watchdog);
    for (const reject of this.waits) reject(err);
    this.waits.clear();
    try {
      this.controller?.error(err);
    } catch {
      // already closed
    }
  }

  /**
   * Hands `batch` to the writer (which takes ownership) once it asks for input. A batch whose Arrow schema differs
   * from the output's first one is converted to it where its values stay the same (conformBatch); `sourceKey`
   * names the input in the error when they would not.
   */
  async write(decoded: pw.RecordBatch, sourceKey: string): Promise<void> {
    if (this.failure !== undefined) throw this.failure;
    let batch = decoded;
    if (this.schema === undefined) {
      batch = this.first(batch, sourceKey);
      this.schema = batchSchemaBytes(batch);
    } else if (!sameBytes(batchSchemaBytes(batch), this.schema)) {
      // Same Parquet schema, another writer's Arrow types for it: converted where the values stay the same.
      this.arrowSchema ??= tableFromIPC(this.schema).schema;
      batch = conformBatch(sourceKey, batch, this.arrowSchema, this.key);
    }
    // Decimals kept in their input's form: handed to the encoder as bytes, annotated in the footer (decimal-form.ts).
    if (this.decimalForms.length > 0) {
      this.decodedSchemaEntry ??= arrowSchemaEntry(this.schema);
      batch = toStoredDecimals(batch, this.decimalForms);
    }
    const rows = batch.numRows;
    await this.orFailure(
      new Promise<void>((taken) => {
        this.pendingBatch = { batch, taken };
        this.waitingPull?.();
      }),
    );
    this.rowsIn += rows;
  }

  /**
   * The output's first batch, with the Arrow types chosen for its run's columns (`WriterSettings.plainTypes`) when
   * it decoded to others: the output's Arrow schema is set by its first batch, and must be one every input converts
   * to exactly (a dictionary first would refuse a plain file after it).
   */
  private first(batch: pw.RecordBatch, sourceKey: string): pw.RecordBatch {
    const plain = this.settings.plainTypes;
    if (plain === undefined) return batch;
    const target = withPlainTypes(tableFromIPC(batchSchemaBytes(batch)).schema, plain);
    if (target === undefined) return batch;
    this.arrowSchema = target;
    return conformBatch(sourceKey, batch, target, this.key);
  }

  /** Finishes the file and checks the footer's row count equals the rows handed in. */
  async close(): Promise<WrittenOutput> {
    this.closed = true;
    this.waitingPull?.();
    try {
      const { etag, size } = await this.orFailure(this.done);
      const tail = new Uint8Array(this.tailBytes);
      let at = 0;
      for (const c of this.tail) {
        tail.set(c, at);
        at += c.length;
      }
      const footer = parseFooter(this.key, this.bytesOut, tail);
      if (footer.rows !== this.rowsIn || size !== this.bytesOut) {
        throw new VerificationError(`output ${this.key} holds ${footer.rows} rows in ${size} bytes`, {
          key: this.key,
          rowsHandedIn: this.rowsIn,
          rowsInFooter: footer.rows,
          bytesProduced: this.bytesOut,
          bytesStored: size,
        });
      }
      return { key: this.key, size, etag, rows: footer.rows };
    } finally {
      clearInterval(this.watchdog);
    }
  }

  /**
   * Stops the write; the caller deletes whatever the store kept. Waits for the upload to settle,
   * but at most `stallMs`: a store that stopped reading the body would otherwise hang the abort.
   */
  async abort(reason: Error): Promise<void> {
    this.fail(reason);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.done.catch(() => undefined),
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, this.stallMs);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
  }
}
