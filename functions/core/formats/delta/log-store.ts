// How a Delta commit is made atomic: a commit is the file `_delta_log/<version>.json`, and two writers must never
// both write the same version. Writers of one table must use the same coordination, so it is chosen per table:
//
//   s3-conditional  `PutObject` with `If-None-Match: *` on the commit file (S3 answers 412 when it exists): what
//                   delta-rs and Delta Kernel do on S3 today, and what Spark's S3 log store does since S3 has
//                   conditional writes. No extra infrastructure.
//   dynamodb        the commit-entry protocol of Spark's `S3DynamoDBLogStore` (and delta-rs's DynamoDB locking):
//                   a conditional put of (tablePath, fileName) in a DynamoDB table decides the winner, the commit
//                   is written through a temp file and marked complete; readers finish an incomplete entry.
//                   Implemented in functions/adapters/dynamodb-delta-log-store.ts.
//
// Both implement this port; the commit code (commit.ts) knows only "write version N if absent".
import type { ObjectStore } from '../../../ports/object-store.js';
import { PreconditionFailedError } from '../../errors.js';
import { commitFileName } from './log-files.js';

/** Whether a commit was written, or another writer's commit of that version exists already. */
export type CommitWriteResult = 'written' | 'exists';

/** Atomic put-if-absent of a Delta commit file, the one primitive every Delta writer relies on. */
export interface DeltaLogStore {
  /** How commits are coordinated, for messages and reports (`s3-conditional`, `dynamodb:<table>`). */
  readonly description: string;
  /**
   * Writes `<tableRoot>/_delta_log/<version 20 digits>.json` with `body` only if no commit of that version exists
   * (or is being written by another writer): `exists` when one does, and then nothing was written.
   * `tableRoot` is a key prefix of the object store ('' or ending without `/`).
   */
  writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult>;
  /**
   * Makes every commit the coordinator has accepted visible in `_delta_log/` before a reader lists the log
   * (DynamoDB: an entry whose copy was interrupted is completed). A no-op for S3 conditional writes.
   */
  prepareRead(tableRoot: string): Promise<void>;
}

/** The key of a commit file of the table at `tableRoot`. */
export function commitKey(tableRoot: string, version: number): string {
  return `${tableRoot === '' ? '' : `${tableRoot.replace(/\/$/, '')}/`}_delta_log/${commitFileName(version)}`;
}

/**
 * S3 conditional writes (`If-None-Match: *`), through the ObjectStore port: S3 and the local folder store refuse
 * the put when the key exists (PreconditionFailedError), which is exactly "another writer won this version".
 */
export class ConditionalPutLogStore implements DeltaLogStore {
  readonly description = 's3-conditional';

  constructor(private readonly store: ObjectStore) {}

  async writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult> {
    try {
      await this.store.put(commitKey(tableRoot, version), body, {
        ifNoneMatch: '*',
        contentType: 'application/json',
      });
      return 'written';
    } catch (err) {
      if (err instanceof PreconditionFailedError) return 'exists';
      throw err;
    }
  }

  async prepareRead(): Promise<void> {}
}
