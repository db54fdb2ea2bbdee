// Apache Iceberg's own maintenance behind the TableFormat port (`maintenance`): expire_snapshots, then
// remove_orphan_files (expire.ts, orphans.ts), as the deployment's vacuum runs them on a table configured with
// `format: "iceberg"`.
//
// Why it is the format's: only the table's metadata says which files are live, and only its catalog (the table's
// `catalog` setting: the path catalog, Glue or a REST catalog, whose clients the entry point hands in) says which
// metadata is current. Planning runs both as dry runs; executing runs them for real with the planning instant as
// their clock — expire commits new metadata through the catalog before it deletes anything, and orphans read the
// live metadata through it and re-check against the newest before deleting. A table whose catalog the entry point
// has no client for is that table's error, never maintained through the path catalog instead.
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { printable } from '../../keys.js';
import { ICEBERG_TIERING_UNSUPPORTED } from '../foreign-tables.js';
import type {
  MaintainedTable,
  MaintenanceCandidate,
  MaintenanceCli,
  MaintenanceOutcomeEntry,
  MaintenancePlanEntry,
  MaintenanceRequest,
  MaintenanceTablePlan,
  TableMaintenance,
} from '../table-format.js';
import type { IcebergCatalog } from './catalog.js';
import {
  describeSetting,
  type IcebergCatalogServices,
  type IcebergCatalogSetting,
  icebergCatalogFor,
} from './catalogs.js';
import {
  type ExpireSnapshotsReport,
  expireSnapshots,
  type IcebergFileCandidate,
  MAX_SNAPSHOT_AGE_PROPERTY,
} from './expire.js';
import {
  MIN_ORPHAN_GRACE_HOURS,
  type OrphanCandidate,
  type RemoveOrphanFilesReport,
  removeOrphanFiles,
} from './orphans.js';
import type { IcebergTableSettings } from './settings.js';

/** The catalog setting of a table of this format: the config parsed it with this format's own schema. */
function settingsOf(table: MaintainedTable): IcebergTableSettings {
  return table as MaintainedTable & IcebergTableSettings;
}

/** What an Iceberg table's maintenance did (or, as planned, would do), without the candidate lists. */
export interface IcebergMaintenanceSummary {
  readonly expire: Omit<ExpireSnapshotsReport, 'candidates'>;
  readonly orphans: Omit<RemoveOrphanFilesReport, 'candidates'>;
}

/** What the real run of one Iceberg table's maintenance needs to judge as its dry runs did. */
export interface IcebergMaintenanceTablePlan extends MaintenanceTablePlan {
  readonly olderThanHours?: number;
  readonly retainLast?: number;
  readonly orphanGraceHours?: number;
  /** The orphan grace-period check: off only with `allowRetentionBelowMinimum`. */
  readonly graceCheck: boolean;
  /** The catalog the table is read and committed through as configured; absent: the path catalog's defaults. */
  readonly catalog?: IcebergCatalogSetting;
}

/** One Iceberg table's maintenance as planned: the dry runs taken, and what the real run needs to judge the same way. */
export type IcebergTableVacuumPlan = MaintenancePlanEntry<
  IcebergMaintenanceTablePlan,
  IcebergMaintenanceSummary
>;

/** One Iceberg table's maintenance as carried out (a dry run: as planned). */
export type IcebergTableVacuumOutcome = MaintenanceOutcomeEntry<IcebergMaintenanceSummary>;

/** The vacuum input's Iceberg options (see {@link icebergMaintenance}). */
const requestOptions = {
  /**
   * Tables with `format: "iceberg"`: expire_snapshots' `older_than`, as an age in hours. Overrides each table's
   * `history.expire.max-snapshot-age-ms` (five days when unset), which is used otherwise.
   */
  icebergOlderThanHours: z.number().min(0).optional(),
  /** Tables with `format: "iceberg"`: expire_snapshots' `retain_last`; the table's min-snapshots-to-keep (1) otherwise. */
  icebergRetainLast: z.number().int().min(1).optional(),
  /**
   * Tables with `format: "iceberg"`: remove_orphan_files' `older_than` (the grace period an untracked file must be
   * older than), in hours; 72 when omitted, and refused below that without `allowRetentionBelowMinimum`.
   */
  icebergOrphanGraceHours: z.number().min(0).optional(),
};

