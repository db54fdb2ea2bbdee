// Which blocks of a file slice's log files count, and in what order — as Hudi's BaseHoodieLogRecordReader
// (`scanInternal`, formerly AbstractHoodieLogRecordReader) decides, over log files already framed:
//   - log files are read in Hudi's order: by the instant in their name, then log version, then write token
//     (apache/hudi HoodieLogFile.LogFileComparator; within one v6 slice every name has the slice's base instant);
//   - CORRUPT blocks are skipped;
//   - a data or delete block whose instant is later than `latestInstant` (a compaction plan's instant) is skipped;
//   - a data or delete block whose instant the caller's timeline does not call committed is skipped (a failed or
//     in-flight write);
//   - a rollback command block voids every block of its TARGET_INSTANT_TIME read so far (Hudi collects blocks by
//     instant and drops the whole instant; blocks of that instant written after the command count again);
//   - the surviving blocks are processed instant by instant, in the order each instant first appeared, and within
//     an instant in file order.
// The timeline is not read here: `isCommitted` is the caller's (the timeline reader's) answer.
import { type FramedBlock, type LogBlock, readLogBlocks } from './blocks.js';
import { refuseUnsupported, rollbackTarget } from './content.js';
import { HudiLogFormatError, HudiLogUnsupportedError } from './errors.js';

/** The parts of a log file's name, `.<fileId>_<instant>.log.<version>_<writeToken>`. */
export interface LogFileName {
  readonly fileId: string;
  /** v6: the base instant of the slice; v8+: the writing deltacommit's instant. */
  readonly instant: string;
  readonly version: number;
  readonly writeToken: string;
}

const LOG_NAME = /^\.([^_/]+)_([^_./]+)\.log\.(\d+)_(\d+-\d+-\d+)(\.cdc)?$/;

/**
 * The parts of a log file name (the last path segment of `key`), or undefined when it is not a Hudi log file name.
 * @throws HudiLogUnsupportedError for a CDC log (`….cdc`), which holds change data, not the table's records.
 */
export function parseLogFileName(key: string): LogFileName | undefined {
  const name = key.slice(key.lastIndexOf('/') + 1);
  const m = LOG_NAME.exec(name);
  if (m === null) return undefined;
  if (m[5] !== undefined)
    throw new HudiLogUnsupportedError(key, 0, 'a CDC log file', 'change-data-capture logs are not compacted');
  return {
    fileId: m[1] as string,
    instant: m[2] as string,
    version: Number(m[3]),
    writeToken: m[4] as string,
  };
}

/** Hudi's order of log files in one file group: instant, then version, then write token. */
export function compareLogFileNames(a: LogFileName, b: LogFileName): number {
  if (a.instant !== b.instant) return a.instant < b.instant ? -1 : 1;
  if (a.version !== b.version) return a.version - b.version;
  return a.writeToken < b.writeToken ? -1 : a.writeToken > b.writeToken ? 1 : 0;
}

/** One log file of a slice: its key (or name) and bytes. */
export interface LogFileInput {
  readonly key: string;
  readonly bytes: Uint8Array;
}

export interface ScanOptions {
  /** Whether `instant` completed on the table's timeline (an archived one counts as completed). */
  readonly isCommitted: (instant: string) => boolean;
  /** Skip data and delete blocks of later instants (a compaction reads up to its plan's instant). */
  readonly latestInstant?: string;
}

/** The blocks of a slice's logs that count, in processing order, and what was left out (for reports). */
export interface LogScan {
  readonly blocks: readonly LogBlock[];
  readonly corruptBlocks: number;
  readonly uncommittedBlocks: number;
  /** Instants voided by rollback command blocks. */
  readonly rolledBack: readonly string[];
}

/**
 * The data and delete blocks that count in `files` (one file slice's log files, in any order).
 * @throws HudiLogFormatError for a file that is not named as a log file or does not frame, a block without an
 *   instant, a rollback without a target.
 * @throws HudiLogUnsupportedError for what `refuseUnsupported` refuses, and command blocks other than rollback.
 */
export function scanLogFiles(files: readonly LogFileInput[], options: ScanOptions): LogScan {
  const named = files.map((f) => {
    const name = parseLogFileName(f.key);
    if (name === undefined) throw new HudiLogFormatError(f.key, 0, 'its name is not a Hudi log file name');
    return { ...f, name };
  });
  named.sort((a, b) => compareLogFileNames(a.name, b.name));

  const byInstant = new Map<string, LogBlock[]>();
  const rolledBack = new Set<string>();
  let corruptBlocks = 0;
  let uncommittedBlocks = 0;
  for (const file of named) {
    const blocks: FramedBlock[] = readLogBlocks(file.key, file.bytes);
    for (const block of blocks) {
      if (block.kind === 'corrupt') {
        corruptBlocks++;
        continue;
      }
      const instant = block.header.get('INSTANT_TIME');
      if (instant === undefined)
        throw new HudiLogFormatError(
          block.file,
          block.offset,
          `a ${block.type} has no INSTANT_TIME in its header`,
        );
      if (block.type === 'COMMAND_BLOCK') {
        const target = rollbackTarget(block);
        rolledBack.add(target);
        byInstant.delete(target);
        continue;
      }
      if (block.type === 'CORRUPT_BLOCK') {
        corruptBlocks++;
        continue;
      }
      if (options.latestInstant !== undefined && instant > options.latestInstant) continue;
      if (!options.isCommitted(instant)) {
        uncommittedBlocks++;
        continue;
      }
      refuseUnsupported(block);
      // A Map keeps insertion order, and a rolled-back instant re-enters at the end: Hudi's `orderedInstantsList`.
      const list = byInstant.get(instant);
      if (list === undefined) byInstant.set(instant, [block]);
      else list.push(block);
    }
  }
  return {
    blocks: [...byInstant.values()].flat(),
    corruptBlocks,
    uncommittedBlocks,
    rolledBack: [...rolledBack],
  };
}
