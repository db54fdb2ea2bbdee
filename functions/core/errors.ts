// Typed errors of lake-compactor: each class sets `name`, so Step Functions Retry/Catch can match
// it, and each message says what went wrong and what the operator should do about it.
import { type ForeignFormat, foreignTableRefusal } from './formats/foreign-formats.js';

/** Base of every error this project raises on purpose. `name` is what Step Functions matches. */
export abstract class CompactorError extends Error {
  /**
   * Whether retrying the same request later can succeed (throttling, transient I/O, a lost race). A flag of
   * the class, not of one error, because the state machine's Retry lists are computed from it before any
   * error exists (see {@link RETRYABLE_ERROR_NAMES}); a subclass sets it with `static override`.
   */
  static readonly retryable: boolean = false;

  /** The class's {@link CompactorError.retryable} flag, on the error itself (for code holding an instance). */
  readonly retryable: boolean = (this.constructor as typeof CompactorError).retryable;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** Prefix of a journal reason that records a failure (as opposed to a clean abort on a concurrent change). */
export const FAILURE_PREFIX = 'FAILED ';

/**
 * `FAILED <ErrorName>: <message>`: how a group's journal reason records the failure that ended it, so the run's
 * summary reports the group as failed with that error (workflow/commit.ts `parseFailure` reads it back). Here, not in
 * the workflow, because a format's commit records one too (its table's lock not free when the commit must complete).
 */
export function failureText(name: string, message: string): string {
  return `${FAILURE_PREFIX}${name}: ${message}`;
}

/** Operator or configuration input failed validation; nothing was changed. */
export class InvalidInputError extends CompactorError {
  constructor(
    message: string,
    readonly issues: readonly string[] = [],
    options?: { cause?: unknown },
  ) {
    super(issues.length > 0 ? `${message}:\n  - ${issues.join('\n  - ')}` : message, options);
  }
}

/**
 * The command line itself is wrong (a malformed location, a missing or conflicting option, an invalid
 * value), found before anything was listed or changed: the CLI exits 2 with it, as for an unknown flag.
 * Input that is well-formed but meets a world that disagrees (a folder that does not exist, a bucket
 * without Parquet files) is an InvalidInputError and exits 1.
 */
export class UsageError extends InvalidInputError {}

/**
 * Options of the input errors: `advice` replaces the default "what to do" sentence, for a caller that did
 * something about the file already (the compact step quarantines it, so the advice is how to release it).
 */
export interface InputErrorOptions {
  readonly cause?: unknown;
  readonly advice?: string;
}

/**
 * The run setting that can lift an engine's refusal of a valid file: the schema fidelity (`logical` writes what
 * `exact` refuses) or the process's memory (a row group too large for it). The quarantine records the settings such
 * a refusal was made under, and a run whose settings lift it tries the file again (core/quarantine.ts).
 */
export type RefusalLiftedBy = 'schemaFidelity' | 'memory';

/** A Parquet input is damaged (truncated, wrong magic, unreadable footer or page). It is left in place. */
export class CorruptInputError extends CompactorError {
  constructor(
    readonly key: string,
    readonly reason: string,
    options?: InputErrorOptions,
  ) {
    super(
      `Corrupt Parquet input ${key}: ${reason}. ${options?.advice ?? 'The file was left in place; inspect or remove it by hand, then re-run.'}`,
      options,
    );
  }
}

/** A Parquet input is valid but uses something the engine cannot reproduce exactly. It is left in place. */
export class UnsupportedInputError extends CompactorError {
  /** The setting that can lift this refusal, when one can (see {@link RefusalLiftedBy}). */
  readonly liftedBy?: RefusalLiftedBy;
  constructor(
    readonly key: string,
    readonly reason: string,
    options?: InputErrorOptions & { readonly liftedBy?: RefusalLiftedBy },
  ) {
    super(
      `Unsupported Parquet input ${key}: ${reason}. ${options?.advice ?? 'Nothing was written; exclude the file or rewrite it with another engine.'}`,
      options,
    );
    if (options?.liftedBy !== undefined) this.liftedBy = options.liftedBy;
  }
}

/** The outputs of a group do not match its inputs. Nothing of the group may be published. */
export class VerificationError extends CompactorError {
  constructor(
    message: string,
    readonly details: Readonly<Record<string, unknown>> = {},
  ) {
    super(`Verification failed: ${message}. Nothing was published; the staged outputs are discarded.`);
  }
}

/** A conditional request lost: the object exists (put-if-absent) or changed (ETag mismatch). */
export class PreconditionFailedError extends CompactorError {
  constructor(
    readonly key: string,
    message?: string,
  ) {
    super(message ?? `Precondition failed for ${key}: the object exists or changed since it was read.`);
  }
}

/** An object that must exist does not. */
export class ObjectNotFoundError extends CompactorError {
  constructor(readonly key: string) {
    super(`Object not found: ${key}. Check the URI and that the object was not removed concurrently.`);
  }
}

/** A store or service call failed in a way that a later retry can fix (throttling, timeouts, 5xx). */
export class TransientStoreError extends CompactorError {
  static override readonly retryable = true;
}

/** Who holds a partition's lease, as the lease store saw it. */
export interface LeaseHolder {
  readonly runId: string;
  readonly executionArn?: string;
  readonly generation: number;
  readonly state: string;
  readonly acquiredAt: number;
}

/** Another run holds the partition's lease. */
export class LeaseHeldError extends CompactorError {
  constructor(
    message: string,
    /** The holder, when the partition holds a lease (absent: a newer schedule replaced this one). */
    readonly holder?: LeaseHolder,
  ) {
    super(message);
  }
}

/**
 * The partition is marked needs-attention: a group of an earlier run could not be settled (e.g. S3 kept
 * denying a request), so no run may plan it until an operator has fixed the cause and settled it.
 */
export class PartitionNeedsAttentionError extends CompactorError {}

/**
 * Groups of earlier runs in this partition could not be settled (rolled back or forward); planning over
 * them could count rows twice, so the run stops and the partition is marked needs-attention.
 */
export class UnsettledPartitionError extends CompactorError {}

/** This run no longer holds its partition's lease (e.g. an old execution was redriven): it must not plan. */
export class LeaseLostError extends CompactorError {}

/** The group needs more memory than its budget allows (e.g. a sort without spilling). */
export class MemoryBudgetExceededError extends CompactorError {}

/**
 * A table's metadata (a log file or state, a metadata file or manifest, a Parquet footer or row group)
 * is larger than the memory of this process lets it decode: refused, by name, before it is decoded, instead of
 * crashing the process. Its writer decides what the metadata holds, so a bomb (a few bytes claiming billions of
 * records) and a table that outgrew the function look alike here; either way nothing was changed, and the message
 * says how to give the process more memory and what the table's owner can do. Not retryable: a rerun with the same
 * memory reads the same bytes.
 */
export class MetadataTooLargeError extends CompactorError {
  constructor(
    /** The object that was refused. */
    readonly key: string,
    /** What it is, for the message (`manifest list`, `log checkpoint`). */
    readonly what: string,
    /** Why, with the figures. */
    readonly reason: string,
    /** How to give the process more memory (the entry point's words, see MemoryBudget.advice). */
    advice: string,
    /** What the table's owner can do instead, when there is something. */
    remedy?: string,
    options?: { cause?: unknown },
  ) {
    super(
      `${what} ${key} is too large for this process's memory: ${reason}. Nothing was changed; ${advice}${remedy === undefined ? '' : `, or ${remedy}`}.`,
      options,
    );
  }
}

/** Returns the error's name when it is one of ours, for logs and Step Functions causes. */
export function errorName(err: unknown): string {
  return err instanceof Error ? err.name : 'UnknownError';
}

/**
 * The Parquet writer stopped making progress (parquet-wasm's stream hangs instead of failing on
 * some malformed batches). Nothing of the group is published; report the input keys as a bug.
 */
export class RewriteStalledError extends CompactorError {}

/** A journal write lost a race: another invocation moved the same group first. Safe to retry. */
export class JournalConflictError extends CompactorError {
  static override readonly retryable = true;
}

/**
 * A journal entry's file lists, kept in an object of the work area because they were too large for its DynamoDB
 * item, are not the ones the journal wrote: the object's SHA-256 differs from the digest recorded in the item, or
 * (for a caller that deletes on the lists' word) the item predates the digest. The work area can be written by
 * more principals than the state table, so the lists are not used; nothing is done on their word.
 */
export class JournalManifestMismatchError extends CompactorError {}

/**
 * A journal entry in a bucket's work area is not its table's: it names another table, or a key (input or output)
 * outside the table's root. lake-compactor only journals a table's own keys, so something else wrote it; nothing
 * is done on its word (no rollback, roll-forward or deletion).
 */
export class ForeignJournalEntryError extends CompactorError {}

/** A commit was asked for a group whose outputs were not verified. */
export class NotVerifiedError extends CompactorError {}

/** An operator's direct compaction run (CLI) ended with at least one failed group; the message names them. */
export class CompactionFailedError extends CompactorError {}

/**
 * The location is, lies inside, or contains another table format's table (formats/foreign-tables.ts recognises them). Such a table's
 * log, metadata or timeline, not the file listing, says which files are live, so rewriting, moving or deleting
 * its files as plain Parquet would break it and could duplicate rows or bring deleted ones back. Never retried:
 * nothing was changed, and only a configuration (or CLI argument) change fixes it.
 */
export class UnsupportedTableFormatError extends CompactorError {
  constructor(
    /** The table format found. */
    readonly format: ForeignFormat,
    /** Where that table lies (its root folder, as a URI or path). */
    readonly root: string,
    /**
     * The object that gave it away: a log entry, a metadata file or version hint, or a table's
     * `.hoodie/hoodie.properties` (another `.hoodie/` object when that is not listed).
     */
    readonly evidenceKey: string,
    /** The location that was asked for. */
    readonly location: string,
    /**
     * What to do instead, when the format's own advice (configure the table with its format, or pass `--format`:
     * see formats/foreign-table-kind.ts) does not fit the command that met it: `tier` cannot tier such a
     * table at all yet.
     */
    readonly advice?: string,
  ) {
    // The words are each format's own (its folder's foreign-table.ts), so this class names no format.
    super(foreignTableRefusal(format, root, evidenceKey, location, advice));
  }
}

/**
 * The table's log (or catalog, or commit table) shows a writer that does not coordinate its commits the way the
 * table's configuration declares (a table declared `dynamodb` whose recent versions have no DynamoDB entry,
 * one declared `s3-conditional` with Spark's DynamoDB temp files): committing would race a writer that cannot see
 * the commit. Refused before anything is written; never retried (only a configuration change or stopping that
 * writer fixes it); the functions count it in `CoordinationRefusals`, which is alarmed.
 */
export class CoordinationMismatchError extends CompactorError {
  constructor(
    /** The table's root, as a URI or key prefix. */
    readonly table: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Every error class of this module, in file order. The state machine matches errors by class name, so its
 * Retry list is computed from this list (see {@link RETRYABLE_ERROR_NAMES}) rather than written by hand; a
 * test checks that no class exported here is missing from it. Errors of the CLI and the local cloud never
 * reach a workflow step and are not listed.
 */
export const ERROR_CLASSES = [
  InvalidInputError,
  UsageError,
  CorruptInputError,
  UnsupportedInputError,
  VerificationError,
  PreconditionFailedError,
  ObjectNotFoundError,
  TransientStoreError,
  LeaseHeldError,
  PartitionNeedsAttentionError,
  UnsettledPartitionError,
  LeaseLostError,
  MemoryBudgetExceededError,
  MetadataTooLargeError,
  RewriteStalledError,
  JournalConflictError,
  NotVerifiedError,
  CompactionFailedError,
  UnsupportedTableFormatError,
  CoordinationMismatchError,
  JournalManifestMismatchError,
  ForeignJournalEntryError,
] as const;

/** Names of the error classes a later attempt can fix (`retryable`), in file order: what Step Functions retries. */
export const RETRYABLE_ERROR_NAMES: readonly string[] = ERROR_CLASSES.filter((c) => c.retryable).map(
  (c) => c.name,
);

/** Names of the error classes no retry can fix: a Retry must never list them. */
export const PERMANENT_ERROR_NAMES: readonly string[] = ERROR_CLASSES.filter((c) => !c.retryable).map(
  (c) => c.name,
);
