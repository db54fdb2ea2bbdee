// The Hudi reader's typed errors. A table feature lake-compactor cannot handle safely is refused by name: one class
// per feature, each saying which table setting (or which Hudi action) would make the table acceptable, because the
// way out differs per feature and an operator reads the class name first. Timeline or properties files that are
// missing or do not say what Hudi writes are their own class. None is retryable, and none is raised after anything
// was written: the reader only reads, so every refusal leaves every byte of the table unchanged.
import { CompactorError } from '../../errors.js';

/** What every refusal ends with: the reader only reads, so a refusal is never a half-done change. */
const UNCHANGED = 'Nothing of the table was changed';

/**
 * The table uses a Hudi feature lake-compactor refuses. Never retried: only a change of the table (the setting the
 * message names) or of lake-compactor fixes it. Subclasses name the feature; `setting` is what to change.
 */
export abstract class HudiUnsupportedError extends CompactorError {
  constructor(
    /** The table's location as the caller named it. */
    readonly table: string,
    /** The feature, as the message names it. */
    readonly feature: string,
    /** The table setting (or Hudi action) that would make the table acceptable. */
    readonly setting: string,
    /** What the operator can do, in full. */
    advice: string,
  ) {
    super(
      `Hudi table ${table} uses ${feature}, which lake-compactor does not support. ${UNCHANGED}. ${advice}`,
    );
  }
}

/** Table versions other than 6 (0.14/0.15), 8 (1.0) and 9 (1.1): 7 is a bridge version, up to 5 predates the layout. */
export class HudiTableVersionError extends HudiUnsupportedError {
  constructor(
    table: string,
    readonly version: string,
  ) {
    super(
      table,
      `table version ${version} (hoodie.table.version)`,
      'hoodie.table.version',
      "Only table versions 6, 8 and 9 are read; upgrade the table with a Hudi writer (hoodie.write.table.version) or leave it to Hudi's own table services",
    );
  }
}

/** Base files that are not Parquet (ORC, HFILE, LANCE), or several base formats in one table. */
export class HudiBaseFileFormatError extends HudiUnsupportedError {
  constructor(table: string, format: string) {
    super(
      table,
      `base file format ${format}`,
      'hoodie.table.base.file.format',
      "Only Parquet base files are rewritten (hoodie.table.base.file.format=PARQUET, hoodie.table.multiple.base.file.formats.enable=false); leave this table to Hudi's own clustering and compaction",
    );
  }
}

/** Virtual keys: without the `_hoodie_*` meta columns, record keys would have to be recomputed by the key generator. */
export class HudiVirtualKeysError extends HudiUnsupportedError {
  constructor(table: string) {
    super(
      table,
      'virtual keys (hoodie.populate.meta.fields=false)',
      'hoodie.populate.meta.fields',
      "Rewrites keep each row's _hoodie_record_key and commit time, which a table without meta columns does not store; only tables written with hoodie.populate.meta.fields=true (the default) are supported",
    );
  }
}

/** A bootstrap table: its base files point into another location's files, which a rewrite would have to merge. */
export class HudiBootstrapError extends HudiUnsupportedError {
  constructor(table: string, evidence: string) {
    super(
      table,
      `bootstrap (${evidence})`,
      'hoodie.bootstrap.base.path',
      "A bootstrapped table's file slices join skeleton files with the source table's files; leave it to Hudi's own table services",
    );
  }
}

/** The bucket index maps keys to file groups by the file id's bucket number: new file ids would duplicate rows. */
export class HudiBucketIndexError extends HudiUnsupportedError {
  constructor(table: string, evidence: string) {
    super(
      table,
      `the bucket index (${evidence})`,
      'hoodie.index.type',
      'The bucket index routes every record key to the file group whose id starts with its bucket number, so clustering into fresh file ids would turn later upserts into duplicate inserts; only BLOOM, SIMPLE, GLOBAL_BLOOM and GLOBAL_SIMPLE index tables are supported',
    );
  }
}

/**
 * The metadata table: a commit that does not update it makes the rewritten rows vanish for every reader and writer
 * that lists through it (notes §6), and writing it needs HFiles. The advice is what Hudi itself requires to remove it.
 */
export class HudiMetadataTableError extends HudiUnsupportedError {
  constructor(table: string, evidence: string) {
    super(
      table,
      `the metadata table (${evidence})`,
      'hoodie.metadata.enable',
      "A commit that does not also update the metadata table makes the clustered rows vanish for every reader and writer that lists files through it, and lake-compactor does not write it. To use lake-compactor on this table, run a Hudi writer once with hoodie.metadata.enable=false, which deletes the metadata table (.hoodie/metadata), and keep hoodie.metadata.enable=false on every writer of the table from then on: a single writer with it on re-creates it. Otherwise leave this table to Hudi's own clustering and compaction",
    );
  }
}

/** Schema-on-read evolution: the table's schema history lives in `.hoodie/.schema/`, which readers apply per file. */
export class HudiSchemaOnReadError extends HudiUnsupportedError {
  constructor(table: string, evidence: string) {
    super(
      table,
      `schema-on-read evolution (${evidence})`,
      'hoodie.schema.on.read.enable',
      "Files written under different schemas are reconciled through .hoodie/.schema/, which lake-compactor does not read; leave this table to Hudi's own table services",
    );
  }
}

/** A rollback or restore in progress: the files it is undoing are in no settled state until Hudi finishes it. */
export class HudiPendingRollbackError extends HudiUnsupportedError {
  constructor(
    table: string,
    readonly action: 'rollback' | 'restore',
    readonly instant: string,
  ) {
    super(
      table,
      `a pending ${action} (instant ${instant})`,
      `.hoodie ${action} ${instant}`,
      `Hudi has not finished undoing writes, so which files are live is not settled; let a Hudi writer or hudi-cli complete the ${action} ${instant}, then retry`,
    );
  }
}

/**
 * `hoodie.properties` or a timeline file is missing or does not say what Hudi writes (invalid JSON or Avro, a field
 * of the wrong type, an instant name no layout defines). Never retried: a rerun reads the same bytes.
 */
export class HudiTimelineError extends CompactorError {
  constructor(
    readonly table: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Hudi table ${table} has an unreadable timeline: ${reason}. ${UNCHANGED}; check that the location is a Hudi table base path (with .hoodie/hoodie.properties) and that its timeline files are complete`,
      options,
    );
  }
}

/**
 * The table mints instant times in the writer's LOCAL zone (`hoodie.table.timeline.timezone` absent or LOCAL), and
 * nothing says which zone that is: turning an instant into a moment (a cursor, a quiet window) needs the deployment
 * to name it. Guessing UTC would shift every quiet window by the writer's offset.
 */
export class HudiTimezoneError extends CompactorError {
  constructor(
    readonly table: string,
    readonly reason: string,
  ) {
    super(
      `Hudi table ${table}: ${reason}. Nothing of the table was changed; declare the zone its writers run in (an IANA name such as Europe/Paris, or UTC) in the table's settings`,
    );
  }
}
