// Parallel rewrite of one schema run: each output is encoded by a worker thread (its own wasm
// instance) while the main thread does all I/O through the ports; fingerprints of the workers merge exactly.

import type { Worker } from 'node:worker_threads';
import {
  CompactorError,
  CorruptInputError,
  InvalidInputError,
  MemoryBudgetExceededError,
  RewriteStalledError,
  UnsupportedInputError,
  VerificationError,
} from '../../core/errors.js';
import type { FingerprintKind } from '../../core/fingerprint/fingerprint.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { WrittenOutput } from '../../ports/parquet-engine.js';
import type { OutputFingerprint } from './batch-hash.js';
import { OrderedFetcher } from './fetch.js';
import type { ExpectedDerivedColumn, OutputHashKind } from './hash-output.js';
import { type PerOutputSettings, type RelayedFooterValues, replayFooterValues } from './per-output.js';
import { type CheckedInput, checkDecodedSizeOf } from './preflight.js';
import type { WriterSettings } from './wasm.js';
import type { FromWorker, ToWorker } from './worker.js';
import { releaseWorker, takeWorker } from './worker-pool.js';

/** One output of a run: its key and the global row range [from, to) of the run it holds, in kept rows. */
export interface OutputTask {
  readonly key: string;
  readonly from: number;
  readonly to: number;
  readonly inputs: readonly CheckedInput[];
  /** Global row index of each input's first row. */
  readonly inputStarts: readonly number[];
  readonly settings: WriterSettings;
}

export interface ParallelContext {
  readonly source: ObjectStore;
  readonly target: ObjectStore;
  readonly cache: Map<string, Uint8Array>;
  readonly workers: number;
  readonly maxRequestsInFlight: number;
  readonly maxBytesInFlight: number;
  readonly batchRows: number;
  readonly stallMs: number;
  readonly signal?: AbortSignal;
  /** Keys whose upload started, for cleanup by the caller on failure. */
  readonly started: string[];
  /** How the workers fingerprint the rows of their outputs. */
  readonly kind: FingerprintKind;
  /** What the rewrite computes per output, when it does: the workers set it (see `TaskPerOutput`). */
  readonly perOutput?: PerOutputSettings;
}

/**
 * How a task's rows get their per-output values: the derived columns of `outputKey` (set by the worker), and, with a
 * footer hook, where the hook column's values go as the worker posts them (`values`, in row order) and, for a task
 * that writes a whole output, the entries its writer asks for once its rows are encoded (`entries`).
 */
export interface TaskPerOutput {
  readonly outputKey: string;
  readonly values?: (values: RelayedFooterValues) => void;
  readonly entries?: () => Readonly<Record<string, string>>;
}

/**
 * A whole output's per-output values (one task per output, `runTasks`): the hook's accumulator is begun for the
 * output and fed as the worker's values arrive — each task is one output, its messages arrive in row order — and
 * finished when the worker's writer asks, after its last row, exactly when the one-thread writer finishes it.
 */
function wholeOutput(settings: PerOutputSettings, key: string): TaskPerOutput {
  const accumulator = settings.footerEntries?.begin(key);
  if (accumulator === undefined) return { outputKey: key };
  return {
    outputKey: key,
    values: (values) => replayFooterValues(values, accumulator),
    entries: () => accumulator.finish(),
  };
}

/** An output a worker wrote, and the fingerprint of the input rows it was given. */
export interface TaskResult {
  readonly output: WrittenOutput;
  readonly fingerprint: OutputFingerprint;
}

