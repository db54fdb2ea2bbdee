// One output's row groups encoded on several workers and joined into one Parquet file: each worker encodes a
// contiguous range of whole row groups as a file of its own with the output's settings, and this thread copies their
// pages into the output's upload in row-group order, the footer rebuilt by the stitcher (core/parquet/stitch.ts) —
// with the footer hook's entries over the joined rows, when the rewrite computes values per output.

import { VerificationError } from '../../core/errors.js';
import { joinSegments, type OrderedSegment } from '../../core/fingerprint/fingerprint.js';
import {
  metadataBytesOf,
  StitchAssembler,
  type StitchSource,
  stitchKeyOf,
  stitchSourceOf,
} from '../../core/parquet/stitch.js';
import type { OutputFooterAccumulator, WrittenOutput } from '../../ports/parquet-engine.js';
import type { OutputFingerprint } from './batch-hash.js';
import {
  type OutputTask,
  type ParallelContext,
  runTask,
  type TaskPerOutput,
  type TaskWrite,
} from './parallel.js';
import { type RelayedFooterValues, replayFooterValues } from './per-output.js';
import { releaseWorker, takeWorker } from './worker-pool.js';

/**
 * Decoded bytes of the row groups one part holds, at most: row groups hold at most `rowGroupBytes` decoded (16 MiB by
 * default, see runs.ts), so a part is at most 4 row groups by default. What a part encodes to is what this thread
 * holds of it, so this (with the workers) is what bounds the join's memory; smaller parts cost more worker tasks, each
 * of which re-decodes the input that straddles its first row.
 */
export const PART_DECODED_BYTES = 64 * 1024 * 1024;

/**
 * Rows of each part of an output of `rows` rows, or one part when it is not worth splitting: every part but the last
 * is whole row groups of `rowGroupRows`, so the joined output has the row groups one thread writes (the encoder cuts
 * row groups at `rowGroupRows` rows). About two parts per worker, so a worker that finishes early takes another part
 * instead of idling while the slowest finishes, and never more row groups per part than `PART_DECODED_BYTES` allows.
 */
export function splitQuotas(
  rows: number,
  rowGroupRows: number,
  rowGroupBytes: number,
  workers: number,
): number[] {
  const groups = Math.ceil(rows / Math.max(1, rowGroupRows));
  if (workers < 2 || groups < 2) return [rows];
  const most = Math.max(1, Math.floor(PART_DECODED_BYTES / Math.max(1, rowGroupBytes)));
  const perPart = Math.max(1, Math.min(most, Math.ceil(groups / (2 * workers))));
  const quotas: number[] = [];
  for (let at = 0; at < rows; at += perPart * rowGroupRows)
    quotas.push(Math.min(perPart * rowGroupRows, rows - at));
  return quotas;
}

/** The joined output, and the digest of its rows joined from its parts' (`joinSegments`: cut where the parts are). */
export interface SplitResult {
  readonly output: WrittenOutput;
  readonly segment: OrderedSegment;
}

interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(err: unknown): void;
}

function deferred<T>(): Deferred<T> {
  let resolve: (value: T) => void = () => undefined;
  let reject: (err: unknown) => void = () => undefined;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/**
 * Feeds a split output's footer accumulator its parts' values in part order (the output's row order), as early as
 * that order allows: values of the part being fed go to the accumulator as they arrive; a later part's are kept until
 * every part before it has finished (`finished`), then fed, and that part is fed live from then on.
 */
export class PerOutputFeed {
  /** The part whose values are fed as they arrive: every part before it has finished. */
  private feeding = 0;
  private readonly done = new Set<number>();
  private readonly kept: RelayedFooterValues[][];

  constructor(
    private readonly accumulator: OutputFooterAccumulator,
    parts: number,
  ) {
    this.kept = Array.from({ length: parts }, () => []);
  }

  /** Values of part `j`, in its row order. */
  values(j: number, values: RelayedFooterValues): void {
    if (j === this.feeding) replayFooterValues(values, this.accumulator);
    else this.kept[j]?.push(values);
  }

  /** Part `j` has posted all its values. */
  finished(j: number): void {
    this.done.add(j);
    while (this.done.has(this.feeding)) {
      this.feeding++;
      for (const values of this.kept[this.feeding] ?? []) replayFooterValues(values, this.accumulator);
      this.kept[this.feeding] = [];
    }
  }
}

/** A task's bytes kept whole in memory (one part: see `PART_DECODED_BYTES`), for the join. */
function collectInto(kept: { bytes?: Uint8Array }): TaskWrite {
  return async (_task, body) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of body) {
      chunks.push(chunk);
      size += chunk.length;
    }
    const bytes = new Uint8Array(size);
    let at = 0;
    for (const c of chunks) {
      bytes.set(c, at);
      at += c.length;
    }
    kept.bytes = bytes;
    return { etag: '', size };
  };
}

