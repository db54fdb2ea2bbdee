// What lake-compactor says about an Apache Hudi table it meets (see formats/foreign-table-kind.ts). Hudi is
// recognised (by its `.hoodie/` folder) but not a registered format yet, so the way out is to leave the table to
// Hudi's own table services; this folder is where the Hudi format will be implemented.
import type { ForeignTableKind } from '../foreign-table-kind.js';

/** A Hudi table met as a foreign table: `.hoodie/hoodie.properties` (or another `.hoodie/` object) is the evidence. */
export const hudiForeignTable = {
  name: 'hudi',
  title: 'Apache Hudi',
  article: 'an',
  evidence: (_table, evidenceKey) => evidenceKey,
  whyNotPlainParquet:
    "its timeline, not the file listing, defines which file slices are live, and older slices and replaced file groups stay on storage until Hudi's cleaner removes them, so treating it as plain Parquet would duplicate rows and bring back deleted or replaced ones. ",
  refusalAdvice: () =>
    "lake-compactor recognises Hudi tables but does not compact, vacuum or tier them yet; remove this location from the configuration and do not point the CLI at it (use Hudi's own clustering, compaction and cleaner for now)",
} as const satisfies ForeignTableKind;
