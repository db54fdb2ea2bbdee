// Unit tests of the profiler's accounting: the latest event of a file wins, and a partition's counters move by
// the new contribution minus the old one (duplicates, late events and unknown deletes change nothing).
import { describe, expect, it } from 'vitest';
import { planAccounting, sizeBucket } from '../../../../functions/core/profiler/accounting.js';
import {
  latestPerFile,
  parseQueueMessage,
  resolveEvent,
} from '../../../../functions/core/profiler/events.js';
import type { FileRecord, ResolvedEvent } from '../../../../functions/core/profiler/model.js';
import { policies, resolved, s3Body, tables } from './support.js';

function record(event: ResolvedEvent): FileRecord {
  return planAccounting([event], new Map()).writes[0]?.next as FileRecord;
}

describe('planAccounting', () => {
  const key = 'events/date=2026-11-29/p.parquet';

  it('keeps only the latest event of each file in a batch', () => {
    // Prepare
    const events = [
      resolved(key, 'created', '3', 10),
      resolved(key, 'removed', '5'),
      resolved(key, 'created', '4', 20),
    ];

    // Act
    const latest = latestPerFile(events);

    // Assess
    expect([...latest.values()].map((e) => e.kind)).toEqual(['removed']);
  });

  it('adds a new file, changes nothing for a duplicate or an older event, and moves by the size difference on overwrite', () => {
    // Prepare
    const first = resolved(key, 'created', '10', 1000);
    const stored = record(first);
    const overwrite = resolved(key, 'created', '11', 300 * 1024 * 1024);

    // Act
    const fresh = planAccounting([first], new Map());
    const duplicate = planAccounting([first], new Map([[first.fileId, stored]]));
    const older = planAccounting([resolved(key, 'created', '9', 5)], new Map([[first.fileId, stored]]));
    const moved = planAccounting([overwrite], new Map([[first.fileId, stored]]));

    // Assess
    expect([...fresh.deltas.values()][0]?.delta).toMatchObject({
      fileCount: 1,
      totalBytes: 1000,
      smallCount: 1,
      smallBytes: 1000,
    });
    expect(duplicate).toMatchObject({ writes: [], stale: [first] });
    expect(older.writes).toEqual([]);
    const delta = [...moved.deltas.values()][0]?.delta;
    expect(delta).toMatchObject({
      fileCount: 0,
      totalBytes: 300 * 1024 * 1024 - 1000,
      smallCount: -1,
      smallBytes: -1000,
    });
    expect(delta?.histogram[sizeBucket(1000)]).toBe(-1);
    expect(delta?.histogram[sizeBucket(300 * 1024 * 1024)]).toBe(1);
    expect(moved.writes[0]?.expected).toBe(stored);
  });

  it('leaves the current file counted when a noncurrent version of its key is permanently deleted', () => {
    // Prepare
    const current = { ...record(resolved(key, 'created', '20', 500)), versionId: 'v2' };
    const body = s3Body('ObjectRemoved:Delete', key, { versionId: 'v1', sequencer: '21' });
    const [event] = parseQueueMessage(body).events;
    const resolution = resolveEvent(tables, policies, event as NonNullable<typeof event>);
    if (resolution.kind !== 'data') throw new Error('expected data');

    // Act
    const ofOld = planAccounting([resolution.event], new Map([[current.fileId, current]]));
    const ofCurrent = planAccounting(
      [resolution.event],
      new Map([[current.fileId, { ...current, versionId: 'v1' }]]),
    );

    // Assess
    expect(resolution.event.versionDelete).toBe(true);
    expect(ofOld.writes).toEqual([]);
    expect([...ofCurrent.deltas.values()][0]?.delta.fileCount).toBe(-1);
  });

  it('writes only a tombstone for a delete of an unknown file', () => {
    // Prepare / Act
    const plan = planAccounting([resolved(key, 'removed', '7')], new Map());

    // Assess
    expect(plan.writes.map((w) => w.next.present)).toEqual([false]);
    expect(plan.deltas.size).toBe(0);
  });
});
