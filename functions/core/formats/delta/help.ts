// What `compact --help` and `settle --help` say of a Delta table (TableFormat.help): how a group commits through the
// log, and which --delta-log-store options (cli-options.ts) name the coordination its writers use.
import type { FormatCommandHelp } from '../table-format.js';

/** The help paragraphs of a Delta table. */
export const deltaHelp: FormatCommandHelp = {
  compact:
    "each group commits through its log as one OPTIMIZE version (put-if-absent on _delta_log/); inputs stay on storage for readers of older versions until Delta VACUUM. On S3 it needs its commit coordination, as the table's deltaLogStore in the config declares it, chosen by the table's other writers: --delta-log-store s3-conditional (put-if-absent writers: delta-rs >= 1.0), --delta-log-store dynamodb --delta-ddb-table <name> --delta-ddb-region <r> (Spark's S3DynamoDBLogStore), or --delta-log-store quiet-window --delta-quiet-window <HH:MM-HH:MM> --delta-accept-uncoordinated-writers (writers with no coordination, stopped during the window). A local folder without the option uses s3-conditional.",
  settle: 'its groups settle through its log: pass the --delta-log-store options its compact used.',
};
