// The CLI's table settings of a format (today: a Delta table's commit coordination) and the format a command
// commits and settles through. The CLI has no table config: the operator names the location's format with
// --format and, for a Delta table on S3, its coordination as the deployment's config declares it
// (--delta-log-store, required there) — a compact, settle or vacuum that committed any other way would race the
// table's writers.
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import { UsageError } from '../core/errors.js';
import {
  type DeltaLogStoreSetting,
  deltaLogStoreSchema,
  undeclaredCoordinationMessage,
} from '../core/formats/delta/coordination.js';
import type { IcebergCatalogSetting } from '../core/formats/iceberg/catalogs.js';
import { formatForTable, misplacedSettingMessage, type TableFormatName } from '../core/formats/index.js';
import type { FormatServices, TableFormat } from '../core/formats/table-format.js';
import type { Clock } from '../ports/clock.js';
import { dynamoDbClientFromEnv, type Env } from '../shared/aws-env.js';
import { formatServices, type TableLocation } from '../shared/format-services.js';
import { icebergCatalogServices } from '../shared/iceberg-catalog-services.js';

/** The options `addDeltaLogStoreOptions` adds, as commander parses them. */
export interface DeltaLogStoreCliOptions {
  readonly deltaLogStore?: 's3-conditional' | 'dynamodb' | 'quiet-window';
  readonly deltaDdbTable?: string;
  readonly deltaDdbRegion?: string;
  readonly deltaTablePathScheme?: 's3' | 's3a';
  readonly deltaQuietWindow?: readonly string[];
  readonly deltaQuietMinutes?: number;
  readonly deltaAcceptUncoordinatedWriters?: boolean;
}

/** Adds `--delta-log-store` and the options that complete it (`--delta-ddb-*`, `--delta-quiet-*`, …). */
export function addDeltaLogStoreOptions(command: Command): Command {
  return command
    .addOption(
      new Option(
        '--delta-log-store <type>',
        "how the Delta table's commits are coordinated with its other writers, as the deployment's deltaLogStore declares it; required for an s3:// Delta table (a local folder defaults to s3-conditional): s3-conditional (put-if-absent writers: delta-rs >= 1.0), dynamodb (Spark's S3DynamoDBLogStore), quiet-window (writers with no coordination, stopped during --delta-quiet-window)",
      ).choices(['s3-conditional', 'dynamodb', 'quiet-window']),
    )
    .option(
      '--delta-ddb-table <name>',
      "with dynamodb: the DynamoDB commit table (Spark's spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName); with s3-conditional: a commit table to check for entries of this table (refused if it holds any)",
    )
    .option(
      '--delta-ddb-region <region>',
      "that table's region (Spark's ...ddb.region, us-east-1 when Spark's is unset); required with --delta-ddb-table",
    )
    .addOption(
      new Option(
        '--delta-table-path-scheme <scheme>',
        'with --delta-ddb-table: the scheme the other writers address the table with (default s3)',
      ).choices(['s3', 's3a']),
    )
    .option(
      '--delta-quiet-window <window>',
      'with quiet-window: when every other writer is stopped, UTC, e.g. "02:00-05:00" or "sat,sun 00:00-24:00" (repeatable)',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .option(
      '--delta-quiet-minutes <n>',
      'with quiet-window: minutes the log must show no other commit before this one commits (default 60)',
      (value: string) => {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 1)
          throw new InvalidArgumentError('expected a whole number of minutes, 1 or more.');
        return n;
      },
    )
    .option(
      '--delta-accept-uncoordinated-writers',
      'with quiet-window: accept that a writer committing inside a window anyway can silently overwrite a commit',
    );
}

/**
 * The `deltaLogStore` setting the options spell, checked as the config checks it. For a Delta table on S3 the
 * options are required (coordination is declared, never assumed); in a local folder, where only other runs can
 * write, no options mean `s3-conditional` as before. Undefined for another format without Delta options.
 * @throws UsageError when the options are missing on S3, contradict each other, or the format is not Delta.
 */
export function deltaLogStoreSettingOf(
  format: TableFormatName,
  options: DeltaLogStoreCliOptions,
  location: { readonly s3: boolean },
): DeltaLogStoreSetting | undefined {
  const completing = [
    ['--delta-ddb-table', options.deltaDdbTable],
    ['--delta-ddb-region', options.deltaDdbRegion],
    ['--delta-table-path-scheme', options.deltaTablePathScheme],
    ['--delta-quiet-window', options.deltaQuietWindow],
    ['--delta-quiet-minutes', options.deltaQuietMinutes],
    ['--delta-accept-uncoordinated-writers', options.deltaAcceptUncoordinatedWriters],
  ].filter(([, value]) => value !== undefined);
  const given = options.deltaLogStore !== undefined || completing.length > 0;
  if (misplacedSettingMessage(format, 'deltaLogStore') !== undefined) {
    if (!given) return undefined;
    throw new UsageError(
      `--delta-log-store and the --delta-ddb-*/--delta-quiet-* options are settings of Delta Lake tables (--format delta), and this command's format is "${format}": drop them, or pass --format delta if the location is a Delta table`,
    );
  }
  const type = options.deltaLogStore ?? (given || location.s3 ? undefined : 's3-conditional');
  if (type === undefined) {
    throw new UsageError(
      undeclaredCoordinationMessage(
        given ? 'These options give no --delta-log-store: the Delta table' : 'This s3:// Delta table',
        "--delta-log-store, as the table's deltaLogStore in the deployment's config",
      ),
    );
  }
  const only = (allowed: readonly string[]) => {
    const wrong = completing.map(([name]) => name as string).filter((name) => !allowed.includes(name));
    if (wrong.length > 0) {
      throw new UsageError(`${wrong.join(', ')} do not apply with --delta-log-store ${type}`);
    }
  };
  const ddb = ['--delta-ddb-table', '--delta-ddb-region', '--delta-table-path-scheme'];
  const table = () => ({
    tableName: options.deltaDdbTable,
    region: options.deltaDdbRegion,
    ...(options.deltaTablePathScheme === undefined ? {} : { tablePathScheme: options.deltaTablePathScheme }),
  });
  let input: unknown;
  if (type === 'dynamodb') {
    only(ddb);
    if (options.deltaDdbTable === undefined || options.deltaDdbRegion === undefined) {
      throw new UsageError(
        "--delta-log-store dynamodb needs --delta-ddb-table <name> and --delta-ddb-region <region>: the DynamoDB table the table's other writers commit through (their spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName and .ddb.region; Spark's defaults are delta_log and us-east-1)",
      );
    }
    input = { type, ...table() };
  } else if (type === 's3-conditional') {
    only(ddb);
    if (options.deltaDdbTable === undefined && completing.length > 0) {
      throw new UsageError(
        '--delta-ddb-region and --delta-table-path-scheme only apply with --delta-ddb-table',
      );
    }
    input = options.deltaDdbTable === undefined ? { type } : { type, checkDynamoDbTable: table() };
  } else {
    only(['--delta-quiet-window', '--delta-quiet-minutes', '--delta-accept-uncoordinated-writers']);
    input = {
      type,
      windows: options.deltaQuietWindow ?? [],
      ...(options.deltaQuietMinutes === undefined ? {} : { quietMinutes: options.deltaQuietMinutes }),
      ...(options.deltaAcceptUncoordinatedWriters === true ? { acceptUncoordinatedWriters: true } : {}),
    };
  }
  const parsed = deltaLogStoreSchema.safeParse(input);
  if (!parsed.success) {
    throw new UsageError(
      'Invalid Delta coordination options',
      parsed.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`),
    );
  }
  return parsed.data;
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
