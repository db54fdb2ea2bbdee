// Merges a file slice's log records by record key, then with its base file, as Hudi's compactor does — for the two
// payloads of 0.x tables (version 6) and the two merge modes of 1.x tables (versions 8, 9) that carry no user code:
//
//   v6 OverwriteWithLatestAvroPayload  log vs log: `preCombine` — the greater ordering value wins, a tie goes to the
//                                      later record, a record after a delete wins; log vs base: the log wins
//                                      (`combineAndGetUpdateValue` ignores the base).
//   v6 DefaultHoodieRecordPayload      log vs log: the same `preCombine`; log vs base: the base stays when its
//                                      ordering value is greater (`needUpdatingPersistedRecord`); a delete block's
//                                      delete (an empty payload) removes the base row.
//   v6 deletes in the log              `processNextDeletedRecord`: a delete replaces the earlier record unless it
//                                      carries a non-default ordering value of the same type smaller than that
//                                      record's (a natural-order delete — IntWrapper 0, SQL DELETE's — always wins).
//   v8+ COMMIT_TIME_ORDERING           the later write wins, deletes included, against the base too.
//   v8+ EVENT_TIME_ORDERING            the greater-or-equal ordering value wins (ties: the later), natural-order
//                                      deletes always win; against the base, the base stays only when its ordering
//                                      value is greater (BufferedRecordMergerFactory's EventTimeRecordMerger).
//
// A data record is a delete when `_hoodie_is_deleted` is true (and, on v8+, when `_hoodie_operation` is `D`).
// Everything else — CUSTOM mode, other payload classes, partial updates, several ordering fields — is refused by
// name before any record is read.
import { type DeletedRows, DeletedRowsBuilder } from '../../../deletes/deleted-rows.js';
import type { LogBlock } from './blocks.js';
import type { DecodeBudget } from './budget.js';
import { decodeBlockRecords, type OrderingValue } from './content.js';
import { HudiLogFormatError, HudiMergeUnsupportedError } from './errors.js';

const OVERWRITE_WITH_LATEST = 'org.apache.hudi.common.model.OverwriteWithLatestAvroPayload';
const DEFAULT_PAYLOAD = 'org.apache.hudi.common.model.DefaultHoodieRecordPayload';

/** How one table merges: one of the four implemented semantics, and its ordering (precombine) field. */
export interface MergePolicy {
  readonly semantics: 'v6-overwrite-latest' | 'v6-default-payload' | 'commit-time' | 'event-time';
  /** The ordering field, or undefined when the table has none (every ordering value then ties). */
  readonly orderingField: string | undefined;
  /** Whether `_hoodie_operation = 'D'` marks a delete (1.x tables). */
  readonly operationDeletes: boolean;
}

/** The table properties (`hoodie.properties`) that decide the merge. */
export interface MergeConfig {
  /** `hoodie.table.version`. */
  readonly tableVersion: number;
  /** `hoodie.compaction.payload.class` (v6) or the legacy payload class of a v8+ table. */
  readonly payloadClass?: string;
  /** `hoodie.record.merge.mode` (v8+). */
  readonly mergeMode?: string;
  /** `hoodie.table.precombine.field` (v6, v8) or `hoodie.table.ordering.fields` (v9). */
  readonly orderingFields?: string;
  /** `hoodie.table.partial.update.mode` (v9), when set. */
  readonly partialUpdateMode?: string;
}

/**
 * The merge policy of a table, or a refusal by name.
 * @throws HudiMergeUnsupportedError for CUSTOM mode, other payload classes, partial updates, several ordering fields,
 *   EVENT_TIME_ORDERING without an ordering field, and table versions other than 6, 8 and 9.
 */
