// What lake-compactor says about a Delta Lake table it meets where it must not treat one as plain Parquet (see
// formats/foreign-table-kind.ts): Delta is a registered format, so the way out is to configure the table as one.
import type { ForeignTableKind } from '../foreign-table-kind.js';

/** A Delta Lake table met as a foreign table: its log is the evidence, its format the way out. */
export const deltaForeignTable = {
  name: 'delta',
  title: 'Delta Lake',
  article: 'a',
  // The log folder, not one commit of it: that is what a person looks for.
  evidence: (table) => `${table.endsWith('/') ? table : `${table}/`}_delta_log/`,
  whyNotPlainParquet:
    'its transaction log, not the file listing, defines which files are live, so treating it as plain Parquet would break the table and could resurrect deleted rows; ',
  // For the table's own root (not a folder in or above it).
  refusalAdvice: (table, relation) =>
    relation === 'is'
      ? 'to compact or vacuum it through its log, configure the table with format: "delta" (on the CLI: pass --format delta)'
      : `to compact or vacuum it through its log, configure ${table} as a table with format: "delta" (on the CLI: point at ${table} and pass --format delta)`,
} as const satisfies ForeignTableKind;
