// How much of this process's memory a decoder of untrusted table metadata may spend, derived once from the memory
// the entry point has (a Lambda's memory size, the CLI's --memory-mb or machine), and the limits decoders check.
//
// Why a scope and not a parameter: every reader of a table's log, metadata or Parquet footer is reached
// through the TableFormat port (snapshot, changes, vacuum, commit), whose signatures name no memory. A process has
// one memory size, so the entry point runs its work inside `withMemoryBudget` (AsyncLocalStorage: each Lambda
// invocation or CLI command in its own scope, even when tests run several in one process) and each decoder asks
// `currentMemoryBudget()`. Core still reads no environment: the entry point says what the memory is.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { ObjectStore } from '../ports/object-store.js';
import { InvalidInputError, MetadataTooLargeError } from './errors.js';

const MiB = 1024 * 1024;

/** The memory one process (a Lambda invocation, a CLI command) may use, and what to do when a table needs more. */
export interface MemoryBudget {
  /** The process's memory in MB (MiB, as Lambda counts it). */
  readonly memoryMb: number;
  /**
   * What to do to give it more, as a clause for messages: `raise the memory of Lambda function x (now 512 MB)`,
   * `run the CLI with a larger --memory-mb (now 512)`.
   */
  readonly advice: string;
}

/** The memory a process is assumed to have when its entry point set none: the smallest function's (the profiler). */
export const DEFAULT_MEMORY_MB = 512;

/**
 * Bytes of small inputs the rewrite's pre-flight may keep whole for the rewrite (one GET each instead of two): an
 * eighth of the process's memory, between 64 MiB (a group of ~8,000 files of 8 KB, at the smallest functions) and
 * 256 MiB (two default-size groups of 257 KB files). An eighth, because the rewrite's other residents — the encoder's
 * wasm heap (~200 MB), the inputs in flight, the decoded row group — and the runtime take the rest with room to spare;
 * at the compact function's 1,769 MB that is 221 MiB, enough for a 128 MiB group of such files.
 */
export function smallInputCacheBytes(memoryMb: number): number {
  return Math.min(256 * MiB, Math.max(64 * MiB, Math.floor(memoryMb / 8) * MiB));
}

/** The budget of a process with `memoryMb` of memory. @throws InvalidInputError for a non-positive size. */
export function memoryBudget(memoryMb: number, advice?: string): MemoryBudget {
  if (!Number.isFinite(memoryMb) || memoryMb < 64) {
    throw new InvalidInputError(`A memory size of ${memoryMb} MB is not usable: give at least 64 MB`);
  }
  return {
    memoryMb: Math.floor(memoryMb),
    advice: advice ?? `give the process more than its ${Math.floor(memoryMb)} MB of memory`,
  };
}

/**
 * The limits a budget sets on decoding metadata, each a share of the memory. Why these shares: the Node heap limit
 * the functions run with is three quarters of their memory (see infra/node-function.ts), the runtime itself and
 * the AWS SDK take 60–100 MB of it, and a decoder holds its input bytes, the decoded values and, while it builds
 * the table state, a second form of them; so one decoded metadata structure may take at most a quarter, and one
 * raw file, which becomes several times its size once parsed, a sixteenth.
 */
export interface MetadataLimits {
  /** Bytes one decoded metadata structure (a manifest's records, a log's table state) may take on the heap. */
  readonly decodedBytes: number;
  /** Bytes of one metadata file read whole (a log commit or checkpoint part, a metadata file, a manifest). */
  readonly fileBytes: number;
  /** Bytes a compressed metadata file may inflate to (also at most {@link MAX_INFLATION_RATIO} times its size). */
  readonly inflatedBytes: number;
  /** Bytes of one Parquet footer (its Thrift FileMetaData), read and parsed whole before any page. */
  readonly footerBytes: number;
  /** Live actions (files and tombstones) of one log's table state. */
  readonly deltaActions: number;
  /** Bytes one Parquet row group may decode to (the rewrite decodes a row group at a time). */
  readonly rowGroupDecodedBytes: number;
}

/**
 * The V8 heap limit (`--max-old-space-size`, MB) a function of `memoryMb` runs with: three quarters of its memory,
 * so the heap is collected, and at worst refused, before the Lambda runtime kills the process for its size, and the
 * budget's shares (a quarter of the memory decoded) are shares of a heap that really has that room. Set by
 * infra/node-function.ts.
 */
export function nodeHeapLimitMb(memoryMb: number): number {
  return Math.floor(memoryMb * 0.75);
}

