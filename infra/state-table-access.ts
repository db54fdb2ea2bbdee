// Per-function access to the state table: every function may read it, and each writes only the item collections
// its step writes, by partition key (`dynamodb:LeadingKeys`), so the profiler — which parses writers' metadata —
// can never write the workflow journal that vacuum trusts, and no step writes what is not its own.
//
// What the key design allows and prevents (functions/adapters/dynamodb-keys.ts and its neighbours): items are
// grouped by partition key prefix — `PART#<table>#<partition>` (statistics and their file-record segments, the
// lease, decisions, journal fences, quarantine, run history), `FILE#<bucket>/<key>` (per-file items written before
// segments), `TABLE#<table>` (format markers, the change cursor), `RUN#<runId>` (the journal), `RUNS`/`RUNS#<table>`
// (running-compaction counts) and `HEALTH#<job>` (the per-table turns of the profiler and the sweep). LeadingKeys
// sees only the partition key, so a function that writes a partition's statistics (the profiler, which also schedules it)
// can also write that partition's lease, fences and quarantine items: those share the partition's key by design
// (one consistent query and one transaction per partition). The journal and the per-file items do not.

import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';

/** The state table's item collections, as `dynamodb:LeadingKeys` patterns of their partition keys. */
export const STATE_KEY_SPACES = {
  /** `PART#<table>#<partition>`: statistics and file-record segments, lease, decisions, journal fences, quarantine, history. */
  partitions: ['PART#*'],
  /**
   * `FILE#<bucket>/<key>`: per-file items of partitions written before segments (read until reconcile rewrites the
   * partition; written only when a file moves between partitions).
   */
  files: ['FILE#*'],
  /** `TABLE#<table>`: a foreign table's commit markers and the profiler's change cursor of a log-based table. */
  tables: ['TABLE#*'],
  /** `RUN#<runId>`: the workflow journal (group entries). */
  journal: ['RUN#*'],
  /** `RUNS` and `RUNS#<table>`: running-compaction counters and slots (run caps). */
  runCounts: ['RUNS', 'RUNS#*'],
  /** `HEALTH#profiler`: the profiler's per-table turns (failures in a row, attempts in progress). */
  profilerHealth: ['HEALTH#profiler'],
  /** `HEALTH#sweep`, `HEALTH#reconcile`: the sweep's per-table turns, in sweep and in reconcile mode. */
  sweepHealth: ['HEALTH#sweep', 'HEALTH#reconcile'],
} as const;

export type StateKeySpace = keyof typeof STATE_KEY_SPACES;

/** Item-level writes; none of the functions uses BatchWriteItem or PartiQL. Reads come with `grantReadData`. */
export const STATE_WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
] as const;

/**
 * What each function writes (from the adapters it drives: core/workflow, adapters/dynamodb-*.ts):
 * - profiler: partition statistics and decisions (scheduling takes the partition), per-file items, table markers and
 *   its change cursor, and the run counts a scheduled start reserves — never the journal;
 * - validate: nothing (it normalises the request and starts child executions);
 * - lease: the partition's lease and the run counts taken with it;
 * - plan, compact, verify, commit, rollback: journal entries and their fences (a settled entry closes its fence in
 *   the partition's collection), plan and compact also the quarantine, all in the partition's collection;
 * - finalize: besides those, history and the lease release (partition), the run's layout change (per-file items)
 *   and the run counts it gives back;
 * - sweep: everything the steps do (it settles a dead run and releases its lease), the profiler's reconcile and
 *   the run-count recount;
 * - profiler and sweep also their own per-table turn health (`HEALTH#<job>`, shared/table-turns.ts), each only its
 *   own job's, so neither can reorder or hide the other's failing tables;
 * - vacuum, tiering: nothing (vacuum reads journal entries; tiering does not use the table).
 */
export const STATE_WRITES = {
  profiler: ['partitions', 'files', 'tables', 'runCounts', 'profilerHealth'],
  validate: [],
  lease: ['partitions', 'runCounts'],
  plan: ['journal', 'partitions'],
  compact: ['journal', 'partitions'],
  verify: ['journal', 'partitions'],
  commit: ['journal', 'partitions'],
  rollback: ['journal', 'partitions'],
  finalize: ['journal', 'partitions', 'files', 'runCounts'],
  sweep: ['journal', 'partitions', 'files', 'tables', 'runCounts', 'sweepHealth'],
  vacuum: [],
} as const satisfies Record<string, readonly StateKeySpace[]>;

export type StateTableUser = keyof typeof STATE_WRITES;

/** The LeadingKeys patterns of `spaces`, in order. */
export function leadingKeyPatterns(spaces: readonly StateKeySpace[]): string[] {
  return spaces.flatMap((s) => [...STATE_KEY_SPACES[s]]);
}

/**
 * Read access to the whole table (and its index), and item writes only to the collections of `user`
 * ({@link STATE_WRITES}): one statement on the table, conditioned with `ForAllValues:StringLike dynamodb:LeadingKeys`
 * (every item a request writes must have such a partition key).
 */
export function grantStateTableAccess(
  table: dynamodb.ITable,
  grantee: iam.IGrantable,
  user: StateTableUser,
): void {
  table.grantReadData(grantee);
  const patterns = leadingKeyPatterns(STATE_WRITES[user]);
  if (patterns.length === 0) return;
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: [...STATE_WRITE_ACTIONS],
      resources: [table.tableArn],
      conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': patterns } },
    }),
  );
}
