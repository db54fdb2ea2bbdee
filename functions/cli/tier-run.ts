// What `lake-compactor tier` does, loaded by tier.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor tier`: the scheduled tiering's own core, run to completion on one S3 table location; a dry
// run moves nothing, and a real run prints every move before it makes any (in-place copies, ETag-conditioned).
//
// Its options map one-to-one onto the tiering function's input (events/tiering-*.json) and are validated by
// the same schema before any object is listed. Invalid usage exits 2; a run that could not move all exits 1.
// A table whose log or metadata owns its files is not tiered (its `--format` is refused, and so is such a table met
// in the location): see core/maintenance/tiering.ts for why a copy in place is not harmless there.

import { openStore } from '../adapters/open-store.js';
import { UnsupportedTableFormatError, UsageError } from '../core/errors.js';
import { refuseForeignAmong, tieringUnsupportedAdvice } from '../core/formats/foreign-tables.js';
import type { TableFormatName } from '../core/formats/index.js';
import { printable } from '../core/keys.js';
import {
  DEFAULT_TIERING_RULES,
  executeTiering,
  parseTieringRequest,
  planTiering,
  type TieringMove,
  type TieringPlan,
  type TieringReport,
  type TieringRequest,
  tieringUnsupportedFor,
} from '../core/maintenance/tiering.js';
import type { PartitionDateFormat } from '../core/policy.js';
import { formatBytes } from '../core/stats.js';
import { parseTableConfigs, type TableConfig } from '../core/table-config.js';
import { plural } from '../core/words.js';
import type { ObjectStore } from '../ports/object-store.js';
import {
  asUsage,
  bucketOf,
  confirmerFor,
  defaultName,
  isS3,
  MaintenanceIncompleteError,
  type MaintenanceIo,
  type MaintenanceProgress,
  OperationCancelledError,
  openedOf,
  PRINTED_ROWS,
} from './maintenance-shared.js';
import { renderTable } from './table.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';

export interface TierCliOptions {
  /** List the moves; make none. */
  readonly dryRun?: boolean;
  /** Partition column with the date (for `year/month/day`: the three columns). @default 'date' */
  readonly dateColumn?: string;
  /** @default 'yyyy-MM-dd' */
  readonly dateFormat?: PartitionDateFormat;
  /** `<afterDays>:<STORAGE_CLASS>` each. @default 30:STANDARD_IA, 90:GLACIER_IR */
  readonly rule?: readonly string[];
  /** Objects smaller than this stay out of the 128 KB-minimum classes. @default 128 */
  readonly minObjectKb?: number;
  readonly table?: string;
  readonly yes?: boolean;
  readonly json?: boolean;
  /** The location's table format; only `parquet` can be tiered. @default 'parquet' */
  readonly format?: TableFormatName;
}

export interface TierJob {
  readonly uri: string;
  readonly request: TieringRequest;
  readonly table: TableConfig;
  readonly store: ObjectStore;
}

export interface TierCliReport extends TieringReport {
  readonly uri: string;
  readonly rules: TieringRequest['rules'];
}

/**
 * Validates the options into a job, before anything is listed.
 * @throws UsageError for a `--format` whose tables are never tiered, a local folder (it has no storage classes), invalid rules or date
 * settings.
 */
export function prepareTier(uri: string, options: TierCliOptions, io: Pick<MaintenanceIo, 'env'>): TierJob {
  const unsupported = options.format === undefined ? undefined : tieringUnsupportedFor(options.format);
  if (unsupported !== undefined) {
    throw new UsageError(`tier --format ${options.format}: ${unsupported}. Nothing was listed or changed`);
  }
  if (!isS3(uri)) {
    throw new UsageError(
      `tier needs an s3://bucket/prefix location: storage classes exist only in S3, a local folder (${uri}) has none. Tier the table where it lives in S3`,
    );
  }
  const rules =
    options.rule === undefined || options.rule.length === 0
      ? [...DEFAULT_TIERING_RULES]
      : options.rule.map(parseRule);
  const request = asUsage(() =>
    parseTieringRequest({
      dryRun: options.dryRun === true,
      rules,
      ...(options.minObjectKb === undefined
        ? {}
        : { minObjectBytes: Math.round(options.minObjectKb * 1024) }),
    }),
  );
  const opened = openStore(uri, { env: io.env });
  const format = options.dateFormat ?? 'yyyy-MM-dd';
  const dateColumn = options.dateColumn ?? (format === 'year/month/day' ? 'year,month,day' : 'date');
  const [table] = asUsage(() =>
    parseTableConfigs([
      {
        name: options.table ?? defaultName(uri),
        bucket: bucketOf(uri),
        prefix: opened.prefix,
        partitionColumns: dateColumn.split(',').map((c) => c.trim()),
        dateColumn,
        dateFormat: format,
      },
    ]),
  );
  return { uri, request, table: table as TableConfig, store: opened.store };
}

