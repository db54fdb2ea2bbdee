// What `compact --help` and `settle --help` say of a Hudi table (TableFormat.help): what compact runs through the
// timeline, and that both take the lock the table's writers declare (--hudi-lock, settings.ts).
import type { FormatCommandHelp } from '../table-format.js';

/** The help paragraphs of a Hudi table. */
export const hudiHelp: FormatCommandHelp = {
  compact:
    "a Merge-on-Read table's file slices with log files are first compacted into new base files in one compaction instant, once --hudi-compaction-delta-commits delta commits completed since its last compaction; small base files are then clustered, each group in a replacecommit. Both commit through the timeline under the lock the table's writers take (--hudi-lock and its options), and need the index their upserts use (--hudi-index-type).",
  settle:
    "its groups settle through its timeline, under its writers' lock: pass the --hudi-lock options its compact used.",
};
