// The Quarantine port: where the input files that broke a rewrite are recorded, per partition, until the
// object changes or an operator clears them; a partition's list is read strongly consistently.
import type { QuarantinedFile, QuarantinePartition } from '../core/quarantine.js';

export type { QuarantinedFile, QuarantinePartition };

export interface Quarantine {
  /** Where the records live, for messages (e.g. `state table lake-state`, `s3://lake/_lake-compactor/quarantine/`). */
  readonly description: string;
  /**
   * Records the file, replacing any record of the same key (idempotent: a retried step writes the same
   * record again; a later failure of a new object of that key replaces the old record).
   */
  record(file: QuarantinedFile): Promise<void>;
  /**
   * The partition's quarantined files, sorted by key, strongly consistent: a record written by a finished
   * compact step is seen by the next plan step.
   */
  list(partition: QuarantinePartition): Promise<QuarantinedFile[]>;
  /**
   * Every quarantined file of a table, sorted by partition then key (for `status`, `quarantine` and the
   * report). May lag a just-written record by a moment (DynamoDB reads it through an index).
   */
  listTable(table: string): Promise<QuarantinedFile[]>;
  /** Removes one key's record, or with no key all of the partition's; returns the records removed. */
  clear(partition: QuarantinePartition, key?: string): Promise<QuarantinedFile[]>;
}
