// The Delta reader's typed errors: a refusal names the protocol version or table feature it refuses and is never
// retried; a broken or incomplete log names the file and what is wrong with it. Neither leaves anything changed.
import { CompactorError } from '../../errors.js';

/** What a refusal is about: a table feature of the reader or writer side, or a protocol version. */
export type DeltaRefusalKind = 'reader feature' | 'writer feature' | 'reader version' | 'writer version';

/**
 * The table needs a protocol version or table feature lake-compactor does not implement. Never retryable:
 * only a release that implements the feature (or a table that drops it) changes the answer, and touching a
 * table whose protocol a client does not understand is exactly what the Delta protocol forbids.
 */
export class DeltaFeatureNotSupportedError extends CompactorError {
  constructor(
    readonly kind: DeltaRefusalKind,
    /** The feature's name as the protocol spells it (`rowTracking`), or the version number as text. */
    readonly feature: string,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The log cannot be read as the protocol defines it: a version is missing, a commit or checkpoint is malformed,
 * or the requested version does not exist. Not retryable either: S3 is strongly consistent, so the same listing
 * comes back; the message says which file and what to check.
 */
export class DeltaLogError extends CompactorError {
  constructor(
    readonly tableRoot: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Delta log of ${tableRoot || '(store root)'} cannot be read: ${reason}. Nothing was changed; check the table with a Delta client (e.g. DESCRIBE HISTORY) before compacting it.`,
      options,
    );
  }
}