/** `lake-compactor vacuum`'s Iceberg options (see {@link icebergVacuumCli}), as commander parses them. */
export interface IcebergVacuumFlags {
  /** expire_snapshots' older_than, in hours; the table's property or 5 days. */
  readonly olderThanHours?: number;
  /** expire_snapshots' retain_last; the table's min-snapshots-to-keep, else 1. */
  readonly retainLast?: number;
  /** remove_orphan_files' older_than, the grace period, in hours; default and minimum 72. */
  readonly orphanOlderThanHours?: number;
}

/** The name Iceberg is registered under (format.ts): its vacuum options are refused with any other `--format`. */
const ICEBERG_FORMAT_NAME = 'iceberg';

/** A number of hours, 0 or more (an age of 0 keeps only what retain-last and refs keep). */
function nonNegativeHours(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0)
    throw new Error('expected a number of hours, 0 or more.');
  return n;
}

/** A whole number, 1 or more. */
function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new Error('expected a positive integer.');
  return n;
}

/**
 * `lake-compactor vacuum --format iceberg`: Spark's options of expire_snapshots and remove_orphan_files as flags,
 * mapped one-to-one onto {@link requestOptions}, with the grace period's minimum said in the CLI's words.
 */
const icebergVacuumCli = {
  options: [
    {
      flags: '--older-than-hours <h>',
      description: `--format iceberg: expire snapshots committed more than <h> hours ago (Spark's expire_snapshots older_than; default: the table's ${MAX_SNAPSHOT_AGE_PROPERTY}, else 5 days)`,
      parse: nonNegativeHours,
    },
    {
      flags: '--retain-last <n>',
      description:
        "--format iceberg: keep at least the last <n> snapshots of each branch whatever their age (Spark's retain_last; default: the table's history.expire.min-snapshots-to-keep, else 1)",
      parse: positiveInteger,
    },
    {
      flags: '--orphan-older-than-hours <h>',
      description: `--format iceberg: remove unreferenced files only once older than <h> hours (Spark's remove_orphan_files older_than; default and minimum ${MIN_ORPHAN_GRACE_HOURS} unless --allow-retention-below-minimum)`,
      parse: nonNegativeHours,
    },
  ],
  help: `With --format iceberg, <uri> is an Iceberg table's root: expire_snapshots removes snapshots older than
--older-than-hours (never the current one, the last --retain-last of a branch, or a tag's), commits the new
metadata, then deletes the files only expired snapshots referenced; remove_orphan_files then deletes files no
metadata references that are older than --orphan-older-than-hours (a writer's files exist before its commit).
A table registered in Glue or a REST catalog is read and committed through it: --catalog glue|rest with the
flags compact takes (a commit beside the catalog would be one its readers never see).`,
  refusal(flags: IcebergVacuumFlags, command): string | undefined {
    const given = (
      [
        ['--older-than-hours', flags.olderThanHours],
        ['--retain-last', flags.retainLast],
        ['--orphan-older-than-hours', flags.orphanOlderThanHours],
      ] as const
    ).filter(([, v]) => v !== undefined);
    if (command.format !== ICEBERG_FORMAT_NAME && given.length > 0)
      return `${given.map(([name]) => name).join(', ')} apply to Iceberg tables only (expire_snapshots and remove_orphan_files): add --format iceberg, or drop them`;
    const grace = flags.orphanOlderThanHours;
    if (grace !== undefined && grace < MIN_ORPHAN_GRACE_HOURS && !command.allowRetentionBelowMinimum)
      return `--orphan-older-than-hours ${grace} is below the minimum of ${MIN_ORPHAN_GRACE_HOURS} h (3 days): a writer's files exist before its commit references them, and a shorter grace period can delete the output of a writer still running. Use ${MIN_ORPHAN_GRACE_HOURS} or more, or add --allow-retention-below-minimum if no writer of this table takes that long`;
    return undefined;
  },
  requestOf: (flags: IcebergVacuumFlags) => ({
    ...(flags.olderThanHours === undefined ? {} : { icebergOlderThanHours: flags.olderThanHours }),
    ...(flags.retainLast === undefined ? {} : { icebergRetainLast: flags.retainLast }),
    ...(flags.orphanOlderThanHours === undefined
      ? {}
      : { icebergOrphanGraceHours: flags.orphanOlderThanHours }),
  }),
} as const satisfies MaintenanceCli<IcebergVacuumFlags>;

