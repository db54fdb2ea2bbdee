// Vacuum: finds what may go — retired input versions, trash copies, staging of failed runs, settled entries
// of the store journal, writer debris — as data with a reason each, and deletes only what is past its age
// and never the live version of a key.
//
// Work is split into steps (per bucket: journaled runs, trash, staging, store-journal entries, our
// unfinished uploads; per table:
// writer debris, writers' unfinished uploads), each listed page by page. A call examines at most
// `maxObjects` objects and returns a cursor where it stopped, so a large lake is vacuumed across
// invocations and a retried invocation simply re-lists from its cursor (every decision is re-derived).
// The per-table steps never touch a Delta Lake or Iceberg table (at, above or below the configured root):
// its log, not the listing, owns those files.
import pLimit from 'p-limit';
import { z } from 'zod';
import type { Clock } from '../../ports/clock.js';
import { type GroupJournalEntry, isSettled, type Journal } from '../../ports/journal.js';
import type { DeleteRef, ObjectInfo, ObjectStore } from '../../ports/object-store.js';
import { InvalidInputError } from '../errors.js';
import { relativeToRoot } from '../partition.js';
import { findTableForKey, type TableConfig } from '../table-config.js';
import {
  directoryOf,
  type ForeignTable,
  ForeignTableLedger,
  type FoundForeignTable,
  foreignFormatOfKey,
  foreignTableNote,
} from '../table-format.js';
import {
  mayBeWorkArea,
  parsePlanKey,
  parseStagingKey,
  parseStoreJournalEntryKey,
  parseTrashKey,
  storeJournalRunsPrefix,
  workFolder,
} from '../workflow/layout.js';

const HOUR = 3_600_000;

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
  /** Required to run with `retentionHours` below {@link MIN_RETENTION_HOURS}. */
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
  return request;
}

/** What a candidate is; decides how it is removed. */
export type CandidateKind = 'retired-version' | 'trash' | 'staging' | 'journal' | 'debris' | 'upload';

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

/** A pure decision over one object: remove it (with reason) or keep it (with reason), or ignore it. */
export type VacuumDecision =
  | { readonly action: 'delete'; readonly reason: string }
  | { readonly action: 'keep'; readonly reason: string }
  | { readonly action: 'ignore' };

const TERMINAL_RETIRED: readonly string[] = ['retired', 'done'];
const BEFORE_PUBLISH: readonly string[] = ['planned', 'staged', 'verified'];

