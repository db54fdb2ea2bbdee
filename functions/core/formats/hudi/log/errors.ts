// Typed errors of the Hudi log reader. Each names the log file and the byte offset where the reader stopped, because
// a log file is written by someone else (a Hudi writer, a crashed task, anyone with write access to the table) and
// an operator needs to find the bytes to judge them. Nothing is ever changed by the reader, so none is retryable.
import { CompactorError } from '../../../errors.js';

/**
 * A log file's bytes are malformed where Hudi's own reader would fail too (a block whose inner fields run past its
 * declared length, a header key Hudi does not define, a record that does not decode). A block that is merely
 * truncated or followed by garbage is not this error: Hudi reads it as a CORRUPT block and so does this reader.
 */
export class HudiLogFormatError extends CompactorError {
  constructor(
    /** The log file (its name or key). */
    readonly file: string,
    /** Byte offset in the file where the problem was found. */
    readonly offset: number,
    /** What is wrong, for the message. */
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(
      `Hudi log file ${file} is malformed at byte ${offset}: ${reason}. Nothing was changed; the file group is left as it is (inspect the file, or let Hudi's own compactor handle it).`,
      options,
    );
  }
}

/**
 * A log file holds something valid that this reader does not implement (an HFile or CDC block, a delete block
 * before version 3, a log-compacted or partial-update block, an unknown command): refused by name, never
 * guessed at, so a compaction over it is not attempted.
 */
export class HudiLogUnsupportedError extends CompactorError {
  constructor(
    readonly file: string,
    readonly offset: number,
    /** The feature, by Hudi's name (e.g. `HFILE_DATA block`). */
    readonly feature: string,
    readonly reason: string,
  ) {
    super(
      `Hudi log file ${file} uses ${feature} at byte ${offset}, which lake-compactor does not implement: ${reason}. Nothing was changed; leave this file group to Hudi's own compactor.`,
    );
  }
}

/**
 * The table's merge configuration is not one this merger implements (a payload class other than
 * OverwriteWithLatestAvroPayload or DefaultHoodieRecordPayload, the CUSTOM merge mode, partial updates).
 */
export class HudiMergeUnsupportedError extends CompactorError {
  constructor(
    readonly feature: string,
    readonly reason: string,
  ) {
    super(
      `Hudi ${feature} is not supported by lake-compactor's log merger: ${reason}. Nothing was changed; leave the table's compaction to Hudi.`,
    );
  }
}

/**
 * A log block or file name the writer was asked to produce is not one Hudi would write (an instant that is not 17
 * digits, a file id with `_`, a value no Avro type of the schema holds, an ordering value no delete wrapper carries):
 * refused before a byte is written, so a writer never leaves a log Hudi's reader would fail on.
 */
export class HudiLogWriteError extends CompactorError {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Refusing to write a Hudi log block: ${reason}.`, options);
  }
}
