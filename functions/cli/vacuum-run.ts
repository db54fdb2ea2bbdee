// What `lake-compactor vacuum` does, loaded by vacuum.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor vacuum`: the scheduled vacuum's own core, run to completion on one table location; a dry
// run deletes nothing, and a real run prints everything it will delete, and why, before it does. A format whose
// log or metadata owns its table (its own VACUUM, or expire_snapshots then
// remove_orphan_files) is maintained its own way, through TableFormat.maintenance: that format declares its vacuum
// options, their help and their checks (MaintenanceCli), and its table settings' options (FormatSettings.cli: the
// catalog or commit coordination it is read through), so this command names no format.
//
// Its options map one-to-one onto the vacuum function's input (events/vacuum-*.json) and are validated by
// the same schema, with the same retention gate, before any object is listed. Invalid usage exits 2; a run
// that could not delete everything exits 1.

import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import { MemoryJournal } from '../adapters/memory-journal.js';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { RoutedJournal } from '../adapters/routed-journal.js';
import { StoreJournal } from '../adapters/store-journal.js';
import { CompactorError, UsageError } from '../core/errors.js';
import { refuseForeignAmong } from '../core/formats/foreign-tables.js';
import {
  DEFAULT_TABLE_FORMAT,
  type FormatServices,
  TABLE_FORMATS,
  type TableFormatName,
  type TableFormatSettings,
  tableFormat,
} from '../core/formats/index.js';
import { isRefusedKeyReason, printable } from '../core/keys.js';
import {
  CANDIDATE_KINDS,
  type CandidateKind,
  concatFormatPlans,
  executeVacuum,
  formatSectionsOf,
  MIN_RETENTION_HOURS,
  maintainedTablesOf,
  parseVacuumRequest,
  planVacuum,
  type VacuumCandidate,
  type VacuumDeps,
  type VacuumKept,
  type VacuumPlan,
  type VacuumReport,
  type VacuumRequest,
} from '../core/maintenance/vacuum.js';
import { relativeToRoot } from '../core/partition.js';
import { CLI_RUN_ID } from '../core/run-input.js';
import { formatBytes } from '../core/stats.js';
import { parseTableConfigs, type TableConfig } from '../core/table-config.js';
import { journalManifestPrefix, parseStagingKey, parseTrashKey } from '../core/workflow/layout.js';
import { systemClock } from '../ports/clock.js';
import type { GroupJournalEntry, Journal } from '../ports/journal.js';
import type { ObjectInfo, ObjectStore } from '../ports/object-store.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { tableNameOf } from './args.js';
import { formatSettingsOf } from './format-options.js';
import { cliFormatServices } from './format-services.js';
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
import { NAME_THE_STATE_TABLE } from './stack-outputs.js';
import { renderTable } from './table.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';
import { maintenanceClis, type VacuumCliOptions } from './vacuum-options.js';

