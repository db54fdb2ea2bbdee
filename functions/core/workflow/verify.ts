// The verify step: re-reads a group's staged outputs independently and compares them with the inputs'
// fingerprint; only a match moves the journal to `verified`, which is what allows a commit.
import type { Clock } from '../../ports/clock.js';
import type { GroupJournalEntry, Journal } from '../../ports/journal.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { ParquetEngine, VerificationReport } from '../../ports/parquet-engine.js';
import type { PartitionTransforms } from '../../ports/partition-transforms.js';
import { CorruptInputError, NotVerifiedError, VerificationError } from '../errors.js';
import type { GroupFingerprint } from '../fingerprint/fingerprint.js';
import type { RunContext } from '../run-input.js';
import { assertLiveRows, assertStitchedSources, expectedLiveRows } from '../verify/verify.js';
import { groupFormat, type StepCommitDeps } from './commit.js';
import { readFingerprint, requireEntry } from './compact.js';
import { whileAlive } from './keep-alive.js';
import { runEngine } from './rewrite-engine.js';

export interface VerifyDeps {
  readonly store: ObjectStore;
  readonly journal: Journal;
  readonly clock: Clock;
  /** The Parquet engine that re-reads the outputs (the one that wrote them, or any other: the rule is core's). */
  readonly engine: ParquetEngine;
  /** Worker threads hashing outputs (the function's vCPUs); default 1, everything on this thread. */
  readonly workers?: number;
  /** A rewrite's outputs are verified by its transforming engine (see rewrite-engine.ts); needed by such runs only. */
  readonly transforms?: PartitionTransforms;
  /** The run's table format; the group's own (by its journal entry) when omitted or another. */
  readonly format?: StepCommitDeps['format'];
}

export interface VerifyStepResult {
  readonly groupId: string;
  readonly state: string;
  readonly rows: number;
  readonly outputs: number;
}

/**
 * `staged` → verify → `verified`. Already verified (or further): nothing to do. A mismatch throws
 * VerificationError and leaves the entry `staged`, so the rollback removes the staged outputs and
 * nothing is published.
 * @param fingerprint the compact step's result; read from staging when absent (a redriven execution).
 */
export async function verifyGroup(
  deps: VerifyDeps,
  run: RunContext,
  groupId: string,
  fingerprint?: GroupFingerprint,
): Promise<VerifyStepResult> {
  const entry = await requireEntry(deps.journal, run.runId, groupId);
  const rows = entry.outputs.reduce((n, o) => n + o.rows, 0);
  if (entry.state !== 'staged') {
    if (entry.state === 'planned') {
      throw new NotVerifiedError(
        `Group ${groupId} of run ${run.runId} has no staged outputs to verify; compact it first`,
      );
    }
    return { groupId, state: entry.state, rows, outputs: entry.outputs.length };
  }
  // A group still pending on the table keeps its sign of life while its outputs are re-read (TableFormat.groupKeepAlive).
  const keepAlive = groupFormat(deps, entry).groupKeepAlive?.(deps.store, entry);
  const verify = () => verifyStaged(deps, run, entry, fingerprint);
  const { expected, report } = await whileAlive(keepAlive, verify, { now: true });
  // From the plan, not from the rewrite: what dropping the inputs' deleted rows must leave.
  const live = expectedLiveRows(entry.inputs);
  if (live !== undefined) assertLiveRows(live, expected.rows, report.rows);
  const verified = await deps.journal.transition(entry, 'verified', {}, deps.clock.now());
  return { groupId, state: verified.state, rows, outputs: entry.outputs.length };
}

/** Checks the staged objects are what the rewrite journaled and re-reads them against the fingerprint. */
async function verifyStaged(
  deps: VerifyDeps,
  run: RunContext,
  entry: GroupJournalEntry,
  fingerprint: GroupFingerprint | undefined,
): Promise<{ readonly expected: GroupFingerprint; readonly report: VerificationReport }> {
  const groupId = entry.groupId;
  const expected = fingerprint ?? (await readFingerprint(deps.store, run, groupId));
  // Before reading anything: stitched outputs must copy exactly the planned inputs, at their planned ETags.
  assertStitchedSources(entry.inputs, expected);
  // The staged objects must be exactly what the rewrite journaled (the commit copies them If-Match that ETag).
  const changed: string[] = [];
  for (const output of entry.outputs) {
    const head = await deps.store.head(output.stagingKey);
    if (head === undefined) changed.push(`${output.stagingKey} is missing`);
    else if (head.etag !== output.etag || head.size !== output.size) {
      changed.push(
        `${output.stagingKey} changed since it was written (ETag ${head.etag}, ${head.size} B; journaled ${output.etag}, ${output.size} B)`,
      );
    }
  }
  if (changed.length > 0) throw new VerificationError(`group ${groupId}: ${changed.join('; ')}`, { changed });
  const engine = await runEngine(deps, run);
  let report: VerificationReport;
  try {
    report = await engine.verifyOutputs(
      deps.store,
      entry.outputs.map((o) => ({ key: o.stagingKey, size: o.size })),
      expected,
      { workers: deps.workers ?? 1 },
    );
  } catch (err) {
    // An output that cannot be read back is a failed verification of our own write, not a bad input.
    if (err instanceof CorruptInputError) {
      throw new VerificationError(`group ${groupId}: output ${err.key} cannot be read back (${err.reason})`);
    }
    throw err;
  }
  return { expected, report };
}
