// Engine worker thread. Parallel rewrite: decodes the input bytes it is sent, fingerprints the rows of
// its range, encodes one output and posts the Parquet bytes back. Parallel verify: hashes one stored
// output, asking the main thread for its byte ranges. All I/O stays with the main thread's ports.

import { parentPort } from 'node:worker_threads';
import { DeletedRows } from '../../core/deletes/deleted-rows.js';
import { CompactorError, InvalidInputError, type RefusalLiftedBy } from '../../core/errors.js';
import { type FingerprintKind, MultisetHash, OrderedDigest } from '../../core/fingerprint/fingerprint.js';
import { assertParquetMagic } from '../../core/parquet/footer.js';
import type { DerivedColumn, RowLineage } from '../../ports/parquet-engine.js';
import {
  type ColumnSink,
  columnsOfWasmBatch,
  hashWasmBatch,
  type OutputFingerprint,
  withoutColumns,
} from './batch-hash.js';
import { keptPieces } from './deletes.js';
import { type ExpectedDerivedColumn, hashParquetObject, type OutputHashKind } from './hash-output.js';
import { convertBatch, readInt96 } from './int96.js';
import { withRowLineage } from './lineage.js';
import { assertMapKeysPresent } from './map-keys.js';
import { OutputWriter } from './output.js';
import { PerOutput, RelayAccumulator, type RelayedFooterValues } from './per-output.js';
import { relayStore } from './relay.js';
import { decodeBatches, decodeError, type WriterSettings } from './wasm.js';

/** Messages main → worker. */
export type ToWorker =
  | {
      readonly type: 'start';
      readonly key: string;
      readonly settings: WriterSettings;
      readonly batchRows: number;
      readonly stallMs: number;
      /** How to fingerprint the rows of the output (all of them: one output is one segment). */
      readonly kind: FingerprintKind;
      /** What the rewrite computes per output, when it does (see `WorkerPerOutput`). */
      readonly perOutput?: WorkerPerOutput;
    }
  | {
      readonly type: 'input';
      readonly key: string;
      readonly bytes: Uint8Array;
      /** Kept rows of the input to skip, then to take (deleted rows are not counted). */
      readonly skip: number;
      readonly take: number;
      /** Rows in the file (its footer's). */
      readonly rows: number;
      /** The input's deleted rows as `DeletedRows.ranges`, when it has any. */
      readonly deleted?: Uint32Array;
      /** The input's row lineage (see `InputFile.rowLineage`), when its table format tracks it. */
      readonly rowLineage?: RowLineage;
      readonly rowGroups: number;
      readonly int96Columns: readonly string[];
      /** Set when some MAP column has an OPTIONAL key: every batch is checked for null keys (see map-keys.ts). */
      readonly optionalMapKeys?: true;
    }
  | { readonly type: 'end' }
  /** Hash one stored output (verification); its bytes come through `read` → `range`. */
  | {
      readonly type: 'hash';
      readonly key: string;
      readonly size: number;
      readonly batchRows: number;
      readonly kind: OutputHashKind;
      /** The output's last bytes, already read by the main thread: reads within them are not sent. */
      readonly tail?: Uint8Array;
      /** Derived columns to check and leave out of the digest (see `hashParquetObject`). */
      readonly derived?: readonly ExpectedDerivedColumn[];
      /** Rows of each part the rewrite digested the output in (see `hashParquetObject`). */
      readonly cuts?: readonly number[];
    }
  /** The bytes of a `read` (or why the store failed). */
  | { readonly type: 'range'; readonly id: number; readonly bytes?: Uint8Array; readonly error?: string }
  /** The answer to `footer`: the entries the caller's hook computed (or why it failed). */
  | {
      readonly type: 'footer-entries';
      readonly entries?: Readonly<Record<string, string>>;
      readonly error?: string;
    };

/**
 * What a task computes per output, sent as data since the caller's footer hook is a function that stays on the
 * calling thread. The worker sets the derived columns itself (a rule and `outputKey`: the output the task's rows
 * belong to, which for a part of a split output is the joined output, not the part), leaves them out of its
 * fingerprint as the calling thread's reader does, and posts the hook column's values (`values`, in row order) for
 * the calling thread to feed to the hook. With `footer.final` the task writes a whole output: its writer asks for
 * the entries (`footer`) once its rows are encoded and sets them in its footer, as the one-thread writer does; a part
 * of a split output leaves that to the join.
 */
export interface WorkerPerOutput {
  readonly outputKey: string;
  readonly derivedColumns: readonly DerivedColumn[];
  readonly footer?: {
    readonly column: string;
    readonly keys: readonly string[];
    readonly final: boolean;
  };
}

