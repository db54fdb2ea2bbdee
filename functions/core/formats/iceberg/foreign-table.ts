// What lake-compactor says about an Apache Iceberg table it meets where it must not treat one as plain Parquet (see
// formats/foreign-table-kind.ts): Iceberg is a registered format, so the way out is to configure the table as one,
// through the catalog its writers commit with.
import type { ForeignTableKind } from '../foreign-table-kind.js';

/** An Iceberg table met as a foreign table: its metadata file or version hint is the evidence. */
export const icebergForeignTable = {
  name: 'iceberg',
  title: 'Apache Iceberg',
  article: 'an',
  evidence: (_table, evidenceKey) => evidenceKey,
  whyNotPlainParquet:
    'its table metadata and snapshots, not the file listing, define which files are live and which rows are deleted, so treating it as plain Parquet would break the table and could resurrect deleted rows; ',
  refusalAdvice: (table, relation) =>
    relation === 'is'
      ? 'to compact and maintain it through its metadata, configure the table with format: "iceberg" and the catalog its writers use (on the CLI: pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)'
      : `to compact and maintain it through its metadata, configure ${table} as a table with format: "iceberg" and the catalog its writers use (on the CLI: point at ${table} and pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest)`,
} as const satisfies ForeignTableKind;