export function mergePolicy(config: MergeConfig): MergePolicy {
  const fields = (config.orderingFields ?? '')
    .split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  if (fields.length > 1)
    throw new HudiMergeUnsupportedError(
      `ordering by several fields (${fields.join(', ')})`,
      'only one ordering field is compared',
    );
  const orderingField = fields[0];
  if (
    config.partialUpdateMode !== undefined &&
    config.partialUpdateMode !== '' &&
    config.partialUpdateMode !== 'NONE'
  )
    throw new HudiMergeUnsupportedError(
      `partial update mode ${config.partialUpdateMode}`,
      'partial updates keep columns a log record does not carry',
    );
  const payload = config.payloadClass;
  if (payload !== undefined && payload !== OVERWRITE_WITH_LATEST && payload !== DEFAULT_PAYLOAD)
    throw new HudiMergeUnsupportedError(
      `payload class ${payload}`,
      'only OverwriteWithLatestAvroPayload and DefaultHoodieRecordPayload are implemented',
    );
  if (config.tableVersion === 6)
    return {
      semantics: payload === DEFAULT_PAYLOAD ? 'v6-default-payload' : 'v6-overwrite-latest',
      orderingField,
      operationDeletes: false,
    };
  if (config.tableVersion !== 8 && config.tableVersion !== 9)
    throw new HudiMergeUnsupportedError(
      `table version ${config.tableVersion}`,
      'only versions 6, 8 and 9 are merged',
    );
  const mode =
    config.mergeMode ??
    (payload === DEFAULT_PAYLOAD
      ? 'EVENT_TIME_ORDERING'
      : payload === undefined
        ? undefined
        : 'COMMIT_TIME_ORDERING');
  if (mode === 'COMMIT_TIME_ORDERING')
    return { semantics: 'commit-time', orderingField, operationDeletes: true };
  if (mode === 'EVENT_TIME_ORDERING') {
    if (orderingField === undefined)
      throw new HudiMergeUnsupportedError(
        'EVENT_TIME_ORDERING without an ordering field',
        'Hudi itself requires one for this mode',
      );
    return { semantics: 'event-time', orderingField, operationDeletes: true };
  }
  throw new HudiMergeUnsupportedError(
    `merge mode ${mode ?? '(none set)'}`,
    'only COMMIT_TIME_ORDERING and EVENT_TIME_ORDERING are implemented',
  );
}

/** The surviving version of one record key after the log is merged. */
export type MergedLogRecord =
  | {
      readonly kind: 'upsert';
      readonly key: string;
      /** The whole log record, meta columns included (`_hoodie_commit_time`, `_hoodie_commit_seqno`, …). */
      readonly row: Readonly<Record<string, unknown>>;
      readonly ordering: unknown;
      /** Whether the record itself says it is deleted (`_hoodie_is_deleted`, or `_hoodie_operation = 'D'`). */
      readonly deleted: boolean;
      readonly instant: string;
    }
  | {
      readonly kind: 'delete';
      readonly key: string;
      readonly ordering: OrderingValue;
      /** A delete without an ordering value (SQL DELETE): it wins by arrival. */
      readonly naturalOrder: boolean;
      readonly instant: string;
    };

/**
 * Folds log records into the latest version per key, in Hudi's processing order (feed it the scanner's blocks in
 * order). Keys keep the order they first appeared in, so the appended rows of a slice come out deterministically.
 */
export class LogRecordMerger {
  private readonly records = new Map<string, MergedLogRecord>();

  constructor(readonly policy: MergePolicy) {}

  /** The merged records by key. */
  get merged(): ReadonlyMap<string, MergedLogRecord> {
    return this.records;
  }

  /** Adds a data block's records (written at `instant`). `where` names the block for errors. */
  addRecords(
    instant: string,
    rows: readonly Record<string, unknown>[],
    where: { file: string; offset: number },
  ): void {
    const field = this.policy.orderingField;
    for (const row of rows) {
      const key = row._hoodie_record_key;
      if (typeof key !== 'string')
        throw new HudiLogFormatError(where.file, where.offset, 'a log record has no _hoodie_record_key');
      const deleted =
        row._hoodie_is_deleted === true || (this.policy.operationDeletes && row._hoodie_operation === 'D');
      const incoming: MergedLogRecord = {
        kind: 'upsert',
        key,
        row,
        ordering: field === undefined ? null : (row[field] ?? null),
        deleted,
        instant,
      };
      const existing = this.records.get(key);
      this.records.set(key, existing === undefined ? incoming : this.combine(existing, incoming));
    }
  }

  /** Adds a delete block's entries (written at `instant`). */
  addDeletes(
    instant: string,
    deletes: readonly { recordKey: string | null; orderingValue: OrderingValue; naturalOrder: boolean }[],
    where: { file: string; offset: number },
  ): void {
    for (const d of deletes) {
      if (d.recordKey === null)
        throw new HudiLogFormatError(where.file, where.offset, 'a delete block entry has no record key');
      const incoming: MergedLogRecord = {
        kind: 'delete',
        key: d.recordKey,
        ordering: d.orderingValue,
        naturalOrder: d.naturalOrder,
        instant,
      };
      const existing = this.records.get(d.recordKey);
      this.records.set(d.recordKey, existing === undefined ? incoming : this.combine(existing, incoming));
    }
  }

