// Apache Iceberg's table settings (see formats/format-settings.ts): the `catalog` and `rewriteDataFiles` fields of a
// table config, declared here so the config schema, the construct's props and the registry's refusal of them on
// other formats take them from the format that reads them.
import type { FormatSettings, SettingsValue } from '../format-settings.js';
import { icebergCatalogSchema } from './catalogs.js';
import { rewriteDataFilesSchema } from './rewrite-options.js';

/** What an Iceberg table's config may say of the format: its catalog and its `rewrite_data_files` options. */
export const icebergSettings = {
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
} as const satisfies FormatSettings;

/** An Iceberg table's settings, as the format reads them. */
export type IcebergTableSettings = SettingsValue<typeof icebergSettings>;
