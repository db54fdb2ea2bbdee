// The compact step: rewrites one planned group from the journal's inputs into the group's staging prefix
// and records the outputs (`planned → staged`); a retry after success returns the same result, unchanged.
import pLimit from 'p-limit';
import type { Clock } from '../../ports/clock.js';
import type { GroupJournalEntry, Journal, JournalInput } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { InputFile, LeftOutInput, ParquetEngine, RewriteResult } from '../../ports/parquet-engine.js';
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import type { Quarantine } from '../../ports/quarantine.js';
import { CorruptInputError, InvalidInputError, UnsupportedInputError } from '../errors.js';
import type { GroupFingerprint } from '../fingerprint/fingerprint.js';
import { tableFormat } from '../formats/index.js';
import { stagingLeftovers } from '../formats/staging.js';
import type { TableFormat } from '../formats/table-format.js';
import { currentMemoryBudget } from '../memory-budget.js';
import { blamedInput, type RefusalSettings } from '../quarantine.js';
import type { RunContext } from '../run-input.js';
import { type InputReads, readConflict, recordInputReads, withReadVersions } from './input-reads.js';
import { whileAlive } from './keep-alive.js';
import { fingerprintKey, outputKey, stagedOutputKey, stagingPrefix } from './layout.js';
import type { GroupItem } from './plan.js';
import { runEngine } from './rewrite-engine.js';

export interface CompactDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: Clock;
  /** The Parquet engine that rewrites the group (tests hand in one that fails on purpose). */
  readonly engine: ParquetEngine;
  /**
   * An operator's partition rewrite's reader and writer: a run with a `transform` rewrites through the engine it
   * gives for the stored plan's transformation (see rewrite-engine.ts). Absent: such a run fails, nothing written.
   */
  readonly transforms?: PartitionTransforms;
  /** Decoded bytes a sort may hold (from the Lambda's memory). */
  readonly sortMemoryBudgetBytes?: number;
  /**
   * Worker threads the engine may encode with (the function's usable vCPUs; default 1). Groups of
   * several outputs encode them in parallel; a single output has its row groups encoded in parallel and
   * joined; sorted groups stay on one thread.
   */
  readonly workers?: number;
  /**
   * The most worker threads a table's `encodeWorkers` may ask for here (the function's cores and memory, see
   * shared/engine-workers.ts). Absent: `workers`.
   */
  readonly maxWorkers?: number;
  /**
   * Where an input that fails the rewrite by itself (CorruptInputError, UnsupportedInputError naming it)
   * is recorded, so later plans leave it out and its neighbours compact. Absent: nothing is recorded.
   */
  readonly quarantine?: Quarantine;
  /**
   * The table's format, bound to its settings: it reads the rows it deletes from an input (see
   * `TableFormat.deletedRows`) and prepares a group before its rewrite (`TableFormat.prepareGroup`).
   * @default the run's format (`run.format`), unbound
   */
  readonly format?: TableFormat;
}

export interface CompactStepResult {
  readonly groupId: string;
  readonly state: GroupJournalEntry['state'];
  readonly outputs: number;
  readonly rows: number;
  readonly bytesRead: number;
  /** The inputs' fingerprint, which verify compares the re-read outputs with. */
  readonly fingerprint?: GroupFingerprint;
  /** Inputs planned without their footers that the rewrite left in place, and why (see InputFile.footerDeferred). */
  readonly leftOut?: readonly LeftOutInput[];
}

/**
 * Rewrites the group unless a previous attempt did: `planned` → rewrite (after clearing any partial
 * staging of a crashed attempt) → `staged`; `staged` or later → the recorded result. Inputs are only
 * ever read; a failure leaves them where they are and the entry at `planned`.
 *
 * A rewrite that fails on one input's own bytes, while every input is still the planned object, quarantines
 * that input (only it, never its neighbours) and rethrows, so the group fails and rolls back as before but
 * the next run plans around the file. A failure while an input changed is a conflict instead (see below):
 * the new object was never tried, so there is nothing to hold against it. So is a rewrite, failed or not, whose
 * own GETs returned an input at another ETag than planned (the rows read are not the planned ones, even if a writer
 * has put the planned object back since); otherwise the version id each input was read at is journaled with it at
 * `staged`, for the commit (see input-reads.ts).
 */
