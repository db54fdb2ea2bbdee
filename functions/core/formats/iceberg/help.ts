// What `compact --help` and `settle --help` say of an Iceberg table (TableFormat.help): how a group commits through
// the table's catalog, and which --catalog options (cli-options.ts) name it.
import type { FormatCommandHelp } from '../table-format.js';

/** The help paragraphs of an Iceberg table. */
export const icebergHelp: FormatCommandHelp = {
  compact:
    "commits one replace snapshot per group through its catalog: the table root's metadata/ folder (default), the Glue Data Catalog (--catalog glue --glue-database D --glue-table T) or an Iceberg REST catalog such as Amazon S3 Tables (--catalog rest --rest-uri U --rest-namespace N --rest-table T --rest-auth sigv4 --rest-signing-name s3tables --rest-region R). Use the catalog the table's other writers use.",
  settle:
    'its groups settle through its catalog: pass the --catalog options its compact used (a Glue or REST table settled without them is judged by files its catalog may never point at).',
};