/** Rebuilds a typed error from a worker's message, so callers (and Step Functions) see the same names. */
function revive(m: Extract<FromWorker, { type: 'error' }>): Error {
  if (m.name === 'InvalidInputError' && m.issues !== undefined) {
    // The message as sent ends with the issues the constructor appends: rebuilt from the part before them.
    const listed = m.message.indexOf(':\n  - ');
    return new InvalidInputError(
      m.issues.length > 0 && listed >= 0 ? m.message.slice(0, listed) : m.message,
      m.issues,
    );
  }
  if (m.name === 'CorruptInputError' && m.key !== undefined)
    return new CorruptInputError(m.key, m.reason ?? m.message);
  if (m.name === 'UnsupportedInputError' && m.key !== undefined) {
    return new UnsupportedInputError(
      m.key,
      m.reason ?? m.message,
      m.liftedBy === undefined ? undefined : { liftedBy: m.liftedBy },
    );
  }
  if (m.name === 'VerificationError') {
    return new VerificationError(
      m.message.replace(/^Verification failed: /, '').replace(/\. Nothing was published.*$/, ''),
    );
  }
  if (m.name === 'RewriteStalledError') return new RewriteStalledError(m.message);
  const err = new Error(`Engine worker failed: ${m.message}`);
  err.name = m.name;
  return err;
}

/** Async iterable fed by worker messages: the body of one multipart upload. */
class ChunkQueue implements AsyncIterable<Uint8Array> {
  private readonly items: Uint8Array[] = [];
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;
  push(chunk: Uint8Array): void {
    this.items.push(chunk);
    this.wake?.();
  }
  end(): void {
    this.ended = true;
    this.wake?.();
  }
  fail(err: Error): void {
    this.failure = err;
    this.wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      if (this.failure !== undefined) throw this.failure;
      const next = this.items.shift();
      if (next !== undefined) {
        yield next;
        continue;
      }
      if (this.ended) return;
      await new Promise<void>((resolve) => {
        this.wake = () => {
          this.wake = undefined;
          resolve();
        };
      });
    }
  }
}

/**
 * `bytes` where they own their whole ArrayBuffer (so it can be transferred to a worker), else a copy.
 * Never `bytes.slice()`: on a Node Buffer that is a view, and transferring its pooled ArrayBuffer
 * would detach every other Buffer in the pool.
 */
function transferable(bytes: Uint8Array): Uint8Array {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength) return bytes;
  return Uint8Array.prototype.slice.call(bytes);
}

/** Where a task's Parquet bytes go: the store, as the output's upload, or (a part of a split output) memory. */
export type TaskWrite = (
  task: OutputTask,
  body: AsyncIterable<Uint8Array>,
) => Promise<{ etag: string; size: number }>;

/** A task's bytes uploaded as the output `task.key`, recorded in `ctx.started` (deleted by the caller on failure). */
function uploadTo(ctx: ParallelContext): TaskWrite {
  return (task, body) => {
    ctx.started.push(task.key);
    return ctx.target.putStream(task.key, body, { contentType: 'application/vnd.apache.parquet' });
  };
}

/**
 * The typed error for a worker that stopped without reporting one: it exited (terminated, or killed by the
 * runtime), or raised an error outside any task's handling (a wasm trap, running out of memory).
 */