/**
 * The worker threads a group is encoded with: the table's `encodeWorkers` where it set one, never past what the
 * function holds (`maxWorkers`: its cores and memory), else the function's default (`workers`: its vCPUs).
 */
export function encodeWorkersFor(
  requested: number | undefined,
  workers: number | undefined,
  maxWorkers: number | undefined,
): number {
  const fallback = Math.max(1, workers ?? 1);
  if (requested === undefined) return fallback;
  return Math.max(1, Math.min(requested, maxWorkers ?? fallback));
}

export async function compactGroup(
  deps: CompactDeps,
  run: RunContext,
  item: GroupItem,
): Promise<CompactStepResult> {
  const encodeWorkers = encodeWorkersFor(run.encodeWorkers, deps.workers, deps.maxWorkers);
  let entry = await requireEntry(deps.journal, run.runId, item.groupId);
  if (entry.state !== 'planned') {
    return {
      groupId: item.groupId,
      state: entry.state,
      outputs: entry.outputs.length,
      rows: entry.outputs.reduce((n, o) => n + o.rows, 0),
      bytesRead: 0,
      ...(entry.state === 'staged'
        ? { fingerprint: await readFingerprint(deps.store, run, item.groupId) }
        : {}),
    };
  }
  // The format's work before the rewrite (see TableFormat.prepareGroup): e.g. a pending instant naming the outputs.
  const format = deps.format ?? tableFormat(run.format);
  const prepared = await format.prepareGroup?.(
    { store: deps.store, journal: deps.journal, clock: deps.clock },
    entry,
  );
  if (prepared?.kind === 'conflict') {
    const aborted = await deps.journal.transition(
      entry,
      'aborted',
      { reason: `conflict with the table, group left as it was: ${prepared.reason}` },
      deps.clock.now(),
    );
    return { groupId: item.groupId, state: aborted.state, outputs: 0, rows: 0, bytesRead: 0 };
  }
  if (prepared !== undefined) entry = prepared.entry;
  const engine = await runEngine(deps, run);
  const fileName = prepared?.outputFileName;
  const leftovers = await stagingLeftovers(deps.store, entry.stagingPrefix);
  if (leftovers.length > 0) await deps.store.deleteMany(leftovers.map((key) => ({ key })));
  // The format's own inputs when the group's rows are not its files' (a merged view), else the planned files.
  const files =
    prepared?.kind === 'ready' && prepared.inputs !== undefined
      ? [...prepared.inputs]
      : await rewriteInputs(deps, run, entry);
  // Each input's reads name the object they returned: checked against the plan below, and its version kept for the
  // commit (see input-reads.ts).
  const reads = recordInputReads(
    deps.store,
    entry.inputs.map((i) => i.key),
  );
  let result: RewriteResult;
  try {
    // The format's liveness signal (e.g. a heartbeat of its pending instant) stays fresh while the rewrite runs.
    const keepAlive = prepared?.kind === 'ready' ? prepared.keepAlive : undefined;
    result = await whileAlive(keepAlive, () =>
      engine.rewriteGroup(
        // One store as source and target, as before: the engine composes stitched outputs in the store (S3's
        // UploadPartCopy) only when it reads and writes through the same one. Writes pass the recorder unchanged.
        { source: reads.store, target: reads.store },
        {
          groupId: item.groupId,
          files,
          expectedOutputFiles: item.expectedOutputFiles,
        },
        {
          outputKey: (index) =>
            fileName === undefined
              ? stagedOutputKey(run, item.groupId, index)
              : `${stagingPrefix(run.workRoot, run.runId, item.groupId)}${fileName(index)}`,
          ...prepared?.rewrite,
          codec: run.codec,
          ...(run.deltaEncoding === true && { deltaEncoding: true }),
          ...(run.statistics === 'auto' && {
            statistics: { mode: 'auto' as const, keep: run.keepStatistics ?? [] },
          }),
          // The format's fidelity wins: its readers may need the table's exact physical schema in every file.
          ...((prepared?.rewrite?.schemaFidelity ?? run.schemaFidelity) === 'logical' && {
            schemaFidelity: 'logical' as const,
          }),
          targetFileSizeBytes: prepared?.rewrite?.targetFileSizeBytes ?? run.targetFileSizeBytes,
          ...(encodeWorkers > 1 && { workers: encodeWorkers }),
          ...(run.strategy !== 'binpack' && run.sortColumns !== undefined
            ? {
                sort: {
                  columns: run.sortColumns,
                  memoryBudgetBytes: deps.sortMemoryBudgetBytes ?? 512 * 1024 * 1024,
                  ...(run.strategy === 'zorder' ? { curve: 'zorder' as const } : {}),
                },
              }
            : {}),
        },
      ),
    );
  } catch (err) {
    // A read that failed because a writer replaced or removed an input since planning is a conflict,
    // not a corrupt file: the group is left alone (aborted, nothing staged) and its inputs untouched. The reads'
    // own ETags say so first (an input put back since cannot hide that another object was read), else a HEAD each.
    const misread = misreadInputs(entry, reads);
    const changed = misread.length > 0 ? misread : await changedInputs(deps.store, entry);
    if (changed.length === 0) throw await quarantineBlamed(deps, run, entry, err);
    return leaveAlone(deps, run, item, entry, prepared === undefined ? undefined : format, changed);
  }
  // The rewrite read an input that is not the planned object (replaced, and maybe put back since): its rows are
  // not the planned ones, so the group is a conflict now, before anything is recorded as staged.
  const misread = misreadInputs(entry, reads);
  if (misread.length > 0) {
    return leaveAlone(deps, run, item, entry, prepared === undefined ? undefined : format, misread);
  }
  // Inputs planned without their footers that the rewrite left out (see InputFile.footerDeferred) stay where they
  // are: recorded in the quarantine where their own bytes refused them, and out of the entry, so the commit retires
  // only the inputs whose rows are in the outputs.
  const leftOut = result.leftOut ?? [];
  const leftOutNote = await recordLeftOut(deps, run, entry, leftOut);
  if (result.outputs.length === 0) {
    const aborted = await deps.journal.transition(
      entry,
      'aborted',
      { reason: `nothing to rewrite, every input left as it was: ${leftOutNote}` },
      deps.clock.now(),
    );
    return {
      groupId: item.groupId,
      state: aborted.state,
      outputs: 0,
      rows: 0,
      bytesRead: result.bytesRead,
      leftOut,
    };
  }
  const inputs = stagedInputs(entry, reads, result);
  await deps.store.put(
    fingerprintKey(run.workRoot, run.runId, item.groupId),
    JSON.stringify(result.fingerprint),
    {
      contentType: 'application/json',
    },
  );
  const staged = await deps.journal.transition(
    entry,
    'staged',
    {
      outputs: result.outputs.map((o, index) => ({
        stagingKey: o.key,
        finalKey:
          fileName === undefined
            ? outputKey(run, item.groupId, index)
            : `${run.partitionDir}${fileName(index)}`,
        etag: o.etag,
        size: o.size,
        rows: o.rows,
        ...(result.sources?.[index] === undefined ? {} : { sources: result.sources[index] }),
      })),
      ...(inputs === entry.inputs ? {} : { inputs }),
      ...withNote(entry, leftOutNote, rebuildFallback({ ...entry, inputs }, result)),
    },
    deps.clock.now(),
  );
  return {
    groupId: item.groupId,
    state: staged.state,
    outputs: result.outputs.length,
    rows: result.fingerprint.rows,
    bytesRead: result.bytesRead,
    fingerprint: result.fingerprint,
    ...(leftOut.length === 0 ? {} : { leftOut }),
  };
}