/**
 * Runs `tier` on `uri`: lists the table once (all cursor pages), prints the moves, asks (or requires
 * `--yes`) for a real run, copies each file onto itself with the new class (conditioned on its ETag).
 * @throws UsageError (before listing), OperationCancelledError, MaintenanceIncompleteError;
 * UnsupportedTableFormatError, before anything is moved, when the location is, lies in or holds a table of
 * another format.
 */
export async function runTier(
  uri: string,
  options: TierCliOptions,
  io: MaintenanceIo,
  progress?: MaintenanceProgress,
): Promise<TierCliReport> {
  const job = prepareTier(uri, options, io);
  const confirm = confirmerFor(io, options, 'tier');
  await tierRefusal(() => refuseEnclosingForeignTable(openedOf(job), { includeLocation: true }));
  const text = !options.json;
  const deps = { tables: [job.table], storeFor: () => job.store, clock: io.clock };
  if (text) {
    const rules = (job.request.rules ?? []).map((r) => `after ${r.afterDays} d → ${r.storageClass}`);
    io.out(
      `tier ${uri}: ${job.request.dryRun ? 'DRY RUN, nothing will be moved' : 'REAL RUN, objects will be COPIED to new storage classes'}; rules: ${rules.join(', ')}; partition date: ${job.table.dateColumn} (${job.table.dateFormat})`,
    );
  }
  const moves: TieringMove[] = [];
  const kept: Record<string, number> = {};
  const foreignTables: NonNullable<TieringPlan['foreignTables']>[number][] = [];
  let skippedTables: TieringPlan['skippedTables'] = [];
  let examined = 0;
  let cursor: string | undefined;
  do {
    const page = await planTiering(deps, cursor === undefined ? job.request : { ...job.request, cursor });
    moves.push(...page.moves);
    for (const f of page.foreignTables ?? [])
      if (!foreignTables.some((seen) => seen.root === f.root)) foreignTables.push(f);
    for (const [reason, n] of Object.entries(page.kept)) kept[reason] = (kept[reason] ?? 0) + n;
    skippedTables = page.skippedTables;
    examined += page.examined;
    cursor = page.cursor;
    if (text) io.out(`  listed ${plural(examined, 'object')}, ${moves.length} to move so far`);
  } while (cursor !== undefined);
  // Another format's table somewhere below the location: refuse the whole location, as compact does.
  await tierRefusal(async () => refuseForeignAmong(job.store, openedOf(job).prefix, foreignTables));
  const plan: TieringPlan = { dryRun: job.request.dryRun, moves, kept, skippedTables, examined };
  if (text) printTierPlan(io, plan);
  progress?.listed(moves.length);
  if (!plan.dryRun && moves.length > 0 && confirm !== undefined) {
    const total = moves.reduce((n, m) => n + m.size, 0);
    if (
      !(await confirm(
        `Move ${moves.length === 1 ? 'this object' : `these ${moves.length} objects`} (${formatBytes(total)})?`,
      ))
    ) {
      throw new OperationCancelledError('Tiering cancelled: nothing was moved');
    }
  }
  const store = progress?.counting(job.store) ?? job.store;
  const report = await executeTiering({ storeFor: () => store, tables: [job.table] }, plan, {
    listLimit: Number.MAX_SAFE_INTEGER,
  });
  const result: TierCliReport = { uri, rules: job.request.rules, ...report };
  if (options.json) io.out(JSON.stringify(result, null, 2));
  else printTierOutcome(io, result);
  if (report.failed.length > 0) {
    throw new MaintenanceIncompleteError(
      `${plural(report.failed.length, 'object')} could not be moved (listed above); re-run tier to retry them`,
    );
  }
  return result;
}

