// What lake-compactor says about an Apache Hudi table it meets where it must not treat one as plain Parquet (see
// formats/foreign-table-kind.ts): Hudi is a registered format, so the way out is to configure the table as one.
import type { ForeignTableKind } from '../foreign-table-kind.js';

/** A Hudi table met as a foreign table: `.hoodie/hoodie.properties` (or another `.hoodie/` object) is the evidence. */
export const hudiForeignTable = {
  name: 'hudi',
  title: 'Apache Hudi',
  article: 'an',
  evidence: (_table, evidenceKey) => evidenceKey,
  whyNotPlainParquet:
    "its timeline, not the file listing, defines which file slices are live, and older slices and replaced file groups stay on storage until Hudi's cleaner removes them, so treating it as plain Parquet would duplicate rows and bring back deleted or replaced ones; ",
  refusalAdvice: (table, relation) =>
    relation === 'is'
      ? 'to cluster it through its timeline, configure the table with format: "hudi" and its hudiLock and hudiIndexType (on the CLI: pass --format hudi with --hudi-lock and --hudi-index-type)'
      : `to cluster it through its timeline, configure ${table} as a table with format: "hudi" (on the CLI: point at ${table} and pass --format hudi with --hudi-lock and --hudi-index-type)`,
} as const satisfies ForeignTableKind;
