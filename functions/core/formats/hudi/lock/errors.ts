// The typed errors of Hudi table locks. A lock that cannot be taken in time or is lost while held is a race a later
// run can win (retryable); a lock file or item that no Hudi writer could have written, and a lock provider
// lake-compactor cannot take part in, are for an operator (never retried). None of them leaves anything changed:
// the commit that needed the lock aborts before its next write.
import { CompactorError } from '../../../errors.js';

/**
 * Another writer held the table's lock for the whole bounded wait. Retryable: Hudi writers hold it only for the two
 * short critical sections of a commit, so a later attempt normally finds it free.
 */
export class HudiLockUnavailableError extends CompactorError {
  static override readonly retryable = true;

  constructor(
    /** Where the lock lives (`<store>/.hoodie/.locks/table_lock.json`, `dynamodb:<table>/<key>`). */
    readonly lock: string,
    /** The holder as the lock names it (Hudi's owner UUID, the DynamoDB lock client's `ownerName`). */
    readonly holder: string | undefined,
    readonly waitedMs: number,
  ) {
    super(
      `The Hudi table lock ${lock} is held by ${holder ?? 'another writer'} and was not free within ${waitedMs} ms; nothing was written. A later run retries; if the holder is a writer that crashed, its lease expires by itself and the lock is then taken over as Hudi's own writers would.`,
    );
  }
}

/**
 * The holder can no longer guarantee it holds the lock: a renewal found another holder (the lock file's ETag or the
 * item's record version changed), or its lease ran out before a renewal succeeded (the process stalled, the store
 * was unreachable). Whatever the critical section was about to write must not be written; the commit aborts and
 * rolls back its own instants. Retryable: a later run plans again from the timeline as it is then.
 */
export class HudiLockLostError extends CompactorError {
  static override readonly retryable = true;

  constructor(
    readonly lock: string,
    /** `taken`: another holder is proven; `expired`: the lease ran out without a successful renewal. */
    readonly reason: 'taken' | 'expired' | 'released',
    /** What the holder was about to do, for the message. */
    readonly during?: string,
  ) {
    super(
      `The Hudi table lock ${lock} is no longer held by this run (${
        reason === 'taken'
          ? 'another writer took it over'
          : reason === 'expired'
            ? 'its lease ran out before a renewal succeeded'
            : 'it was already released'
      })${during === undefined ? '' : ` before ${during}`}; nothing more is written under it, and the commit aborts.`,
    );
  }
}

/**
 * The lock file or item is not one Hudi's lock code writes (unparseable JSON, a missing or mistyped field, an item
 * without `recordVersionNumber`). Hudi's own writers fail on it as well, so it is left as it is, for an operator.
 */
export class HudiLockStateError extends CompactorError {
  constructor(
    readonly lock: string,
    readonly reason: string,
  ) {
    super(
      `The Hudi table lock ${lock} cannot be read: ${reason}. Hudi's writers cannot take this lock either; nothing was written. Once no writer of the table runs, delete it (the lock file, or the item) so that the next writer creates it afresh.`,
    );
  }
}

/**
 * The table's writers lock through a provider lake-compactor cannot take part in (ZooKeeper, Hive Metastore, a file
 * system lock, an in-process lock, or a class it does not know). A commit under any other lock would exclude
 * nobody, so the table is refused, every byte unchanged, with what to configure instead. Never retried.
 */
export class HudiLockProviderRefusedError extends CompactorError {
  constructor(
    /** The provider class as declared (`hoodie.write.lock.provider`). */
    readonly providerClass: string,
    /** Why lake-compactor cannot take that lock. */
    readonly reason: string,
    /** What to configure instead. */
    readonly remedy: string,
  ) {
    super(
      `The Hudi table's writers lock with ${providerClass} (hoodie.write.lock.provider), which lake-compactor cannot take: ${reason}. Nothing was planned or written. ${remedy}`,
    );
  }
}
