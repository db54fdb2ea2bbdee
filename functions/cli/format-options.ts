// The CLI's table settings of a format (today: a Delta table's commit coordination) and the format a command
// commits and settles through. The CLI has no table config: the operator names the location's format with
// --format and, for a Delta table on S3, its coordination as the deployment's config declares it
// (--delta-log-store, required there) — a compact, settle or vacuum that committed any other way would race the
// table's writers.
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { icebergCatalogServices } from '../adapters/formats/iceberg/catalog-services.js';
import { formatServices } from '../adapters/formats/index.js';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import {
  DELTA_CLI_OPTIONS,
  type DeltaLogStoreFlags,
  deltaLogStoreFromFlags,
} from '../core/formats/delta/cli-options.js';
import type { DeltaLogStoreSetting } from '../core/formats/delta/coordination.js';
import type { FormatCliOption } from '../core/formats/format-settings.js';
import type { IcebergCatalogSetting } from '../core/formats/iceberg/catalogs.js';
import type { FormatServices } from '../core/formats/index.js';
import { formatForTable, type TableFormatName } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import type { Clock } from '../ports/clock.js';
import { dynamoDbClientFromEnv, type Env } from '../shared/aws-env.js';
import type { TableLocation } from '../shared/format-services.js';

/** The options `addDeltaLogStoreOptions` adds, as commander parses them (see core/formats/delta/cli-options.ts). */
export type DeltaLogStoreCliOptions = DeltaLogStoreFlags;

/**
 * Registers a format's command-line options (plain data its folder declares, see `FormatCliOption`) on `command`,
 * in order, with commander's own help and validation: choices, repeatable values, a parser whose error is the
 * option's usage error.
 */
export function addFormatCliOptions(command: Command, options: readonly FormatCliOption[]): Command {
  for (const spec of options) {
    const option = new Option(spec.flags, spec.description);
    if (spec.choices !== undefined) option.choices(spec.choices);
    if (spec.defaultValue !== undefined) option.default(spec.defaultValue);
    const parse = spec.parse;
    if (parse !== undefined)
      option.argParser((value: string) => {
        try {
          return parse(value);
        } catch (err) {
          throw new InvalidArgumentError(err instanceof Error ? err.message : String(err));
        }
      });
    else if (spec.repeatable === true)
      option.argParser((value: string, previous: string[] | undefined) => [...(previous ?? []), value]);
    command.addOption(option);
  }
  return command;
}

/** Adds `--delta-log-store` and the options that complete it (`--delta-ddb-*`, `--delta-quiet-*`, …). */
export function addDeltaLogStoreOptions(command: Command): Command {
  return addFormatCliOptions(command, DELTA_CLI_OPTIONS);
}

/**
 * The `deltaLogStore` setting the options spell, checked as the config checks it (the format's own parser,
 * core/formats/delta/cli-options.ts).
 * @throws UsageError when the options are missing on S3, contradict each other, or the format is not Delta.
 */
export function deltaLogStoreSettingOf(
  format: TableFormatName,
  options: DeltaLogStoreCliOptions,
  location: { readonly s3: boolean },
): DeltaLogStoreSetting | undefined {
  return deltaLogStoreFromFlags(format, options, location);
}

/** Whether a CLI location is on S3 (the Delta coordination options are required there). */
export function isS3Location(uri: string): boolean {
  return /^s3a?:\/\//i.test(uri.trim());
}

/**
 * The format a command on `opened` commits and settles through: `format` bound to the settings (a Delta commit
 * coordination, an Iceberg catalog), with the services of {@link cliFormatServices}.
 */
export function commandFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  setting: DeltaLogStoreSetting | undefined,
  io: { readonly env: Env; readonly clock: Clock },
  catalog?: IcebergCatalogSetting,
): TableFormat {
  return formatForTable(
    [
      {
        name: table,
        format,
        ...(setting === undefined ? {} : { deltaLogStore: setting }),
        ...(catalog === undefined ? {} : { catalog }),
      },
    ],
    table,
    cliFormatServices(opened, io),
  );
}

/**
 * The format services of a CLI command on `opened`: Glue/REST catalog clients and DynamoDB clients from the CLI's
 * environment (AWS_ENDPOINT_URL_DYNAMODB, keys; the region a Delta setting names). On S3 the commit entries'
 * table path is the bucket's, as Spark spells it; in a local folder it is the folder's `file://` path (no other
 * engine shares a local folder's entries, only other runs).
 */
export function cliFormatServices(
  opened: OpenedStore,
  io: { readonly env: Env; readonly clock: Clock },
): FormatServices {
  return formatServices(
    {
      dynamodb: (region) =>
        dynamoDbClientFromEnv(
          region === undefined ? io.env : { ...io.env, AWS_REGION: region, AWS_DEFAULT_REGION: region },
        ),
      clock: io.clock,
      iceberg: icebergCatalogServices(io.env),
    },
    tableLocationOf(opened),
  );
}

function tableLocationOf(opened: OpenedStore): TableLocation {
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(opened.uri.trim())?.[1];
  if (bucket !== undefined) return { bucket };
  const root = opened.store instanceof LocalObjectStore ? opened.store.root : resolve(opened.uri);
  return {
    tablePath: (tableRoot) => `file://${resolve(root, tableRoot).replace(/\/+$/, '') || '/'}`,
  };
}
