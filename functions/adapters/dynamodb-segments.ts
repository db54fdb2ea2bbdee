// A partition's file records packed into segment items (see docs/architecture.md, "Triggers"): a batch's records for
// one partition are written as ONE new item instead of one item per file, because DynamoDB bills a write per started
// KB of an item, so ~60 records of ~70 B share the units one record per item would pay ~60 times. Everything here is
// pure (encoding, which record of a key wins, which segments a commit keeps, folds or drops); the store does the I/O.
import { SEQUENCER_WIDTH } from '../core/profiler/events.js';
import type { FileRecord, PartitionRef } from '../core/profiler/model.js';

/** Sort-key prefix of segment items under a partition's `pk`. */
export const SEGMENT_PREFIX = 'SEG#';

/**
 * Most segments a partition lists. Reads are cheap (4 KB per read unit, a fifth of a write unit's price per byte),
 * rewrites are not: a partition may hold many segments, and only past this many are the smallest folded together.
 */
export const MAX_SEGMENTS = 24;
/** After a fold, at most this many segments stay listed (so folds are rare: one per ~12 batches at most). */
export const FOLDED_SEGMENTS = 12;
/** Bytes of records per segment item; DynamoDB's item limit is 400 KB. */
export const SEGMENT_MAX_BYTES = 300_000;

/** One stored segment: its id (sort order = write order) and the records it holds. */
export interface Segment {
  readonly id: string;
  readonly records: ReadonlyMap<string, FileRecord>;
  /** The encoded size of its records (what a rewrite or delete of it costs). */
  readonly bytes: number;
}

/** A segment id: the partition version that lists it first (zero-padded, so string order = commit order) + a nonce. */
export function segmentId(version: number, nonce: string): string {
  return `${String(version).padStart(12, '0')}.${nonce}`;
}

/** The longest common prefix of the file ids ending at a `/`, so every key stays non-empty. */
function commonFolder(fileIds: readonly string[]): string {
  if (fileIds.length === 0) return '';
  let prefix = fileIds[0] as string;
  for (const id of fileIds) {
    let i = 0;
    while (i < prefix.length && i < id.length && prefix[i] === id[i]) i++;
    prefix = prefix.slice(0, i);
  }
  return prefix.slice(0, prefix.lastIndexOf('/') + 1);
}

/**
 * One record as a short string: flags (present, small, due: a table service is due on it), size bucket, size, sequencer without its padding, event
 * time, version id. The table and partition are the segment's; the ETag is not kept (nothing reads it back).
 */
export function encodeRecord(record: FileRecord): string {
  const flags = `${record.present ? 1 : 0}${record.small ? 1 : 0}${record.due === true ? 1 : 0}${record.bucket.toString(36)}`;
  const seq =
    record.sequencer.length === SEQUENCER_WIDTH
      ? record.sequencer.replace(/^0+/, '')
      : `=${record.sequencer}`;
  const parts = [flags, record.size.toString(36), seq, record.eventTime.toString(36)];
  if (record.versionId !== undefined) parts.push(record.versionId);
  return parts.join('|');
}

/** The inverse of {@link encodeRecord}; undefined for a value it did not write. */
export function decodeRecord(fileId: string, ref: PartitionRef, value: string): FileRecord | undefined {
  const [flags, size, seq, time, ...version] = value.split('|');
  if (
    flags === undefined ||
    flags.length < 4 ||
    size === undefined ||
    seq === undefined ||
    time === undefined
  ) {
    return undefined;
  }
  const versionId = version.length > 0 ? version.join('|') : undefined;
  return {
    fileId,
    present: flags[0] === '1',
    small: flags[1] === '1',
    ...(flags[2] === '1' ? { due: true } : {}),
    bucket: Number.parseInt(flags.slice(3), 36),
    size: Number.parseInt(size, 36),
    sequencer: seq.startsWith('=') ? seq.slice(1) : seq.padStart(SEQUENCER_WIDTH, '0'),
    table: ref.table,
    partition: ref.partition,
    eventTime: Number.parseInt(time, 36),
    ...(versionId === undefined ? {} : { versionId }),
  };
}

/** A segment's stored attributes (besides its key): the folder its keys are relative to, and the records. */
export interface SegmentBody {
  readonly px: string;
  readonly f: Record<string, string>;
}

export function encodeSegment(records: Iterable<FileRecord>): SegmentBody {
  const list = [...records];
  const px = commonFolder(list.map((r) => r.fileId));
  return { px, f: Object.fromEntries(list.map((r) => [r.fileId.slice(px.length), encodeRecord(r)])) };
}

/** Decodes a stored segment; records it cannot read are skipped (they were never written by this code). */
export function decodeSegment(id: string, ref: PartitionRef, body: { px?: unknown; f?: unknown }): Segment {
  const px = typeof body.px === 'string' ? body.px : '';
  const records = new Map<string, FileRecord>();
  let bytes = px.length;
  const f = typeof body.f === 'object' && body.f !== null ? (body.f as Record<string, unknown>) : {};
  for (const [suffix, value] of Object.entries(f)) {
    if (typeof value !== 'string') continue;
    const record = decodeRecord(px + suffix, ref, value);
    if (record === undefined) continue;
    records.set(record.fileId, record);
    bytes += suffix.length + value.length + 1;
  }
  return { id, records, bytes };
}