/**
 * The inputs to journal at `staged`: those the rewrite left out removed; each planned without its footer with the rows
 * the rewrite read (what planning records from a footer: the undo of `delete-rebuild` needs it); with the version
 * each was read at where the reads named one (the commit's delete-versioned mode then needs no HEAD per input).
 * The entry's own array when nothing changes.
 */
function stagedInputs(
  entry: GroupJournalEntry,
  reads: InputReads,
  result: RewriteResult,
): readonly JournalInput[] {
  const out = new Set((result.leftOut ?? []).map((l) => l.key));
  const rows = result.inputRows ?? {};
  const inputs = withReadVersions(entry.inputs, (key) => reads.readOf(key))
    .filter((input) => !out.has(input.key))
    .map((input) => {
      const read = rows[input.key];
      return input.rows !== undefined || read === undefined ? input : { ...input, rows: read };
    });
  const same = inputs.length === entry.inputs.length && inputs.every((input, i) => input === entry.inputs[i]);
  return same ? entry.inputs : inputs;
}

/** The staged patch's `note`: the retire-mode note (if any) and the inputs left out, together. */
function withNote(
  entry: GroupJournalEntry,
  leftOut: string,
  fallback: { retireMode?: 'trash'; note?: string },
): { retireMode?: 'trash'; note?: string } {
  if (leftOut === '') return fallback;
  const before = fallback.note ?? entry.note;
  const note = `inputs left out of the rewrite, left in place: ${leftOut}`;
  return { ...fallback, note: before === undefined ? note : `${before}; ${note}` };
}