/** The largest inflation of a compressed metadata file (gzip, Avro deflate blocks) accepted, below its absolute cap. */
export const MAX_INFLATION_RATIO = 200;
/** Inflating to this many bytes is always accepted (a tiny file of a repetitive text legitimately compresses far). */
export const MIN_INFLATION_BYTES = 4 * MiB;

/**
 * Heap bytes one live log action is budgeted while a table snapshot is built: the parsed add (path, partition
 * values, stats text), its replay-map entries, the DeltaFile and the plan input made of it. Measured on 50,000 and
 * 200,000 adds of one commit with typical stats: about 1,050 bytes per action stay held once the snapshot is built,
 * and the process peaked at about 2,700 bytes per action above its baseline while parsing; 2,048 against a quarter
 * of the memory keeps that peak near half of it.
 */
export const DELTA_ACTION_HEAP_BYTES = 2048;

/** The limits of `budget` (see {@link MetadataLimits} for why each share). */
export function metadataLimits(budget: MemoryBudget): MetadataLimits {
  const memory = budget.memoryMb * MiB;
  const decodedBytes = Math.floor(memory / 4);
  return {
    decodedBytes,
    fileBytes: Math.floor(memory / 16),
    inflatedBytes: Math.floor(memory / 16),
    footerBytes: Math.floor(memory / 64),
    deltaActions: Math.floor(decodedBytes / DELTA_ACTION_HEAP_BYTES),
    rowGroupDecodedBytes: decodedBytes,
  };
}

/**
 * How far a compressed input of `compressedBytes` may inflate: {@link MAX_INFLATION_RATIO} times its size (at least
 * {@link MIN_INFLATION_BYTES}), and never past `absolute`.
 */
export function inflationLimit(compressedBytes: number, absolute: number): number {
  return Math.min(absolute, Math.max(MIN_INFLATION_BYTES, compressedBytes * MAX_INFLATION_RATIO));
}

const scope = new AsyncLocalStorage<MemoryBudget>();
let fallback: MemoryBudget | undefined;

/** Runs `fn` (and everything it awaits) under `budget`. */
export function withMemoryBudget<T>(budget: MemoryBudget, fn: () => T): T {
  return scope.run(budget, fn);
}

/** The budget of the scope this runs in, or the {@link DEFAULT_MEMORY_MB} budget outside any scope. */
export function currentMemoryBudget(): MemoryBudget {
  const current = scope.getStore();
  if (current !== undefined) return current;
  fallback ??= memoryBudget(
    DEFAULT_MEMORY_MB,
    `run it where its memory is known (a Lambda function, or the CLI with --memory-mb; ${DEFAULT_MEMORY_MB} MB was assumed)`,
  );
  return fallback;
}

/** The limits of the current scope's budget. */
export function currentMetadataLimits(): MetadataLimits {
  return metadataLimits(currentMemoryBudget());
}

/** `n` bytes for messages: `512 MiB`, `3.2 MiB`, `640 bytes`. */
export function describeBytes(n: number): string {
  if (n < 1024) return `${n} bytes`;
  if (n < MiB) return `${(n / 1024).toFixed(1)} KiB`;
  const mib = n / MiB;
  return `${mib >= 100 ? mib.toFixed(0) : mib.toFixed(1)} MiB`;
}

/**
 * The whole object `key`, read with one ranged GET of at most `maxBytes + 1` bytes, so an object larger than the
 * budget is never held: one that has more fails with MetadataTooLargeError naming it (`what` says what it is, e.g.
 * `manifest list`), and `remedy` what the table's owner can do besides more memory.
 * @throws MetadataTooLargeError when the object has more than `maxBytes` bytes.
 * @throws ObjectNotFoundError when it does not exist.
 */
export async function readWithin(
  store: Pick<ObjectStore, 'getRange'>,
  key: string,
  maxBytes: number,
  what: string,
  remedy?: string,
): Promise<Uint8Array> {
  let bytes: Uint8Array;
  try {
    bytes = await store.getRange(key, 0, maxBytes);
  } catch (err) {
    // Every store refuses a range that starts at or past the end with InvalidInputError: byte 0 of an empty object.
    if (err instanceof InvalidInputError) return new Uint8Array();
    throw err;
  }
  if (bytes.length > maxBytes) {
    throw new MetadataTooLargeError(
      key,
      what,
      `it has more than ${describeBytes(maxBytes)}, the most one metadata file may have in ${describeBytes(currentMemoryBudget().memoryMb * MiB)} of memory`,
      currentMemoryBudget().advice,
      remedy,
    );
  }
  return bytes;
}
