// The state table's key layout for partitions, files, decisions and format markers, and the gsi1 sort keys the
// sweep and `status` query by range: every such key string is built and parsed here, never in core.
import { dueSlot } from '../core/profiler/decisions.js';
import type { PartitionRef, PartitionSnapshot } from '../core/profiler/model.js';

/** Partition key prefix of a partition's item collection (state, decisions, fences, quarantine, history). */
const PARTITION_PREFIX = 'PART#';
const FILE_PREFIX = 'FILE#';

/**
 * Item keys of the single table (see docs/architecture.md, "State table"). Other adapters that keep items
 * in a partition's collection (fences, quarantine, history) take its `pk` from {@link statsKeys.partition}.
 */
export const statsKeys = {
  partition: (ref: PartitionRef) => ({ pk: `${PARTITION_PREFIX}${ref.table}#${ref.partition}`, sk: 'STATE' }),
  file: (fileId: string) => ({ pk: `${FILE_PREFIX}${fileId}`, sk: 'FILE' }),
  decision: (ref: PartitionRef, at: number, id: string) => ({
    pk: `${PARTITION_PREFIX}${ref.table}#${ref.partition}`,
    sk: `${DECISION_PREFIX}${new Date(at).toISOString()}#${id}`,
  }),
  tableIndex: (table: string) => `TABLE#${table}`,
  /**
   * A foreign table seen in configured table `table` at `root` (relative to its root; '' = all of
   * it). `pk = TABLE#<table>` holds only these and the change cursor: `TABLE#` is otherwise only a gsi1pk value.
   */
  foreignFormat: (table: string, root: string) => ({ pk: `TABLE#${table}`, sk: `${FORMAT_PREFIX}${root}` }),
  /** How far the profiler applied a log-based table's log (see `StatsStore.changeCursor`), beside its markers. */
  changeCursor: (table: string) => ({ pk: `TABLE#${table}`, sk: 'CHANGES' }),
};

/** Sort-key prefix of decision items under a partition's `pk`. */
export const DECISION_PREFIX = 'DECISION#';
/** Sort-key prefix of foreign-format markers under `TABLE#<table>`. */
export const FORMAT_PREFIX = 'FORMAT#';

/** `PART#<table>#<partition>` → ref (table names cannot contain `#`; partitions may). */
export function refFromPartitionKey(pk: string): PartitionRef {
  const rest = pk.slice(PARTITION_PREFIX.length);
  const hash = rest.indexOf('#');
  return { table: rest.slice(0, hash), partition: rest.slice(hash + 1) };
}

/** `FILE#<bucket>/<key>` → the file id. */
export function fileIdFromKey(pk: string): string {
  return pk.slice(FILE_PREFIX.length);
}

/** Width of epoch-ms numbers in sort keys (13 digits covers years 2001–2286), so string order is time order. */
const MS_WIDTH = 13;

function pad(ms: number): string {
  return String(Math.max(0, Math.floor(ms))).padStart(MS_WIDTH, '0');
}

export const LEASE_PREFIX = 'LEASE#';
export const ATTENTION_PREFIX = 'ATTENTION#';
const DUE_PREFIX = 'DUE#';

/**
 * The partition's gsi1 sort key (gsi1pk = `TABLE#<table>`), so the sweep and `status --due` find work by
 * range query instead of a scan:
 * - `DUE#<due slot ms>#<partition>`: idle, and the last decision said compact (or will once a wait passes) —
 *   the sweep queries `DUE#` … `DUE#<now>`; the due time is rounded up to its slot (see `dueSlot`), so a
 *   hot partition's key moves at most once per slot;
 * - `LEASE#<acquiredAt ms>#<partition>`: scheduled or compacting — the sweep checks these executions;
 * - `ATTENTION#<since ms>#<partition>`: needs-attention — the sweep counts these for the alarm;
 * - `IDLE#<partition>`: idle and nothing but new events can change the verdict.
 */
export function gsiSortKey(
  snapshot: Pick<PartitionSnapshot, 'partition' | 'state' | 'lease' | 'attention'>,
  dueAt: number | undefined,
): string {
  if (snapshot.state === 'needs-attention')
    return `${ATTENTION_PREFIX}${pad(snapshot.attention?.since ?? 0)}#${snapshot.partition}`;
  if (snapshot.state !== 'idle')
    return `${LEASE_PREFIX}${pad(snapshot.lease?.acquiredAt ?? 0)}#${snapshot.partition}`;
  const slot = dueSlot(dueAt);
  if (slot !== undefined) return `${DUE_PREFIX}${pad(slot)}#${snapshot.partition}`;
  return `IDLE#${snapshot.partition}`;
}

/** The range of gsi1 sort keys of partitions due at or before `now`. */
export function dueRange(now: number): { readonly from: string; readonly to: string } {
  return { from: DUE_PREFIX, to: `${DUE_PREFIX}${pad(now)}#\uffff` };
}