/**
 * Records the inputs the rewrite left out for their own bytes (unreadable, zero rows) in
 * the quarantine, as a rewrite that failed on them would — later plans then skip them with the reason, while they
 * are the same object — and says what was left out and why. A file left out for being alone of its schema is not
 * quarantined: it may merge with files of its schema later. Empty when nothing was left out.
 */
async function recordLeftOut(
  deps: CompactDeps,
  run: RunContext,
  entry: GroupJournalEntry,
  leftOut: readonly LeftOutInput[],
): Promise<string> {
  for (const left of leftOut) {
    const input = entry.inputs.find((i) => i.key === left.key);
    if (left.errorName === undefined || input === undefined || deps.quarantine === undefined) continue;
    await deps.quarantine.record({
      table: run.table,
      partition: run.partition,
      key: input.key,
      etag: input.etag,
      reason: left.reason,
      errorName: left.errorName,
      runId: run.runId,
      since: deps.clock.now(),
    });
  }
  // Named up to a bound: the note lives in the group's journal item, whose size is bounded (the compact step's result
  // names every one, the quarantine every one refused for its bytes).
  const named = leftOut.slice(0, NOTE_NAMES_AT_MOST).map((l) => `${l.key} (${l.kind}: ${l.reason})`);
  const more = leftOut.length - named.length;
  return [...named, ...(more > 0 ? [`and ${more} more`] : [])].join(', ');
}

/** Left-out inputs a journal note names one by one (each up to a few hundred bytes). */
const NOTE_NAMES_AT_MOST = 20;

/** The inputs the rewrite's reads show were another object than planned (see `readConflict`), with why. */
function misreadInputs(entry: GroupJournalEntry, reads: InputReads): { key: string; reason: string }[] {
  return entry.inputs.flatMap((input) => {
    const reason = readConflict(input, reads.readOf(input.key));
    return reason === undefined ? [] : [{ key: input.key, reason }];
  });
}

/**
 * Leaves a group whose inputs changed since planning alone: any partial staging removed, then `aborted` with the
 * conflict as its reason — or, when its format wrote something before the rewrite (a pending instant), undone by
 * the format's own rollback. Its inputs are untouched.
 */
async function leaveAlone(
  deps: CompactDeps,
  run: RunContext,
  item: GroupItem,
  entry: GroupJournalEntry,
  preparedBy: TableFormat | undefined,
  changed: readonly { key: string; reason: string }[],
): Promise<CompactStepResult> {
  const leftover = await stagingLeftovers(deps.store, entry.stagingPrefix);
  if (leftover.length > 0) await deps.store.deleteMany(leftover.map((key) => ({ key })));
  const reason = `inputs changed concurrently, group left as it was: ${changed.map((c) => `${c.key} (${c.reason})`).join(', ')}`;
  if (preparedBy !== undefined) {
    const undone = await preparedBy.rollback(
      { store: deps.store, journal: deps.journal, clock: deps.clock, engine: deps.engine },
      run.runId,
      item.groupId,
      reason,
    );
    return {
      groupId: item.groupId,
      state: undone.state === 'pending' ? 'published' : undone.state,
      outputs: 0,
      rows: 0,
      bytesRead: 0,
    };
  }
  const aborted = await deps.journal.transition(entry, 'aborted', { reason }, deps.clock.now());
  return { groupId: item.groupId, state: aborted.state, outputs: 0, rows: 0, bytesRead: 0 };
}

/**
 * The largest staged output a `delete-rebuild` undo rebuilds inputs from. The engine holds a whole input file (here:
 * a staged output) while it rewrites it; measured peak RSS of a rebuild: 384 MB from a 61 MB output, 642 MB from a
 * 129 MB one (≈ 150 MB + 3.8 × the output). The steps that may run an undo (commit, rollback, finalize, plan
 * and the sweep, 1,024 MB each in the construct) then fit outputs up to ~190 MB; 160 MiB leaves room for the default 128 MiB target
 * and outputs that overshoot it. A group with a larger output retires to trash: an undo that cannot fit in memory
 * would leave the group fenced for good.
 */
