// What `lake-compactor quarantine` does, loaded by quarantine.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor quarantine <uri>`: lists the input files a rewrite failed on (which later plans leave out)
// and, with --clear, releases one or all of them; reads and writes quarantine records only, never data.

import { DynamoQuarantine } from '../adapters/dynamodb-quarantine.js';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { StoreQuarantine } from '../adapters/store-quarantine.js';
import { InvalidInputError } from '../core/errors.js';
import { printable } from '../core/keys.js';
import type { QuarantinedFile } from '../core/quarantine.js';
import type { Quarantine } from '../ports/quarantine.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { tableNameOf } from './args.js';
import { renderTable } from './table.js';

export interface QuarantineIo {
  readonly out: (text: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface QuarantineOptions {
  /** Only this partition (path relative to the table root, e.g. `date=2024-01-15`). */
  readonly partition?: string;
  /** `true`: release every listed file; a string: release that key. */
  readonly clear?: boolean | string;
  /** The deployed workflow's state table; else env LAKE_COMPACTOR_TABLE; else the CLI's records in the store. */
  readonly stateTable?: string;
  /** Table name the records are kept under. @default the URI's last path segment */
  readonly table?: string;
  readonly json?: boolean;
  /** The work root the store's records are kept in (without a state table). @default `_lake-compactor/` */
  readonly workRoot?: string;
}

export interface QuarantineResult {
  /** Where the records were read: a state table, or the store's `_lake-compactor/quarantine/`. */
  readonly source: string;
  /** What is quarantined after the command (for a clear: what is left). */
  readonly quarantined: readonly QuarantinedFile[];
  /** What --clear released. */
  readonly cleared: readonly QuarantinedFile[];
}

/**
 * The quarantine an operator command means. With a state table (`--state-table`, else env
 * LAKE_COMPACTOR_TABLE) it is the deployed workflow's, on that table; without, it is the one `compact`
 * (the CLI) keeps in the store at `_lake-compactor/quarantine/`. The two are separate because the CLI's
 * runs never touch DynamoDB; each command's output names the one it used.
 */
export function openQuarantine(
  opened: OpenedStore,
  stateTable: string | undefined,
  env: QuarantineIo['env'],
): Quarantine {
  const tableName = stateTable ?? env.LAKE_COMPACTOR_TABLE;
  return tableName
    ? new DynamoQuarantine({ client: dynamoDbClientFromEnv(env), tableName })
    : new StoreQuarantine(opened.store, { workRoot: opened.workRoot });
}

/**
 * Lists (default) or clears. A cleared file is planned again by the next run, which quarantines it anew if
 * it still fails; replacing or removing the file releases it without this command.
 * @throws InvalidInputError when `--clear <key>` names a file that is not quarantined (the message lists
 * what is).
 */
export async function runQuarantine(
  uri: string,
  options: QuarantineOptions,
  io: QuarantineIo,
  quarantine?: Quarantine,
): Promise<QuarantineResult> {
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const source = quarantine ?? openQuarantine(opened, options.stateTable, io.env);
  const table = options.table ?? tableNameOf(uri);
  const partition = options.partition?.replace(/^\/+|\/+$/g, '');
  // One partition's list is strongly consistent; a table's may lag a just-written record (DynamoDB index).
  const before =
    partition === undefined ? await source.listTable(table) : await source.list({ table, partition });
  const cleared: QuarantinedFile[] = [];
  if (options.clear !== undefined && options.clear !== false) {
    const wanted =
      options.clear === true
        ? before
        : before.filter((r) => matchesKey(r.key, options.clear as string, opened));
    if (options.clear !== true && wanted.length === 0) {
      const known = before.map((r) => r.key);
      throw new InvalidInputError(
        `${options.clear} is not quarantined in table ${table}${partition === undefined ? '' : ` partition "${partition}"`} (${source.description}); ${known.length === 0 ? 'nothing is' : `quarantined: ${known.slice(0, 10).join(', ')}${known.length > 10 ? ', …' : ''}`}. Pass a key as the list shows it`,
      );
    }
    for (const record of wanted) {
      cleared.push(...(await source.clear({ table, partition: record.partition }, record.key)));
    }
  }
  const gone = new Set(cleared.map((r) => JSON.stringify([r.partition, r.key])));
  const quarantined = before.filter((r) => !gone.has(JSON.stringify([r.partition, r.key])));
  const result = { source: source.description, quarantined, cleared };
  print(io, result, { table, uri, ...(partition === undefined ? {} : { partition }), options });
  return result;
}

/** The key as listed, or relative to the URI's prefix (an operator may paste either). */
function matchesKey(key: string, given: string, opened: OpenedStore): boolean {
  const trimmed = given.replace(/^\/+/, '');
  return key === trimmed || key === `${opened.prefix}${trimmed}`;
}

function print(
  io: QuarantineIo,
  result: QuarantineResult,
  context: { table: string; uri: string; partition?: string; options: QuarantineOptions },
): void {
  const { table, uri, partition, options } = context;
  if (options.json) {
    io.out(JSON.stringify({ table, ...(partition === undefined ? {} : { partition }), ...result }, null, 2));
    return;
  }
  const where = `table ${table}${partition === undefined ? '' : ` partition "${partition}"`} (${result.source})`;
  if (options.clear !== undefined && options.clear !== false) {
    io.out(
      result.cleared.length === 0
        ? `nothing to clear: no file is quarantined in ${where}`
        : `cleared ${files(result.cleared.length)} from the quarantine of ${where}; the next run plans ${result.cleared.length === 1 ? 'it' : 'them'} again:`,
    );
    for (const r of result.cleared) io.out(`  ${printable(r.key)}`);
    if (result.quarantined.length > 0) io.out(`${files(result.quarantined.length)} still quarantined`);
    return;
  }
  if (result.quarantined.length === 0) {
    io.out(`no file is quarantined in ${where}`);
    return;
  }
  io.out(
    renderTable(
      [
        { header: 'partition', value: (r) => r.partition || '(root)' },
        { header: 'key', value: (r) => r.key },
        { header: 'since', value: (r) => new Date(r.since).toISOString() },
        { header: 'run', value: (r) => r.runId },
        { header: 'error', value: (r) => r.errorName },
        { header: 'reason', value: (r) => r.reason },
      ],
      result.quarantined,
    ),
  );
  const flags = `${partition === undefined ? '' : ` --partition ${partition}`}${options.stateTable === undefined ? '' : ` --state-table ${options.stateTable}`}`;
  io.out(
    `\n${files(result.quarantined.length)} quarantined in ${where}: later runs leave ${result.quarantined.length === 1 ? 'it' : 'them'} out until replaced or removed. Release: lake-compactor quarantine ${uri}${flags} --clear <key> (or --clear for all)`,
  );
}

function files(n: number): string {
  return `${n} file${n === 1 ? '' : 's'}`;
}