/** A number option of the request, as validated by {@link requestOptions}. */
function numberOf(request: MaintenanceRequest, name: keyof typeof requestOptions): number | undefined {
  const value = request[name];
  return typeof value === 'number' ? value : undefined;
}

/** expire_snapshots' options for a planned table (without `dryRun`). */
function expireOptionsOf(plan: IcebergMaintenanceTablePlan): {
  now: number;
  olderThanHours?: number;
  retainLast?: number;
} {
  return {
    now: plan.now,
    ...(plan.olderThanHours === undefined ? {} : { olderThanHours: plan.olderThanHours }),
    ...(plan.retainLast === undefined ? {} : { retainLast: plan.retainLast }),
  };
}

/** remove_orphan_files' options for a planned table (without `dryRun`). */
function orphanOptionsOf(plan: IcebergMaintenanceTablePlan): {
  now: number;
  olderThanHours?: number;
  graceCheck: boolean;
} {
  return {
    now: plan.now,
    graceCheck: plan.graceCheck,
    ...(plan.orphanGraceHours === undefined ? {} : { olderThanHours: plan.orphanGraceHours }),
  };
}

/** An expire_snapshots or remove_orphan_files candidate as one of the vacuum's own. */
function candidateOf(
  c: IcebergFileCandidate | OrphanCandidate,
  bucket: string,
  table: string,
): MaintenanceCandidate {
  const expired = 'kind' in c;
  return {
    kind: expired ? 'iceberg-expired' : 'iceberg-orphan',
    bucket,
    key: c.key,
    size: c.size,
    reason: expired ? `${c.kind}: ${c.reason}` : c.reason,
    table,
  };
}

/** The catalog the plan reads through (the real run must swap the same pointer). */
function catalogOf(
  plan: IcebergMaintenanceTablePlan,
  services: IcebergCatalogServices,
  store: ObjectStore,
): IcebergCatalog {
  return icebergCatalogFor(plan.catalog, services, store);
}

/**
 * expire_snapshots and remove_orphan_files as the deployment's vacuum runs them: not paged (both need the whole
 * table), so a table's maintenance runs whole once started, and what it listed counts against the call's budget.
 */
