// Delta Lake's own maintenance behind the TableFormat port (`maintenance`): Delta VACUUM (vacuum.ts) as the
// deployment's vacuum runs it on a table configured with `format: "delta"`.
//
// Why it is the format's: only the log knows which files are live and which tombstones expired, and only the
// table's declared commit coordination reads that log safely (an incomplete DynamoDB entry is finished first, as
// Spark's VACUUM does; a writer that does not coordinate as declared makes it that table's error). Planning runs
// VACUUM as a dry run; executing runs it for real with the planning instant as its clock: it re-reads the log and
// deletes what its own plan says, and a file that only became due after planning waits for the next run.
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { DELTA_TIERING_UNSUPPORTED } from '../foreign-tables.js';
import type {
  MaintainedTable,
  MaintenanceCandidate,
  MaintenanceOutcomeEntry,
  MaintenancePlanEntry,
  MaintenanceRequest,
  MaintenanceTablePlan,
  TableMaintenance,
} from '../table-format.js';
import type { DeltaFormatServices, DeltaLogStoreSetting } from './coordination.js';
import { deltaLogStoreFor } from './log-store-for.js';
import type { DeltaTableSettings } from './settings.js';
import {
  DELETED_FILE_RETENTION_PROPERTY,
  DELTA_MIN_RETENTION_HOURS,
  type DeltaVacuumCandidate,
  type DeltaVacuumReport,
  vacuumDeltaTable,
} from './vacuum.js';

/** The deltaLogStore setting of a table of this format: the config parsed it with this format's own schema. */
function settingsOf(table: MaintainedTable): DeltaTableSettings {
  return table as MaintainedTable & DeltaTableSettings;
}

/** The summary of a Delta VACUUM run (its candidates are among the vacuum's own). */
export type DeltaVacuumSummary = Omit<DeltaVacuumReport, 'candidates'>;

/** What the real run of one Delta table's VACUUM needs to judge as its dry run did. */
export interface DeltaVacuumTablePlan extends MaintenanceTablePlan {
  /** The operator's override of the table's `delta.deletedFileRetentionDuration`, if any. */
  readonly retentionHours?: number;
  /** Delta's retention check: off only with `allowRetentionBelowMinimum`. */
  readonly retentionCheck: boolean;
  /** The table's declared commit coordination, which the real run reads the log through too. */
  readonly deltaLogStore?: DeltaLogStoreSetting;
}

/** One Delta table's VACUUM as planned: the dry run taken, and what the real run needs to judge the same way. */
export type DeltaTableVacuumPlan = MaintenancePlanEntry<DeltaVacuumTablePlan, DeltaVacuumSummary>;

/** One Delta table's VACUUM as carried out (a dry run: as planned). */
export type DeltaTableVacuumOutcome = MaintenanceOutcomeEntry<DeltaVacuumSummary>;

/** The vacuum input's Delta option (see {@link deltaMaintenance}). */
const requestOptions = {
  /**
   * Tables with `format: "delta"`: overrides each table's own `delta.deletedFileRetentionDuration` (one week when
   * unset), which Delta VACUUM uses otherwise. Separate from `retentionHours` because the schedule always sends
   * that one, and a Delta table's readers count on the retention its property promises, not on ours.
   */
  deltaRetentionHours: z.number().min(0).optional(),
};

/** What `lake-compactor vacuum` reads for a Delta table: the shared `--retention-hours`, which overrides its retention. */
export interface DeltaVacuumFlags {
  readonly retentionHours?: number;
}

/** The request's Delta override, as validated by {@link requestOptions}. */
function retentionHoursOf(request: MaintenanceRequest): number | undefined {
  const hours = request.deltaRetentionHours;
  return typeof hours === 'number' ? hours : undefined;
}

/** Delta VACUUM's options for a planned table (without `dryRun`). */
function optionsOf(plan: DeltaVacuumTablePlan): {
  now: number;
  retentionHours?: number;
  retentionCheck: boolean;
} {
  return {
    now: plan.now,
    retentionCheck: plan.retentionCheck,
    ...(plan.retentionHours === undefined ? {} : { retentionHours: plan.retentionHours }),
  };
}

/** A Delta VACUUM candidate as one of the vacuum's own. */
function candidateOf(c: DeltaVacuumCandidate, bucket: string, table: string): MaintenanceCandidate {
  return {
    kind: c.kind === 'tombstone' ? 'delta-tombstone' : 'delta-untracked',
    bucket,
    key: c.key,
    size: c.size,
    etag: c.etag,
    reason: c.reason,
    table,
  };
}

/** VACUUM of the planned table through its declared log store: a dry run, or for real at the plan's instant. */
function vacuumPlanned(
  store: ObjectStore,
  plan: DeltaVacuumTablePlan,
  services: DeltaFormatServices,
  dryRun: boolean,
): Promise<DeltaVacuumReport> {
  return vacuumDeltaTable(store, plan.tableRoot, {
    ...optionsOf(plan),
    logStore: deltaLogStoreFor(plan.deltaLogStore, services)(store),
    dryRun,
    listLimit: Number.MAX_SAFE_INTEGER,
  });
}

