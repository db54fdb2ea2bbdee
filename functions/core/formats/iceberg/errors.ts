// The Iceberg reader's typed errors: a feature lake-compactor cannot handle safely is refused with one class
// whose message names the feature; metadata that is missing or malformed is its own class. Neither is retryable.
import { CompactorError } from '../../errors.js';

/**
 * The table uses an Iceberg feature this reader does not handle (an unknown transform, encryption, a format
 * version above 3, partition-spec evolution inside one group, …). Refused rather than guessed at, because a
 * misread manifest silently loses or resurrects rows. Never retried: only a change of the table or of
 * lake-compactor fixes it.
 */
export class IcebergUnsupportedError extends CompactorError {
  constructor(
    /** The table's location as the caller named it. */
    readonly table: string,
    /** The feature, as the message names it. */
    readonly feature: string,
  ) {
    super(
      `Iceberg table ${table} uses ${feature}, which lake-compactor does not support: nothing of it was read or changed. Leave this table to an Iceberg engine (Spark's rewrite_data_files), or remove it from the configuration`,
    );
  }
}

/**
 * The table's metadata is missing or does not follow the Iceberg spec (no metadata file, invalid JSON, a
 * manifest without its required fields). Never retried: a rerun reads the same bytes.
 */
export class IcebergMetadataError extends CompactorError {
  constructor(
    readonly table: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Iceberg table ${table} has unreadable metadata: ${reason}. Nothing was changed; check that the location is an Iceberg table root (with metadata/) and that its metadata files are complete`,
      options,
    );
  }
}

/**
 * A commit lost against another writer in a way a rebase cannot fix: one of the files it replaces is no longer
 * live, or a position delete or deletion vector committed since the starting snapshot applies to one of them (its
 * rows would come back). Nothing of the commit is visible: its manifests were removed, the table is as the other
 * writer left it. Not retried as is: the rewrite must be planned again from the table's new state.
 */
export class IcebergCommitConflictError extends CompactorError {
  constructor(
    readonly table: string,
    /** Why, one line per file or cause. */
    readonly reasons: readonly string[],
  ) {
    super(
      `Iceberg commit to ${table} was abandoned because the table changed underneath it:\n  - ${reasons.join('\n  - ')}\nNothing of this commit is visible; plan the rewrite again from the table's current snapshot`,
    );
  }
}

/**
 * expire_snapshots or remove_orphan_files would not run on a table: `gc.enabled` is false, a property it reads is
 * malformed, or an option is outside what is safe (a retain-last below 1, an orphan grace period below the minimum
 * without the override). Nothing was committed or deleted. Never retried: only a change of the table or of the
 * options fixes it.
 */
export class IcebergMaintenanceRefusedError extends CompactorError {
  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(
      `Iceberg maintenance of ${table || '(store root)'} refused: ${reason}. Nothing was changed or deleted.`,
    );
  }
}