/** The encoded size of one record in a segment (key + value + map overhead). */
export function recordBytes(record: FileRecord, px = ''): number {
  return record.fileId.length - px.length + encodeRecord(record).length + 1;
}

/** Which of two records of one key the segments hold as its state: the greater sequencer, else the later one. */
function wins(candidate: FileRecord, held: FileRecord): boolean {
  return candidate.sequencer >= held.sequencer;
}

/**
 * Each key's state over the listed segments (in list order, oldest first): its record with the greatest sequencer,
 * a later segment winning a tie. Older records of a key stay in their segment, shadowed, until it is folded or
 * dropped — so a batch never rewrites the segments its deletes and overwrites hit.
 */
export function currentState(segments: readonly Segment[]): Map<string, FileRecord> {
  const state = new Map<string, FileRecord>();
  for (const segment of segments) {
    for (const [fileId, record] of segment.records) {
      const held = state.get(fileId);
      if (held === undefined || wins(record, held)) state.set(fileId, record);
    }
  }
  return state;
}

/** What one commit writes: the segments it lists afterwards and the items to put and delete. */
export interface SegmentPlan {
  /** Listed segment ids after the commit, oldest first. */
  readonly listed: readonly string[];
  /** New segment items (each ≤ SEGMENT_MAX_BYTES of records), listed last. */
  readonly puts: readonly { readonly id: string; readonly records: readonly FileRecord[] }[];
  /** Segments no longer listed: deleted after the commit (unlisted items are never read). */
  readonly drops: readonly string[];
  /** Records rewritten from folded segments (beside the batch's own). */
  readonly folded: number;
}

/**
 * Plans a commit of `changed` (the batch's new records, one per key) over the listed `segments`. A segment none of
 * whose records is any key's state any more is dropped; a record that is a tombstone older than `tombstoneBefore`
 * and the key's only record is forgotten (a late create older than it can no longer arrive). Past MAX_SEGMENTS the
 * smallest segments (by live records) are folded into the new one until FOLDED_SEGMENTS remain, and segments at
 * least half dead are folded too, so the bytes a batch reads stay near the partition's live records.
 */
export function planSegments(
  segments: readonly Segment[],
  changed: readonly FileRecord[],
  tombstoneBefore: number,
  newId: (n: number) => string,
): SegmentPlan {
  const after = currentState([
    ...segments,
    { id: '~', records: new Map(changed.map((r) => [r.fileId, r])), bytes: 0 },
  ]);
  const holders = new Map<string, number>();
  for (const segment of segments) {
    for (const fileId of segment.records.keys()) holders.set(fileId, (holders.get(fileId) ?? 0) + 1);
  }
  const changedIds = new Set(changed.map((r) => r.fileId));
  /** The records of a segment that are still some key's state and worth keeping. */
  const liveOf = (segment: Segment): FileRecord[] =>
    [...segment.records.values()].filter((record) => {
      if (changedIds.has(record.fileId) || after.get(record.fileId) !== record) return false;
      const expired = !record.present && record.eventTime < tombstoneBefore;
      return !(expired && (holders.get(record.fileId) ?? 0) === 1);
    });
  const live = segments.map((segment) => ({ segment, records: liveOf(segment) }));
  const drops: string[] = [];
  const fold: FileRecord[] = [];
  let kept = live.filter(({ segment, records }) => {
    if (records.length === 0) {
      drops.push(segment.id);
      return false;
    }
    if (records.length * 2 <= segment.records.size) {
      drops.push(segment.id);
      fold.push(...records);
      return false;
    }
    return true;
  });
  if (kept.length + 1 > MAX_SEGMENTS) {
    const bySize = [...kept].sort((a, b) => a.records.length - b.records.length);
    const folding = new Set(bySize.slice(0, kept.length + 1 - FOLDED_SEGMENTS).map((k) => k.segment.id));
    for (const k of kept) {
      if (!folding.has(k.segment.id)) continue;
      drops.push(k.segment.id);
      fold.push(...k.records);
    }
    kept = kept.filter((k) => !folding.has(k.segment.id));
  }
  // Folded records keep their sequencer; the batch's records go after them (a key is in at most one of the two).
  const writing = [...fold, ...changed];
  const puts: { id: string; records: FileRecord[] }[] = [];
  let current: FileRecord[] = [];
  let bytes = 0;
  for (const record of writing) {
    const size = recordBytes(record);
    if (current.length > 0 && bytes + size > SEGMENT_MAX_BYTES) {
      puts.push({ id: newId(puts.length), records: current });
      current = [];
      bytes = 0;
    }
    current.push(record);
    bytes += size;
  }
  if (current.length > 0) puts.push({ id: newId(puts.length), records: current });
  return {
    listed: [...kept.map((k) => k.segment.id), ...puts.map((p) => p.id)],
    puts,
    drops,
    folded: fold.length,
  };
}
