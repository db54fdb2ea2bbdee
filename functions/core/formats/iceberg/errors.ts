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

/**
 * The table is read through the path catalog (the default), but its `metadata/` folder is a metastore catalog's:
 * it holds metadata files named `<NNNNN>-<uuid>.metadata.json` (as Glue, REST catalogs, Hive and S3 Tables name
 * them), or no `v<N>.metadata.json` at all. Readers of such a table follow the catalog's pointer, so a
 * `v<N+1>.metadata.json` written beside it is a commit they never see, and a later path-catalog expire_snapshots
 * could delete files the catalog's current snapshot still reads. Refused before anything is planned, committed or
 * deleted. Never retried: only a config (or CLI option) change fixes it.
 */
export class IcebergCatalogMismatchError extends CompactorError {
  constructor(
    /** The table's location as the caller named it. */
    readonly table: string,
    /** Up to a few metadata file names that gave the catalog away. */
    readonly evidence: readonly string[],
    /** How many metadata files are named the metastore way. */
    readonly catalogNamed: number,
    /** How many are named `v<N>.metadata.json`. */
    readonly hadoopNamed: number,
  ) {
    const shown = evidence.join(', ');
    const found =
      hadoopNamed === 0
        ? `its metadata/ folder holds no v<N>.metadata.json but ${catalogNamed} metadata file${catalogNamed === 1 ? '' : 's'} named as a metastore catalog names them (${shown})`
        : `its metadata/ folder holds ${catalogNamed} metadata file${catalogNamed === 1 ? '' : 's'} named as a metastore catalog names them (${shown}) beside ${hadoopNamed} v<N>.metadata.json`;
    super(
      `Iceberg table ${table} is read through the path catalog (the default), but ${found}: Glue, REST, Hive and S3 Tables readers follow their catalog's pointer, so a commit written here would be one they never see, and a later expire_snapshots could delete files their current snapshot still reads. Nothing was planned, committed or deleted. Configure the catalog the table's other writers use: the table setting "catalog" ({ "type": "glue", "database", "table" } or { "type": "rest", "uri", "namespace", "table", "auth" }; Amazon S3 Tables is "rest" with "warehouse" set to the table bucket ARN and auth { "type": "sigv4", "signingName": "s3tables", "region" }), on the CLI --catalog glue --glue-database D --glue-table T, or --catalog rest --rest-uri U --rest-namespace N --rest-table T (S3 Tables: --rest-uri https://s3tables.<region>.amazonaws.com/iceberg --rest-warehouse <table bucket ARN> --rest-auth sigv4 --rest-signing-name s3tables --rest-region <region>). Only if no catalog manages this table and it really is a path table whose files are named that way, say so: catalog { "type": "path", "metadataNaming": "uuid" } (CLI: --catalog path --path-metadata-naming uuid)`,
    );
  }
}
