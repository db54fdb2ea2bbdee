// Apache Iceberg's table settings (see formats/format-settings.ts): the `catalog` and `rewriteDataFiles` fields of a
// table config, declared here so the config schema, the construct's props and the registry's refusal of them on
// other formats take them from the format that reads them.
import { z } from 'zod';
import { defineFormatSettings, type SettingsValue } from '../format-settings.js';
import { icebergCatalogSchema } from './catalogs.js';
import { type CatalogFlags, catalogFromFlags, ICEBERG_CATALOG_CLI_OPTIONS } from './cli-options.js';
import {
  ICEBERG_DEFAULT_TARGET_BYTES,
  mergeRewriteOptions,
  parseRewriteOptionPairs,
  REWRITE_OPTION_NAMES,
  type RewriteDataFilesOptions,
  resolveRewriteOptions,
  rewriteDataFilesSchema,
  TARGET_SIZE_PROPERTY,
} from './rewrite-options.js';
import { checkWhereFields, InvalidWhereError, matchesWhere, parseWhere } from './where.js';

const MiB = 1024 * 1024;

/** The operator's partition filter, checked as it will be evaluated (see where.ts for the language). */
const whereSchema = z.string().superRefine((where, ctx) => {
  try {
    parseWhere(where);
  } catch (err) {
    if (!(err instanceof InvalidWhereError)) throw err;
    ctx.addIssue({
      code: 'custom',
      message: `${err.reason}; write e.g. "action = 'click' AND event_time_hour >= '2020-01-01-09'"`,
    });
  }
});

/** An explicit target in MiB as the `rewrite_data_files` option it is the same knob as. */
const asOption = (mib: number | undefined): RewriteDataFilesOptions | undefined =>
  mib === undefined ? undefined : { 'target-file-size-bytes': Math.round(mib * MiB) };

/** What an Iceberg table's config may say of the format: its catalog and its `rewrite_data_files` options. */
export const icebergSettings = defineFormatSettings({
  tableFields: {
    /**
     * The catalog the table commits through — `{ type: "path" }` (default), `{ type: "glue", … }` or
     * `{ type: "rest", … }` (see catalogs.ts).
     */
    catalog: icebergCatalogSchema.optional(),
    /**
     * The options of Iceberg's `rewrite_data_files` the table's groups are planned with, named and defaulted as
     * Iceberg does (`{ "min-input-files": 10, "target-file-size-bytes": 268435456 }`; see rewrite-options.ts). Named
     * after the procedure so a Spark job's options map moves over verbatim; a run's input may override them one by one.
     */
    rewriteDataFiles: rewriteDataFilesSchema.optional(),
  },
  run: {
    input: {
      /**
       * `rewrite_data_files` options for this run, over the table's (`{ "min-input-files": 2 }`; Iceberg's names,
       * see rewrite-options.ts).
       */
      rewriteDataFiles: rewriteDataFilesSchema.optional(),
      /**
       * A partition filter (`action = 'click' AND event_time_hour >= '2020-01-01-09'`); a partition outside it
       * plans nothing. See where.ts for the language.
       */
      where: whereSchema.optional(),
    },
    context: {
      /** The `rewrite_data_files` options the plan step resolves (the table's, then the request's). */
      rewriteDataFiles: rewriteDataFilesSchema.optional(),
      /** The operator's partition filter; a partition outside it plans nothing. */
      where: z.string().optional(),
    },
    // An explicit target in MiB is the same knob as `target-file-size-bytes` (and the CLI plan's --min-input-files
    // as `min-input-files`); an option beats it at its level.
    resolve: (table, request) => {
      const rewriteDataFiles = mergeRewriteOptions(
        asOption(table.targetFileSizeMB),
        table.rewriteDataFiles,
        asOption(request.targetFileSizeMB),
        request.minInputFiles === undefined ? undefined : { 'min-input-files': request.minInputFiles },
        request.rewriteDataFiles,
      );
      return {
        ...(rewriteDataFiles === undefined ? {} : { rewriteDataFiles }),
        ...(request.where === undefined ? {} : { where: request.where }),
      };
    },
    partitionFilter: (text) => {
      const expr = parseWhere(text);
      return {
        text,
        passes: (values) => matchesWhere(expr, values),
        checkFields: (known) => checkWhereFields(text, expr, known),
      };
    },
    // Sizes that contradict the table's target property are refused before the run settles or plans anything.
    checkAgainstTable: (request, table) => {
      if (request.rewriteDataFiles !== undefined)
        resolveRewriteOptions(request.rewriteDataFiles, {
          ...(table.properties === undefined ? {} : { tableProperties: table.properties }),
          engineGroupCapBytes: Number.MAX_SAFE_INTEGER,
        });
    },
    fromPairs: { rewriteDataFiles: parseRewriteOptionPairs },
    // The command line's words for the run inputs and knobs above (`--rewrite-option`, `--where`, `--target-mb`,
    // `--min-input-files`), shown after the format's title.
    describe: {
      rewriteDataFiles: `a rewrite_data_files option, repeatable (${REWRITE_OPTION_NAMES.join(', ')})`,
      where:
        "only partitions passing this filter over partition fields are planned, e.g. \"action = 'click' AND event_time_hour >= '2020-01-01-09'\"",
      targetFileSizeMB: `the table property ${TARGET_SIZE_PROPERTY}, else ${ICEBERG_DEFAULT_TARGET_BYTES / MiB}`,
      minInputFiles: 'min-input-files',
    },
  },
  // `--catalog` and the flags completing it (cli-options.ts): every command on an Iceberg table reads it through
  // its catalog, so profile and plan take them too.
  cli: {
    options: ICEBERG_CATALOG_CLI_OPTIONS,
    forReading: true,
    settingsOf: (flags: CatalogFlags, command) => {
      const catalog = catalogFromFlags(flags, command.format);
      return catalog === undefined ? {} : { catalog };
    },
  },
});

/** An Iceberg table's settings, as the format reads them. */
export type IcebergTableSettings = SettingsValue<typeof icebergSettings>;
