// Vacuum: finds what may go — retired input versions, trash copies, staging of failed runs, settled entries
// of the store journal, writer debris — as data with a reason each, and deletes only what is past its age
// and never the live version of a key.
//
// Work is split into steps (per bucket: journaled runs, trash, staging, store-journal entries, our
// unfinished uploads; per table: writer debris, writers' unfinished uploads), each listed page by page and
// judged by one method of VacuumPass. A call examines at most `maxObjects` objects and returns a cursor where
// it stopped, so a large lake is vacuumed across invocations and a retried invocation simply re-lists from its
// cursor (every decision is re-derived). What a table's format leaves behind (retired versions, trash copies,
// writer debris) and how it is removed are the format's vacuum rules (TableFormat.vacuum; Hive's in
// formats/hive/vacuum.ts). The per-table steps never touch another format's table (at, above or below
// the configured root): its log, not the listing, owns those files.
//
// A table whose format maintains its tables itself (TableFormat.maintenance: a VACUUM, or
// expire_snapshots and remove_orphan_files, in its format folder) has one per-table step instead, which runs
// that maintenance: planning as a dry run (deletes nothing), executing for real with the planning instant as its
// clock, so what only became due after planning waits for the next run. A refusal, an unreadable log or metadata,
// or a service the entry point lacks (a catalog client, DynamoDB access) is that table's error in the report,
// under the format's own report field, never the whole vacuum's. The work-root steps (staging, trash, journal of
// our own runs) are every table's.
import pLimit from 'p-limit';
import { z } from 'zod';
import type { Clock } from '../../ports/clock.js';
import { type GroupJournalEntry, isSettled, type Journal } from '../../ports/journal.js';
import type { ObjectInfo, ObjectStore } from '../../ports/object-store.js';
import { InvalidInputError } from '../errors.js';
import {
  directoryOf,
  type ForeignTable,
  ForeignTableLedger,
  type FoundForeignTable,
  foreignFormatOfKey,
  foreignTableNote,
} from '../formats/foreign-tables.js';
import {
  FORMAT_CANDIDATE_KINDS,
  FORMAT_VACUUM_OPTIONS,
  type FormatCandidateKind,
  type FormatMaintenanceOutcomes,
  type FormatMaintenancePlans,
  type FormatServices,
  formatOfTable,
  MAINTAINING_FORMATS,
  tableFormat,
} from '../formats/index.js';
import type {
  MaintenanceCandidate,
  MaintenanceOutcomeEntry,
  MaintenancePlanEntry,
  MaintenanceTableError,
  MaintenanceTablePlan,
  TableFormat,
  TableMaintenance,
  VacuumDecision,
  VacuumRules,
} from '../formats/table-format.js';
import { keyRefusal, refusedKeyReason } from '../keys.js';
import { relativeToRoot } from '../partition.js';
import { findTableForKey, type TableConfig } from '../table-config.js';
import {
  mayBeWorkArea,
  parsePlanKey,
  parsePreviewKey,
  parseStagingKey,
  parseStoreJournalEntryKey,
  parseTrashKey,
  storeJournalRunsPrefix,
  workFolder,
} from '../workflow/layout.js';
import { HOUR, hoursAgo, iso, TERMINAL_RETIRED } from './ages.js';

export type { VacuumDecision };

/**
 * Retention below which vacuum refuses to run unless told otherwise: a week covers a reader that
 * planned a query before the commit, weekend incidents, and restoring a wrongly retired file by hand.
 */
export const MIN_RETENTION_HOURS = 168;

/** Input of a vacuum run (console input, or the scheduled rule's Input). Unknown keys are refused. */
export const vacuumInputSchema = z.strictObject({
  /** Table names to vacuum; every configured table when omitted. */
  tables: z.array(z.string().min(1)).min(1).optional(),
  /** List candidates with sizes and reasons, delete nothing. Defaults to true: deleting is opt-in. */
  dryRun: z.boolean().default(true),
  /** How long retired inputs and trash copies are kept after their run retired them. */
  retentionHours: z.number().positive().default(MIN_RETENTION_HOURS),
  /**
   * The options of each format's own maintenance (`deltaRetentionHours`; `icebergOlderThanHours`,
   * `icebergRetainLast`, `icebergOrphanGraceHours`), declared by the formats (TableMaintenance.requestOptions).
   */
  ...FORMAT_VACUUM_OPTIONS,
  /**
   * Required to run with `retentionHours` (or `deltaRetentionHours`) below {@link MIN_RETENTION_HOURS}, or with
   * `icebergOrphanGraceHours` below 72; a format may also turn its own retention check off with it (a table
   * property below the minimum is then used).
   */
  allowRetentionBelowMinimum: z.boolean().default(false),
  /** Age after which writer debris (`_temporary/`, `.spark-staging-*`, unfinished uploads) is removed. */
  debrisAgeHours: z.number().positive().default(72),
  /** A run stuck before publishing this long is abandoned; its staging is removed. */
  abandonedAfterHours: z.number().positive().default(24),
  /** Objects examined by one call before it returns a cursor. */
  maxObjects: z.number().int().positive().max(10_000_000).default(100_000),
  /** Where the previous call stopped (its `cursor`). */
  cursor: z.string().min(1).optional(),
});
export type VacuumInput = z.input<typeof vacuumInputSchema>;
export type VacuumRequest = z.output<typeof vacuumInputSchema>;

/**
 * Validates a vacuum input and applies the retention gate.
 * @throws InvalidInputError listing every invalid field, or refusing a retention below the minimum.
 */
