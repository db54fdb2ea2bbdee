// Apache Hudi's own maintenance behind the TableFormat port (`maintenance`): the vacuum cleans a Hudi table through
// a `clean` instant as Hudi's cleaner writes one (clean.ts) — only when the table opts in with `hudiCleaner`.
//
// Why opt-in: Hudi's writers clean after every commit by default (`hoodie.clean.automatic=true`), with a policy the
// table does not record. A second cleaner with a guessed policy would delete slices the writers' readers and
// incremental queries still count on, and two cleaners racing leave Hudi's incremental cleaning unsure what was
// cleaned. So by default the vacuum only says that cleaning is the table's own cleaner's and deletes nothing; a table
// whose writers do not clean (table services off, or a writer that only appends) declares the policy, and the
// vacuum then cleans with it, under the writers' lock, within its own retention gate. Planning is a dry run;
// executing plans again at the planning instant, so what became due since waits for the next run.

import { systemClock } from '../../../ports/clock.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type {
  MaintainedTable,
  MaintenanceCandidate,
  MaintenanceRequest,
  MaintenanceTablePlan,
  TableMaintenance,
} from '../table-format.js';
import { cleanHudiTable, type HudiCleanReport } from './clean.js';
import { HUDI_CLEANER_DEFAULT_RETAINED, type HudiCleanerRules } from './clean-plan.js';
import type { HudiCoordination } from './clustering-commit.js';
import type { HudiCleanerSetting, HudiLockSetting, HudiTableSettings } from './settings.js';

/** The vacuum's retention gate when a request carries none (the vacuum's own minimum). */
const DEFAULT_RETENTION_HOURS = 168;

/** What the real run of one Hudi table's clean needs to judge as its dry run did. */
export interface HudiCleanTablePlan extends MaintenanceTablePlan {
  /** The vacuum's retention: nothing superseded more recently is deleted. */
  readonly retentionHours: number;
  /** The table's declared cleaner policy; absent: cleaning is left to the table's own cleaner. */
  readonly hudiCleaner?: HudiCleanerSetting;
  readonly hudiLock?: HudiLockSetting;
  readonly hudiTimezone?: string;
}

/** The summary of one Hudi table's clean (its files are among the vacuum's candidates). */
export interface HudiCleanSummary {
  /** True when the table declares no `hudiCleaner`: nothing was read or deleted. */
  readonly leftToTableCleaner: boolean;
  readonly policy?: string;
  readonly retained?: number;
  readonly earliestCommitToRetain?: string;
  readonly instant?: string;
  readonly resumed?: string;
  readonly files: number;
  readonly bytes: number;
  readonly keptCount: number;
  readonly notes: readonly string[];
}

/** Builds the coordination of a table's declared lock (format.ts's, injected to keep the import graph acyclic). */
export type HudiCoordinationOf<Services> = (
  lock: HudiLockSetting,
  localZone: string | undefined,
  services: Services,
) => HudiCoordination;

const LEFT_TO_TABLE_CLEANER =
  "cleaning is left to the table's own cleaner (declare hudiCleaner, on the CLI --hudi-clean-policy, for lake-compactor to clean it)";

function settingsOf(table: MaintainedTable): HudiTableSettings {
  return table as MaintainedTable & HudiTableSettings;
}

function rulesOf(setting: HudiCleanerSetting): HudiCleanerRules {
  return {
    policy: setting.policy,
    retained: setting.retained ?? HUDI_CLEANER_DEFAULT_RETAINED[setting.policy],
  };
}

function candidateOf(plan: HudiCleanTablePlan, f: HudiCleanReport['files'][number]): MaintenanceCandidate {
  return {
    kind: 'hudi-clean',
    bucket: plan.bucket,
    key: f.key,
    size: f.size,
    etag: f.etag,
    reason: f.reason,
    table: plan.table,
  };
}

function summaryOf(report: HudiCleanReport): HudiCleanSummary {
  return {
    leftToTableCleaner: false,
    policy: report.policy,
    retained: report.retained,
    ...(report.earliestCommitToRetain === undefined
      ? {}
      : { earliestCommitToRetain: report.earliestCommitToRetain }),
    ...(report.instant === undefined ? {} : { instant: report.instant }),
    ...(report.resumed === undefined ? {} : { resumed: report.resumed }),
    files: report.files.length,
    bytes: report.files.reduce((n, f) => n + f.size, 0),
    keptCount: report.kept.length,
    notes: report.notes,
  };
}

