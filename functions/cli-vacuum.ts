// `lake-compactor vacuum` and `lake-compactor tier`: the scheduled jobs' own core, run to completion on one
// table location; a dry run changes nothing, and a real run prints everything it will change before it does.
//
// Inputs map one-to-one onto the vacuum and tiering functions' inputs (events/vacuum-*.json,
// events/tiering-*.json) and are validated by the same schemas — with the same retention gate — before any
// object is listed, let alone changed. Invalid usage exits 2; a run that could not do everything exits 1.

import { createInterface } from 'node:readline/promises';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { type Command, InvalidArgumentError, Option } from 'commander';
import { DynamoJournal } from './adapters/dynamodb-journal.js';
import { LocalObjectStore } from './adapters/local-object-store.js';
import { MemoryJournal } from './adapters/memory-journal.js';
import { type OpenedStore, openStore } from './adapters/open-store.js';
import { RoutedJournal } from './adapters/routed-journal.js';
import { StoreJournal } from './adapters/store-journal.js';
import { CompactorError, InvalidInputError, UsageError } from './core/errors.js';
import {
  DEFAULT_TIERING_RULES,
  executeTiering,
  parseTieringRequest,
  planTiering,
  type TieringMove,
  type TieringPlan,
  type TieringReport,
  type TieringRequest,
} from './core/maintenance/tiering.js';
import {
  type CandidateKind,
  executeVacuum,
  MIN_RETENTION_HOURS,
  parseVacuumRequest,
  planVacuum,
  type VacuumCandidate,
  type VacuumDeps,
  type VacuumKept,
  type VacuumPlan,
  type VacuumReport,
  type VacuumRequest,
} from './core/maintenance/vacuum.js';
import { relativeToRoot } from './core/partition.js';
import { PARTITION_DATE_FORMATS, type PartitionDateFormat } from './core/policy.js';
import { CLI_RUN_ID } from './core/run-input.js';
import { formatBytes } from './core/stats.js';
import { parseTableConfigs, type TableConfig } from './core/table-config.js';
import { refuseForeignAmong } from './core/table-format.js';
import {
  DEFAULT_WORK_ROOT,
  journalManifestPrefix,
  parseStagingKey,
  parseTrashKey,
} from './core/workflow/layout.js';
import type { Clock } from './ports/clock.js';
import type { GroupJournalEntry, Journal } from './ports/journal.js';
import type { ObjectInfo, ObjectStore } from './ports/object-store.js';
import { dynamoDbClientFromEnv } from './shared/aws-env.js';
import { positiveNumber, tableNameOf, workRootOption } from './shared/cli-args.js';
import { renderTable } from './shared/table.js';
import { refuseEnclosingForeignTable } from './shared/table-format-guard.js';

/** Rows of candidates printed in text mode; `--json` lists every one. */
const PRINTED_ROWS = 50;

export interface MaintenanceIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Asks the operator to confirm a destructive run. When absent, a y/N prompt on the terminal is used if
   * stdin is one; otherwise a real run needs `--yes` (a script or pipe cannot answer a prompt).
   */
  readonly confirm?: (question: string) => Promise<boolean>;
}

/** The operator answered no (or nothing): nothing was changed. */
export class OperationCancelledError extends CompactorError {}

/** A real run finished but some objects could not be removed or moved; they are listed. */
export class MaintenanceIncompleteError extends CompactorError {}

/**
 * A usage problem found before anything was listed or changed (an invalid value, the retention gate, the
 * wrong kind of location, a real run nobody can confirm): the CLI exits 2 with it, like for a bad flag.
 */
export { UsageError };