function workerLost(task: OutputTask, cause: string | Error): Error {
  const why = typeof cause === 'string' ? cause : `${cause.name}: ${cause.message}`;
  const message = `The engine worker encoding ${task.key} stopped (${why}). Nothing was published; retry, and if it repeats give the function more memory or fewer encodeWorkers.`;
  if (typeof cause !== 'string' && (cause as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') {
    return new MemoryBudgetExceededError(message, { cause });
  }
  return new RewriteStalledError(message, typeof cause === 'string' ? undefined : { cause });
}

/**
 * Runs one output task on `worker`: feeds its inputs, hands its bytes to `write` (by default the output's upload),
 * returns its fingerprint. With `perOutput` (required when the rewrite computes values per output), the worker sets
 * them and this thread feeds the footer hook (see `TaskPerOutput`). A worker that exits or fails outside the task's
 * own error reporting fails the task with a typed error (`workerLost`) instead of leaving it waiting.
 */
export async function runTask(
  worker: Worker,
  task: OutputTask,
  ctx: ParallelContext,
  write: TaskWrite = uploadTo(ctx),
  perOutput?: TaskPerOutput,
): Promise<TaskResult> {
  if (ctx.perOutput !== undefined && perOutput === undefined) {
    throw new Error(`runTask: task ${task.key} of a rewrite that computes values per output got none`);
  }
  const body = new ChunkQueue();
  let readyWaiter: ((v: undefined) => void) | undefined;
  let failWaiter: ((e: Error) => void) | undefined;
  let done: ((m: Extract<FromWorker, { type: 'done' }>) => void) | undefined;
  let failure: Error | undefined;
  const fail = (err: Error) => {
    failure ??= err;
    body.fail(err);
    failWaiter?.(err);
  };
  /** The footer entries a whole output's writer asked for, computed here and sent back (or why they failed). */
  const answerFooter = () => {
    let reply: ToWorker;
    try {
      if (perOutput?.entries === undefined) throw new Error(`task ${task.key} has no footer entries to set`);
      reply = { type: 'footer-entries', entries: perOutput.entries() };
    } catch (err) {
      const error = err instanceof Error ? err : new Error(String(err));
      reply = { type: 'footer-entries', error: error.message };
      fail(error);
    }
    worker.postMessage(reply);
  };
  const onMessage = (m: FromWorker) => {
    if (m.type === 'chunk') body.push(m.bytes);
    else if (m.type === 'values') {
      try {
        perOutput?.values?.(m.values);
      } catch (err) {
        fail(err instanceof Error ? err : new Error(String(err)));
      }
    } else if (m.type === 'footer') answerFooter();
    else if (m.type === 'ready') readyWaiter?.(undefined);
    else if (m.type === 'done') {
      body.end();
      done?.(m);
    } else if (m.type === 'error') fail(revive(m));
  };
  const onError = (err: Error) => fail(workerLost(task, err));
  const onExit = (code: number) => fail(workerLost(task, `exited with code ${code}`));
  worker.on('message', onMessage);
  worker.on('error', onError);
  worker.on('exit', onExit);
  const next = <T>(register: (resolve: (v: T) => void) => void): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      if (failure !== undefined) return reject(failure);
      failWaiter = reject;
      register(resolve);
    });
  try {
    const upload = write(task, body);
    upload.catch(() => undefined);
    const fetcher = new OrderedFetcher(
      ctx.source,
      task.inputs.map((i) => i.file),
      ctx.cache,
      {
        maxRequestsInFlight: Math.max(1, Math.floor(ctx.maxRequestsInFlight / ctx.workers)),
        maxBytesInFlight: Math.max(1, Math.floor(ctx.maxBytesInFlight / ctx.workers)),
        ...(ctx.signal !== undefined && { signal: ctx.signal }),
      },
    );
    let ready = next<undefined>((r) => {
      readyWaiter = r;
    });
    const start: ToWorker = {
      type: 'start',
      key: task.key,
      settings: task.settings,
      batchRows: ctx.batchRows,
      stallMs: ctx.stallMs,
      kind: ctx.kind,
      ...(ctx.perOutput !== undefined &&
        perOutput !== undefined && {
          perOutput: {
            outputKey: perOutput.outputKey,
            derivedColumns: ctx.perOutput.derivedColumns,
            ...(ctx.perOutput.footerEntries !== undefined && {
              footer: {
                column: ctx.perOutput.footerEntries.column,
                keys: ctx.perOutput.footerEntries.keys,
                final: perOutput.entries !== undefined,
              },
            }),
          },
        }),
    };
    worker.postMessage(start);
    for (const [i, input] of task.inputs.entries()) {
      const bytes = await fetcher.take();
      checkDecodedSizeOf(input, bytes);
      await ready;
      const owned = transferable(bytes);
      const first = task.inputStarts[i] as number;
      const skip = Math.max(0, task.from - first);
      const take = Math.min(first + input.liveRows, task.to) - Math.max(first, task.from);
      ready = next<undefined>((r) => {
        readyWaiter = r;
      });
      const message: ToWorker = {
        type: 'input',
        key: input.file.key,
        bytes: owned,
        skip,
        take,
        rows: input.footer.rows,
        rowGroups: input.footer.rowGroups.length,
        int96Columns: input.int96Columns,
        ...(input.optionalMapKeys !== undefined && { optionalMapKeys: true }),
        ...(input.file.deleted !== undefined &&
          input.file.deleted.count > 0 && { deleted: input.file.deleted.ranges }),
        ...(input.file.rowLineage !== undefined && { rowLineage: input.file.rowLineage }),
      };
      worker.postMessage(message, [owned.buffer as ArrayBuffer]);
      fetcher.release(input.file.size);
    }
    await ready;
    const finished = next<Extract<FromWorker, { type: 'done' }>>((r) => {
      done = r;
    });
    worker.postMessage({ type: 'end' } satisfies ToWorker);
    const result = await finished;
    const stored = await upload;
    if (stored.size !== result.size || result.rows !== task.to - task.from) {
      throw new VerificationError(`output ${task.key} holds ${result.rows} rows in ${stored.size} bytes`, {
        key: task.key,
        rowsExpected: task.to - task.from,
        rowsWritten: result.rows,
        bytesProduced: result.size,
        bytesStored: stored.size,
      });
    }
    return {
      output: { key: task.key, size: stored.size, etag: stored.etag, rows: result.rows },
      fingerprint: result.fingerprint,
    };
  } catch (err) {
    fail(err instanceof Error ? err : new Error(String(err)));
    throw err;
  } finally {
    worker.off('message', onMessage);
    worker.off('error', onError);
    worker.off('exit', onExit);
  }
}