  /** Which of an earlier and a later record of one key survives. */
  private combine(older: MergedLogRecord, newer: MergedLogRecord): MergedLogRecord {
    switch (this.policy.semantics) {
      case 'commit-time':
        return newer;
      case 'event-time':
        if (newer.kind === 'delete' && newer.naturalOrder) return newer;
        if (older.kind === 'delete' && older.naturalOrder) return newer;
        return compareOrdering(newer.ordering, older.ordering) >= 0 ? newer : older;
      default:
        if (newer.kind === 'delete') {
          // processNextDeletedRecord: the earlier record stays only against a typed, smaller, non-default delete.
          const keepOlder =
            !newer.naturalOrder &&
            sameKind(older.ordering, newer.ordering) &&
            compareOrdering(older.ordering, newer.ordering) > 0;
          return keepOlder ? older : newer;
        }
        // preCombine: a record after a delete (an empty payload) wins; else the greater ordering value, ties later.
        if (older.kind === 'delete') return newer;
        return compareOrdering(older.ordering, newer.ordering) > 0 ? older : newer;
    }
  }
}

/**
 * Decodes `blocks` (a scan's, in order) and merges their records.
 * @throws what `decodeBlockRecords` throws, and HudiLogFormatError for records without keys.
 */
export async function mergeLogBlocks(
  blocks: readonly LogBlock[],
  policy: MergePolicy,
  budget: DecodeBudget,
): Promise<ReadonlyMap<string, MergedLogRecord>> {
  const merger = new LogRecordMerger(policy);
  for (const block of blocks) {
    const instant = block.header.get('INSTANT_TIME') ?? '';
    const content = await decodeBlockRecords(block, budget);
    if (content.kind === 'data') merger.addRecords(instant, content.records, block);
    else merger.addDeletes(instant, content.deletes, block);
  }
  return merger.merged;
}

/** One row of the slice's base file, as the merge needs it. */
export interface BaseRowKey {
  /** The row's position in the base file (0-based, file order). */
  readonly position: number;
  readonly recordKey: string;
  /** The row's ordering field value (ignored unless the semantics compare against the base). */
  readonly orderingValue: unknown;
}

/** The merged view of a file slice, as changes to its base file. */
export interface SliceMerge {
  /**
   * Base rows to drop, by position, ascending: updated (a log version replaces them) or deleted. A later step
   * turns them into the engine's deleted rows of the base file.
   */
  readonly dropPositions: readonly number[];
  /**
   * Log records to write after the base file's remaining rows, each whole (meta columns included: its
   * `_hoodie_commit_time` and `_hoodie_commit_seqno` are the log record's). A later step makes them an extra input.
   */
  readonly append: readonly Readonly<Record<string, unknown>>[];
  /** The merged log's keys that the base holds too: what tells an update or a delete of a base row from an insert. */
  readonly baseHeld: ReadonlySet<string>;
}

/**
 * The merged view of a slice: which base rows go and which log records come, by `policy` (the base is the older
 * side of every comparison). A slice without a base file passes no base rows.
 */
export function mergeSlice(
  base: Iterable<BaseRowKey>,
  log: ReadonlyMap<string, MergedLogRecord>,
  policy: MergePolicy,
): SliceMerge {
  const dropPositions: number[] = [];
  // Keys the base holds, and whether the log's version beat it there (then it is appended in its place).
  const logWon = new Map<string, boolean>();
  for (const row of base) {
    const record = log.get(row.recordKey);
    if (record === undefined) continue;
    const stays = baseStays(row.orderingValue, record, policy);
    logWon.set(row.recordKey, !stays);
    if (!stays) dropPositions.push(row.position);
  }
  const append: Readonly<Record<string, unknown>>[] = [];
  for (const [key, record] of log) {
    if (record.kind !== 'upsert' || record.deleted) continue;
    if (logWon.get(key) === false) continue;
    append.push(record.row);
  }
  dropPositions.sort((a, b) => a - b);
  return { dropPositions, append, baseHeld: new Set(logWon.keys()) };
}

/**
 * A slice's dropped base positions as the engine's DeletedRows of the base file, so the rewrite drops them by the
 * same mechanism (and checks) as Delta deletion vectors and Iceberg position deletes.
 * @throws InvalidDeletedRowsError for a position the engine cannot hold.
 */
export function droppedRows(slice: Pick<SliceMerge, 'dropPositions'>): DeletedRows {
  const builder = new DeletedRowsBuilder();
  for (const p of slice.dropPositions) builder.add(p);
  return builder.build();
}

/** Whether the base row survives the log's version of its key. */
function baseStays(baseOrdering: unknown, record: MergedLogRecord, policy: MergePolicy): boolean {
  return comparesWithBase(record, policy) && compareOrdering(baseOrdering, record.ordering) > 0;
}

/**
 * Whether the log's version of a key is compared with the base row's ordering value (else the log wins outright).
 * v6 OverwriteWithLatestAvroPayload and COMMIT_TIME_ORDERING never compare; DefaultHoodieRecordPayload does not
 * for a delete block's delete (an empty payload removes the row before any ordering is compared); EVENT_TIME_ORDERING
 * does not for a natural-order delete.
 */