/** Runs `validate`, re-raising its input errors as usage errors (a schema's verdict on the options). */
function asUsage<T>(validate: () => T): T {
  try {
    return validate();
  } catch (err) {
    if (err instanceof InvalidInputError && !(err instanceof UsageError)) throw new UsageError(err.message);
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------------------
// vacuum

export interface VacuumCliOptions {
  /** List what would go; delete nothing. */
  readonly dryRun?: boolean;
  /** @default 168 ({@link MIN_RETENTION_HOURS}) */
  readonly retentionHours?: number;
  /** Required for a retention below {@link MIN_RETENTION_HOURS}, as in the function's input. */
  readonly allowRetentionBelowMinimum?: boolean;
  /** @default 72 */
  readonly debrisAgeHours?: number;
  /** @default 24 */
  readonly abandonedAfterHours?: number;
  /** The DynamoDB state table holding the workflow's journal; else env LAKE_COMPACTOR_TABLE (S3 only). */
  readonly stateTable?: string;
  /** The table's name in the deployment (journal entries are matched by it). @default the URI's last segment */
  readonly table?: string;
  /** Delete without asking (needed when stdin is not a terminal). */
  readonly yes?: boolean;
  readonly json?: boolean;
  /** The work root to vacuum (a deployment's, beside one). @default `_lake-compactor/` */
  readonly workRoot?: string;
}

/** A validated vacuum: everything resolved, nothing listed yet. */
export interface VacuumJob {
  readonly uri: string;
  readonly request: VacuumRequest;
  readonly table: TableConfig;
  readonly store: ObjectStore;
  readonly journal: Journal;
  /**
   * The state table used, or undefined when none: then only runs of `lake-compactor compact` are judged
   * (by their journal in the location, or by age when an older version left none).
   */
  readonly stateTable: string | undefined;
  readonly s3: boolean;
  /** The only work root listed and judged. */
  readonly workRoot: string;
}

/** The printed and `--json` result: the function's report, plus where and how it ran. */
export interface VacuumCliReport extends VacuumReport {
  readonly uri: string;
  readonly stateTable: string | null;
  /** What was kept although it might look removable, with why (inside the retention, in progress...). */
  readonly kept: readonly VacuumKept[];
}

/**
 * Validates the options into a job. Throws before any object is listed: UsageError for an invalid value or
 * a retention below the minimum without the override, a local folder with `--state-table`, a malformed
 * location; InvalidInputError for a local folder that does not exist.
 */
export function prepareVacuum(
  uri: string,
  options: VacuumCliOptions,
  io: Pick<MaintenanceIo, 'env'>,
  dynamodb?: DynamoDBClient,
): VacuumJob {
  // The core enforces the same gate (below); this says it in the CLI's own words.
  if (
    options.retentionHours !== undefined &&
    options.retentionHours < MIN_RETENTION_HOURS &&
    !options.allowRetentionBelowMinimum
  ) {
    throw new UsageError(
      `--retention-hours ${options.retentionHours} is below the minimum of ${MIN_RETENTION_HOURS} h (7 days): readers that listed the table before a commit, and anyone restoring a retired file, need that window. Use ${MIN_RETENTION_HOURS} or more, or add --allow-retention-below-minimum if you really mean it`,
    );
  }
  const request = asUsage(() =>
    parseVacuumRequest({
      dryRun: options.dryRun === true,
      ...(options.retentionHours === undefined ? {} : { retentionHours: options.retentionHours }),
      ...(options.allowRetentionBelowMinimum ? { allowRetentionBelowMinimum: true } : {}),
      ...(options.debrisAgeHours === undefined ? {} : { debrisAgeHours: options.debrisAgeHours }),
      ...(options.abandonedAfterHours === undefined
        ? {}
        : { abandonedAfterHours: options.abandonedAfterHours }),
    }),
  );
  const s3 = isS3(uri);
  if (!s3 && options.stateTable !== undefined) {
    throw new UsageError(
      `--state-table applies to s3:// locations only: runs on a local folder (${uri}) are never journaled in DynamoDB. Drop --state-table`,
    );
  }
  // A malformed location is a usage error; a folder that does not exist is not (exit 1, as in every command).
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const stateTable = s3 ? options.stateTable || io.env.LAKE_COMPACTOR_TABLE || undefined : undefined;
  const table = asUsage(() => tableOf(uri, opened, options.table));
  const workflowJournal: Journal =
    stateTable === undefined
      ? new MemoryJournal()
      : new DynamoJournal({
          client: dynamodb ?? dynamoDbClientFromEnv(io.env),
          tableName: stateTable,
          manifests: { store: opened.store, prefix: journalManifestPrefix(opened.workRoot) },
        });
  // `compact` records the URI's last segment as is; this command's table name is that segment made valid.
  const compactName = options.table ?? tableNameOf(uri);
  const cliJournal = renamingTable(
    new StoreJournal(opened.store, { workRoot: opened.workRoot }),
    compactName,
    table.name,
  );
  const journal = new RoutedJournal(cliJournal, workflowJournal);
  return { uri, request, table, store: opened.store, journal, stateTable, s3, workRoot: opened.workRoot };
}

/**
 * The journal with entries of table `from` presented as table `to`, so vacuum (which matches entries by
 * its configured table's name) finds what `compact` journaled under the URI's raw last segment (a folder
 * called `my lake (copy)`) — without it such runs' trash would never be judged at all.
 */
function renamingTable(journal: Journal, from: string, to: string): Journal {
  if (from === to) return journal;
  const rename = (e: GroupJournalEntry): GroupJournalEntry => (e.table === from ? { ...e, table: to } : e);
  return {
    get: async (runId, groupId) => {
      const entry = await journal.get(runId, groupId);
      return entry === undefined ? undefined : rename(entry);
    },
    create: (entry) => journal.create(entry),
    transition: (current, state, patch, now) => journal.transition(current, state, patch, now),
    listRun: async (runId) => (await journal.listRun(runId)).map(rename),
    listOpen: (partition) => journal.listOpen(partition),
    closeFence: (partition, group) => journal.closeFence(partition, group),
  };
}

/**
 * Lists every candidate of the location (all cursor pages), keeps only what belongs to this table and
 * what can be judged without a journal it does not have, then deletes (unless a dry run).
 *
 * Scope: trash copies and retired versions of keys under the URI's root, writer debris and unfinished
 * uploads under it; staging is per bucket (or folder) — the work root's `staging/` — and is judged run by
 * run. Without a state table, retired versions cannot be found (only the journal records their version
 * ids) and trash or staging of state-machine runs is kept: their journal may say a commit or an undo still
 * needs them. Runs of `lake-compactor compact` are judged by their journal in the location (what an
 * unsettled group needs is kept; settled groups' entries go after the retention), or by age when an older
 * version of the command left no journal. On a local folder, temp files of interrupted writes (in the work
 * area, or beside table files as older versions left them) go once older than the debris age.
 */
export async function planVacuumJob(
  job: VacuumJob,
  io: Pick<MaintenanceIo, 'clock'>,
  onPage?: (plan: VacuumPlan) => void,
): Promise<VacuumPlan> {
  // What was examined is counted by object, not by listing: when the table is the store's root (every local
  // folder, s3://bucket), its listing holds the work area again, whose own steps listed it already.
  const listed = new Set<string>();
  const store = recordingListings(job.store, listed);
  const deps: VacuumDeps = {
    tables: [job.table],
    workRoot: job.workRoot,
    storeFor: () => store,
    journalFor: () => job.journal,
    clock: io.clock,
  };
  const candidates = new Map<string, VacuumCandidate>();
  const add = (found: readonly VacuumCandidate[]) => {
    for (const c of found) {
      // Each object once, whichever steps judged it deletable: (bucket, key, version), or the upload.
      const id = JSON.stringify([c.bucket, c.key, c.versionId ?? null, c.uploadId ?? null]);
      if (!candidates.has(id)) candidates.set(id, c);
    }
  };
  const kept: VacuumKept[] = [];
  const notes = new Set<string>();
  const foreignTables: NonNullable<VacuumPlan['foreignTables']>[number][] = [];
  let cursor: string | undefined;
  do {
    const page = await planVacuum(deps, cursor === undefined ? job.request : { ...job.request, cursor });
    const scoped = scopeToTable(page, job);
    add(scoped.candidates);
    kept.push(...scoped.kept);
    for (const note of page.notes) notes.add(note);
    for (const f of page.foreignTables ?? [])
      if (!foreignTables.some((seen) => seen.root === f.root)) foreignTables.push(f);
    cursor = page.cursor;
    onPage?.({ ...page, candidates: [...candidates.values()], kept, examined: listed.size });
  } while (cursor !== undefined);
  if (job.store instanceof LocalObjectStore) {
    const temp = await tempFileDecisions(job.store, job, io.clock.now());
    for (const t of [...temp.candidates, ...temp.kept]) listed.add(JSON.stringify(['object', t.key, null]));
    add(temp.candidates);
    kept.push(...temp.kept);
  }
  if (!job.s3) {
    // The store's "cannot list multipart uploads" twice over says less than this.
    for (const note of [...notes]) if (/multipart uploads/.test(note)) notes.delete(note);
    notes.add('a local folder has no multipart uploads: nothing to abort');
  }
  if (job.s3 && job.stateTable === undefined) {
    notes.add(
      'no state table: retired object versions (versioned buckets) are recorded only in the journal and were not looked for; pass --state-table <name> or set LAKE_COMPACTOR_TABLE',
    );
  }
  return {
    dryRun: job.request.dryRun,
    retentionHours: job.request.retentionHours,
    candidates: [...candidates.values()],
    kept,
    examined: listed.size,
    notes: [...notes],
    ...(foreignTables.length === 0 ? {} : { foreignTables }),
  };
}

/**
 * `store`, noting in `listed` every object and unfinished upload its listings return, so a vacuum can say
 * how many distinct objects it examined however many steps listed each.
 */
function recordingListings(store: ObjectStore, listed: Set<string>): ObjectStore {
  const listUploads = store.listMultipartUploads?.bind(store);
  const abortUpload = store.abortMultipartUpload?.bind(store);
  const versioning = store.versioning?.bind(store);
  return {
    description: store.description,
    list: async (prefix, options) => {
      const page = await store.list(prefix, options);
      for (const o of page.objects) listed.add(JSON.stringify(['object', o.key, o.versionId ?? null]));
      return page;
    },
    listAll: (prefix) => store.listAll(prefix),
    head: (key) => store.head(key),
    getRange: (key, start, end) => store.getRange(key, start, end),
    get: (key) => store.get(key),
    put: (key, body, options) => store.put(key, body, options),
    putStream: (key, body, options) => store.putStream(key, body, options),
    copy: (source, destination, options) => store.copy(source, destination, options),
    deleteMany: (refs) => store.deleteMany(refs),
    ...(listUploads === undefined
      ? {}
      : {
          listMultipartUploads: async (prefix, options) => {
            const page = await listUploads(prefix, options);
            for (const u of page.uploads) listed.add(JSON.stringify(['upload', u.key, u.uploadId]));
            return page;
          },
        }),
    ...(abortUpload === undefined ? {} : { abortMultipartUpload: abortUpload }),
    ...(versioning === undefined ? {} : { versioning }),
  };
}

/**
 * Temp files of a local folder: the work area's (`<work root>tmp/`, left by a process killed
 * mid-write) and the ones older versions left beside their targets, by age only — a younger one may
 * belong to a write in progress (a re-run of compact removes those of dead processes at once).
 */
async function tempFileDecisions(
  store: LocalObjectStore,
  job: VacuumJob,
  now: number,
): Promise<{ candidates: VacuumCandidate[]; kept: VacuumKept[] }> {
  const debrisMs = job.request.debrisAgeHours * 3_600_000;
  const found: ObjectInfo[] = [];
  for await (const object of store.listAll(store.tempPrefix)) found.push(object);
  found.push(...(await store.legacyTempFiles(job.table.prefix === '' ? '' : `${job.table.prefix}/`)));
  const candidates: VacuumCandidate[] = [];
  const kept: VacuumKept[] = [];
  for (const object of found) {
    const at = object.lastModified.getTime();
    const age = `${Math.floor((now - at) / 3_600_000)} h ago`;
    if (now - at >= debrisMs) {
      candidates.push({
        kind: 'debris',
        bucket: job.table.bucket as string,
        key: object.key,
        size: object.size,
        etag: object.etag,
        reason: `temp file of an interrupted write, written ${age}`,
        table: job.table.name,
      });
    } else {
      kept.push({
        bucket: job.table.bucket as string,
        key: object.key,
        reason: `temp file written ${age}: a write may still be in progress`,
      });
    }
  }
  return { candidates, kept };
}

/** Drops trash and retired versions of keys outside the table; keeps what needs a journal it lacks. */
function scopeToTable(
  page: VacuumPlan,
  job: VacuumJob,
): { candidates: VacuumCandidate[]; kept: VacuumKept[] } {
  const inTable = (key: string): boolean => {
    const trashed = parseTrashKey(job.workRoot, key)?.inputKey;
    const original = trashed ?? (key.startsWith(job.workRoot) ? undefined : key);
    return original !== undefined && relativeToRoot(original, job.table.prefix) !== undefined;
  };
  const runOf = (key: string): string | undefined =>
    (parseTrashKey(job.workRoot, key) ?? parseStagingKey(job.workRoot, key))?.runId;
  const candidates: VacuumCandidate[] = [];
  const kept: VacuumKept[] = page.kept.filter(
    (k) => parseTrashKey(job.workRoot, k.key) === undefined || inTable(k.key),
  );
  for (const c of page.candidates) {
    if ((c.kind === 'trash' || c.kind === 'retired-version') && !inTable(c.key)) continue;
    const runId = runOf(c.key);
    if (
      job.stateTable === undefined &&
      (c.kind === 'trash' || c.kind === 'staging') &&
      runId !== undefined &&
      !CLI_RUN_ID.test(runId)
    ) {
      kept.push({
        bucket: c.bucket,
        key: c.key,
        reason: job.s3
          ? `run ${runId} ran in the state machine: its journal in the state table decides whether a commit or undo still needs this; pass --state-table <name> (or set LAKE_COMPACTOR_TABLE)`
          : `run ${runId} is not a lake-compactor compact run and its journal is not here: remove it by hand once you know the run ended`,
      });
      continue;
    }
    candidates.push(c);
  }
  return { candidates, kept };
}

/**
 * Runs `vacuum` on `uri`: validates, lists, prints what will be deleted, asks (or requires `--yes`) for a
 * real run, deletes, prints the outcome.
 * @throws UsageError (an InvalidInputError, before listing) for invalid options; OperationCancelledError when the
 * operator declines; MaintenanceIncompleteError when some deletes failed (after printing them);
 * UnsupportedTableFormatError, before anything is deleted, when the location is, lies in or holds a Delta or
 * Iceberg table.
 */
export async function runVacuum(
  uri: string,
  options: VacuumCliOptions,
  io: MaintenanceIo,
  dynamodb?: DynamoDBClient,
): Promise<VacuumCliReport> {
  const job = prepareVacuum(uri, options, io, dynamodb);
  const confirm = confirmerFor(io, options, 'vacuum');
  await refuseEnclosingForeignTable(openedOf(job), { includeLocation: true });
  const text = !options.json;
  if (text) {
    io.out(
      `vacuum ${uri}: ${job.request.dryRun ? 'DRY RUN, nothing will be deleted' : 'REAL RUN, objects will be DELETED'}; retention ${job.request.retentionHours} h, debris after ${job.request.debrisAgeHours} h, abandoned staging after ${job.request.abandonedAfterHours} h; state table: ${job.stateTable ?? 'none'}`,
    );
  }
  const plan = await planVacuumJob(job, io, (p) => {
    if (text) io.out(`  listed ${p.examined} objects, ${p.candidates.length} candidates so far`);
  });
  // A Delta or Iceberg table somewhere below the location: refuse the whole location, as compact does.
  refuseForeignAmong(job.store, openedOf(job).prefix, plan.foreignTables ?? []);
  if (text) printVacuumPlan(io, plan);
  if (!plan.dryRun && plan.candidates.length > 0 && confirm !== undefined) {
    const total = plan.candidates.reduce((n, c) => n + c.size, 0);
    if (!(await confirm(`Delete these ${plan.candidates.length} objects (${formatBytes(total)})?`))) {
      throw new OperationCancelledError('Vacuum cancelled: nothing was deleted');
    }
  }
  const report = await executeVacuum({ storeFor: () => job.store }, plan, {
    listLimit: Number.MAX_SAFE_INTEGER,
  });
  const result: VacuumCliReport = {
    uri,
    stateTable: job.stateTable ?? null,
    ...report,
    kept: plan.kept,
  };
  if (options.json) io.out(JSON.stringify(result, null, 2));
  else printVacuumOutcome(io, result);
  if (report.failed.length > 0) {
    throw new MaintenanceIncompleteError(
      `${report.failed.length} objects could not be deleted (listed above); re-run vacuum to retry them`,
    );
  }
  return result;
}

const KIND_ORDER: readonly CandidateKind[] = [
  'retired-version',
  'trash',
  'staging',
  'journal',
  'debris',
  'upload',
];

function printVacuumPlan(io: MaintenanceIo, plan: VacuumPlan): void {
  const verb = plan.dryRun ? 'would delete' : 'will delete';
  if (plan.candidates.length > 0) {
    io.out('');
    io.out(
      renderTable(
        [
          { header: 'kind', value: (c: VacuumCandidate) => c.kind },
          {
            header: 'key',
            value: (c) => (c.versionId === undefined ? c.key : `${c.key} @ ${c.versionId}`),
          },
          { header: 'size', value: (c) => formatBytes(c.size), align: 'right' },
          { header: 'reason', value: (c) => c.reason },
        ],
        plan.candidates.slice(0, PRINTED_ROWS),
      ),
    );
    if (plan.candidates.length > PRINTED_ROWS) {
      io.out(`… and ${plan.candidates.length - PRINTED_ROWS} more (--json lists every one)`);
    }
  }
  const total = plan.candidates.reduce((n, c) => n + c.size, 0);
  const byKind = KIND_ORDER.flatMap((kind) => {
    const of = plan.candidates.filter((c) => c.kind === kind);
    return of.length === 0
      ? []
      : [`${kind} ${of.length} (${formatBytes(of.reduce((n, c) => n + c.size, 0))})`];
  });
  io.out(
    `\n${verb}: ${plan.candidates.length} objects, ${formatBytes(total)}${byKind.length > 0 ? ` — ${byKind.join(', ')}` : ''}; examined ${plan.examined}`,
  );
  if (plan.kept.length > 0) {
    io.out(`kept: ${plan.kept.length} that are not due or cannot be judged here, e.g.`);
    for (const k of plan.kept.slice(0, 5)) io.out(`  ${k.key}: ${k.reason}`);
  }
  for (const note of plan.notes) io.out(`note: ${note}`);
}

function printVacuumOutcome(io: MaintenanceIo, report: VacuumCliReport): void {
  if (report.dryRun) {
    io.out(
      report.totalRemoved.count === 0
        ? '\ndry run: nothing is due; nothing was changed'
        : '\ndry run: nothing was changed; run again without --dry-run to delete the objects above',
    );
    return;
  }
  io.out(
    `\ndeleted ${report.totalRemoved.count} objects, ${formatBytes(report.totalRemoved.bytes)}; spared ${report.spared.length}; failed ${report.failed.length}`,
  );
  for (const s of report.spared) io.out(`  spared ${s.key}: ${s.reason}`);
  for (const f of report.failed) io.out(`  FAILED ${f.key}: ${f.message}`);
}

// ---------------------------------------------------------------------------------------------------------
// tier

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
 * @throws UsageError for a local folder (it has no storage classes), invalid rules or date settings.
 */
export function prepareTier(uri: string, options: TierCliOptions, io: Pick<MaintenanceIo, 'env'>): TierJob {
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
 * UnsupportedTableFormatError, before anything is moved, when the location is, lies in or holds a Delta or
 * Iceberg table.
 */
export async function runTier(
  uri: string,
  options: TierCliOptions,
  io: MaintenanceIo,
): Promise<TierCliReport> {
  const job = prepareTier(uri, options, io);
  const confirm = confirmerFor(io, options, 'tier');
  await refuseEnclosingForeignTable(openedOf(job), { includeLocation: true });
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
    if (text) io.out(`  listed ${examined} objects, ${moves.length} to move so far`);
  } while (cursor !== undefined);
  // A Delta or Iceberg table somewhere below the location: refuse the whole location, as compact does.
  refuseForeignAmong(job.store, openedOf(job).prefix, foreignTables);
  const plan: TieringPlan = { dryRun: job.request.dryRun, moves, kept, skippedTables, examined };
  if (text) printTierPlan(io, plan);
  if (!plan.dryRun && moves.length > 0 && confirm !== undefined) {
    const total = moves.reduce((n, m) => n + m.size, 0);
    if (!(await confirm(`Move these ${moves.length} objects (${formatBytes(total)})?`))) {
      throw new OperationCancelledError('Tiering cancelled: nothing was moved');
    }
  }
  const report = await executeTiering({ storeFor: () => job.store }, plan, {
    listLimit: Number.MAX_SAFE_INTEGER,
  });
  const result: TierCliReport = { uri, rules: job.request.rules, ...report };
  if (options.json) io.out(JSON.stringify(result, null, 2));
  else printTierOutcome(io, result);
  if (report.failed.length > 0) {
    throw new MaintenanceIncompleteError(
      `${report.failed.length} objects could not be moved (listed above); re-run tier to retry them`,
    );
  }
  return result;
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
    `\n${plan.dryRun ? 'would move' : 'will move'}: ${plan.moves.length} objects, ${formatBytes(total)}${parts.length > 0 ? ` — ${parts.join(', ')}` : ''}; examined ${plan.examined}`,
  );
  const kept = Object.entries(plan.kept).sort((a, b) => b[1] - a[1]);
  if (kept.length > 0) {
    io.out('left where they are:');
    for (const [reason, n] of kept.slice(0, 10)) io.out(`  ${n} × ${reason}`);
  }
  for (const s of plan.skippedTables) io.out(`skipped ${s.table}: ${s.reason}`);
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
    `\nmoved ${count} objects; ${report.changed.length} changed since listing (left alone); failed ${report.failed.length}`,
  );
  for (const key of report.changed) io.out(`  changed ${key}: replaced since it was listed, left alone`);
  for (const f of report.failed) io.out(`  FAILED ${f.key}: ${f.message}`);
}