export const icebergMaintenance = {
  reportKey: 'icebergTables',
  candidateKinds: ['iceberg-expired', 'iceberg-orphan'],
  requestOptions,
  requestRefusal(request: MaintenanceRequest): string | undefined {
    const grace = numberOf(request, 'icebergOrphanGraceHours');
    if (grace === undefined || grace >= MIN_ORPHAN_GRACE_HOURS || request.allowRetentionBelowMinimum)
      return undefined;
    return `icebergOrphanGraceHours ${grace} is below the minimum of ${MIN_ORPHAN_GRACE_HOURS} h (3 days): an Iceberg writer's files exist before its commit references them, and a shorter grace period can delete them. Use ${MIN_ORPHAN_GRACE_HOURS} or more, or pass "allowRetentionBelowMinimum": true if you really mean it`;
  },
  planOf(table, request, now): IcebergMaintenanceTablePlan {
    const olderThanHours = numberOf(request, 'icebergOlderThanHours');
    const retainLast = numberOf(request, 'icebergRetainLast');
    const orphanGraceHours = numberOf(request, 'icebergOrphanGraceHours');
    return {
      table: table.name,
      bucket: table.bucket,
      tableRoot: table.prefix,
      now,
      ...(olderThanHours === undefined ? {} : { olderThanHours }),
      ...(retainLast === undefined ? {} : { retainLast }),
      ...(orphanGraceHours === undefined ? {} : { orphanGraceHours }),
      graceCheck: !request.allowRetentionBelowMinimum,
      // The table's own settings, as this format parsed them (the port carries them untyped).
      ...(settingsOf(table).catalog === undefined ? {} : { catalog: settingsOf(table).catalog }),
    };
  },
  async dryRun(store, plan, services) {
    const catalog = catalogOf(plan, services, store);
    const { candidates: expired, ...expire } = await expireSnapshots(store, plan.tableRoot, {
      ...expireOptionsOf(plan),
      dryRun: true,
      catalog,
      listLimit: Number.MAX_SAFE_INTEGER,
    });
    const { candidates: orphaned, ...orphans } = await removeOrphanFiles(store, plan.tableRoot, {
      ...orphanOptionsOf(plan),
      dryRun: true,
      catalog,
      listLimit: Number.MAX_SAFE_INTEGER,
    });
    const through =
      plan.catalog !== undefined && (plan.catalog.type !== 'path' || plan.catalog.metadataNaming === 'uuid')
        ? [`Iceberg maintenance through ${describeSetting(plan.catalog)}`]
        : [];
    return {
      summary: { expire, orphans },
      candidates: [...expired, ...orphaned].map((c) => candidateOf(c, plan.bucket, plan.table)),
      kept: orphans.refused.map((r) => ({ bucket: plan.bucket, ...r })),
      notes: [...through, ...expire.notes],
      examined: orphans.examined,
    };
  },
  async run(store, plan, services, sink) {
    const catalog = catalogOf(plan, services, store);
    // Expire first: what it cannot delete (a failed delete, a crash) is left for a later orphan pass.
    const { candidates: expired, ...expire } = await expireSnapshots(store, plan.tableRoot, {
      ...expireOptionsOf(plan),
      dryRun: false,
      catalog,
      listLimit: Number.MAX_SAFE_INTEGER,
    });
    for (const c of expired) sink.done(candidateOf(c, plan.bucket, plan.table));
    for (const f of expire.failed) sink.failed(f);
    const { candidates: orphaned, ...orphans } = await removeOrphanFiles(store, plan.tableRoot, {
      ...orphanOptionsOf(plan),
      dryRun: false,
      catalog,
      listLimit: Number.MAX_SAFE_INTEGER,
    });
    for (const c of orphaned) sink.done(candidateOf(c, plan.bucket, plan.table));
    for (const s of orphans.spared) sink.spared({ bucket: plan.bucket, ...s });
    for (const f of orphans.failed) sink.failed(f);
    return { expire, orphans };
  },
  errorNote: (error) =>
    `Iceberg expire_snapshots and remove_orphan_files not run, nothing of the table was deleted (${error.name}): ${error.message}`,
  errorLog: 'Iceberg expire_snapshots and remove_orphan_files not run for a table; nothing of it was deleted',
  tieringUnsupported: ICEBERG_TIERING_UNSUPPORTED,
  tableLabel: 'Iceberg table',
  describeRequest(r: MaintenanceRequest): string {
    const olderThan = numberOf(r, 'icebergOlderThanHours');
    const retainLast = numberOf(r, 'icebergRetainLast');
    const grace = numberOf(r, 'icebergOrphanGraceHours');
    return `expire_snapshots older than ${olderThan === undefined ? `the table's ${MAX_SNAPSHOT_AGE_PROPERTY} (default 5 days)` : `${olderThan} h`}, retain last ${retainLast ?? "the table's min-snapshots-to-keep (default 1)"}; remove_orphan_files older than ${grace ?? MIN_ORPHAN_GRACE_HOURS} h; work area retention`;
  },
  describePlanned(p: IcebergMaintenanceSummary, dryRun: boolean): string[] {
    const kept = Object.entries(p.orphans.kept)
      .filter(([, n]) => n > 0)
      .map(([why, n]) => `${why} ${n}`);
    return [
      `Iceberg table: expire_snapshots ${dryRun ? 'would expire' : 'will expire'} ${p.expire.expiredSnapshots.length} of ${p.expire.expiredSnapshots.length + p.expire.retainedSnapshots.length} snapshots (older than ${p.expire.expireOlderThan}, from ${p.expire.olderThanSource === 'option' ? '--older-than-hours' : p.expire.olderThanSource === 'default' ? 'the default' : `the table's ${MAX_SNAPSHOT_AGE_PROPERTY}`}; retain last ${p.expire.retainLast})${p.expire.removedRefs.length > 0 ? `, refs past their max age ${p.expire.removedRefs.join(', ')}` : ''}; remove_orphan_files: files older than ${p.orphans.olderThanHours} h, kept ${kept.join(', ') || 'none'}`,
      ...p.expire.retainedSnapshots
        .slice(0, 5)
        .map((s) => `  keeps snapshot ${s.snapshotId}: ${printable(s.reason)}`),
    ];
  },
  cli: icebergVacuumCli,
} as const satisfies TableMaintenance<
  IcebergMaintenanceTablePlan,
  IcebergMaintenanceSummary,
  IcebergCatalogServices,
  IcebergVacuumFlags
>;