function comparesWithBase(record: MergedLogRecord, policy: MergePolicy): boolean {
  switch (policy.semantics) {
    case 'v6-overwrite-latest':
    case 'commit-time':
      return false;
    case 'v6-default-payload':
      return record.kind !== 'delete';
    case 'event-time':
      return !(record.kind === 'delete' && record.naturalOrder);
  }
}

/**
 * Whether {@link mergeSlice} may compare the base file's ordering values with the log's at all: false when it cannot
 * for any base (the semantics never compare, or no log record is compared).
 */
export function comparesAnyWithBase(log: ReadonlyMap<string, MergedLogRecord>, policy: MergePolicy): boolean {
  if (policy.semantics === 'v6-overwrite-latest' || policy.semantics === 'commit-time') return false;
  for (const record of log.values()) if (comparesWithBase(record, policy)) return true;
  return false;
}

/**
 * Whether {@link mergeSlice} of `log` against a base file whose ordering values are `baseValues` (every one, or one
 * of each type they have: only types decide) cannot refuse, i.e. no comparison it may make is of values with no
 * common order ({@link compareOrdering}'s refusal, which depends on the two values' types alone). It may make more
 * comparisons than the merge does (every compared log record against every type of base value, whether or not that
 * key is in the base), so false means only that a refusal is possible: the merge with the base rows decides.
 */
export function baseComparisonsCannotRefuse(
  log: ReadonlyMap<string, MergedLogRecord>,
  policy: MergePolicy,
  baseValues: Iterable<unknown>,
): boolean {
  const samples = new Map<string, unknown>();
  for (const v of baseValues) if (!samples.has(kindOf(v))) samples.set(kindOf(v), v);
  samples.delete('null');
  if (samples.size === 0) return true;
  const fine = new Set<string>();
  for (const record of log.values()) {
    if (!comparesWithBase(record, policy)) continue;
    const kind = kindOf(record.ordering);
    if (fine.has(kind)) continue;
    try {
      for (const sample of samples.values()) compareOrdering(sample, record.ordering);
    } catch {
      return false;
    }
    fine.add(kind);
  }
  return true;
}

/** Whether two ordering values are of one type (Java's `isSameClass` in the delete rule). */
function sameKind(a: unknown, b: unknown): boolean {
  return kindOf(a) === kindOf(b);
}

function kindOf(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (v instanceof Date) return 'date';
  if (v instanceof Uint8Array) return 'bytes';
  if (typeof v === 'object' && 'unscaled' in v) return 'decimal';
  return typeof v;
}

/**
 * Compares two ordering values: null first, numbers and BigInts numerically (exactly), strings by UTF-16 code
 * unit (Java's String.compareTo), booleans false < true, dates by time, decimals by value, bytes unsigned.
 * @throws HudiMergeUnsupportedError for values of different types or of a type with no defined order.
 */
export function compareOrdering(a: unknown, b: unknown): number {
  const ka = kindOf(a);
  const kb = kindOf(b);
  if (ka === 'null' || kb === 'null') return ka === kb ? 0 : ka === 'null' ? -1 : 1;
  if ((ka === 'number' || ka === 'bigint') && (kb === 'number' || kb === 'bigint'))
    return compareNumbers(a as number | bigint, b as number | bigint);
  if (ka !== kb)
    throw new HudiMergeUnsupportedError(
      `ordering values of types ${ka} and ${kb}`,
      'they have no common order',
    );
  switch (ka) {
    case 'string':
    case 'boolean':
      return (a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0;
    case 'date':
      return Math.sign((a as Date).getTime() - (b as Date).getTime());
    case 'decimal': {
      const x = a as { unscaled: bigint; scale: number };
      const y = b as { unscaled: bigint; scale: number };
      const scale = Math.max(x.scale, y.scale);
      const xv = x.unscaled * 10n ** BigInt(scale - x.scale);
      const yv = y.unscaled * 10n ** BigInt(scale - y.scale);
      return xv < yv ? -1 : xv > yv ? 1 : 0;
    }
    case 'bytes': {
      const x = a as Uint8Array;
      const y = b as Uint8Array;
      for (let i = 0; i < Math.min(x.length, y.length); i++)
        if (x[i] !== y[i]) return (x[i] as number) - (y[i] as number);
      return x.length - y.length;
    }
    default:
      throw new HudiMergeUnsupportedError(`ordering values of type ${ka}`, 'they have no defined order');
  }
}

function compareNumbers(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  // Mixed: compare exactly when the number is an integer, else as doubles.
  const [n, big, sign] = typeof a === 'number' ? [a, b as bigint, 1] : [b as number, a as bigint, -1];
  if (Number.isInteger(n)) {
    const nb = BigInt(n);
    return sign * (nb < big ? -1 : nb > big ? 1 : 0);
  }
  const d = Number(big);
  return sign * (n < d ? -1 : n > d ? 1 : 0);
}