/** Messages worker → main. */
export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'chunk'; readonly bytes: Uint8Array }
  /** The footer hook column's values of the rows just handed to the writer, in order. */
  | { readonly type: 'values'; readonly values: RelayedFooterValues }
  /** Every row is encoded: the footer entries, please (answered by `footer-entries`). */
  | { readonly type: 'footer' }
  | {
      readonly type: 'done';
      readonly rows: number;
      readonly size: number;
      readonly fingerprint: OutputFingerprint;
    }
  /** Bytes [start, end) of the output being hashed, please. */
  | { readonly type: 'read'; readonly id: number; readonly start: number; readonly end: number }
  | {
      readonly type: 'hashed';
      readonly rows: number;
      readonly fingerprint: OutputFingerprint;
      /** What the derived columns' check found; empty when every value held. */
      readonly problems: readonly string[];
    }
  | {
      readonly type: 'error';
      readonly name: string;
      readonly message: string;
      readonly key?: string;
      readonly reason?: string;
      /** An engine refusal's lifting setting (UnsupportedInputError.liftedBy), kept across the thread. */
      readonly liftedBy?: RefusalLiftedBy;
      /** An InvalidInputError's issues, kept across the thread. */
      readonly issues?: readonly string[];
    };

const port = parentPort;
if (port === null) throw new Error('worker.ts must run in a worker thread');

function post(message: FromWorker, transfer: ArrayBuffer[] = []): void {
  port?.postMessage(message, transfer);
}

/** A write-only store whose multipart upload posts each chunk to the main thread. */
const relay = relayStore((bytes, transfer) => post({ type: 'chunk', bytes }, transfer));

/** `read` requests in flight, answered by `range` messages (outside the message queue). */
const reads = new Map<number, { resolve: (b: Uint8Array) => void; reject: (e: Error) => void }>();
let nextRead = 0;

/** Bytes [start, end) of the output being hashed, read by the main thread's store. */
function remoteRead(start: number, end: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((resolve, reject) => {
    const id = nextRead++;
    reads.set(id, { resolve, reject });
    post({ type: 'read', id, start, end });
  });
}

/** The answer to the `footer` in flight (see `footerEntries`). */
let footerAnswer:
  | { resolve: (e: Readonly<Record<string, string>>) => void; reject: (e: Error) => void }
  | undefined;

/** The output's footer entries, computed by the calling thread's hook from the values posted before this asks. */
function footerEntries(): Promise<Readonly<Record<string, string>>> {
  return new Promise((resolve, reject) => {
    footerAnswer = { resolve, reject };
    post({ type: 'footer' });
  });
}

let writer: OutputWriter | undefined;
/** The output's derived values and its relayed footer accumulator, when the task computes any per output. */
let perOutput: { readonly values: PerOutput; readonly relay: RelayAccumulator | undefined } | undefined;
/** The fingerprint's column sink, without the derived columns. */
let sink: ColumnSink | undefined;
/** The fingerprint of the output being written: one of the two, by the kind `start` asked for. */
let multiset: MultisetHash | undefined;
let ordered: OrderedDigest | undefined;
let queue: Promise<void> = Promise.resolve();

