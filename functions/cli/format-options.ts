// The CLI's table settings of a format (today: a Delta table's commit coordination) and the format a command
// commits and settles through. The CLI has no table config: the operator names the location's format with
// --format and, for a Delta table whose writers coordinate through DynamoDB, the same DynamoDB table the
// deployment's config names — a compact or settle that committed any other way would race the table's writers.
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import { UsageError } from '../core/errors.js';
import type { DeltaLogStoreSetting } from '../core/formats/delta/coordination.js';
import type { IcebergCatalogSetting } from '../core/formats/iceberg/catalogs.js';
import {
  FORMAT_SETTING_SCHEMAS,
  formatForTable,
  misplacedSettingMessage,
  type TableFormatName,
} from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import type { Clock } from '../ports/clock.js';
import { dynamoDbClientFromEnv, type Env } from '../shared/aws-env.js';
import { formatServices, type TableLocation } from '../shared/format-services.js';
import { icebergCatalogServices } from '../shared/iceberg-catalog-services.js';

/** The options `addDeltaLogStoreOptions` adds, as commander parses them. */
export interface DeltaLogStoreCliOptions {
  readonly deltaLogStore?: 's3-conditional' | 'dynamodb';
  readonly deltaDdbTable?: string;
  readonly deltaDdbRegion?: string;
  readonly deltaTablePathScheme?: 's3' | 's3a';
}

/** Adds `--delta-log-store`, `--delta-ddb-table`, `--delta-ddb-region` and `--delta-table-path-scheme`. */
export function addDeltaLogStoreOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--delta-log-store <type>',
        "how the Delta table's commits are coordinated with its other writers (default s3-conditional); use the table's deltaLogStore of the deployment's config",
      ).choices(['s3-conditional', 'dynamodb']),
    )
    .option(
      '--delta-ddb-table <name>',
      "with --delta-log-store dynamodb: the DynamoDB commit table (Spark's spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName)",
    )
    .option(
      '--delta-ddb-region <region>',
      "with --delta-log-store dynamodb: that table's region (Spark's ...ddb.region; default AWS_REGION)",
    )
    .addOption(
      new Option(
        '--delta-table-path-scheme <scheme>',
        'with --delta-log-store dynamodb: the scheme the other writers address the table with (default s3)',
      ).choices(['s3', 's3a']),
    );
}

/**
 * The `deltaLogStore` setting the options spell, checked as the config checks it; undefined when none is given.
 * @throws UsageError when the options contradict each other or the format is not Delta.
 */
export function deltaLogStoreSettingOf(
  format: TableFormatName,
  options: DeltaLogStoreCliOptions,
): DeltaLogStoreSetting | undefined {
  const dynamoOnly = [
    ['--delta-ddb-table', options.deltaDdbTable],
    ['--delta-ddb-region', options.deltaDdbRegion],
    ['--delta-table-path-scheme', options.deltaTablePathScheme],
  ].filter(([, value]) => value !== undefined);
  if (options.deltaLogStore === undefined && dynamoOnly.length === 0) return undefined;
  if (misplacedSettingMessage(format, 'deltaLogStore') !== undefined) {
    throw new UsageError(
      `--delta-log-store and --delta-ddb-* are settings of Delta Lake tables (--format delta), and this command's format is "${format}": drop them, or pass --format delta if the location is a Delta table`,
    );
  }
  if (options.deltaLogStore !== 'dynamodb' && dynamoOnly.length > 0) {
    throw new UsageError(
      `${dynamoOnly.map(([name]) => name).join(', ')} only apply with --delta-log-store dynamodb`,
    );
  }
  if (options.deltaLogStore === 'dynamodb' && options.deltaDdbTable === undefined) {
    throw new UsageError(
      "--delta-log-store dynamodb needs --delta-ddb-table <name>: the DynamoDB table the table's other writers commit through",
    );
  }
  const parsed = FORMAT_SETTING_SCHEMAS.deltaLogStore.safeParse(
    options.deltaLogStore === 'dynamodb'
      ? {
          type: 'dynamodb',
          tableName: options.deltaDdbTable,
          ...(options.deltaDdbRegion === undefined ? {} : { region: options.deltaDdbRegion }),
          ...(options.deltaTablePathScheme === undefined
            ? {}
            : { tablePathScheme: options.deltaTablePathScheme }),
        }
      : { type: 's3-conditional' },
  );
  if (!parsed.success) {
    throw new UsageError(
      'Invalid Delta coordination options',
      parsed.error.issues.map((i) => i.message),
    );
  }
  return parsed.data;
}

/**
 * The format a command on `opened` commits and settles through: `format` bound to the settings (a Delta commit
 * coordination, an Iceberg catalog), with Glue/REST catalog clients and a DynamoDB
 * client from the CLI's environment (AWS_ENDPOINT_URL_DYNAMODB, AWS_REGION, keys; the setting's region wins).
 * On S3 the commit entries' table path is the bucket's, as Spark spells it; in a local folder it is the folder's
 * `file://` path (no other engine shares a local folder's entries, only other runs).
 */
export function commandFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  setting: DeltaLogStoreSetting | undefined,
  io: { readonly env: Env; readonly clock: Clock },
  catalog?: IcebergCatalogSetting,
): TableFormat {
  const location = tableLocationOf(opened);
  const services = formatServices(
    {
      dynamodb: (region) =>
        dynamoDbClientFromEnv(
          region === undefined ? io.env : { ...io.env, AWS_REGION: region, AWS_DEFAULT_REGION: region },
        ),
      clock: io.clock,
      iceberg: icebergCatalogServices(io.env),
    },
    location,
  );
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
    services,
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