const LEFT: HudiCleanSummary = {
  leftToTableCleaner: true,
  files: 0,
  bytes: 0,
  keptCount: 0,
  notes: [LEFT_TO_TABLE_CLEANER],
};

/** Hudi's maintenance, with how a declared lock becomes the table's coordination. */
export function hudiCleanMaintenance<Services>(coordinationOf: HudiCoordinationOf<Services>) {
  function clean(store: ObjectStore, plan: HudiCleanTablePlan, services: Services, dryRun: boolean) {
    const cleaner = plan.hudiCleaner as HudiCleanerSetting;
    return cleanHudiTable(store, plan.tableRoot, {
      rules: rulesOf(cleaner),
      now: plan.now,
      retentionHours: plan.retentionHours,
      dryRun,
      ...(plan.hudiLock === undefined
        ? {}
        : { coordination: coordinationOf(plan.hudiLock, plan.hudiTimezone, services) }),
      clock: systemClock,
    });
  }
  return {
    reportKey: 'hudiTables',
    candidateKinds: ['hudi-clean'],
    requestOptions: {},
    requestRefusal: () => undefined,
    planOf(table: MaintainedTable, request: MaintenanceRequest, now: number): HudiCleanTablePlan {
      const s = settingsOf(table);
      const hours = request.retentionHours;
      return {
        table: table.name,
        bucket: table.bucket,
        tableRoot: table.prefix,
        now,
        retentionHours: typeof hours === 'number' ? hours : DEFAULT_RETENTION_HOURS,
        ...(s.hudiCleaner === undefined ? {} : { hudiCleaner: s.hudiCleaner }),
        ...(s.hudiLock === undefined ? {} : { hudiLock: s.hudiLock }),
        ...(s.hudiTimezone === undefined ? {} : { hudiTimezone: s.hudiTimezone }),
      };
    },
    async dryRun(store, plan, services) {
      if (plan.hudiCleaner === undefined)
        return { summary: LEFT, candidates: [], kept: [], notes: [LEFT_TO_TABLE_CLEANER], examined: 0 };
      const report = await clean(store, plan, services, true);
      return {
        summary: summaryOf(report),
        candidates: report.files.map((f) => candidateOf(plan, f)),
        kept: report.kept.map((k) => ({ bucket: plan.bucket, ...k })),
        notes: report.notes,
        examined: report.files.length + report.kept.length,
      };
    },
    async run(store, plan, services, sink) {
      if (plan.hudiCleaner === undefined) return LEFT;
      const report = await clean(store, plan, services, false);
      if (report.instant !== undefined) for (const f of report.files) sink.done(candidateOf(plan, f));
      for (const k of report.kept) sink.spared({ bucket: plan.bucket, ...k });
      return summaryOf(report);
    },
    errorNote: (error) =>
      `Hudi clean not run, nothing of the table was deleted (${error.name}): ${error.message}`,
    errorLog: 'Hudi clean not run for a table; nothing of it was deleted',
    // The timeline says which files are live: moving one to an archive class would break its readers.
    tieringUnsupported:
      'tiering is not supported for Apache Hudi tables yet; use S3 lifecycle rules on the table prefix',
    tableLabel: 'Hudi table',
    describeRequest: () => "Hudi clean by the table's declared hudiCleaner policy, work area retention",
    describePlanned(s: HudiCleanSummary): string[] {
      if (s.leftToTableCleaner) return [`Hudi table: ${LEFT_TO_TABLE_CLEANER}`];
      const ectr =
        s.earliestCommitToRetain === undefined
          ? ''
          : `, earliest commit to retain ${s.earliestCommitToRetain}`;
      return [
        `Hudi table: ${s.policy} retaining ${s.retained}${ectr}; ${s.files} file(s) to clean, ${s.keptCount} kept by the retention`,
        ...s.notes,
      ];
    },
    cli: {
      options: [],
      retentionHoursHelp: '; with --format hudi also the least age of what a clean deletes',
      help: `With --format hudi, <uri> is a Hudi table's root. Cleaning is left to the table's own cleaner unless
--hudi-clean-policy (the writers' hoodie.cleaner.policy) and --hudi-lock are given: then replaced file groups and
older file slices go through a clean instant as Hudi writes one (plan, inflight, completed), under the table's
lock, never what --retention-hours still keeps.`,
      refusal: () => undefined,
      requestOf: () => ({}),
    },
  } as const satisfies TableMaintenance<HudiCleanTablePlan, HudiCleanSummary, Services, object>;
}