function hoursAgo(now: number, at: number): string {
  return `${Math.floor((now - at) / HOUR)} h ago`;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/**
 * Which of a run's retired input versions are past the retention. Only `delete-versioned` groups that
 * reached `retired`/`done` count: before that the inputs are still live or the commit may undo.
 */
export function retiredVersionsDue(
  entry: GroupJournalEntry,
  now: number,
  retentionMs: number,
): {
  due: { key: string; versionId: string; etag: string; size: number; reason: string }[];
  kept: { key: string; reason: string }[];
} {
  if (entry.retireMode !== 'delete-versioned' || !TERMINAL_RETIRED.includes(entry.state)) {
    return { due: [], kept: [] };
  }
  if (entry.retiredAt === undefined) return { due: [], kept: [] };
  if (now - entry.retiredAt < retentionMs) {
    return {
      due: [],
      kept: entry.inputs.map((i) => ({
        key: i.key,
        reason: `retired ${hoursAgo(now, entry.retiredAt as number)} by run ${entry.runId}: inside the retention`,
      })),
    };
  }
  const due: { key: string; versionId: string; etag: string; size: number; reason: string }[] = [];
  const kept: { key: string; reason: string }[] = [];
  for (const input of entry.inputs) {
    if (input.versionId === undefined) {
      kept.push({
        key: input.key,
        reason: 'the journal recorded no version id, so no version can be named safely',
      });
      continue;
    }
    due.push({
      key: input.key,
      versionId: input.versionId,
      etag: input.etag,
      size: input.size,
      reason: `version ${input.versionId} retired by run ${entry.runId} at ${iso(entry.retiredAt)} (${hoursAgo(now, entry.retiredAt)})`,
    });
  }
  return { due, kept };
}

/** Decides over one trash copy, given the journal entry of the group that made it (if any is left). */
export function decideTrash(
  object: Pick<ObjectInfo, 'lastModified'>,
  entry: GroupJournalEntry | undefined,
  now: number,
  retentionMs: number,
): VacuumDecision {
  if (entry === undefined) {
    const at = object.lastModified.getTime();
    return now - at >= retentionMs
      ? {
          action: 'delete',
          reason: `trash copy without a journal entry (expired or never written), copied ${hoursAgo(now, at)}`,
        }
      : {
          action: 'keep',
          reason: `trash copy without a journal entry, copied ${hoursAgo(now, at)}: inside the retention`,
        };
  }
  if (TERMINAL_RETIRED.includes(entry.state) && entry.retiredAt !== undefined) {
    return now - entry.retiredAt >= retentionMs
      ? {
          action: 'delete',
          reason: `input retired by run ${entry.runId} at ${iso(entry.retiredAt)} (${hoursAgo(now, entry.retiredAt)})`,
        }
      : {
          action: 'keep',
          reason: `retired ${hoursAgo(now, entry.retiredAt)} by run ${entry.runId}: inside the retention`,
        };
  }
  if (entry.state === 'aborted' && entry.undo === 'pending') {
    return {
      action: 'keep',
      reason: `run ${entry.runId} is undoing a partial publish: it restores inputs from these copies`,
    };
  }
  if (entry.state === 'aborted') {
    const at = object.lastModified.getTime();
    // The original is in place (never removed, or restored by the undo): the copy is redundant.
    return now - at >= retentionMs
      ? {
          action: 'delete',
          reason: `copy left by aborted run ${entry.runId}; the original was kept or restored`,
        }
      : { action: 'keep', reason: `copy left by aborted run ${entry.runId}: inside the retention` };
  }
  return {
    action: 'keep',
    reason: `run ${entry.runId} is mid-commit (${entry.state}): its commit or undo needs this copy`,
  };
}

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
 * Writer scratch below a table root: anything under a `_temporary/` directory (Hadoop/Spark output
 * committers) or a `.spark-staging-*` directory (Spark dynamic partition overwrite). The Delta log is never debris.
 */
export function isWriterDebris(relativeKey: string): boolean {
  const dirs = relativeKey.split('/').slice(0, -1);
  if (dirs.includes('_delta_log')) return false;
  return dirs.some((d) => d === '_temporary' || d.startsWith('.spark-staging-'));
}

export interface VacuumDeps {
  readonly tables: readonly TableConfig[];
  /**
   * The deployment's work root (see workflow/layout.ts): the only work area vacuum lists and judges. Another
   * deployment's work root in the same bucket is never a candidate, whatever its journal-less staging or trash.
   */
  readonly workRoot: string;
  readonly storeFor: (bucket: string) => ObjectStore;
  /** The journal of a bucket's runs (the DynamoDB journal keeps oversized file lists in that bucket). */
  readonly journalFor: (bucket: string) => Journal;
  readonly clock: Clock;
  /** Asked between pages; true stops the call early with a cursor (e.g. the Lambda's time is running out). */
  readonly shouldStop?: () => boolean;
}

type Step =
  | {
      readonly id: string;
      readonly kind: 'runs' | 'trash' | 'staging' | 'journal' | 'work-uploads';
      readonly bucket: string;
    }
  | {
      readonly id: string;
      readonly kind: 'debris' | 'table-uploads';
      readonly bucket: string;
      readonly table: TableConfig;
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
    for (const kind of ['runs', 'trash', 'staging', 'journal', 'work-uploads'] as const) {
      steps.push({ id: `${kind}:${bucket}`, kind, bucket });
    }
  }
  for (const table of tables) {
    const bucket = table.bucket as string;
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

/** The candidates of one call, before anything is deleted: printable, replayable data. */
export interface VacuumPlan {
  readonly dryRun: boolean;
  readonly retentionHours: number;
  readonly candidates: readonly VacuumCandidate[];
  readonly kept: readonly VacuumKept[];
  /** Objects (and runs, uploads) examined. */
  readonly examined: number;
  /** Steps whose store cannot do what they need (e.g. no multipart listing), Delta or Iceberg tables left alone. */
  readonly notes: readonly string[];
  /**
   * Delta Lake or Iceberg tables met by the per-table steps — a configured table that is (or lies in) one was
   * skipped, one found below a configured root was left alone — with the configured table's name.
   */
  readonly foreignTables?: readonly FoundForeignTable[];
  /** Present when there is more to do: pass it as `cursor` to the next call. */
  readonly cursor?: string;
}

/** Lists what may be removed, up to the request's budget. Reads only; deletes nothing. */
export async function planVacuum(deps: VacuumDeps, request: VacuumRequest): Promise<VacuumPlan> {
  const tables = selectTables(deps.tables, request.tables);
  const steps = stepsOf(tables);
  const now = deps.clock.now();
  const retentionMs = request.retentionHours * HOUR;
  const debrisMs = request.debrisAgeHours * HOUR;
  const abandonedMs = request.abandonedAfterHours * HOUR;
  const selected = new Set(tables.map((t) => t.name));
  const workRoot = deps.workRoot;
  const candidates: VacuumCandidate[] = [];
  const kept: VacuumKept[] = [];
  const notes: string[] = [];
  const ledger = new ForeignTableLedger(deps.storeFor);
  const foreignTables = ledger.found;
  /** Records a foreign table once per call: a note and an entry. */
  const foreign = (step: Step & { table: TableConfig }, found: ForeignTable, what: string): void => {
    if (!ledger.record(step.bucket, step.table.name, found)) return;
    notes.push(`${step.table.name}: ${foreignTableNote(deps.storeFor(step.bucket), what, found)}`);
  };
  /** The Delta or Iceberg table enclosing `dir` (inclusive), recorded when found. */
  const enclosing = async (
    step: Step & { table: TableConfig },
    dir: string,
  ): Promise<ForeignTable | undefined> => {
    const found = await ledger.probe(step.bucket).around(dir, { includeLocation: true });
    if (found !== undefined) {
      const whole = found.root.length <= (step.table.prefix === '' ? 0 : step.table.prefix.length + 1);
      foreign(step, found, whole ? 'the whole table' : `everything under ${found.root}`);
    }
    return found;
  };
  const runs = new Map<string, Promise<GroupJournalEntry[]>>();
  const listRun = (bucket: string, runId: string): Promise<GroupJournalEntry[]> => {
    let found = runs.get(`${bucket}/${runId}`);
    if (found === undefined) {
      found = deps.journalFor(bucket).listRun(runId);
      runs.set(`${bucket}/${runId}`, found);
    }
    return found;
  };

  const start = request.cursor === undefined ? { index: 0 } : decodeCursor(request.cursor, steps);
  let examined = 0;
  let index = start.index;
  let token: string | undefined = 'token' in start ? start.token : undefined;
  while (index < steps.length) {
    if (examined >= request.maxObjects || deps.shouldStop?.() === true) {
      const step = steps[index] as Step;
      return result(encodeCursor(token === undefined ? { step: step.id } : { step: step.id, token }));
    }
    const step = steps[index] as Step;
    const store = deps.storeFor(step.bucket);
    const maxKeys = Math.min(1000, request.maxObjects - examined);
    if ('table' in step && (await enclosing(step, rootDir(step.table))) !== undefined) {
      // The table is (or lies in) a Delta or Iceberg table: none of its objects is ours to judge.
      index++;
      token = undefined;
      continue;
    }
    let next: string | undefined;
    switch (step.kind) {
      case 'runs': {
        const page = await store.list(workFolder(workRoot, 'plans'), { token, maxKeys });
        examined += page.objects.length;
        // Items files, and plans younger than the retention (nothing of theirs can be due yet), are skipped.
        const runIds = page.objects.flatMap((plan) => {
          const runId = parsePlanKey(workRoot, plan.key);
          return runId === undefined || now - plan.lastModified.getTime() < retentionMs ? [] : [runId];
        });
        // One journal query per run: a few in flight, so a page of a thousand runs takes seconds, not minutes.
        const limit = pLimit(8);
        const journals = await Promise.all(runIds.map((runId) => limit(() => listRun(step.bucket, runId))));
        for (const entries of journals) {
          for (const entry of entries) {
            if (!selected.has(entry.table)) continue;
            const { due, kept: young } = retiredVersionsDue(entry, now, retentionMs);
            for (const d of due) {
              candidates.push({
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
            for (const k of young) kept.push({ bucket: step.bucket, ...k });
          }
        }
        next = page.nextToken;
        break;
      }
      case 'trash': {
        const page = await store.list(workFolder(workRoot, 'trash'), { token, maxKeys });
        examined += page.objects.length;
        for (const object of page.objects) {
          const trashed = parseTrashKey(workRoot, object.key);
          if (trashed === undefined) continue;
          const { runId, inputKey } = trashed;
          const entry = (await listRun(step.bucket, runId)).find((e) =>
            e.inputs.some((i) => i.key === inputKey),
          );
          const table = entry?.table ?? findTableForKey(deps.tables, step.bucket, inputKey)?.name;
          if (table === undefined ? request.tables !== undefined : !selected.has(table)) continue;
          record(step.bucket, object, 'trash', decideTrash(object, entry, now, retentionMs), table);
        }
        next = page.nextToken;
        break;
      }
      case 'staging': {
        const page = await store.list(workFolder(workRoot, 'staging'), { token, maxKeys });
        examined += page.objects.length;
        for (const object of page.objects) {
          const staged = parseStagingKey(workRoot, object.key);
          if (staged === undefined) continue;
          const { runId, groupId } = staged;
          const entry = (await listRun(step.bucket, runId)).find((e) => e.groupId === groupId);
          if (entry === undefined ? request.tables !== undefined : !selected.has(entry.table)) continue;
          record(
            step.bucket,
            object,
            'staging',
            decideStaging(object, entry, now, abandonedMs),
            entry?.table,
          );
        }
        next = page.nextToken;
        break;
      }
      case 'journal': {
        const page = await store.list(storeJournalRunsPrefix(workRoot), { token, maxKeys });
        examined += page.objects.length;
        for (const object of page.objects) {
          const id = parseStoreJournalEntryKey(workRoot, object.key);
          if (id === undefined) continue;
          const entry = (await listRun(step.bucket, id.runId)).find((e) => e.groupId === id.groupId);
          if (entry === undefined || !selected.has(entry.table)) continue;
          record(step.bucket, object, 'journal', decideJournalEntry(entry, now, retentionMs), entry.table);
        }
        next = page.nextToken;
        break;
      }
      case 'debris': {
        const root = step.table.prefix === '' ? '' : `${step.table.prefix}/`;
        const page = await store.list(root, { token, maxKeys });
        examined += page.objects.length;
        for (const object of page.objects) {
          const relative = relativeToRoot(object.key, step.table.prefix) ?? object.key;
          // A work area (ours, or another deployment's in the same bucket) is not the table's: never judged here.
          if (step.table.prefix === '' && mayBeWorkArea(relative)) continue;
          const marker = foreignFormatOfKey(object.key);
          if (marker !== undefined) {
            foreign(step, { ...marker, evidenceKey: object.key }, `everything under ${marker.root}`);
          }
          if (!isWriterDebris(relative)) continue;
          // Scratch inside a Delta or Iceberg table (nested below the root) is that table's to clean up.
          if ((await enclosing(step, `${rootDir(step.table)}${debrisOwner(relative)}`)) !== undefined)
            continue;
          const at = object.lastModified.getTime();
          record(
            step.bucket,
            object,
            'debris',
            now - at >= debrisMs
              ? { action: 'delete', reason: `writer scratch, written ${hoursAgo(now, at)}` }
              : {
                  action: 'keep',
                  reason: `writer scratch written ${hoursAgo(now, at)}: a writer may still use it`,
                },
            step.table.name,
          );
        }
        next = page.nextToken;
        break;
      }
      case 'work-uploads':
      case 'table-uploads': {
        if (store.listMultipartUploads === undefined || store.abortMultipartUpload === undefined) {
          notes.push(`${step.id}: ${store.description} cannot list multipart uploads; skipped`);
          break;
        }
        const table = 'table' in step ? step.table : undefined;
        const prefix = table === undefined ? workRoot : table.prefix === '' ? '' : `${table.prefix}/`;
        let page: Awaited<ReturnType<NonNullable<ObjectStore['listMultipartUploads']>>>;
        try {
          page = await store.listMultipartUploads(prefix, { token, maxUploads: maxKeys });
        } catch (err) {
          // Optional cleanup (a bucket lifecycle rule is the backstop): note it, do the rest.
          notes.push(`${step.id}: could not list multipart uploads (${(err as Error).message}); skipped`);
          break;
        }
        examined += page.uploads.length;
        for (const upload of page.uploads) {
          // A bucket-root table would list the work root again (that step owns those), and any other
          // deployment's work root in the bucket (which only that deployment judges).
          if (table !== undefined && table.prefix === '' && mayBeWorkArea(upload.key)) continue;
          // An upload into a Delta or Iceberg table nested below the root is that table's writer's.
          if ('table' in step && (await enclosing(step, directoryOf(upload.key))) !== undefined) continue;
          const at = upload.initiated.getTime();
          const base = { bucket: step.bucket, key: upload.key };
          if (now - at >= debrisMs) {
            candidates.push({
              ...base,
              kind: 'upload',
              uploadId: upload.uploadId,
              size: 0,
              reason: `multipart upload started ${hoursAgo(now, at)} and never finished`,
              ...(table === undefined ? {} : { table: table.name }),
            });
          } else {
            kept.push({ ...base, reason: `multipart upload started ${hoursAgo(now, at)}: may still finish` });
          }
        }
        next = page.nextToken;
        break;
      }
    }
    if (next === undefined) {
      index++;
      token = undefined;
    } else {
      token = next;
    }
  }
  return result(undefined);

  function record(
    bucket: string,
    object: ObjectInfo,
    kind: 'trash' | 'staging' | 'journal' | 'debris',
    decision: VacuumDecision,
    table: string | undefined,
  ): void {
    if (decision.action === 'ignore') return;
    if (decision.action === 'keep') {
      kept.push({ bucket, key: object.key, reason: decision.reason });
      return;
    }
    candidates.push({
      kind,
      bucket,
      key: object.key,
      size: object.size,
      etag: object.etag,
      reason: decision.reason,
      ...(table === undefined ? {} : { table }),
    });
  }

  function result(cursor: string | undefined): VacuumPlan {
    return {
      dryRun: request.dryRun,
      retentionHours: request.retentionHours,
      candidates,
      kept,
      examined,
      notes,
      ...(foreignTables.length === 0 ? {} : { foreignTables }),
      ...(cursor === undefined ? {} : { cursor }),
    };
  }
}

/** A table's root as a directory prefix ('' or ending with `/`). */
function rootDir(table: TableConfig): string {
  return table.prefix === '' ? '' : `${table.prefix}/`;
}

/** The folder (relative, '' or ending with `/`) holding a debris key's first scratch directory. */
function debrisOwner(relativeKey: string): string {
  const dirs = relativeKey.split('/').slice(0, -1);
  const scratch = dirs.findIndex((d) => d === '_temporary' || d.startsWith('.spark-staging-'));
  return scratch <= 0 ? '' : `${dirs.slice(0, scratch).join('/')}/`;
}

/** Counts and bytes of one kind. */
export interface VacuumTally {
  count: number;
  bytes: number;
}

export interface VacuumReport {
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
  readonly cursor?: string;
}

function emptyTallies(): Record<CandidateKind, VacuumTally> {
  return {
    'retired-version': { count: 0, bytes: 0 },
    trash: { count: 0, bytes: 0 },
    staging: { count: 0, bytes: 0 },
    journal: { count: 0, bytes: 0 },
    debris: { count: 0, bytes: 0 },
    upload: { count: 0, bytes: 0 },
  };
}

/**
 * Carries out a plan. Retired versions are deleted by version id only after a HEAD shows that the
 * key's current version is a different one (a journal can be wrong; the bucket is the truth). Other
 * objects are deleted conditioned on the ETag they were listed with. A dry-run deletes nothing.
 */
export async function executeVacuum(
  deps: Pick<VacuumDeps, 'storeFor'>,
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
    for (const [bucket, group] of groupBy(plan.candidates, (c) => c.bucket)) {
      const store = deps.storeFor(bucket);
      const refs: { ref: DeleteRef; candidate: VacuumCandidate }[] = [];
      for (const candidate of group) {
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
          const current = await store.head(candidate.key);
          const live =
            current !== undefined &&
            (current.versionId === candidate.versionId ||
              (current.versionId === undefined && current.etag === candidate.etag));
          if (live) {
            spared.push({
              bucket,
              key: candidate.key,
              reason: `version ${candidate.versionId} is the current (live) version, whatever the journal says: never deleted`,
            });
            continue;
          }
          if (current !== undefined && current.versionId === undefined) {
            // An unversioned bucket has no old versions to delete; a delete here could only hit the live object.
            spared.push({
              bucket,
              key: candidate.key,
              reason: 'the bucket reports no version ids (not versioned): nothing to delete by version',
            });
            continue;
          }
          refs.push({ ref: { key: candidate.key, versionId: candidate.versionId as string }, candidate });
          continue;
        }
        refs.push({
          ref:
            candidate.etag === undefined
              ? { key: candidate.key }
              : { key: candidate.key, ifMatch: candidate.etag },
          candidate,
        });
      }
      if (refs.length === 0) continue;
      const outcome = await store.deleteMany(refs.map((r) => r.ref));
      const errors = new Map(outcome.errors.map((e) => [e.key, e]));
      for (const { candidate } of refs) {
        const error = errors.get(candidate.key);
        if (error === undefined) done.push(candidate);
        else if (error.code === 'PreconditionFailed') {
          spared.push({ bucket, key: candidate.key, reason: 'changed since it was listed: left alone' });
        } else failed.push({ key: candidate.key, message: error.message });
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
    notes: plan.notes,
    ...(plan.cursor === undefined ? {} : { cursor: plan.cursor }),
  };
}

/** Plans and executes one call's share of the work. */
export async function vacuum(
  deps: VacuumDeps,
  request: VacuumRequest,
  options: { readonly listLimit?: number } = {},
): Promise<VacuumReport> {
  return executeVacuum(deps, await planVacuum(deps, request), options);
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