/**
 * Runs `tasks` on up to `ctx.workers` worker threads, tasks taken in order by whichever worker is
 * free; returns the outputs, with their fingerprints, in task order. On the first failure every worker is terminated and
 * the error (typed, as the worker raised it) is thrown; the caller deletes `ctx.started`. After a run that
 * succeeded, the workers (every task done, nothing in progress) go back to the idle pool for the next call.
 */
export async function runTasks(tasks: readonly OutputTask[], ctx: ParallelContext): Promise<TaskResult[]> {
  const size = Math.min(ctx.workers, tasks.length);
  const pool = Array.from({ length: size }, () => takeWorker(size));
  const results: TaskResult[] = new Array(tasks.length);
  let next = 0;
  let firstError: unknown;
  let failed = false;
  try {
    await Promise.all(
      pool.map(async (worker) => {
        while (firstError === undefined && next < tasks.length) {
          const i = next++;
          const task = tasks[i] as OutputTask;
          try {
            results[i] = await runTask(
              worker,
              task,
              ctx,
              uploadTo(ctx),
              ctx.perOutput === undefined ? undefined : wholeOutput(ctx.perOutput, task.key),
            );
          } catch (err) {
            firstError ??= err;
            throw err;
          }
        }
      }),
    );
  } catch {
    failed = true;
    throw firstError instanceof CompactorError || firstError instanceof Error
      ? firstError
      : new Error(String(firstError));
  } finally {
    await Promise.all(pool.map((w) => releaseWorker(w, !failed)));
  }
  return results;
}

/** What a worker's hash of one output adds to the group fingerprint, and the rows it read. */
export interface HashedOutput {
  readonly rows: number;
  readonly fingerprint: OutputFingerprint;
  /** What the derived columns' check found (see `hashParquetObject`); empty when every value held. */
  readonly problems: readonly string[];
}

/** Hashes one stored output on a worker thread; the calling thread serves the byte ranges it asks for. */
export type OutputHasher = (
  store: ObjectStore,
  /** `tail`: the output's last bytes, when the caller has read them (its footer): not fetched again. */
  output: { readonly key: string; readonly size: number; readonly tail?: Uint8Array },
  batchRows: number,
  kind: OutputHashKind,
  derived?: readonly ExpectedDerivedColumn[],
  /** Rows of each part the rewrite digested the output in (`OrderedSegment.cuts`). */
  cuts?: readonly number[],
) => Promise<HashedOutput>;

/** Up to `n` engine workers hashing outputs, one output each at a time; `close` terminates them. */
export interface HasherPool {
  readonly hash: OutputHasher;
  readonly close: () => Promise<void>;
}

/** An output hasher on one worker, and what decides whether the worker may be reused after. */
interface WorkerHasher {
  readonly hash: OutputHasher;
  /** Every hash finished cleanly and none is in progress: the worker holds no state of any output. */
  readonly clean: () => boolean;
  /** Removes the listeners this hasher added, before the worker is reused. */
  readonly detach: () => void;
}