// ---------------------------------------------------------------------------------------------------------
// shared

/** The job's location as the store and key prefix the CLI opened. */
function openedOf(job: {
  readonly uri: string;
  readonly store: ObjectStore;
  readonly table: TableConfig;
  readonly workRoot?: string;
}): OpenedStore {
  return {
    store: job.store,
    prefix: job.table.prefix === '' ? '' : `${job.table.prefix}/`,
    uri: job.uri,
    workRoot: job.workRoot ?? DEFAULT_WORK_ROOT,
  };
}

function isS3(uri: string): boolean {
  return /^s3a?:\/\//i.test(uri.trim());
}

function bucketOf(uri: string): string {
  return /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local';
}

/** The URI's location as a one-table config (the vacuum core works on configured tables). */
function tableOf(uri: string, opened: OpenedStore, name: string | undefined): TableConfig {
  const [table] = parseTableConfigs([
    { name: name ?? defaultName(uri), bucket: bucketOf(uri), prefix: opened.prefix },
  ]);
  return table as TableConfig;
}

/** The URI's last segment as a valid table name (a folder may be called `my lake (copy)`). */
function defaultName(uri: string): string {
  return (
    tableNameOf(uri)
      .replace(/[^A-Za-z0-9_.-]/g, '_')
      .replace(/^[^A-Za-z0-9]+/, '') || 'table'
  );
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

/**
 * Who confirms a real run: nobody for a dry run or with `--yes`; the injected or terminal prompt when
 * there is one. A real run with neither is refused before anything is listed: a scheduler or a pipe would
 * otherwise delete without anyone having seen the list (the scheduled functions are dry-run by default for
 * the same reason), and `--yes` makes that choice explicit in the script.
 */
function confirmerFor(
  io: MaintenanceIo,
  options: { readonly dryRun?: boolean; readonly yes?: boolean },
  command: 'vacuum' | 'tier',
): ((question: string) => Promise<boolean>) | undefined {
  if (options.dryRun || options.yes) return undefined;
  const confirm = io.confirm ?? terminalConfirm();
  if (confirm === undefined) {
    throw new UsageError(
      `${command} without --dry-run changes the lake, and stdin is not a terminal to confirm it: pass --yes to go ahead without a prompt, or --dry-run to only list what would change`,
    );
  }
  return confirm;
}

/** A y/N prompt on stderr when stdin is a terminal; undefined otherwise. */
function terminalConfirm(): ((question: string) => Promise<boolean>) | undefined {
  if (!process.stdin.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
    } finally {
      rl.close();
    }
  };
}