export const REBUILD_MAX_OUTPUT_BYTES = 160 * 1024 * 1024;

/**
 * Retire mode `delete-rebuild` keeps no copy of the inputs: an undo re-creates each from the outputs' rows, so
 * the rewrite must say where every row of every input went, and each input must be nothing but its rows. When
 * that does not hold for this group — rows were sorted (no sources), an input had rows deleted by its format or
 * row lineage written into it (the outputs hold other rows than the file), or an input's row count is unknown
 * or zero (nothing in the outputs to rebuild it from), or an output is too large to rebuild from in the undo's
 * memory (`REBUILD_MAX_OUTPUT_BYTES`) — the group retires to trash instead, and says why.
 */
export function rebuildFallback(
  entry: Pick<GroupJournalEntry, 'retireMode' | 'inputs'>,
  result: Pick<RewriteResult, 'sources' | 'outputs'>,
): { retireMode?: 'trash'; note?: string } {
  if (entry.retireMode !== 'delete-rebuild') return {};
  const largest = Math.max(0, ...result.outputs.map((o) => o.size));
  const why =
    result.sources === undefined
      ? 'the rewrite reordered rows, so no input can be rebuilt from the outputs'
      : entry.inputs.find(
            (i) => i.deletes !== undefined || i.rowLineage !== undefined || i.projection !== undefined,
          ) !== undefined
        ? 'an input has deleted rows, row lineage or a schema projection, so the outputs do not hold it as it was'
        : entry.inputs.find((i) => i.rows === undefined || i.rows === 0) !== undefined
          ? 'an input has no rows (or none recorded) to rebuild it from'
          : largest > REBUILD_MAX_OUTPUT_BYTES
            ? `an output of ${largest} bytes is larger than the ${REBUILD_MAX_OUTPUT_BYTES} an undo can rebuild from within the memory of the steps that run it`
            : undefined;
  return why === undefined
    ? {}
    : { retireMode: 'trash', note: `delete-rebuild mode fell back to trash mode: ${why}` };
}

/**
 * Records the input a failed rewrite blames (see `blamedInput`) and returns the error to rethrow: the same
 * class, key and reason, with advice on how the quarantine is released instead of "remove it by hand".
 * When recording fails the original failure still wins (the group fails either way), and the message says
 * that the next run will meet the file again.
 */
async function quarantineBlamed(
  deps: CompactDeps,
  run: RunContext,
  entry: GroupJournalEntry,
  err: unknown,
): Promise<unknown> {
  const blamed = blamedInput(
    err,
    entry.inputs.map((i) => i.key),
  );
  const input = entry.inputs.find((i) => i.key === blamed?.key);
  if (blamed === undefined || input === undefined || deps.quarantine === undefined) return err;
  let advice: string;
  try {
    await deps.quarantine.record({
      table: run.table,
      partition: run.partition,
      key: input.key,
      etag: input.etag,
      reason: blamed.reason,
      errorName: blamed.name,
      runId: run.runId,
      since: deps.clock.now(),
      ...(blamed instanceof UnsupportedInputError && blamed.liftedBy !== undefined
        ? { refusedUnder: { liftedBy: blamed.liftedBy, ...refusalSettingsOf(run) } }
        : {}),
    });
    advice = `The file was left in place and quarantined (${deps.quarantine.description}): later runs leave it out and compact the rest of the partition until it is replaced or removed, or an operator clears it (lake-compactor quarantine <uri> --clear ${input.key}, with --state-table for the deployed workflow).`;
  } catch (recordErr) {
    advice = `The file was left in place but could not be quarantined (${recordErr instanceof Error ? `${recordErr.name}: ${recordErr.message}` : String(recordErr)}), so the next run will fail on it again; inspect or remove it by hand.`;
  }
  const options = { cause: err, advice };
  return blamed instanceof CorruptInputError
    ? new CorruptInputError(blamed.key, blamed.reason, options)
    : new UnsupportedInputError(blamed.key, blamed.reason, {
        ...options,
        ...(blamed.liftedBy === undefined ? {} : { liftedBy: blamed.liftedBy }),
      });
}

/**
 * The settings an engine refusal in this process depends on: the fidelity the run asked for (not a format's
 * override, which the plan step cannot see, so that a format that requires exact fidelity is not released on every
 * run) and this process's memory (the compact function's, which the plan step is told as `compactMemoryMb`).
 */
