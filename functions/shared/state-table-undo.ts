// Where an undo of a deployed workflow's run reads it: the deployment's DynamoDB state table, where the workflow
// journals each run (one per partition, its id the execution's name). Used by `lake-compactor undo --stack` and by
// the sweep function's `undo` input (the console's way); only the hints they print differ.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../adapters/dynamodb-partition-lease.js';
import { UsageError } from '../core/errors.js';
import { printable } from '../core/keys.js';
import { journalManifestPrefix } from '../core/workflow/layout.js';
import { type RunJournalSource, undoLeaseHolder } from '../core/workflow/undo-run.js';
import type { Clock } from '../ports/clock.js';
import type { JournalPartition } from '../ports/journal.js';
import type { ObjectStore } from '../ports/object-store.js';
import { whileRenewing } from './lease-keeper.js';

/** What an operator is told to do next, in the words of the way they asked for the undo. */
export interface StateTableUndoHints {
  /** How to finish a run that left `partitions` open. */
  settle(partitions: readonly string[]): string;
  /** Appended to "run X is not in the journal of state table T": where else the run may be. */
  readonly notFound: string;
  /** How to undo a run of `otherTable` instead. */
  otherTable(otherTable: string): string;
  /** How to name the location of the table the run compacted. */
  readonly otherLocation: string;
}

export interface StateTableUndoOptions {
  readonly client: DynamoDBClient;
  readonly stateTable: string;
  /** The store of the table's objects (the manifests the journal's entries point at are in its work root). */
  readonly store: ObjectStore;
  readonly workRoot: string;
  /** The table undone, as configured. */
  readonly table: string;
  /** The table's key prefix in the store: `''` or ending with `/`. */
  readonly prefix: string;
  /** The table's location as the operator named it (`s3://bucket/prefix`), in messages. */
  readonly location: string;
  readonly clock: Clock;
  readonly hints: StateTableUndoHints;
}

/**
 * The state table's journal as a {@link RunJournalSource}. Read with the manifests' digests required: the undo
 * deletes outputs and restores old versions on the lists' word, so a list nothing proves the journal wrote is
 * refused, as vacuum refuses it.
 */
export function stateTableUndoSource(options: StateTableUndoOptions): RunJournalSource {
  const { client, stateTable, store, workRoot, table, prefix, location, clock, hints } = options;
  const journal = new DynamoJournal({
    client,
    tableName: stateTable,
    manifests: { store, prefix: journalManifestPrefix(workRoot) },
    requireManifestDigest: true,
  });
  return {
    journal,
    entries: (runId) => journal.listRun(runId),
    // A state table is not listed by run (that would be a scan of every item), so only where it looked is said.
    notFound: async (runId) =>
      `run ${runId} is not in the journal of state table ${stateTable} (no item with pk RUN#${runId}). A deployed run's id is its Step Functions execution's name (one per partition); ${hints.notFound}; a run's items expire after the journal's retention, and then the run can no longer be undone`,
    settleHint: hints.settle,
    // The journal is not in the store, so the store has no time of a group's `done`: the format falls back to the
    // entry's own updatedAt, written after the outputs were.
    settledAt: async () => undefined,
    checkTable(runId, entries) {
      const others = [...new Set(entries.map((e) => e.table))].filter((t) => t !== table);
      if (others.length > 0) {
        throw new UsageError(
          `run ${runId} compacted table ${others.join(', ')} of the deployment, not ${table}: ${hints.otherTable(others[0] as string)}`,
        );
      }
      const outside = entries
        .flatMap((e) => e.inputs.map((i) => i.key))
        .find((key) => !key.startsWith(prefix));
      if (outside !== undefined) {
        throw new UsageError(
          `run ${runId} compacted ${printable(outside)}, outside ${location}: ${hints.otherLocation}`,
        );
      }
    },
    /**
     * Holds each partition's lease, as a console settle run does, while the undo changes it: a workflow run that
     * planned the restored inputs with the run's outputs still there would compact both into one file (every row
     * twice). Refused (LeaseHeld, nothing changed) while a run holds it. The holder is the undo's own id
     * (undoLeaseHolder), so an undo killed holding it takes it again when run again, and releases it. The leases
     * are renewed while the undo works (lease-keeper.ts).
     */
    async exclusive(runId, groups, change) {
      const leases = new DynamoPartitionLease({
        client,
        tableName: stateTable,
        tables: [],
        policies: new Map(),
      });
      const holder = undoLeaseHolder(runId);
      // Renewed while the undo works: the sweep has no execution to ask after, and would release them otherwise.
      return whileRenewing(leases, holder, clock, async (kept) => {
        const held: JournalPartition[] = [];
        try {
          for (const partition of [...new Set(groups.map((g) => g.partition))].sort()) {
            const ref = { table, partition };
            await kept.acquire(ref, { runId: holder, now: clock.now() });
            held.push(ref);
          }
          return await change();
        } finally {
          for (const ref of held) await kept.release(ref, holder, {});
        }
      });
    },
  };
}