function hasherOn(worker: Worker): WorkerHasher {
  // A worker that died (parquet-wasm trapped) answers nothing more: later outputs fail at once.
  let dead: Error | undefined;
  const onExit = (code: number) => {
    dead ??= new Error(`Engine worker exited (code ${code})`);
  };
  worker.once('exit', onExit);
  let busy = false;
  let failed = false;
  const hash: OutputHasher = (store, output, batchRows, kind, derived, cuts) =>
    new Promise<HashedOutput>((resolve, reject) => {
      if (dead !== undefined) {
        failed = true;
        reject(dead);
        return;
      }
      busy = true;
      // A store failure is kept as it is (typed: a missing object stays NotFound) rather than as the
      // worker's report of it.
      let storeFailure: unknown;
      const finish = (ok: boolean) => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        busy = false;
        if (!ok) failed = true;
      };
      const onMessage = (m: FromWorker) => {
        if (m.type === 'read') {
          store.getRange(output.key, m.start, m.end - 1).then(
            (bytes) => {
              const owned = transferable(bytes);
              const reply: ToWorker = { type: 'range', id: m.id, bytes: owned };
              worker.postMessage(reply, [owned.buffer as ArrayBuffer]);
            },
            (err: unknown) => {
              storeFailure ??= err;
              const reply: ToWorker = { type: 'range', id: m.id, error: String(err) };
              worker.postMessage(reply);
            },
          );
        } else if (m.type === 'hashed') {
          finish(true);
          resolve({ rows: m.rows, fingerprint: m.fingerprint, problems: m.problems });
        } else if (m.type === 'error') {
          finish(false);
          reject(storeFailure ?? revive(m));
        }
      };
      // parquet-wasm's streaming reader traps ("RuntimeError: unreachable") on a page it cannot
      // decode, from a promise callback, which kills the worker: that is an output that cannot be
      // read back (unless a read failed first — then the store's error is the cause).
      const onError = (err: Error) => {
        finish(false);
        dead = err;
        reject(
          storeFailure ??
            (err.name === 'RuntimeError'
              ? new CorruptInputError(output.key, `the decoder failed (${err.name}: ${err.message})`)
              : err),
        );
      };
      worker.on('message', onMessage);
      worker.on('error', onError);
      const start: ToWorker = {
        type: 'hash',
        key: output.key,
        size: output.size,
        batchRows,
        kind,
        ...(output.tail !== undefined && { tail: output.tail }),
        ...(derived !== undefined && derived.length > 0 && { derived }),
        ...(cuts !== undefined && { cuts }),
      };
      worker.postMessage(start);
    });
  return {
    hash,
    clean: () => dead === undefined && !busy && !failed,
    detach: () => worker.off('exit', onExit),
  };
}

/**
 * Engine workers for hashing outputs (verification), taken when first needed — at most `n`, so
 * callers hash at most `n` outputs at once. `close` gives back to the idle pool each worker whose
 * every hash finished cleanly, and terminates the rest: one that failed or trapped (a trap kills it,
 * and a corrupt page must never be decoded by a reused instance), or is still hashing.
 */
export function workerHashers(n: number): HasherPool {
  const taken: { readonly worker: Worker; readonly hasher: WorkerHasher }[] = [];
  const idle: WorkerHasher[] = [];
  return {
    hash: async (store, output, batchRows, kind, derived, cuts) => {
      let hasher = idle.pop();
      if (hasher === undefined) {
        if (taken.length >= n) throw new Error(`workerHashers: more than ${n} outputs at once`);
        const worker = takeWorker(n);
        hasher = hasherOn(worker);
        taken.push({ worker, hasher });
      }
      try {
        return await hasher.hash(store, output, batchRows, kind, derived, cuts);
      } finally {
        idle.push(hasher);
      }
    },
    close: async () => {
      await Promise.all(
        taken.map(({ worker, hasher }) => {
          const clean = hasher.clean();
          hasher.detach();
          return releaseWorker(worker, clean);
        }),
      );
    },
  };
}