/**
 * Writes one output (`key`) from `tasks` — its consecutive row ranges, each whole row groups — encoded on up to
 * `ctx.workers` workers and joined in order. A part's bytes are checked before any of them is copied: a Parquet file
 * whose footer decodes, whose offsets lie in its data, with the rows its range asked for, and whose footer agrees
 * with the first part's on everything but row groups (schema, key-value metadata, created_by, column orders: the
 * stitch key). The output's footer is the first part's with every part's row groups, offsets moved, row count summed
 * (`StitchAssembler`, the stitcher's footer code, so statistics, page indexes and bloom filters are rebased the one
 * way the project does it).
 *
 * Values computed per output (`ctx.perOutput`): every part sets the derived columns of `key`, the joined output, not
 * its own; the footer hook's accumulator is begun for `key` here and fed each part's values (posted by its worker) in
 * part order, so it sees the output's rows in order whatever order the parts finish in: the first unfinished part's
 * values as they arrive, a later part's kept until every part before it has finished (`PerOutputFeed`) — the hook's
 * work overlaps the encoding instead of waiting for the join. Its entries replace the hook's keys in the joined
 * footer (`StitchAssembler.finish`), as the one-thread writer sets them in its footer.
 *
 * Memory: a worker starts part j only once fewer than `workers` parts are ahead of the join, so this thread holds at
 * most `workers` parts (the one being copied into the upload and those encoded or being encoded ahead of it), each at
 * most `PART_DECODED_BYTES` of row groups as encoded, plus one part's copy while it is made contiguous, plus what the
 * store holds of the upload — never the whole output when it has more parts than workers. With a footer hook, the
 * hook column's values of parts that finished ahead of an earlier one too (a record key per row: a small share of a
 * part).
 *
 * On failure — a worker's typed error (revived from its message), a worker that died (`RewriteStalledError`, or
 * `MemoryBudgetExceededError`), a part that fails its checks, the upload — the upload is abandoned and settled before
 * this throws, every worker of the call is terminated, and the output key is in `ctx.started` for the caller to delete.
 */
