// Delta Lake's table settings (see formats/format-settings.ts): the `deltaLogStore` field of a table config, declared
// here so the config schema, the construct's props and the registry's refusal of it on other formats take it from
// the format that reads it.

import { defineFormatSettings, type SettingsValue } from '../format-settings.js';
import { DELTA_CLI_OPTIONS, type DeltaLogStoreFlags, deltaLogStoreFromFlags } from './cli-options.js';
import { deltaLogStoreSchema, undeclaredCoordinationMessage } from './coordination.js';

/** What a Delta table's config may say of the format: how its commits are coordinated. */
export const deltaSettings = defineFormatSettings({
  tableFields: {
    /**
     * Required on a Delta table: how its commits are coordinated with its other writers, chosen by those writers —
     * `{ type: "s3-conditional" }` (put-if-absent writers: delta-rs >= 1.0), `{ type: "dynamodb", tableName, region,
     * tablePathScheme? }` (Spark's `io.delta.storage.S3DynamoDBLogStore`), or `{ type: "quiet-window", windows,
     * acceptUncoordinatedWriters: true }` (writers with no coordination, stopped during the windows). See
     * coordination.ts.
     */
    deltaLogStore: deltaLogStoreSchema.optional(),
  },
  // The coordination is declared, never assumed: every configured table lives on S3, where the wrong one loses
  // commits silently (coordination.ts lists the choices by writer).
  tableIssues: (settings) =>
    settings.deltaLogStore === undefined
      ? [
          {
            path: 'deltaLogStore',
            message: undeclaredCoordinationMessage(
              'is required for a Delta table: the table',
              'deltaLogStore: { "type": … }',
            ),
          },
        ]
      : [],
  // `--delta-log-store` and the options completing it (cli-options.ts): what commits, settles or vacuums a Delta
  // table reads its log through them; a command that only reads the table (profile, plan) does not take them.
  cli: {
    options: DELTA_CLI_OPTIONS,
    forReading: false,
    settingsOf: (flags: DeltaLogStoreFlags, command) => {
      const deltaLogStore = deltaLogStoreFromFlags(command.format, flags, command);
      return deltaLogStore === undefined ? {} : { deltaLogStore };
    },
  },
});

/** A Delta table's settings, as the format reads them. */
export type DeltaTableSettings = SettingsValue<typeof deltaSettings>;
