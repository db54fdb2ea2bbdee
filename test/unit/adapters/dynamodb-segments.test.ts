// The pure part of the segment layout: records survive encoding, a key's state is its greatest sequencer over
// the listed segments, and a commit drops emptied segments, folds half-dead ones and forgets only lone expired
// tombstones (a tombstone that still shadows an older record must stay, or that record would count again).
import { describe, expect, it } from 'vitest';
import {
  currentState,
  decodeSegment,
  encodeSegment,
  FOLDED_SEGMENTS,
  MAX_SEGMENTS,
  planSegments,
  type Segment,
} from '../../../functions/adapters/dynamodb-segments.js';
import type { FileRecord } from '../../../functions/core/profiler/model.js';

const ref = { table: 'events', partition: 'date=2026-12-06' };
const DAY = 86_400_000;
const NOW = Date.UTC(2026, 11, 7);

function record(name: string, seq: number, size?: number, eventTime = NOW): FileRecord {
  return {
    fileId: `lake/events/date=2026-12-06/${name}`,
    present: size !== undefined,
    size: size ?? 0,
    small: size !== undefined && size < 1000,
    bucket: size === undefined ? 0 : 2,
    sequencer: seq.toString(16).toUpperCase().padStart(32, '0'),
    table: ref.table,
    partition: ref.partition,
    eventTime,
  };
}

function segment(id: string, records: readonly FileRecord[]): Segment {
  return decodeSegment(id, ref, encodeSegment(records));
}

const newId = (n: number) => `new${n}`;

describe('segments', () => {
  it('decodes every field it encodes, a version id with a bar and the due flag included, relative to the common folder', () => {
    // Prepare
    const records = [
      { ...record('a.parquet', 0x1f, 123_456_789), versionId: 'v|1' },
      record('sub/b.parquet', 2),
      { ...record('c.parquet', 3, 5), sequencer: 'ABC' }, // a sequencer not padded to the width stays as it is
      { ...record('d.log', 4, 70), due: true }, // a file a table service has due
    ];

    // Act
    const body = encodeSegment(records);
    const decoded = decodeSegment('s', ref, body);

    // Assess
    expect(body.px).toBe('lake/events/date=2026-12-06/');
    expect([...decoded.records.values()]).toEqual(records);
  });

  it('takes the greatest sequencer of a key across segments, a later segment winning a tie', () => {
    // Prepare
    const older = segment('1', [record('a', 5, 100), record('b', 1, 10)]);
    const newer = segment('2', [record('a', 3, 999), record('b', 1, 20)]);

    // Act
    const state = currentState([older, newer]);

    // Assess
    expect(state.get(record('a', 0).fileId)?.size).toBe(100);
    expect(state.get(record('b', 0).fileId)?.size).toBe(20);
  });

  it('drops a segment whose records are all superseded, and lists the new one last', () => {
    // Prepare
    const first = segment('1', [record('a', 1, 100), record('b', 2, 100)]);
    const second = segment('2', [record('c', 3, 100)]);

    // Act
    const plan = planSegments([first, second], [record('a', 4), record('b', 5)], NOW - 45 * DAY, newId);

    // Assess
    expect(plan.drops).toEqual(['1']);
    expect(plan.listed).toEqual(['2', 'new0']);
    expect(plan.puts.map((p) => p.records.length)).toEqual([2]);
    expect(plan.folded).toBe(0);
  });

  it('folds the live records of a segment more than half dead into the new one', () => {
    // Prepare
    const first = segment('1', [record('a', 1, 100), record('b', 2, 100), record('c', 3, 100)]);

    // Act
    const plan = planSegments([first], [record('a', 4), record('b', 5)], NOW - 45 * DAY, newId);

    // Assess
    expect(plan.drops).toEqual(['1']);
    expect(plan.folded).toBe(1);
    expect(plan.puts[0]?.records.map((r) => r.fileId)).toEqual([
      record('c', 0).fileId,
      record('a', 0).fileId,
      record('b', 0).fileId,
    ]);
  });

  it('forgets an expired tombstone only when no older record of its key is left to shadow', () => {
    // Prepare: x's expired tombstone shadows x's create in a segment that stays; y's expired tombstone is alone
    const keeps = segment('1', [record('x', 1, 100), record('k1', 2, 100), record('k2', 3, 100)]);
    const tombstones = segment('2', [
      record('x', 4, undefined, NOW - 50 * DAY),
      record('y', 5, undefined, NOW - 50 * DAY),
    ]);

    // Act
    const plan = planSegments([keeps, tombstones], [record('z', 9, 1)], NOW - 45 * DAY, newId);

    // Assess: segment 2 is half dead (y forgotten) and folded: x's tombstone moves on, y's is gone
    expect(plan.drops).toEqual(['2']);
    const written = plan.puts.flatMap((p) => p.records.map((r) => r.fileId));
    expect(written).toContain(record('x', 0).fileId);
    expect(written).not.toContain(record('y', 0).fileId);
    const after = currentState([keeps, ...plan.puts.map((p) => segment(p.id, p.records))]);
    expect(after.get(record('x', 0).fileId)?.present).toBe(false);
  });

  it('folds the smallest segments once a partition lists more than the maximum', () => {
    // Prepare: MAX_SEGMENTS segments of growing size, all live
    const segments = Array.from({ length: MAX_SEGMENTS }, (_, s) =>
      segment(
        String(s).padStart(3, '0'),
        Array.from({ length: s + 1 }, (_, i) => record(`s${s}-${i}`, s * 100 + i + 1, 100)),
      ),
    );

    // Act
    const plan = planSegments(segments, [record('new', 99_999, 100)], NOW - 45 * DAY, newId);

    // Assess: the smallest folded until FOLDED_SEGMENTS remain; no live record lost
    expect(plan.listed).toHaveLength(FOLDED_SEGMENTS);
    expect(plan.drops).toEqual(segments.slice(0, MAX_SEGMENTS + 1 - FOLDED_SEGMENTS).map((s) => s.id));
    const kept = segments.filter((s) => plan.listed.includes(s.id));
    const after = currentState([...kept, ...plan.puts.map((p) => segment(p.id, p.records))]);
    const before = currentState([...segments, segment('n', [record('new', 99_999, 100)])]);
    expect(after).toEqual(before);
  });
});