export function parseVacuumRequest(input: unknown): VacuumRequest {
  const parsed = vacuumInputSchema.safeParse(input ?? {});
  if (!parsed.success) {
    throw new InvalidInputError(
      'The vacuum input is invalid; fix these fields',
      parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  const request = parsed.data;
  if (request.retentionHours < MIN_RETENTION_HOURS && !request.allowRetentionBelowMinimum) {
    throw new InvalidInputError(
      `retentionHours ${request.retentionHours} is below the minimum of ${MIN_RETENTION_HOURS} h (7 days): readers that listed the table before a commit, and anyone restoring a retired file, need it. Use ${MIN_RETENTION_HOURS} or more, or pass "allowRetentionBelowMinimum": true if you really mean it`,
    );
  }
  // Each format's own minimums (a retention, an orphan grace period), in registration order.
  for (const { maintenance } of MAINTAINING_FORMATS) {
    const refusal = maintenance.requestRefusal(request);
    if (refusal !== undefined) throw new InvalidInputError(refusal);
  }
  return request;
}

/**
 * What a candidate is; decides how it is removed. A format's own kinds ({@link FormatCandidateKind}: expired
 * tombstones, expired snapshots' and orphan files …) are never removed one by one: the
 * table's own maintenance, run again at execution, removes them.
 */
export type CandidateKind =
  | 'retired-version'
  | 'trash'
  | 'staging'
  | 'journal'
  | 'preview'
  | 'debris'
  | 'upload'
  | FormatCandidateKind;

/** Candidate kinds vacuum removes itself, in report order (each format's own kinds follow them). */
const OWN_KINDS = ['retired-version', 'trash', 'staging', 'journal', 'preview', 'debris', 'upload'] as const;

/** Candidate kinds that only a table's own maintenance removes (see {@link CandidateKind}). */
const FORMAT_KINDS: readonly CandidateKind[] = FORMAT_CANDIDATE_KINDS;

/** One thing vacuum would remove, and why. */
export interface VacuumCandidate {
  readonly kind: CandidateKind;
  readonly bucket: string;
  readonly key: string;
  /** Bytes freed (0 for unfinished uploads: their parts are not listed). */
  readonly size: number;
  readonly reason: string;
  readonly table?: string;
  /** `retired-version`: the version to delete permanently. */
  readonly versionId?: string;
  /** ETag at listing (or as planned, for retired versions): deletes are conditioned on it. */
  readonly etag?: string;
  /** `upload`: the multipart upload to abort. */
  readonly uploadId?: string;
}

/** Something vacuum looked at and kept although it might look removable (in progress, too young, live). */
export interface VacuumKept {
  readonly bucket: string;
  readonly key: string;
  readonly reason: string;
}

/** Journal states in which nothing of a group is published yet (its staging may be abandoned). */
const BEFORE_PUBLISH: readonly string[] = ['planned', 'staged', 'verified'];

/** Decides over one staged object, given its group's journal entry (if any). */
export function decideStaging(
  object: Pick<ObjectInfo, 'lastModified'>,
  entry: GroupJournalEntry | undefined,
  now: number,
  abandonedMs: number,
): VacuumDecision {
  const age = now - object.lastModified.getTime();
  if (entry === undefined) {
    return age >= abandonedMs
      ? {
          action: 'delete',
          reason: `staging without a journal entry, written ${hoursAgo(now, object.lastModified.getTime())}`,
        }
      : { action: 'keep', reason: 'staging without a journal entry yet: may be a run starting now' };
  }
  if (entry.state === 'aborted' && entry.undo === 'pending') {
    // A delete-rebuild undo re-creates retired inputs from these very outputs.
    return {
      action: 'keep',
      reason: `run ${entry.runId} is undoing a partial publish: it may rebuild inputs from these outputs`,
    };
  }
  if (entry.state === 'aborted')
    return { action: 'delete', reason: `staged output of aborted run ${entry.runId}` };
  if (TERMINAL_RETIRED.includes(entry.state)) {
    return { action: 'delete', reason: `staging left after run ${entry.runId} published its outputs` };
  }
  if (BEFORE_PUBLISH.includes(entry.state)) {
    return now - entry.updatedAt >= abandonedMs && age >= abandonedMs
      ? {
          action: 'delete',
          reason: `run ${entry.runId} abandoned in ${entry.state} since ${iso(entry.updatedAt)}; a rollback would discard this`,
        }
      : { action: 'keep', reason: `run ${entry.runId} is in progress (${entry.state})` };
  }
  return {
    action: 'keep',
    reason: `run ${entry.runId} is ${entry.state}: resume its commit, which needs the staged outputs to roll forward`,
  };
}

/**
 * Decides over one entry object of the store journal (`lake-compactor compact` runs), given the entry as
 * the journal reads it. An unsettled group's entry is what a later run settles it from: always kept. A
 * settled one is history only, removed once it is older than the retention (as its trash is by then).
 * An object the given journal does not know (another journal's run) is not judged here.
 */
export function decideJournalEntry(
  entry: GroupJournalEntry | undefined,
  now: number,
  retentionMs: number,
): VacuumDecision {
  if (entry === undefined) return { action: 'ignore' };
  if (!isSettled(entry)) {
    return {
      action: 'keep',
      reason: `group ${entry.groupId} of run ${entry.runId} is ${entry.state}, not settled: the next compact (or lake-compactor settle) settles it from this entry`,
    };
  }
  return now - entry.updatedAt >= retentionMs
    ? {
        action: 'delete',
        reason: `journal entry of group ${entry.groupId} of run ${entry.runId}, settled (${entry.state}) at ${iso(entry.updatedAt)} (${hoursAgo(now, entry.updatedAt)})`,
      }
    : {
        action: 'keep',
        reason: `journal entry of run ${entry.runId}, settled ${hoursAgo(now, entry.updatedAt)}: inside the retention`,
      };
}

/**
 * Why a journal entry is not held to be its table's word, or undefined when it is: its table is configured in
 * this bucket, and every key it names (inputs, outputs) lies under that table's root. lake-compactor only ever
 * journals a table's own keys, so an entry naming another table's key was not written by it — a forged file in
 * the work area, or an item edited by hand — and nothing it names is deleted.
 */
export function journalEntryOutsideItsTable(
  entry: Pick<GroupJournalEntry, 'runId' | 'groupId' | 'table' | 'inputs' | 'outputs'>,
  tables: readonly TableConfig[],
  bucket: string,
): string | undefined {
  const which = `journal entry of group ${entry.groupId} of run ${entry.runId}`;
  const table = tables.find((t) => t.name === entry.table);
  if (table === undefined) return `${which} names table "${entry.table}", which is not configured`;
  if (table.bucket !== undefined && table.bucket !== bucket) {
    return `${which} lies in bucket ${bucket}, but its table ${table.name} is in ${table.bucket}`;
  }
  const keys = [...entry.inputs.map((i) => i.key), ...entry.outputs.map((o) => o.finalKey)];
  const stray = keys.find((key) => relativeToRoot(key, table.prefix) === undefined);
  return stray === undefined
    ? undefined
    : `${which} names ${stray}, outside its table ${table.name} (${rootDir(table) || 'the bucket root'}): lake-compactor never journals another table's keys, so something else wrote it`;
}

function unreadableRun(runId: string): string {
  return `the journal of run ${runId} could not be read (see notes): kept until it can`;
}

/**
 * What a format's own maintenance may need that core cannot build (AWS SDK clients): the composition root's
 * factories, as the entry points have always handed them in.
 */
export interface VacuumServices {
  /**
   * The I/O every format's maintenance may need in `bucket` (FormatServices, composed by the registry from what each
   * format's `forTable` asks for: DynamoDB commit tables, per bucket since an entry's table path names it; Glue and
   * REST catalog clients). A service left out makes a table that needs it that table's error (nothing of it
   * deleted), never maintained another way: a table declared with a DynamoDB commit table is not vacuumed from a
   * log that may lack a decided commit, a table with a catalog is not expired through the path catalog, whose
   * commits its readers never see. Absent: no services at all.
   */
  readonly services?: (bucket: string) => FormatServices;
}

export interface VacuumDeps extends VacuumServices {
  readonly tables: readonly TableConfig[];
  /**
   * The deployment's work root (see workflow/layout.ts): the only work area vacuum lists and judges. Another
   * deployment's work root in the same bucket is never a candidate, whatever its journal-less staging or trash.
   */
  readonly workRoot: string;
  /**
   * The store of `table`'s objects (and the work root) in `bucket`, or of the work root alone without `table`: each
   * table's objects are judged and removed through its own store, which (with per-table isolation) reaches nothing
   * of another table.
   */
  readonly storeFor: (bucket: string, table?: string) => ObjectStore;
  /**
   * The journal of a bucket's runs, by which the work area's trash, staging and store-journal entries are judged:
   * the deployment's (DynamoDB) journal and, for `lake-compactor compact` runs, the store journal in the bucket.
   */
  readonly journalFor: (bucket: string) => Journal;
  /**
   * The only journal whose word deletes an object version, permanently: the deployment's state table, which the
   * writers of a table cannot write. Never a journal kept in the bucket (the store journal of `lake-compactor
   * compact`, which never retires by version anyway): whoever can put an object under the work area could forge
   * one, and with it the version history of every table in the bucket (SECURITY-NOTES M3). Its entries are
   * further held to their own table: each key under that table's root, in that table's bucket. Absent: no
   * retired version is looked for (the CLI without a state table).
   */
  readonly retiredVersionJournalFor?: (bucket: string) => Journal;
  readonly clock: Clock;
  /** Asked between pages; true stops the call early with a cursor (e.g. the Lambda's time is running out). */
  readonly shouldStop?: () => boolean;
}

/** The services a format's maintenance gets in `bucket`: the entry point's, as it composed them (none without). */
function servicesIn(deps: VacuumServices, bucket: string): FormatServices {
  return deps.services?.(bucket) ?? {};
}

type Step =
  | {
      readonly id: string;
      readonly kind: 'runs' | 'trash' | 'staging' | 'journal' | 'previews' | 'work-uploads';
      readonly bucket: string;
    }
  | {
      readonly id: string;
      readonly kind: 'debris' | 'table-uploads';
      readonly bucket: string;
      readonly table: TableConfig;
    }
  | {
      readonly id: string;
      /** The table's format maintains it itself: one step runs that maintenance. */
      readonly kind: 'format';
      readonly bucket: string;
      readonly table: TableConfig;
      readonly format: TableFormat & { readonly maintenance: TableMaintenance };
    };

interface Cursor {
  readonly step: string;
  readonly token?: string;
}

/** The steps of a vacuum over `tables`, in a fixed order (the cursor names one). */
function stepsOf(tables: readonly TableConfig[]): Step[] {
  const steps: Step[] = [];
  const buckets = [...new Set(tables.map((t) => t.bucket as string))];
  for (const bucket of buckets) {
    for (const kind of ['runs', 'trash', 'staging', 'journal', 'previews', 'work-uploads'] as const) {
      steps.push({ id: `${kind}:${bucket}`, kind, bucket });
    }
  }
  for (const table of tables) {
    const bucket = table.bucket as string;
    // The step is named by the format (`<format>:<table>`): cursors handed out before keep naming it.
    const format = MAINTAINING_FORMATS.find((f) => f.name === table.format);
    if (format !== undefined) {
      steps.push({ id: `${format.name}:${table.name}`, kind: 'format', bucket, table, format });
      continue;
    }
    steps.push({ id: `debris:${table.name}`, kind: 'debris', bucket, table });
    steps.push({ id: `table-uploads:${table.name}`, kind: 'table-uploads', bucket, table });
  }
  return steps;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(raw: string, steps: readonly Step[]): { index: number; token?: string } {
  let cursor: Cursor;
  try {
    cursor = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Cursor;
  } catch {
    throw new InvalidInputError(
      'The vacuum cursor is not one this function returned; pass the `cursor` of the previous result unchanged, or omit it to start over',
    );
  }
  const index = steps.findIndex((s) => s.id === cursor.step);
  if (index === -1) {
    throw new InvalidInputError(
      `The vacuum cursor points at step "${cursor.step}", which this table selection does not have; pass the same tables as the call that returned it, or omit the cursor`,
    );
  }
  return cursor.token === undefined ? { index } : { index, token: cursor.token };
}

/** An error that stopped one table's vacuum, and only that table's. */
export type TableError = MaintenanceTableError;

/** One table's entry in a format's plan section (see {@link FormatMaintenancePlans}), as vacuum handles any. */
type AnyPlanEntry = MaintenancePlanEntry<MaintenanceTablePlan, unknown>;
/** One table's entry in a format's report section (see {@link FormatMaintenanceOutcomes}), as vacuum handles any. */
type AnyOutcomeEntry = MaintenanceOutcomeEntry<unknown>;

/**
 * A format's section of a plan or report (`deltaTables` …), by its report key. The sections are typed per format
 * (FormatMaintenancePlans); vacuum moves their entries without looking inside, so it reads them as any entry.
 */
function sectionOf<T>(sections: object, key: string): readonly T[] {
  return ((sections as Readonly<Record<string, readonly T[] | undefined>>)[key] ?? []) as readonly T[];
}

/**
 * The candidates of one call, before anything is deleted: printable, replayable data. Each format that maintains
 * its tables itself adds its section (FormatMaintenancePlans: `deltaTables`, `icebergTables`): the tables of that
 * format this call reached, each one's dry run or why it failed.
 */
export interface VacuumPlan extends FormatMaintenancePlans {
  readonly dryRun: boolean;
  readonly retentionHours: number;
  readonly candidates: readonly VacuumCandidate[];
  readonly kept: readonly VacuumKept[];
  /** Objects (and runs, uploads) examined. */
  readonly examined: number;
  /** Steps whose store cannot do what they need (e.g. no multipart listing), foreign tables left alone. */
  readonly notes: readonly string[];
  /**
   * Foreign tables met by the per-table steps — a configured table that is (or lies in) one was
   * skipped, one found below a configured root was left alone — with the configured table's name.
   */
  readonly foreignTables?: readonly FoundForeignTable[];
  /** Steps that threw and were given up (the rest of the pass went on): nothing more of them was judged. */
  readonly failedSteps?: readonly VacuumStepFailure[];
  /** Present when there is more to do: pass it as `cursor` to the next call. */
  readonly cursor?: string;
}

/** A step of the pass that threw: its table's (or, for the work area's steps, its bucket's) failure. */
export interface VacuumStepFailure {
  /** The step (`debris:<table>`, `trash:<bucket>` …). */
  readonly step: string;
  readonly bucket: string;
  /** The table whose step it was; absent for the work area's steps. */
  readonly table?: string;
  readonly error: TableError;
}

export interface PlanVacuumOptions {
  /**
   * Stop where the current unit's steps end — the work area's (every bucket's runs, trash, staging, journal and
   * uploads) or one table's — with the cursor of the next unit: one call covers one unit, so an entry point can
   * give each table its own attempt and time budget and persist its place between tables
   * (shared/maintenance-runtime.ts). The pass's order is `deps.tables`' order.
   */
  readonly unit?: boolean;
  /**
   * A step that throws (a listing denied, a store error) becomes that step's failure in `failedSteps`, and the pass
   * goes on with the next step, so one bucket's or table's trouble never stops another's vacuum. Without it the
   * error is thrown (the CLI, one table, reports it as it is).
   */
  readonly isolate?: boolean;
}

/**
 * Lists what may be removed, up to the request's budget. Reads only; deletes nothing. The steps run in a fixed
 * order, page by page, from the cursor on; the call stops with a new cursor once its budget is spent.
 */
export async function planVacuum(
  deps: VacuumDeps,
  request: VacuumRequest,
  options: PlanVacuumOptions = {},
): Promise<VacuumPlan> {
  const tables = selectTables(deps.tables, request.tables);
  const steps = stepsOf(tables);
  const pass = new VacuumPass(deps, request, tables);
  const start = request.cursor === undefined ? { index: 0 } : decodeCursor(request.cursor, steps);
  const unit = unitOf(steps[start.index]);
  let index = start.index;
  let token: string | undefined = 'token' in start ? start.token : undefined;
  while (index < steps.length) {
    const step = steps[index] as Step;
    if ((options.unit === true && unitOf(step) !== unit) || pass.budgetSpent()) {
      return pass.result(encodeCursor(token === undefined ? { step: step.id } : { step: step.id, token }));
    }
    let next: string | undefined;
    try {
      next = await pass.judgePage(step, token);
    } catch (err) {
      if (options.isolate !== true) throw err;
      pass.stepFailed(step, err);
      next = undefined;
    }
    if (next === undefined) {
      index++;
      token = undefined;
    } else {
      token = next;
    }
  }
  return pass.result(undefined);
}

/** The unit a step belongs to: its table's name, or undefined for the work area's steps. */
function unitOf(step: Step | undefined): string | undefined {
  return step !== undefined && 'table' in step ? step.table.name : undefined;
}

/**
 * The table whose steps a call from vacuum `cursor` (undefined: the pass's start) works on, over `tables` in their
 * order, selected by `request`; undefined for the work area's steps.
 * @throws InvalidInputError for a cursor this selection does not have.
 */
export function vacuumUnitAt(
  tables: readonly TableConfig[],
  request: Pick<VacuumRequest, 'tables'>,
  cursor: string | undefined,
): string | undefined {
  const steps = stepsOf(selectTables(tables, request.tables));
  return unitOf(steps[cursor === undefined ? 0 : decodeCursor(cursor, steps).index]);
}

/**
 * The cursor of the first step after `table`'s (undefined: after the work area's), over `tables` in their order,
 * selected by `request`: where a pass goes on when that unit's turn is given up. Undefined when nothing comes after
 * it (the pass is complete).
 */
export function vacuumCursorAfter(
  tables: readonly TableConfig[],
  request: Pick<VacuumRequest, 'tables'>,
  table: string | undefined,
): string | undefined {
  const steps = stepsOf(selectTables(tables, request.tables));
  const last = steps.findLastIndex((s) => unitOf(s) === table);
  const next = last === -1 ? undefined : steps[last + 1];
  return next === undefined ? undefined : encodeCursor({ step: next.id });
}

type BucketStep = Exclude<Step, { readonly table: TableConfig }>;
type TableStep = Extract<Step, { readonly kind: 'debris' | 'table-uploads' }>;
type FormatStep = Extract<Step, { readonly kind: 'format' }>;

/**
 * One call's judgement: what it found so far (candidates, kept, notes, foreign tables), how much it examined,
 * and one method per kind of step, each judging one page and returning the next page's token.
 */
class VacuumPass {
  private readonly candidates: VacuumCandidate[] = [];
  private readonly kept: VacuumKept[] = [];
  private readonly notes: string[] = [];
  /** Each format's planned tables, by its report key, in the order the steps reached them. */
  private readonly formatTables = new Map<string, AnyPlanEntry[]>();
  private readonly failedSteps: VacuumStepFailure[] = [];
  private examined = 0;
  private readonly now: number;
  private readonly retentionMs: number;
  private readonly debrisMs: number;
  private readonly abandonedMs: number;
  private readonly selected: ReadonlySet<string>;
  /** Selected tables whose format's log or catalog owns their files: their own step judges inputs. */
  private readonly ownStepNames: ReadonlySet<string>;
  private readonly ledger: ForeignTableLedger;
  /** Each run's journal entries, asked once per call (trash and staging keys of one run share them). */
  private readonly runs = new Map<string, Promise<GroupJournalEntry[] | undefined>>();

  constructor(
    private readonly deps: VacuumDeps,
    private readonly request: VacuumRequest,
    tables: readonly TableConfig[],
  ) {
    this.now = deps.clock.now();
    this.retentionMs = request.retentionHours * HOUR;
    this.debrisMs = request.debrisAgeHours * HOUR;
    this.abandonedMs = request.abandonedAfterHours * HOUR;
    this.selected = new Set(tables.map((t) => t.name));
    this.ownStepNames = new Set(
      tables.filter((t) => tableFormat(t.format).ownsEverythingUnderRoot).map((t) => t.name),
    );
    this.ledger = new ForeignTableLedger(deps.storeFor);
  }

  /** True once the call examined its `maxObjects`, or its caller asks it to stop. */
  budgetSpent(): boolean {
    return this.examined >= this.request.maxObjects || this.deps.shouldStop?.() === true;
  }

  /** Records a step that threw: noted, and the pass goes on without the rest of it. */
  stepFailed(step: Step, err: unknown): void {
    const error = tableErrorOf(err);
    const table = 'table' in step ? step.table.name : undefined;
    this.failedSteps.push({
      step: step.id,
      bucket: step.bucket,
      ...(table === undefined ? {} : { table }),
      error,
    });
    this.notes.push(
      `${table ?? step.bucket}: step ${step.id} failed (${error.name}: ${error.message}); nothing more of it was judged, and the vacuum went on`,
    );
  }

  /** Judges one page of `step` from `token`: the next page's token, or undefined when the step is done. */
  async judgePage(step: Step, token: string | undefined): Promise<string | undefined> {
    const page = { token, maxKeys: Math.min(1000, this.request.maxObjects - this.examined) };
    if (step.kind === 'format') return this.judgeFormat(step);
    if ('table' in step) {
      // The table is (or lies in) a foreign table: none of its objects is ours to judge.
      if ((await this.enclosing(step, rootDir(step.table))) !== undefined) return undefined;
      return step.kind === 'debris' ? this.judgeDebris(step, page) : this.judgeUploads(step, page);
    }
    switch (step.kind) {
      case 'runs':
        return this.judgeRetiredVersions(step, page);
      case 'trash':
        return this.judgeTrash(step, page);
      case 'staging':
        return this.judgeStaging(step, page);
      case 'journal':
        return this.judgeJournal(step, page);
      case 'previews':
        return this.judgePreviews(step, page);
      case 'work-uploads':
        return this.judgeUploads(step, page);
    }
  }

  /**
   * Retired input versions of journaled runs past the retention (versioned buckets' delete mode). The plans in the
   * work area only say which runs to ask about; what is deleted is what the trusted journal says (see
   * `retiredVersionJournalFor`), and only keys of the entry's own table.
   */
  private async judgeRetiredVersions(step: BucketStep, page: PageRequest): Promise<string | undefined> {
    const journal = this.deps.retiredVersionJournalFor?.(step.bucket);
    if (journal === undefined) return undefined;
    const { workRoot } = this.deps;
    const listed = await this.deps.storeFor(step.bucket).list(workFolder(workRoot, 'plans'), page);
    this.examined += listed.objects.length;
    // Items files, and plans younger than the retention (nothing of theirs can be due yet), are skipped.
    const runIds = listed.objects.flatMap((plan) => {
      const runId = parsePlanKey(workRoot, plan.key);
      return runId === undefined || this.now - plan.lastModified.getTime() < this.retentionMs ? [] : [runId];
    });
    // One journal query per run: a few in flight, so a page of a thousand runs takes seconds, not minutes.
    const limit = pLimit(8);
    const journals = await Promise.all(
      runIds.map((runId) => limit(() => this.readRun(journal, step.bucket, runId, 'its retired versions'))),
    );
    for (const entries of journals) {
      for (const entry of entries ?? []) {
        if (!this.selected.has(entry.table)) continue;
        const outside = journalEntryOutsideItsTable(entry, this.deps.tables, step.bucket);
        if (outside !== undefined) {
          this.notes.push(`${entry.table}: ${outside}; no version it names is deleted`);
          continue;
        }
        // A self-maintained table's inputs stay in place, removed from its log or snapshot: its own step (a
        // VACUUM, expire_snapshots) judges them.
        if (this.ownStepNames.has(entry.table)) continue;
        const rules = this.rulesOf(entry.table);
        const { due, kept: young } = rules.retiredInputs(entry, this.now, this.retentionMs);
        for (const d of due) {
          this.candidates.push({
            kind: 'retired-version',
            bucket: step.bucket,
            key: d.key,
            versionId: d.versionId,
            etag: d.etag,
            size: d.size,
            reason: d.reason,
            table: entry.table,
          });
        }
        for (const k of young) this.kept.push({ bucket: step.bucket, ...k });
      }
    }
    return listed.nextToken;
  }

  /** Copies in the work root's trash, judged by the journal entry of the group that made them. */
  private async judgeTrash(step: BucketStep, page: PageRequest): Promise<string | undefined> {
    const { workRoot } = this.deps;
    const listed = await this.deps.storeFor(step.bucket).list(workFolder(workRoot, 'trash'), page);
    this.examined += listed.objects.length;
    for (const object of listed.objects) {
      const trashed = parseTrashKey(workRoot, object.key);
      if (trashed === undefined) continue;
      const { runId, inputKey } = trashed;
      const entries = await this.listRun(step.bucket, runId);
      if (entries === undefined) {
        this.kept.push({ bucket: step.bucket, key: object.key, reason: unreadableRun(runId) });
        continue;
      }
      const entry = entries.find((e) => e.inputs.some((i) => i.key === inputKey));
      const table = entry?.table ?? findTableForKey(this.deps.tables, step.bucket, inputKey)?.name;
      if (table === undefined ? this.request.tables !== undefined : !this.selected.has(table)) continue;
      const outside =
        entry === undefined ? undefined : journalEntryOutsideItsTable(entry, this.deps.tables, step.bucket);
      if (outside !== undefined) {
        // Not an entry lake-compactor wrote: its word neither keeps nor deletes anything, and the copy waits.
        this.kept.push({ bucket: step.bucket, key: object.key, reason: `${outside}: not judged by it` });
        continue;
      }
      const decision = this.rulesOf(table).trashCopy(object, entry, this.now, this.retentionMs);
      this.record(step.bucket, object, 'trash', decision, table);
    }
    return listed.nextToken;
  }

  /** Staged outputs of runs that failed, were abandoned, or published and left them. */
  private async judgeStaging(step: BucketStep, page: PageRequest): Promise<string | undefined> {
    const { workRoot } = this.deps;
    const listed = await this.deps.storeFor(step.bucket).list(workFolder(workRoot, 'staging'), page);
    this.examined += listed.objects.length;
    for (const object of listed.objects) {
      const staged = parseStagingKey(workRoot, object.key);
      if (staged === undefined) continue;
      const { runId, groupId } = staged;
      const entries = await this.listRun(step.bucket, runId);
      if (entries === undefined) {
        this.kept.push({ bucket: step.bucket, key: object.key, reason: unreadableRun(runId) });
        continue;
      }
      const entry = entries.find((e) => e.groupId === groupId);
      if (entry === undefined ? this.request.tables !== undefined : !this.selected.has(entry.table)) continue;
      const decision = decideStaging(object, entry, this.now, this.abandonedMs);
      this.record(step.bucket, object, 'staging', decision, entry?.table);
    }
    return listed.nextToken;
  }

  /** Settled entries of the store journal (`lake-compactor compact` runs) older than the retention. */
  private async judgeJournal(step: BucketStep, page: PageRequest): Promise<string | undefined> {
    const { workRoot } = this.deps;
    const listed = await this.deps.storeFor(step.bucket).list(storeJournalRunsPrefix(workRoot), page);
    this.examined += listed.objects.length;
    for (const object of listed.objects) {
      const id = parseStoreJournalEntryKey(workRoot, object.key);
      if (id === undefined) continue;
      const entries = await this.listRun(step.bucket, id.runId);
      if (entries === undefined) {
        this.kept.push({ bucket: step.bucket, key: object.key, reason: unreadableRun(id.runId) });
        continue;
      }
      const entry = entries.find((e) => e.groupId === id.groupId);
      if (entry === undefined || !this.selected.has(entry.table)) continue;
      const decision = decideJournalEntry(entry, this.now, this.retentionMs);
      this.record(step.bucket, object, 'journal', decision, entry.table);
    }
    return listed.nextToken;
  }

  /**
   * Rewrite dry-run previews (`previews/<run>.json`, rows of a table written for the operator to read) past the
   * retention: the owned bucket's lifecycle rule expires them too, this removes them from a bucket brought to the
   * deployment. No journal knows a dry run, so a vacuum of selected tables leaves them to a vacuum of all.
   */
  private async judgePreviews(step: BucketStep, page: PageRequest): Promise<string | undefined> {
    const { workRoot } = this.deps;
    const listed = await this.deps.storeFor(step.bucket).list(workFolder(workRoot, 'previews'), page);
    this.examined += listed.objects.length;
    if (this.request.tables !== undefined) return listed.nextToken;
    for (const object of listed.objects) {
      if (parsePreviewKey(workRoot, object.key) === undefined) continue;
      const at = object.lastModified.getTime();
      const decision: VacuumDecision =
        this.now - at >= this.retentionMs
          ? { action: 'delete', reason: `rewrite dry-run preview, written ${hoursAgo(this.now, at)}` }
          : {
              action: 'keep',
              reason: `rewrite dry-run preview written ${hoursAgo(this.now, at)}: kept for the operator until the retention`,
            };
      this.record(step.bucket, object, 'preview', decision, undefined);
    }
    return listed.nextToken;
  }

  /** Writer scratch below a table root, past its age; foreign tables' logs and metadata met on the way are noted. */
  private async judgeDebris(step: TableStep, page: PageRequest): Promise<string | undefined> {
    const { table } = step;
    const listed = await this.deps.storeFor(step.bucket, table.name).list(rootDir(table), page);
    this.examined += listed.objects.length;
    const rules = this.rulesOf(table.name);
    for (const object of listed.objects) {
      const relative = relativeToRoot(object.key, table.prefix) ?? object.key;
      // A work area (ours, or another deployment's in the same bucket) is not the table's: never judged here.
      if (table.prefix === '' && mayBeWorkArea(relative)) continue;
      const marker = foreignFormatOfKey(object.key);
      if (marker !== undefined) this.foreign(step, { ...marker, evidenceKey: object.key }, true);
      const debris = rules.writerDebris(relative);
      if (debris === undefined) continue;
      // Scratch inside a foreign table (nested below the root) is that table's to clean up.
      if ((await this.enclosing(step, `${rootDir(table)}${debris.owner}`)) !== undefined) continue;
      const at = object.lastModified.getTime();
      const decision: VacuumDecision =
        this.now - at >= this.debrisMs
          ? { action: 'delete', reason: `writer scratch, written ${hoursAgo(this.now, at)}` }
          : {
              action: 'keep',
              reason: `writer scratch written ${hoursAgo(this.now, at)}: a writer may still use it`,
            };
      this.record(step.bucket, object, 'debris', decision, table.name);
    }
    return listed.nextToken;
  }

  /**
   * A table's own maintenance (its format's) as a dry run: reads its log or metadata, lists the whole root and
   * plans. Not paged — it needs the whole table — so it runs whole once started, and counts what it listed against
   * the budget. Any failure (a refusal, an unreadable log, a missing service, a store error) is this table's error,
   * and the vacuum goes on.
   */
  private async judgeFormat(step: FormatStep): Promise<undefined> {
    const { table, format } = step;
    const { maintenance } = format;
    const plan = maintenance.planOf(
      { ...table, name: table.name, bucket: step.bucket, prefix: table.prefix },
      this.request,
      this.now,
    );
    const section = this.formatTables.get(maintenance.reportKey) ?? [];
    this.formatTables.set(maintenance.reportKey, section);
    try {
      const store = this.deps.storeFor(step.bucket, table.name);
      const run = await maintenance.dryRun(store, plan, servicesIn(this.deps, step.bucket));
      this.examined += run.examined;
      section.push({ ...plan, planned: run.summary });
      for (const c of run.candidates) this.candidates.push(asCandidate(c));
      for (const k of run.kept) this.kept.push(k);
      for (const note of run.notes) this.notes.push(`${table.name}: ${note}`);
    } catch (err) {
      const error = tableErrorOf(err);
      section.push({ ...plan, error });
      this.notes.push(`${table.name}: ${maintenance.errorNote(error)}`);
    }
    return undefined;
  }

  /** Multipart uploads never finished: ours under the work root, or writers' under a table root. */
  private async judgeUploads(step: BucketStep | TableStep, page: PageRequest): Promise<string | undefined> {
    const store =
      'table' in step ? this.deps.storeFor(step.bucket, step.table.name) : this.deps.storeFor(step.bucket);
    if (store.listMultipartUploads === undefined || store.abortMultipartUpload === undefined) {
      this.notes.push(`${step.id}: ${store.description} cannot list multipart uploads; skipped`);
      return undefined;
    }
    const table = 'table' in step ? step.table : undefined;
    const prefix = table === undefined ? this.deps.workRoot : rootDir(table);
    let listed: Awaited<ReturnType<NonNullable<ObjectStore['listMultipartUploads']>>>;
    try {
      listed = await store.listMultipartUploads(prefix, { token: page.token, maxUploads: page.maxKeys });
    } catch (err) {
      // Optional cleanup (a bucket lifecycle rule is the backstop): note it, do the rest.
      this.notes.push(`${step.id}: could not list multipart uploads (${(err as Error).message}); skipped`);
      return undefined;
    }
    this.examined += listed.uploads.length;
    for (const upload of listed.uploads) {
      // A bucket-root table would list the work root again (that step owns those), and any other
      // deployment's work root in the bucket (which only that deployment judges).
      if (table !== undefined && table.prefix === '' && mayBeWorkArea(upload.key)) continue;
      // An upload into a foreign table nested below the root is that table's writer's.
      if ('table' in step && (await this.enclosing(step, directoryOf(upload.key))) !== undefined) continue;
      const at = upload.initiated.getTime();
      const base = { bucket: step.bucket, key: upload.key };
      if (this.now - at >= this.debrisMs) {
        this.candidates.push({
          ...base,
          kind: 'upload',
          uploadId: upload.uploadId,
          size: 0,
          reason: `multipart upload started ${hoursAgo(this.now, at)} and never finished`,
          ...(table === undefined ? {} : { table: table.name }),
        });
      } else {
        this.kept.push({
          ...base,
          reason: `multipart upload started ${hoursAgo(this.now, at)}: may still finish`,
        });
      }
    }
    return listed.nextToken;
  }

  /** The vacuum rules of a table's format (the default format's for a key no configured table claims). */
  private rulesOf(table: string | undefined): VacuumRules {
    return formatOfTable(this.deps.tables, table ?? '').vacuum;
  }

  /** A run's entries in the bucket's journal, read once per call; undefined when they cannot be read. */
  private listRun(bucket: string, runId: string): Promise<GroupJournalEntry[] | undefined> {
    let found = this.runs.get(`${bucket}/${runId}`);
    if (found === undefined) {
      found = this.readRun(this.deps.journalFor(bucket), bucket, runId, 'its trash, staging and entries');
      this.runs.set(`${bucket}/${runId}`, found);
    }
    return found;
  }

  /**
   * A run's entries, or undefined (with a note) when its journal cannot be read — a malformed entry object, a
   * manifest that fails its digest, a denied request: that run's objects are kept and the vacuum goes on with the
   * others, never stops at the first run it cannot read.
   */
  private async readRun(
    journal: Journal,
    bucket: string,
    runId: string,
    what: string,
  ): Promise<GroupJournalEntry[] | undefined> {
    try {
      return await journal.listRun(runId);
    } catch (err) {
      const error = tableErrorOf(err);
      this.notes.push(
        `${bucket}: the journal of run ${runId} could not be read (${error.name}: ${error.message}); ${what} are kept, and the next vacuum reads it again`,
      );
      return undefined;
    }
  }

  /** Records a foreign table once per call: a note and an entry. */
  private foreign(step: TableStep, found: ForeignTable, nested: boolean): void {
    if (!this.ledger.record(step.bucket, step.table.name, found)) return;
    const what = nested ? `everything under ${found.root}` : 'the whole table';
    this.notes.push(
      `${step.table.name}: ${foreignTableNote(this.deps.storeFor(step.bucket), what, found, { nested })}`,
    );
  }

  /** The foreign table enclosing `dir` (inclusive), recorded when found. */
  private async enclosing(step: TableStep, dir: string): Promise<ForeignTable | undefined> {
    const found = await this.ledger.probe(step.bucket).around(dir, { includeLocation: true });
    if (found !== undefined) {
      const whole = found.root.length <= (step.table.prefix === '' ? 0 : step.table.prefix.length + 1);
      this.foreign(step, found, !whole);
    }
    return found;
  }

  private record(
    bucket: string,
    object: ObjectInfo,
    kind: 'trash' | 'staging' | 'journal' | 'preview' | 'debris',
    decision: VacuumDecision,
    table: string | undefined,
  ): void {
    if (decision.action === 'ignore') return;
    if (decision.action === 'keep') {
      this.kept.push({ bucket, key: object.key, reason: decision.reason });
      return;
    }
    const refused = keyRefusal('', folderMarkerAsFile(object.key));
    if (refused !== undefined) {
      this.kept.push({
        bucket,
        key: object.key,
        reason: refusedKeyReason(refused, 'never deleted; remove it by hand'),
      });
      return;
    }
    this.candidates.push({
      kind,
      bucket,
      key: object.key,
      size: object.size,
      etag: object.etag,
      reason: decision.reason,
      ...(table === undefined ? {} : { table }),
    });
  }

  result(cursor: string | undefined): VacuumPlan {
    const foreignTables = this.ledger.found;
    return {
      dryRun: this.request.dryRun,
      retentionHours: this.request.retentionHours,
      candidates: this.candidates,
      kept: this.kept,
      examined: this.examined,
      notes: this.notes,
      ...(foreignTables.length === 0 ? {} : { foreignTables }),
      ...nonEmptySections(this.formatTables),
      ...(this.failedSteps.length === 0 ? {} : { failedSteps: this.failedSteps }),
      ...(cursor === undefined ? {} : { cursor }),
    };
  }
}

/**
 * A format's candidate as one of vacuum's own: its kind is one of the format's `candidateKinds`, which
 * {@link FormatCandidateKind} lists, so reports count it under its own name.
 */
function asCandidate(c: MaintenanceCandidate): VacuumCandidate {
  return c as VacuumCandidate;
}

/**
 * The formats' sections that have entries, in registration order (the order the report's JSON prints them), each
 * under its format's report key; a section without entries is left out, as it always was.
 */
function nonEmptySections<T>(sections: ReadonlyMap<string, readonly T[]>): Record<string, readonly T[]> {
  const present: Record<string, readonly T[]> = {};
  for (const { maintenance } of MAINTAINING_FORMATS) {
    const entries = sections.get(maintenance.reportKey) ?? [];
    if (entries.length > 0) present[maintenance.reportKey] = entries;
  }
  return present;
}

function tableErrorOf(err: unknown): TableError {
  return err instanceof Error
    ? { name: err.name || 'Error', message: err.message }
    : { name: 'Error', message: String(err) };
}

/** One page of a listing: where it starts and how many keys it may hold. */
interface PageRequest {
  readonly token: string | undefined;
  readonly maxKeys: number;
}

/** A table's root as a directory prefix ('' or ending with `/`). */
function rootDir(table: TableConfig): string {
  return table.prefix === '' ? '' : `${table.prefix}/`;
}

/** Counts and bytes of one kind. */
export interface VacuumTally {
  count: number;
  bytes: number;
}

/** A vacuum's outcome; each format that maintains its tables itself adds its section (FormatMaintenanceOutcomes). */
export interface VacuumReport extends FormatMaintenanceOutcomes {
  readonly dryRun: boolean;
  readonly retentionHours: number;
  readonly examined: number;
  /** What was deleted (dry-run: what would have been), by kind. */
  readonly removed: Readonly<Record<CandidateKind, VacuumTally>>;
  readonly totalRemoved: VacuumTally;
  /** Candidates found live at the re-check, or changed since listing: left alone. */
  readonly spared: readonly VacuumKept[];
  readonly failed: readonly { readonly key: string; readonly message: string }[];
  readonly keptCount: number;
  /** Up to `listLimit` candidates with sizes and reasons (all of them counted above). */
  readonly candidates: readonly VacuumCandidate[];
  readonly notes: readonly string[];
  /** Steps of the pass that threw and were given up (see VacuumPlan.failedSteps). */
  readonly failedSteps?: readonly VacuumStepFailure[];
  readonly cursor?: string;
}

/** Every candidate kind: vacuum's own, then each format's in registration order (the order reports list them). */
export const CANDIDATE_KINDS: readonly CandidateKind[] = [...OWN_KINDS, ...FORMAT_KINDS];

/** A zero tally per kind, in {@link CANDIDATE_KINDS}' order (the JSON's order). */
function emptyTallies(): Record<CandidateKind, VacuumTally> {
  return Object.fromEntries(CANDIDATE_KINDS.map((kind) => [kind, { count: 0, bytes: 0 }])) as Record<
    CandidateKind,
    VacuumTally
  >;
}

/**
 * Carries out a plan. Unfinished uploads are aborted; everything else is removed by its table format's rules
 * (Hive: a retired version by version id only after a HEAD shows that the key's current version is a different
 * one — a journal can be wrong, the bucket is the truth — other objects only while they still have the ETag they
 * were listed with). A dry-run deletes nothing. Without `tables`, every candidate's table is taken to be of the
 * default format. Each planned self-maintained table is vacuumed by its own maintenance, run for real with the planning instant as
 * its clock (what became due after planning waits for the next run); its failure is that table's error.
 */
export async function executeVacuum(
  deps: Pick<VacuumDeps, 'storeFor'> & VacuumServices & { readonly tables?: VacuumDeps['tables'] },
  plan: VacuumPlan,
  options: { readonly listLimit?: number } = {},
): Promise<VacuumReport> {
  const removed = emptyTallies();
  const spared: VacuumKept[] = [];
  const failed: { key: string; message: string }[] = [];
  const done: VacuumCandidate[] = [];
  if (plan.dryRun) {
    done.push(...plan.candidates);
  } else {
    const own = plan.candidates.filter((c) => !FORMAT_KINDS.includes(c.kind));
    // Per bucket and table: a table's candidates (and the work-root copies its runs made) through that table's store,
    // the work root's other leftovers through the work root's.
    for (const group of groupBy(own, (c) => `${c.bucket}\u0000${c.table ?? ''}`).values()) {
      const { bucket, table } = group[0] as VacuumCandidate;
      const store = deps.storeFor(bucket, table);
      const removable: VacuumCandidate[] = [];
      for (const candidate of group) {
        // The last line of the confinement rule: a key it refuses is never sent, whoever planned it.
        const refused = lastLineRefusal(candidate, deps.tables);
        if (refused !== undefined) {
          failed.push({ key: candidate.key, message: `not deleted: ${refused}` });
          continue;
        }
        if (candidate.kind === 'upload') {
          try {
            await store.abortMultipartUpload?.(candidate.key, candidate.uploadId as string);
            done.push(candidate);
          } catch (err) {
            failed.push({ key: candidate.key, message: (err as Error).message });
          }
          continue;
        }
        if (candidate.kind === 'retired-version') {
          const rules = formatOfTable(deps.tables ?? [], candidate.table ?? '').vacuum;
          let current: ObjectInfo | undefined;
          try {
            current = await store.head(candidate.key);
          } catch (err) {
            failed.push({ key: candidate.key, message: (err as Error).message });
            continue;
          }
          const why = rules.spareRetiredVersion(candidate, current);
          if (why !== undefined) {
            spared.push({ bucket, key: candidate.key, reason: why });
            continue;
          }
        }
        removable.push(candidate);
      }
      const byFormat = groupBy(removable, (c) => formatOfTable(deps.tables ?? [], c.table ?? '').name);
      for (const [format, candidates] of byFormat) {
        // A request that fails as a whole fails its candidates, never the rest of the vacuum.
        const outcome = await tableFormat(format)
          .vacuum.remove(
            store,
            candidates.map((c) =>
              c.kind === 'retired-version'
                ? { key: c.key, versionId: c.versionId as string }
                : { key: c.key, ...(c.etag === undefined ? {} : { etag: c.etag }) },
            ),
          )
          .catch((err: unknown) => ({
            changed: new Set<string>(),
            failed: new Map(candidates.map((c) => [c.key, (err as Error).message] as const)),
          }));
        for (const candidate of candidates) {
          const message = outcome.failed.get(candidate.key);
          if (outcome.changed.has(candidate.key)) {
            spared.push({ bucket, key: candidate.key, reason: 'changed since it was listed: left alone' });
          } else if (message !== undefined) failed.push({ key: candidate.key, message });
          else done.push(candidate);
        }
      }
    }
  }
  const notes = [...plan.notes];
  // Each format's planned tables, format by format in registration order: its own maintenance, run for real.
  const formatTables = new Map<string, AnyOutcomeEntry[]>();
  for (const { maintenance } of MAINTAINING_FORMATS) {
    const outcomes: AnyOutcomeEntry[] = [];
    formatTables.set(maintenance.reportKey, outcomes);
    for (const planned of sectionOf<AnyPlanEntry>(plan, maintenance.reportKey)) {
      const base = { table: planned.table, bucket: planned.bucket, tableRoot: planned.tableRoot };
      if (planned.error !== undefined || planned.planned === undefined) {
        outcomes.push({ ...base, ...(planned.error === undefined ? {} : { error: planned.error }) });
        continue;
      }
      if (plan.dryRun) {
        outcomes.push({ ...base, report: planned.planned });
        continue;
      }
      try {
        const store = deps.storeFor(planned.bucket, planned.table);
        const report = await maintenance.run(store, planned, servicesIn(deps, planned.bucket), {
          done: (c) => done.push(asCandidate(c)),
          spared: (s) => spared.push(s),
          failed: (f) => failed.push(f),
        });
        outcomes.push({ ...base, report });
      } catch (err) {
        const error = tableErrorOf(err);
        outcomes.push({ ...base, error });
        notes.push(`${planned.table}: ${maintenance.errorNote(error)}`);
      }
    }
  }
  const total = { count: 0, bytes: 0 };
  for (const c of done) {
    removed[c.kind].count++;
    removed[c.kind].bytes += c.size;
    total.count++;
    total.bytes += c.size;
  }
  const limit = options.listLimit ?? 1000;
  return {
    dryRun: plan.dryRun,
    retentionHours: plan.retentionHours,
    examined: plan.examined,
    removed,
    totalRemoved: total,
    spared,
    failed,
    keptCount: plan.kept.length,
    candidates: done.slice(0, limit),
    notes,
    ...nonEmptySections(formatTables),
    ...(plan.failedSteps === undefined ? {} : { failedSteps: plan.failedSteps }),
    ...(plan.cursor === undefined ? {} : { cursor: plan.cursor }),
  };
}

/**
 * Why vacuum may not delete `candidate`, or undefined: a retired version or writer debris must be a key the
 * confinement rule accepts under its table's root (when the tables are known: the deployment's vacuum), anything
 * else a key it accepts at all (the work area's trash, staging and journal are lake-compactor's own keys).
 */
export function lastLineRefusal(
  candidate: Pick<VacuumCandidate, 'kind' | 'key' | 'table' | 'bucket'>,
  tables: VacuumDeps['tables'] | undefined,
): string | undefined {
  const underTable = candidate.kind === 'retired-version' || candidate.kind === 'debris';
  const table =
    underTable && candidate.table !== undefined ? tables?.find((t) => t.name === candidate.table) : undefined;
  if (table !== undefined && table.bucket !== undefined && table.bucket !== candidate.bucket)
    return `the key is in bucket ${candidate.bucket}, not in table ${table.name}'s bucket ${table.bucket}`;
  const refused = keyRefusal(table?.prefix ?? '', folderMarkerAsFile(candidate.key));
  return refused === undefined ? undefined : `the key ${refused}`;
}

/** A folder marker (`x/_temporary/`, writer debris vacuum may remove) judged as the file `x/_temporary`. */
function folderMarkerAsFile(key: string): string {
  return key.endsWith('/') && !key.endsWith('//') ? key.slice(0, -1) : key;
}

/** Plans and executes one call's share of the work (with `unit`: one unit's, see PlanVacuumOptions). */
export async function vacuum(
  deps: VacuumDeps,
  request: VacuumRequest,
  options: { readonly listLimit?: number } & PlanVacuumOptions = {},
): Promise<VacuumReport> {
  return executeVacuum(deps, await planVacuum(deps, request, options), options);
}

/** One report of several calls' (an isolated pass's units), as if one call had made them; cursor: the last's. */
export function mergeVacuumReports(
  reports: readonly VacuumReport[],
  request: Pick<VacuumRequest, 'dryRun' | 'retentionHours'>,
  listLimit = 1000,
): VacuumReport {
  const removed = emptyTallies();
  const total = { count: 0, bytes: 0 };
  for (const r of reports) {
    for (const kind of Object.keys(removed) as CandidateKind[]) {
      removed[kind].count += r.removed[kind].count;
      removed[kind].bytes += r.removed[kind].bytes;
    }
    total.count += r.totalRemoved.count;
    total.bytes += r.totalRemoved.bytes;
  }
  const all = <T>(pick: (r: VacuumReport) => readonly T[] | undefined): T[] =>
    reports.flatMap((r) => pick(r) ?? []);
  const formatTables = new Map(
    MAINTAINING_FORMATS.map(({ maintenance: { reportKey } }) => [
      reportKey,
      all((r) => sectionOf<AnyOutcomeEntry>(r, reportKey)),
    ]),
  );
  const failedSteps = all((r) => r.failedSteps);
  const cursor = reports.at(-1)?.cursor;
  return {
    dryRun: request.dryRun,
    retentionHours: request.retentionHours,
    examined: reports.reduce((n, r) => n + r.examined, 0),
    removed,
    totalRemoved: total,
    spared: all((r) => r.spared),
    failed: all((r) => r.failed),
    keptCount: reports.reduce((n, r) => n + r.keptCount, 0),
    candidates: all((r) => r.candidates).slice(0, listLimit),
    notes: [...new Set(all((r) => r.notes))],
    ...nonEmptySections(formatTables),
    ...(failedSteps.length === 0 ? {} : { failedSteps }),
    ...(cursor === undefined ? {} : { cursor }),
  };
}

/**
 * The tables of every format's section of a plan or report (`deltaTables`, then `icebergTables` …, in registration
 * order), each with its error when its maintenance failed: what an entry point checks and reports per table
 * without naming a format.
 */
export function maintainedTablesOf(of: VacuumPlan | VacuumReport): readonly AnyOutcomeEntry[] {
  return MAINTAINING_FORMATS.flatMap(({ maintenance }) =>
    sectionOf<AnyOutcomeEntry>(of, maintenance.reportKey),
  );
}

/** Each maintaining format's section of a plan or report, in registration order, with the format's maintenance. */
export function formatSectionsOf(
  of: VacuumPlan | VacuumReport,
): readonly { readonly maintenance: TableMaintenance; readonly tables: readonly AnyOutcomeEntry[] }[] {
  return MAINTAINING_FORMATS.map(({ maintenance }) => ({
    maintenance,
    tables: sectionOf<AnyOutcomeEntry>(of, maintenance.reportKey),
  }));
}

/** The format sections of several plans (one pass's pages) as one plan's, each format's entries in page order. */
export function concatFormatPlans(plans: readonly VacuumPlan[]): FormatMaintenancePlans {
  return nonEmptySections(
    new Map(
      MAINTAINING_FORMATS.map(({ maintenance: { reportKey } }) => [
        reportKey,
        plans.flatMap((p) => sectionOf<AnyPlanEntry>(p, reportKey)),
      ]),
    ),
  );
}

/** The tables named (all when none), each with a bucket. */
export function selectTables(
  tables: readonly TableConfig[],
  names: readonly string[] | undefined,
): TableConfig[] {
  const selected = names === undefined ? [...tables] : tables.filter((t) => names.includes(t.name));
  const unknown = (names ?? []).filter((n) => !tables.some((t) => t.name === n));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `Unknown table(s) ${unknown.join(', ')}; configured tables: ${tables.map((t) => t.name).join(', ')}`,
    );
  }
  const bucketless = selected.filter((t) => t.bucket === undefined).map((t) => t.name);
  if (bucketless.length > 0) {
    throw new InvalidInputError(
      `Table(s) ${bucketless.join(', ')} name no bucket; set it in the table config`,
    );
  }
  return selected;
}

function groupBy<T>(items: readonly T[], key: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = groups.get(k);
    if (list) list.push(item);
    else groups.set(k, [item]);
  }
  return groups;
}