async function handle(message: Exclude<ToWorker, { type: 'range' | 'footer-entries' }>): Promise<void> {
  if (message.type === 'hash') {
    const hashed = await hashParquetObject(
      message.key,
      remoteRead,
      message.size,
      message.kind,
      message.batchRows,
      {
        ...(message.tail !== undefined && { tail: message.tail }),
        ...(message.derived !== undefined && { derived: message.derived }),
        ...(message.cuts !== undefined && { cuts: message.cuts }),
      },
    );
    post({ type: 'hashed', rows: hashed.rows, fingerprint: hashed.fingerprint, problems: hashed.problems });
    return;
  }
  if (message.type === 'start') {
    multiset = message.kind === 'multiset-v1' ? new MultisetHash() : undefined;
    ordered = message.kind === 'ordered-columns-v1' ? new OrderedDigest() : undefined;
    const asked = message.perOutput;
    const footer = asked?.footer;
    const relayed = footer === undefined ? undefined : new RelayAccumulator();
    perOutput =
      asked === undefined
        ? undefined
        : {
            values: new PerOutput(
              asked.outputKey,
              asked.derivedColumns,
              footer === undefined
                ? undefined
                : { keys: footer.keys, column: footer.column, begin: () => relayed as RelayAccumulator },
            ),
            relay: relayed,
          };
    sink = withoutColumns(
      (columns, offset, n) => ordered?.add(columns, offset, n),
      (asked?.derivedColumns ?? []).map((d) => d.column),
    );
    writer = new OutputWriter(
      relay,
      message.key,
      message.settings,
      message.stallMs,
      footer?.final === true ? { entries: footerEntries, drop: footer.keys } : undefined,
    );
    batchRows = message.batchRows;
    post({ type: 'ready' });
    return;
  }
  if (writer === undefined) throw new Error('worker: input before start');
  if (message.type === 'end') {
    const out = await writer.close();
    const fingerprint: OutputFingerprint =
      multiset !== undefined
        ? {
            kind: 'multiset-v1',
            rows: multiset.rows,
            hash: multiset.digest(),
            nullCounts: multiset.nullCountsRecord(),
          }
        : { kind: 'ordered-columns-v1', segment: (ordered as OrderedDigest).finish() };
    post({ type: 'done', rows: out.rows, size: out.size, fingerprint });
    writer = undefined;
    perOutput = undefined;
    return;
  }
  const { key, bytes, skip, take } = message;
  assertParquetMagic(key, bytes);
  const micros =
    message.int96Columns.length > 0 ? await readInt96(key, bytes, message.int96Columns) : undefined;
  const deleted = message.deleted === undefined ? undefined : DeletedRows.fromRanges(message.deleted);
  /** Rows decoded so far (positions in the file), and of them the kept ones. */
  let position = 0;
  let live = 0;
  for await (let batch of decodeBatches(key, bytes, batchRows, message.rowGroups)) {
    const n = batch.numRows;
    const start = position;
    const liveStart = live;
    position += n;
    live += n - (deleted?.countIn(start, start + n) ?? 0);
    // A batch whose kept rows all lie outside this output's range is neither converted, filtered nor hashed.
    if (Math.min(skip + take, live) <= Math.max(skip, liveStart)) {
      batch.free();
      continue;
    }
    if (message.optionalMapKeys === true) {
      try {
        assertMapKeysPresent(key, batch);
      } catch (err) {
        batch.free();
        throw err;
      }
    }
    if (micros !== undefined && n > 0) batch = convertBatch(batch, start, micros);
    if (message.rowLineage !== undefined && n > 0)
      batch = withRowLineage(key, batch, start, message.rowLineage);
    let at = liveStart;
    for (const kept of keptPieces(key, batch, start, deleted)) {
      const m = kept.numRows;
      const from = Math.max(skip, at);
      const to = Math.min(skip + take, at + m);
      const pieceStart = at;
      at += m;
      if (to <= from) {
        kept.free();
        continue;
      }
      const whole = from === pieceStart && to === pieceStart + m;
      const piece = whole ? kept : kept.slice(from - pieceStart, to - from);
      if (!whole) kept.free();
      try {
        if (multiset !== undefined) hashWasmBatch(multiset, piece);
        else columnsOfWasmBatch(piece, sink as ColumnSink);
      } catch (err) {
        piece.free();
        throw decodeError(key, err);
      }
      if (perOutput === undefined) await writer.write(piece, key);
      else {
        const set = perOutput.values.apply(piece, key);
        const values = perOutput.relay?.take();
        if (values !== undefined) {
          post({ type: 'values', values }, [
            values.bytes.buffer as ArrayBuffer,
            values.ends.buffer as ArrayBuffer,
            values.kinds.buffer as ArrayBuffer,
          ]);
        }
        await writer.write(set, key);
      }
    }
  }
  if (position !== message.rows) {
    throw decodeError(key, new Error(`decoded ${position} rows where the footer says ${message.rows}`));
  }
  post({ type: 'ready' });
}

let batchRows = 65_536;

port.on('message', (message: ToWorker) => {
  // Range replies go straight to the read waiting for them: the hash in the queue is what waits.
  if (message.type === 'range') {
    const read = reads.get(message.id);
    reads.delete(message.id);
    if (message.bytes !== undefined) read?.resolve(message.bytes);
    else read?.reject(new Error(`reading the output failed: ${message.error ?? 'unknown error'}`));
    return;
  }
  // The entries go straight to the writer waiting for them: the `end` in the queue is what waits.
  if (message.type === 'footer-entries') {
    const answer = footerAnswer;
    footerAnswer = undefined;
    if (message.entries !== undefined) answer?.resolve(message.entries);
    else answer?.reject(new Error(`the footer entries failed: ${message.error ?? 'unknown error'}`));
    return;
  }
  queue = queue
    .then(() => handle(message))
    .catch(async (err: unknown) => {
      await writer?.abort(err instanceof Error ? err : new Error(String(err)));
      writer = undefined;
      perOutput = undefined;
      const e = err as Error & {
        key?: string;
        reason?: string;
        liftedBy?: RefusalLiftedBy;
        issues?: readonly string[];
      };
      post({
        type: 'error',
        name: err instanceof CompactorError ? e.name : 'Error',
        message: e.message ?? String(err),
        ...(e.key !== undefined && { key: e.key }),
        ...(e.reason !== undefined && { reason: e.reason }),
        ...(e.liftedBy !== undefined && { liftedBy: e.liftedBy }),
        ...(err instanceof InvalidInputError && { issues: err.issues }),
      });
    });
});