/**
 * Runs a refusal check, saying what `tier` can offer about another format's table: configuring it as one (the advice the
 * refusal gives elsewhere) would not make it tierable. A refusal without tiering advice (its format's own) is kept as it is.
 */
async function tierRefusal(check: () => Promise<void>): Promise<void> {
  try {
    await check();
  } catch (err) {
    if (!(err instanceof UnsupportedTableFormatError)) throw err;
    // A format whose refusal already says it is not tiered has no advice to replace it with.
    const advice = tieringUnsupportedAdvice(err.format);
    if (advice === undefined) throw err;
    throw new UnsupportedTableFormatError(err.format, err.root, err.evidenceKey, err.location, advice);
  }
}

function printTierPlan(io: MaintenanceIo, plan: TieringPlan): void {
  if (plan.moves.length > 0) {
    io.out('');
    io.out(
      renderTable(
        [
          { header: 'partition', value: (m: TieringMove) => m.partition || '(root)' },
          { header: 'key', value: (m) => m.key },
          { header: 'size', value: (m) => formatBytes(m.size), align: 'right' },
          { header: 'from', value: (m) => m.from },
          { header: 'to', value: (m) => m.to },
          { header: 'reason', value: (m) => m.reason },
        ],
        plan.moves.slice(0, PRINTED_ROWS),
      ),
    );
    if (plan.moves.length > PRINTED_ROWS) {
      io.out(`… and ${plan.moves.length - PRINTED_ROWS} more (--json lists every one)`);
    }
  }
  const byClass = new Map<string, { count: number; bytes: number }>();
  for (const m of plan.moves) {
    const t = byClass.get(m.to) ?? { count: 0, bytes: 0 };
    t.count++;
    t.bytes += m.size;
    byClass.set(m.to, t);
  }
  const total = plan.moves.reduce((n, m) => n + m.size, 0);
  const parts = [...byClass].map(([to, t]) => `${t.count} → ${to} (${formatBytes(t.bytes)})`);
  io.out(
    `\n${plan.dryRun ? 'would move' : 'will move'}: ${plural(plan.moves.length, 'object')}, ${formatBytes(total)}${parts.length > 0 ? ` — ${parts.join(', ')}` : ''}; examined ${plan.examined}`,
  );
  const kept = Object.entries(plan.kept).sort((a, b) => b[1] - a[1]);
  if (kept.length > 0) {
    io.out('left where they are:');
    for (const [reason, n] of kept.slice(0, 10)) io.out(`  ${n} × ${printable(reason)}`);
  }
  for (const s of plan.skippedTables) io.out(`skipped ${s.table}: ${printable(s.reason)}`);
}

function printTierOutcome(io: MaintenanceIo, report: TierCliReport): void {
  if (report.dryRun) {
    io.out(
      report.moves.length === 0
        ? '\ndry run: nothing is due; nothing was changed'
        : '\ndry run: nothing was changed; run again without --dry-run to move the objects above',
    );
    return;
  }
  const count = Object.values(report.moved).reduce((n, t) => n + t.count, 0);
  io.out(
    `\nmoved ${plural(count, 'object')}; ${report.changed.length} changed since listing (left alone); failed ${report.failed.length}`,
  );
  for (const key of report.changed)
    io.out(`  changed ${printable(key)}: replaced since it was listed, left alone`);
  for (const f of report.failed) io.out(`  FAILED ${printable(f.key)}: ${printable(f.message)}`);
}

/** `30:STANDARD_IA` → a rule (the schema then checks the class and the order). */
function parseRule(value: string): { afterDays: number; storageClass: string } {
  const match = /^\s*(\d+)\s*:\s*([A-Za-z_]+)\s*$/.exec(value);
  if (!match) {
    throw new UsageError(
      `--rule "${value}" is not <afterDays>:<STORAGE_CLASS>, e.g. --rule 30:STANDARD_IA --rule 90:GLACIER_IR`,
    );
  }
  return { afterDays: Number(match[1]), storageClass: (match[2] as string).toUpperCase() };
}
