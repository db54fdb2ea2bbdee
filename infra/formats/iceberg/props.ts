// The props Apache Iceberg adds to a table's (composed into `LakeCompactorTable` by the registry, ../index.ts):
// declared here so that what a user reads on an Iceberg prop lives with the rest of Iceberg's infrastructure, and
// the shared props name no format.
import type { IcebergCatalogSetting } from '../../../functions/core/formats/iceberg/catalogs.js';
import type { RewriteDataFilesInput } from '../../../functions/core/formats/iceberg/rewrite-options.js';

/** What a table's props may say of Apache Iceberg. */
export interface IcebergTableProps {
  /**
   * Iceberg only: the catalog the table's commits go through, the one its other writers use — `{ type: "path" }`
   * (the default: the table root's metadata/ folder), `{ type: "glue", database, table, catalogId?, region? }`
   * (the functions get glue:GetTable/UpdateTable on that table) or `{ type: "rest", uri, namespace, table, auth }`
   * (with SigV4 for `s3tables`, the S3 Tables data-plane actions on that one table, by namespace and name, of the
   * table bucket `warehouse` names — required for S3 Tables; with an `oauth2` token in a secret or SSM parameter,
   * read on that one). See core/formats/iceberg/catalogs.ts.
   */
  readonly catalog?: IcebergCatalogSetting;
  /**
   * Iceberg only: the options of Iceberg's `rewrite_data_files` the table's groups are planned with, by Iceberg's
   * names (`{ "min-input-files": 10, "delete-file-threshold": 3 }`), so a Spark job's options map moves over
   * verbatim; see core/formats/iceberg/rewrite-options.ts and docs/table-formats.md.
   * @default Iceberg's defaults (target from the table's `write.target-file-size-bytes`, else 512 MiB)
   */
  readonly rewriteDataFiles?: RewriteDataFilesInput;
}