/** A validated vacuum: everything resolved, nothing listed yet. */
export interface VacuumJob {
  readonly uri: string;
  readonly request: VacuumRequest;
  readonly table: TableConfig;
  readonly store: ObjectStore;
  readonly journal: Journal;
  /**
   * The state table's journal, the only word object versions are deleted on (undefined without a state table:
   * then none is). Never the store journal in the location, whoever wrote it there.
   */
  readonly retiredVersionJournal: Journal | undefined;
  /**
   * The state table used, or undefined when none: then only runs of `lake-compactor compact` are judged
   * (by their journal in the location, or by age when an older version left none).
   */
  readonly stateTable: string | undefined;
  readonly s3: boolean;
  /** The only work root listed and judged. */
  readonly workRoot: string;
  /**
   * The format services of the location, from the CLI's environment (what a table's settings name: its declared
   * commit coordination, the catalog that manages it), built through the adapter registry.
   */
  readonly services: FormatServices;
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
  io: Pick<MaintenanceIo, 'env'> & Partial<Pick<MaintenanceIo, 'clock'>>,
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
  const format = options.format ?? DEFAULT_TABLE_FORMAT;
  // Each format's vacuum options, checked in its own words: given for another format, or below its minimum.
  for (const cli of maintenanceClis()) {
    const refusal = cli.refusal(options, {
      format,
      allowRetentionBelowMinimum: options.allowRetentionBelowMinimum === true,
    });
    if (refusal !== undefined) throw new UsageError(refusal);
  }
  const request = asUsage(() =>
    parseVacuumRequest({
      dryRun: options.dryRun === true,
      ...(options.retentionHours === undefined ? {} : { retentionHours: options.retentionHours }),
      // The location's format's own options of the request (what its maintenance reads).
      ...TABLE_FORMATS.get(format)?.maintenance?.cli?.requestOf(options),
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
  // The table is read through its settings as the deployment's config declares them (a table's commit
  // coordination, which a format may require on S3 and check against its writers, or its catalog).
  const settings = formatSettingsOf(uri, format, options);
  const table = asUsage(() => tableOf(uri, opened, options.table, format, settings));
  const client = stateTable === undefined ? undefined : (dynamodb ?? dynamoDbClientFromEnv(io.env));
  const stateJournal = (requireManifestDigest: boolean): Journal =>
    stateTable === undefined || client === undefined
      ? new MemoryJournal()
      : new DynamoJournal({
          client,
          tableName: stateTable,
          manifests: { store: opened.store, prefix: journalManifestPrefix(opened.workRoot) },
          requireManifestDigest,
        });
  const workflowJournal = stateJournal(false);
  // `compact` records the URI's last segment as is; this command's table name is that segment made valid.
  const compactName = options.table ?? tableNameOf(uri);
  const cliJournal = renamingTable(
    new StoreJournal(opened.store, { workRoot: opened.workRoot }),
    compactName,
    table.name,
  );
  const journal = new RoutedJournal(cliJournal, workflowJournal);
  return {
    uri,
    request,
    table,
    store: opened.store,
    journal,
    retiredVersionJournal: stateTable === undefined ? undefined : stateJournal(true),
    stateTable,
    s3,
    workRoot: opened.workRoot,
    services: cliFormatServices(opened, { env: io.env, clock: io.clock ?? systemClock }),
  };
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
    ...(job.retiredVersionJournal === undefined
      ? {}
      : { retiredVersionJournalFor: () => job.retiredVersionJournal as Journal }),
    clock: io.clock,
    services: () => job.services,
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
  const pages: VacuumPlan[] = [];
  let cursor: string | undefined;
  do {
    const page = await planVacuum(deps, cursor === undefined ? job.request : { ...job.request, cursor });
    const scoped = scopeToTable(page, job);
    add(scoped.candidates);
    kept.push(...scoped.kept);
    pages.push(page);
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
      `no state table: retired object versions (versioned buckets) are recorded only in the journal and were not looked for; ${NAME_THE_STATE_TABLE}`,
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
    ...concatFormatPlans(pages),
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
    listAll: async function* (prefix) {
      for await (const o of store.listAll(prefix)) {
        listed.add(JSON.stringify(['object', o.key, o.versionId ?? null]));
        yield o;
      }
    },
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
          ? `run ${runId} ran in the state machine: its journal in the state table decides whether a commit or undo still needs this; ${NAME_THE_STATE_TABLE}`
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
 * UnsupportedTableFormatError, before anything is deleted, when the location is, lies in or holds another
 * format's table (with the `--format` of a table whose log owns it: when it lies in one, or holds another);
 * TableNotVacuumedError when the format's maintenance refused the table or could not read its log (nothing of it
 * deleted).
 */
export async function runVacuum(
  uri: string,
  options: VacuumCliOptions,
  io: MaintenanceIo,
  dynamodb?: DynamoDBClient,
  progress?: MaintenanceProgress,
): Promise<VacuumCliReport> {
  const job = prepareVacuum(uri, options, io, dynamodb);
  const confirm = confirmerFor(io, options, 'vacuum');
  const format = tableFormat(job.table.format);
  const maintenance = format.maintenance;
  // A table whose log or metadata owns its root (with its --format) is the location itself:
  // only the folders above it must not be a table.
  await refuseEnclosingForeignTable(openedOf(job), { includeLocation: !format.ownsEverythingUnderRoot });
  const text = !options.json;
  if (text) {
    const r = job.request;
    io.out(
      `vacuum ${uri}${maintenance === undefined ? '' : ` (${maintenance.tableLabel})`}: ${r.dryRun ? 'DRY RUN, nothing will be deleted' : 'REAL RUN, objects will be DELETED'}; ${maintenance === undefined ? 'retention' : maintenance.describeRequest(r)} ${r.retentionHours} h, debris after ${r.debrisAgeHours} h, abandoned staging after ${r.abandonedAfterHours} h; state table: ${job.stateTable ?? 'none'}`,
    );
  }
  const plan = await planVacuumJob(job, io, (p) => {
    if (text) io.out(`  listed ${p.examined} objects, ${p.candidates.length} candidates so far`);
  });
  // Another format's table somewhere below the location: refuse the whole location, as compact does.
  refuseForeignAmong(job.store, openedOf(job).prefix, plan.foreignTables ?? []);
  // The format's maintenance refused the table or could not read its log: nothing of it will be deleted, so nothing is.
  for (const t of maintainedTablesOf(plan))
    if (t.error !== undefined) throw new TableNotVacuumedError(t.error.message);
  if (text) printVacuumPlan(io, plan);
  progress?.listed(plan.candidates.length);
  if (!plan.dryRun && plan.candidates.length > 0 && confirm !== undefined) {
    const total = plan.candidates.reduce((n, c) => n + c.size, 0);
    if (!(await confirm(`Delete these ${plan.candidates.length} objects (${formatBytes(total)})?`))) {
      throw new OperationCancelledError('Vacuum cancelled: nothing was deleted');
    }
  }
  // The table is given so the last-line check judges each candidate against its root, as the deployment's does.
  const report = await executeVacuum(
    {
      storeFor: () => progress?.counting(job.store) ?? job.store,
      services: () => job.services,
      tables: [job.table],
    },
    plan,
    {
      listLimit: Number.MAX_SAFE_INTEGER,
    },
  );
  const result: VacuumCliReport = {
    uri,
    stateTable: job.stateTable ?? null,
    ...report,
    kept: plan.kept,
  };
  if (options.json) io.out(JSON.stringify(result, null, 2));
  else printVacuumOutcome(io, result);
  for (const t of maintainedTablesOf(report))
    if (t.error !== undefined) throw new TableNotVacuumedError(t.error.message);
  if (report.failed.length > 0) {
    throw new MaintenanceIncompleteError(
      `${report.failed.length} objects could not be deleted (listed above); re-run vacuum to retry them`,
    );
  }
  return result;
}

/**
 * The format's own maintenance (its VACUUM, expire_snapshots or remove_orphan_files) refused the table or could
 * not read its log or metadata: nothing of the table was deleted by that step (exit 1).
 */
export class TableNotVacuumedError extends CompactorError {}

/** The order kinds are summed up in: vacuum's own, then each format's (as every report's `removed` has them). */
const KIND_ORDER: readonly CandidateKind[] = CANDIDATE_KINDS;

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
  // Listed keys the confinement rule refused are shown by name (escaped), every one: the operator must see them.
  const refused = plan.kept.filter((k) => isRefusedKeyReason(k.reason));
  const others = plan.kept.filter((k) => !isRefusedKeyReason(k.reason));
  if (refused.length > 0) {
    io.out(`refused: ${refused.length} listed key(s) that are never deleted here (shown escaped):`);
    for (const k of refused.slice(0, PRINTED_ROWS)) io.out(`  ${printable(k.key)}: ${printable(k.reason)}`);
    if (refused.length > PRINTED_ROWS)
      io.out(`  … and ${refused.length - PRINTED_ROWS} more (--json lists every one)`);
  }
  if (others.length > 0) {
    io.out(`kept: ${others.length} that are not due or cannot be judged here, e.g.`);
    for (const k of others.slice(0, 5)) io.out(`  ${printable(k.key)}: ${printable(k.reason)}`);
  }
  // Each table's own maintenance, in its format's words.
  for (const { maintenance, tables } of formatSectionsOf(plan)) {
    for (const t of tables as readonly { readonly planned?: unknown }[]) {
      if (t.planned === undefined) continue;
      for (const line of maintenance.describePlanned(t.planned, plan.dryRun)) io.out(line);
    }
  }
  for (const note of plan.notes) io.out(`note: ${printable(note)}`);
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
  for (const s of report.spared) io.out(`  spared ${printable(s.key)}: ${printable(s.reason)}`);
  for (const f of report.failed) io.out(`  FAILED ${printable(f.key)}: ${printable(f.message)}`);
}

/** The registered formats' `vacuum` options (TableMaintenance.cli), in registration order. */

/** The URI's location as a one-table config (the vacuum core works on configured tables). */
function tableOf(
  uri: string,
  opened: OpenedStore,
  name: string | undefined,
  format: TableFormatName,
  settings: TableFormatSettings,
): TableConfig {
  const [table] = parseTableConfigs([
    { name: name ?? defaultName(uri), bucket: bucketOf(uri), prefix: opened.prefix, format, ...settings },
  ]);
  return table as TableConfig;
}