function nonNegativeNumber(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n < 0) {
    throw new InvalidArgumentError('expected a number of 0 or more.');
  }
  return n;
}

function collect(value: string, previous: readonly string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** Adds `vacuum` to the CLI program. */
export function registerVacuumCommand(program: Command, io: MaintenanceIo): void {
  program
    .command('vacuum')
    .description('Delete what compaction left behind once it is past the retention (lists first)')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .option('--dry-run', 'list what would be deleted, with sizes and reasons; delete nothing')
    .option(
      '--retention-hours <h>',
      `keep retired inputs and trash this long (minimum ${MIN_RETENTION_HOURS} unless overridden)`,
      positiveNumber,
      MIN_RETENTION_HOURS,
    )
    .option(
      '--allow-retention-below-minimum',
      `accept a retention under ${MIN_RETENTION_HOURS} h (readers and restores need that window)`,
    )
    .option('--debris-age-hours <h>', 'age after which writer scratch (_temporary/) goes', positiveNumber, 72)
    .option(
      '--abandoned-after-hours <h>',
      'age after which staging of a run that never published goes',
      positiveNumber,
      24,
    )
    .option(
      '--state-table <name>',
      'DynamoDB state table with the workflow journal (default: env LAKE_COMPACTOR_TABLE)',
    )
    .option(
      '--table <name>',
      "the table's name in the deployment's config (default: last segment of the URI)",
    )
    .option('--yes', 'delete without asking (required when stdin is not a terminal)')
    .option('--json', 'print the report as JSON (the vacuum function’s report, every candidate listed)')
    .addOption(workRootOption())
    .addHelpText(
      'after',
      `
Same input as the scheduled vacuum function (events/vacuum-*.json): --retention-hours, --dry-run,
--allow-retention-below-minimum, --debris-age-hours, --abandoned-after-hours. Unlike the schedule, the CLI
deletes unless --dry-run is given; it always prints the list first and asks, or needs --yes.
Without a state table, retired object versions are not looked for and the trash and staging of
state-machine runs are kept (their journal decides). Runs of "lake-compactor compact" are judged by their
journal in the location's _lake-compactor/journal/ (an unsettled group keeps what it needs; a settled
group's journal entry goes after the retention), or by age when an older version left no journal.
On a local folder, temp files of interrupted writes go once older than --debris-age-hours.
Scope: trash copies and writer debris of keys under <uri>; staged outputs and unfinished uploads of the
bucket's (or folder's) _lake-compactor/ work area, judged run by run; unfinished uploads under <uri>.`,
    )
    .action(async (uri: string, opts: VacuumCliOptions) => {
      await runVacuum(uri, opts, io);
    });
}

/** Adds `tier` to the CLI program. */
export function registerTierCommand(program: Command, io: MaintenanceIo): void {
  program
    .command('tier')
    .description('Move data files of old partitions to colder S3 storage classes (lists first)')
    .argument('<uri>', 'table location: s3://bucket/prefix')
    .option('--dry-run', 'list what would move where, and why; move nothing')
    .option(
      '--rule <days:class>',
      'after <days> move to <class>; repeat for more (default: 30:STANDARD_IA 90:GLACIER_IR)',
      collect,
    )
    .option('--date-column <name>', 'partition column holding the date (default: date)')
    .addOption(
      new Option(
        '--date-format <format>',
        'format of the date partition value (default: yyyy-MM-dd)',
      ).choices(PARTITION_DATE_FORMATS),
    )
    .option(
      '--min-object-kb <n>',
      'smaller objects stay out of the 128 KB-minimum classes (default: 128)',
      nonNegativeNumber,
    )
    .option('--table <name>', 'table name in the report (default: last segment of the URI)')
    .option('--yes', 'move without asking (required when stdin is not a terminal)')
    .option('--json', 'print the report as JSON (the tiering function’s report, every move listed)')
    .addHelpText(
      'after',
      `
Same rules as the scheduled tiering function (events/tiering-*.json): by the partition's date value,
never warmer, never objects under 128 KB into IA or Glacier IR. Each move is an in-place copy with the
new storage class, conditioned on the listed ETag. Unlike the schedule, the CLI moves unless --dry-run is
given; it always prints the list first and asks, or needs --yes.`,
    )
    .action(async (uri: string, opts: TierCliOptions) => {
      await runTier(uri, opts, io);
    });
}
