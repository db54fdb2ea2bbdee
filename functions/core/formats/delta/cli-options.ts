// Delta Lake's command-line options (see formats/format-settings.ts): `--delta-log-store` and the options that
// complete it, as plain data the CLI registers (cli/format-options.ts), and the `deltaLogStore` setting they spell,
// checked as the config checks it. Kept with the format so the CLI names no Delta setting: the CLI has no table
// config, the operator names the location's coordination as the deployment's config declares it.
import { UsageError } from '../../errors.js';
import type { FormatCliOption } from '../format-settings.js';
import {
  type DeltaLogStoreSetting,
  deltaLogStoreSchema,
  undeclaredCoordinationMessage,
} from './coordination.js';

/** The name Delta is registered under (format.ts): the options are refused with any other `--format`. */
const DELTA_FORMAT_NAME = 'delta';

/** The options {@link DELTA_CLI_OPTIONS} add, as the CLI parses them. */
export interface DeltaLogStoreFlags {
  readonly deltaLogStore?: 's3-conditional' | 'dynamodb' | 'quiet-window';
  readonly deltaDdbTable?: string;
  readonly deltaDdbRegion?: string;
  readonly deltaTablePathScheme?: 's3' | 's3a';
  readonly deltaQuietWindow?: readonly string[];
  readonly deltaQuietMinutes?: number;
  readonly deltaAcceptUncoordinatedWriters?: boolean;
}

/** `--delta-log-store` and the options that complete it (`--delta-ddb-*`, `--delta-quiet-*`, …), in help order. */
export const DELTA_CLI_OPTIONS: readonly FormatCliOption[] = [
  {
    flags: '--delta-log-store <type>',
    description:
      "how the Delta table's commits are coordinated with its other writers, as the deployment's deltaLogStore declares it; required for an s3:// Delta table (a local folder defaults to s3-conditional): s3-conditional (put-if-absent writers: delta-rs >= 1.0), dynamodb (Spark's S3DynamoDBLogStore), quiet-window (writers with no coordination, stopped during --delta-quiet-window)",
    choices: ['s3-conditional', 'dynamodb', 'quiet-window'],
  },
  {
    flags: '--delta-ddb-table <name>',
    description:
      "with dynamodb: the DynamoDB commit table (Spark's spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName); with s3-conditional: a commit table to check for entries of this table (refused if it holds any)",
  },
  {
    flags: '--delta-ddb-region <region>',
    description:
      "that table's region (Spark's ...ddb.region, us-east-1 when Spark's is unset); required with --delta-ddb-table",
  },
  {
    flags: '--delta-table-path-scheme <scheme>',
    description: 'with --delta-ddb-table: the scheme the other writers address the table with (default s3)',
    choices: ['s3', 's3a'],
  },
  {
    flags: '--delta-quiet-window <window>',
    description:
      'with quiet-window: when every other writer is stopped, UTC, e.g. "02:00-05:00" or "sat,sun 00:00-24:00" (repeatable)',
    repeatable: true,
  },
  {
    flags: '--delta-quiet-minutes <n>',
    description:
      'with quiet-window: minutes the log must show no other commit before this one commits (default 60)',
    parse: (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error('expected a whole number of minutes, 1 or more.');
      return n;
    },
  },
  {
    flags: '--delta-accept-uncoordinated-writers',
    description:
      'with quiet-window: accept that a writer committing inside a window anyway can silently overwrite a commit',
  },
];

/**
 * The `deltaLogStore` setting the options spell, checked as the config checks it. For a Delta table on S3 the
 * options are required (coordination is declared, never assumed); in a local folder, where only other runs can
 * write, no options mean `s3-conditional` as before. Undefined for another format without Delta options.
 * @throws UsageError when the options are missing on S3, contradict each other, or the format is not Delta.
 */
export function deltaLogStoreFromFlags(
  format: string,
  options: DeltaLogStoreFlags,
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
  if (format !== DELTA_FORMAT_NAME) {
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
