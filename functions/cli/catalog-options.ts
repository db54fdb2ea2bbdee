// The CLI's spelling of an Iceberg table's `catalog` setting (core/formats/iceberg/catalogs.ts), for commands that
// read or commit to an Iceberg table: `--catalog glue --glue-database D --glue-table T`, `--catalog rest --rest-uri
// U --rest-namespace N --rest-table T [--rest-auth sigv4 --rest-signing-name s3tables --rest-region R]`, or
// `--catalog path --path-metadata-naming uuid`. The flags build the same object a table config holds and are
// checked by the same schema, so both refuse the same things.
import type { Command } from 'commander';
import {
  type CatalogFlags,
  catalogFromFlags,
  ICEBERG_CATALOG_CLI_OPTIONS,
} from '../core/formats/iceberg/cli-options.js';
import { addFormatCliOptions } from './format-options.js';

export { type CatalogFlags, catalogFromFlags };

/** Adds the catalog flags to `command` (declared with the format: core/formats/iceberg/cli-options.ts). */
export function addCatalogOptions(command: Command): Command {
  return addFormatCliOptions(command, ICEBERG_CATALOG_CLI_OPTIONS);
}
