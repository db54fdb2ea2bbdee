// What `compact --help` says of a Hive-style Parquet table (TableFormat.help): how a group's inputs are retired,
// in the words of the retire modes its commit implements (commit.ts), so the help and the code cannot disagree.
import type { FormatCommandHelp } from '../table-format.js';

/** The help paragraphs of a Hive-style Parquet table. */
export const hiveHelp: FormatCommandHelp = {
  compact:
    "a bin-pack deletes its inputs once the outputs are in (until the group is done, its undo rebuilds an input from the outputs' rows); a sort or z-order first copies them to _lake-compactor/trash/<run>/, which vacuum removes after the retention.",
};