export function refusalSettingsOf(run: Pick<RunContext, 'schemaFidelity'>): RefusalSettings {
  return { schemaFidelity: run.schemaFidelity ?? 'exact', memoryMb: currentMemoryBudget().memoryMb };
}

/**
 * The engine's inputs of a group: each as planned (its footer's row count, so a file that changed since is
 * refused; its row lineage, which the rewrite writes into every row) and, where the table format deletes rows of it, those rows, read through the format — so this step
 * stays format-agnostic and the engine never learns what a deletion vector is.
 * @throws InvalidInputError when inputs have deletes their format cannot read; the format's error when reading fails.
 */
async function rewriteInputs(
  deps: CompactDeps,
  run: RunContext,
  entry: GroupJournalEntry,
): Promise<InputFile[]> {
  const withDeletes = entry.inputs.filter((i) => i.deletes !== undefined && i.deletes.rows > 0);
  const format = withDeletes.length === 0 ? undefined : (deps.format ?? tableFormat(run.format));
  if (format !== undefined && format.deletedRows === undefined) {
    throw new InvalidInputError(
      `Group ${entry.groupId} of run ${entry.runId} has ${withDeletes.length} input(s) with deleted rows (e.g. ${withDeletes[0]?.key}), which the ${format.title} format cannot read; nothing was rewritten`,
    );
  }
  const limit = pLimit(16);
  return Promise.all(
    entry.inputs.map((i) =>
      limit(async () => ({
        key: i.key,
        size: i.size,
        etag: i.etag,
        ...(i.rows === undefined ? {} : { rows: i.rows }),
        ...(i.rowLineage === undefined
          ? {}
          : {
              rowLineage: {
                firstRowId: BigInt(i.rowLineage.firstRowId),
                sequenceNumber: BigInt(i.rowLineage.sequenceNumber),
              },
            }),
        ...(i.projection === undefined ? {} : { projection: i.projection }),
        ...(i.footerDeferred === true ? { footerDeferred: true } : {}),
        ...(format?.deletedRows === undefined || i.deletes === undefined || i.deletes.rows === 0
          ? {}
          : { deleted: await format.deletedRows(deps.store, entry, i) }),
      })),
    ),
  );
}

/**
 * Inputs that are no longer what the group planned: removed, or another object — by ETag, which every plan records
 * (a log-named input's from a HEAD at planning, see `withStoredFooter`). An input planned without one (a journal
 * entry of an older version, which planned the inputs of log- and metadata-based formats with an empty ETag) is compared by what its log
 * recorded, its size: an empty ETag says nothing about the object, so it never makes the input "changed" — that
 * turned every engine error on such a table into "inputs changed concurrently".
 */
async function changedInputs(
  store: ObjectStore,
  entry: GroupJournalEntry,
): Promise<{ key: string; reason: string }[]> {
  const limit = pLimit(16);
  const checked = await Promise.all(
    entry.inputs.map((input) =>
      limit(async () => {
        const head = await store.head(input.key);
        if (head === undefined) return { key: input.key, reason: 'removed since planning' };
        if (input.etag === '') {
          return head.size === input.size
            ? undefined
            : {
                key: input.key,
                reason: `changed since planning (${head.size} bytes, planned ${input.size})`,
              };
        }
        if (head.etag === input.etag) return undefined;
        return {
          key: input.key,
          reason: `changed since planning (ETag ${head.etag}, planned ${input.etag})`,
        };
      }),
    ),
  );
  return checked.filter((c): c is { key: string; reason: string } => c !== undefined);
}

/** The fingerprint the compact step stored beside the staged outputs. */
export async function readFingerprint(
  store: ObjectStore,
  run: Pick<RunContext, 'runId' | 'workRoot'>,
  groupId: string,
): Promise<GroupFingerprint> {
  return JSON.parse(
    new TextDecoder().decode(await store.get(fingerprintKey(run.workRoot, run.runId, groupId))),
  ) as GroupFingerprint;
}

export async function requireEntry(
  journal: Journal,
  runId: string,
  groupId: string,
): Promise<GroupJournalEntry> {
  const entry = await journal.get(runId, groupId);
  if (!entry) {
    throw new InvalidInputError(
      `No journal entry for group ${groupId} of run ${runId}: the plan step did not create it; re-run the execution from the start`,
    );
  }
  return entry;
}