export async function runSplitOutput(
  key: string,
  tasks: readonly OutputTask[],
  ctx: ParallelContext,
): Promise<SplitResult> {
  const size = Math.min(ctx.workers, tasks.length);
  const parts: (Deferred<Uint8Array> | undefined)[] = tasks.map(() => deferred<Uint8Array>());
  const fingerprints: OutputFingerprint[] = new Array(tasks.length);
  // Per-output values: every part sets the derived columns of the joined output (`key`, not its own); the footer
  // hook is fed the parts' values in part order — the output's row order — and its entries are set in the joined
  // footer.
  const footer = ctx.perOutput?.footerEntries;
  const accumulator = footer?.begin(key);
  const feed = accumulator === undefined ? undefined : new PerOutputFeed(accumulator, tasks.length);
  const perPartOf = (j: number): TaskPerOutput | undefined =>
    ctx.perOutput === undefined
      ? undefined
      : {
          outputKey: key,
          ...(feed !== undefined && { values: (values: RelayedFooterValues) => feed.values(j, values) }),
        };
  let failure: { readonly error: unknown } | undefined;
  /** Parts handed to the upload: part j may start once j < joined + size. */
  let joined = 0;
  const waiting = new Set<() => void>();
  const wakeAll = () => {
    for (const wake of [...waiting]) wake();
  };
  const fail = (error: unknown) => {
    failure ??= { error };
    for (const p of parts) p?.reject(failure.error);
    wakeAll();
  };
  const gate = (j: number) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (failure !== undefined) {
          waiting.delete(check);
          reject(failure.error);
        } else if (j < joined + size) {
          waiting.delete(check);
          resolve();
        }
      };
      waiting.add(check);
      check();
    });

  const assembler = new StitchAssembler();
  let identity: string | undefined;
  const checked = (task: OutputTask, bytes: Uint8Array): StitchSource => {
    const refuse = (why: string) =>
      new VerificationError(`part ${task.key} of ${key} cannot be joined: ${why}`, { key, part: task.key });
    let source: StitchSource;
    try {
      const metadata = metadataBytesOf(task.key, bytes);
      source = stitchSourceOf(task.key, metadata, bytes.length - 8 - metadata.length);
    } catch (err) {
      throw refuse((err as Error).message);
    }
    if (source.unusable !== undefined) throw refuse(source.unusable);
    if (source.rows !== task.to - task.from)
      throw refuse(`${source.rows} rows, its range holds ${task.to - task.from}`);
    const own = stitchKeyOf(source);
    identity ??= own;
    if (own !== identity) throw refuse("its footer differs from the first part's beyond its row groups");
    return source;
  };
  async function* body(): AsyncGenerator<Uint8Array> {
    yield* assembler.start();
    for (const [j, task] of tasks.entries()) {
      const bytes = await (parts[j] as Deferred<Uint8Array>).promise;
      // Dropped before it is copied: the slices below keep only what the upload has yet to send.
      parts[j] = undefined;
      yield* assembler.append(bytes, checked(task, bytes));
      joined = j + 1;
      wakeAll();
    }
    yield* assembler.finish(
      accumulator === undefined || footer === undefined
        ? undefined
        : { entries: accumulator.finish(), drop: footer.keys },
    );
  }

  ctx.started.push(key);
  const upload = ctx.target.putStream(key, body(), { contentType: 'application/vnd.apache.parquet' });
  upload.catch(() => undefined);
  const pool = Array.from({ length: size }, () => takeWorker(size));
  let next = 0;
  let healthy = true;
  try {
    const encoding = Promise.all(
      pool.map(async (worker) => {
        while (failure === undefined && next < tasks.length) {
          const j = next++;
          await gate(j);
          const kept: { bytes?: Uint8Array } = {};
          try {
            const result = await runTask(
              worker,
              tasks[j] as OutputTask,
              ctx,
              collectInto(kept),
              perPartOf(j),
            );
            fingerprints[j] = result.fingerprint;
            // Every value of part j arrived before its task resolved: the parts after it may be fed.
            feed?.finished(j);
            parts[j]?.resolve(kept.bytes as Uint8Array);
          } catch (err) {
            fail(err);
            throw err;
          }
        }
      }),
    );
    encoding.catch(() => undefined);
    const stored = await upload;
    await encoding;
    const rows = tasks.reduce((n, t) => n + t.to - t.from, 0);
    if (stored.size !== assembler.bytes || assembler.rows !== rows) {
      throw new VerificationError(`output ${key} holds ${assembler.rows} rows in ${stored.size} bytes`, {
        key,
        rowsExpected: rows,
        rowsJoined: assembler.rows,
        bytesProduced: assembler.bytes,
        bytesStored: stored.size,
      });
    }
    const segments = fingerprints.map((f) => {
      if (f.kind !== 'ordered-columns-v1') throw new Error(`a ${f.kind} part of a split output`);
      return f.segment;
    });
    return {
      output: { key, size: stored.size, etag: stored.etag, rows: assembler.rows },
      segment: joinSegments(segments),
    };
  } catch (err) {
    healthy = false;
    fail(err);
    await upload.catch(() => undefined);
    throw (failure as { error: unknown }).error;
  } finally {
    await Promise.all(pool.map((w) => releaseWorker(w, healthy)));
  }
}