/**
 * Delta VACUUM as the deployment's vacuum runs it: not paged — its plan needs every object and the full log — so a
 * table's VACUUM runs whole once started, and what it listed counts against the call's budget.
 */
export const deltaMaintenance = {
  reportKey: 'deltaTables',
  candidateKinds: ['delta-tombstone', 'delta-untracked'],
  requestOptions,
  requestRefusal(request: MaintenanceRequest): string | undefined {
    const hours = retentionHoursOf(request);
    if (hours === undefined || hours >= DELTA_MIN_RETENTION_HOURS || request.allowRetentionBelowMinimum)
      return undefined;
    return `deltaRetentionHours ${hours} is below the minimum of ${DELTA_MIN_RETENTION_HOURS} h (7 days): a Delta writer still running and readers of recent versions need the files it would delete. Use ${DELTA_MIN_RETENTION_HOURS} or more, or pass "allowRetentionBelowMinimum": true if you really mean it`;
  },
  planOf(table, request, now): DeltaVacuumTablePlan {
    const retentionHours = retentionHoursOf(request);
    return {
      table: table.name,
      bucket: table.bucket,
      tableRoot: table.prefix,
      now,
      ...(retentionHours === undefined ? {} : { retentionHours }),
      retentionCheck: !request.allowRetentionBelowMinimum,
      // The table's own settings, as this format parsed them (the port carries them untyped).
      ...(settingsOf(table).deltaLogStore === undefined
        ? {}
        : { deltaLogStore: settingsOf(table).deltaLogStore }),
    };
  },
  async dryRun(store, plan, services) {
    const { candidates, ...summary } = await vacuumPlanned(store, plan, services, true);
    return {
      summary,
      candidates: candidates.map((c) => candidateOf(c, plan.bucket, plan.table)),
      kept: summary.refused.map((r) => ({ bucket: plan.bucket, ...r })),
      notes: summary.notes,
      examined: summary.examined,
    };
  },
  async run(store, plan, services, sink) {
    const { candidates, ...summary } = await vacuumPlanned(store, plan, services, false);
    for (const c of candidates) sink.done(candidateOf(c, plan.bucket, plan.table));
    for (const s of summary.spared) sink.spared({ bucket: plan.bucket, ...s });
    for (const f of summary.failed) sink.failed(f);
    return summary;
  },
  errorNote: (error) =>
    `Delta VACUUM not run, nothing of the table was deleted (${error.name}): ${error.message}`,
  errorLog: 'Delta VACUUM not run for a table; nothing of it was deleted',
  tieringUnsupported: DELTA_TIERING_UNSUPPORTED,
  tableLabel: 'Delta table',
  describeRequest(request: MaintenanceRequest): string {
    const hours = retentionHoursOf(request);
    const retention = hours === undefined ? `the table's ${DELETED_FILE_RETENTION_PROPERTY}` : `${hours} h`;
    return `Delta VACUUM retention ${retention}, work area retention`;
  },
  describePlanned(d: DeltaVacuumSummary): string[] {
    const source =
      d.retentionSource === 'option'
        ? 'requested'
        : `from ${d.retentionSource === 'default' ? 'the default' : `the table's ${DELETED_FILE_RETENTION_PROPERTY}`}`;
    const kept = Object.entries(d.kept)
      .filter(([, n]) => n > 0)
      .map(([why, n]) => `${why} ${n}`);
    return [
      `Delta table at version ${d.version}: retention ${d.retentionHours} h (${source}); kept ${d.keptCount}${kept.length > 0 ? ` — ${kept.join(', ')}` : ''}`,
    ];
  },
  // `lake-compactor vacuum --format delta`: no option of its own; the shared --retention-hours overrides the
  // table's retention as well (the CLI has one retention to name, where the schedule sends two).
  cli: {
    options: [],
    retentionHoursHelp: `; with --format delta also the Delta table's retention (default: its ${DELETED_FILE_RETENTION_PROPERTY})`,
    help: `With --format delta, <uri> is a Delta table's root and Delta VACUUM runs on it: files of tombstones older than
the retention and files no version references that are older than it go; the log and live files never do.
On S3 it needs the table's --delta-log-store as compact does: the log is read through it (an incomplete DynamoDB
commit entry is finished first, as Spark's VACUUM does), and a writer that does not coordinate as declared
refuses the table.`,
    refusal: () => undefined,
    requestOf: (flags: DeltaVacuumFlags) =>
      flags.retentionHours === undefined ? {} : { deltaRetentionHours: flags.retentionHours },
  },
} as const satisfies TableMaintenance<
  DeltaVacuumTablePlan,
  DeltaVacuumSummary,
  DeltaFormatServices,
  DeltaVacuumFlags
>;
