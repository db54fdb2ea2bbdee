// Unit tests of the profiler core: event parsing and ordering, table resolution, exact delta planning,
// execution names and the decision-item rate, all without I/O.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { DEFAULT_POLICY } from '../../../functions/core/policy.js';
import {
  decisionSignature,
  executionName,
  type FileRecord,
  isUnchanged,
  latestPerFile,
  normalizeSequencer,
  parseQueueMessage,
  planAccounting,
  type ResolvedEvent,
  resolveEvent,
  shouldStoreDecision,
  sizeBucket,
} from '../../../functions/core/profiler.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
// Two overlapping tables: configs refuse nesting, and the resolver still picks the longest root on its own.
const tables = [
  ...parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix: 'events',
      partitionColumns: ['date'],
      dateColumn: 'date',
      dateFormat: 'yyyy-MM-dd',
    },
  ]),
  ...parseTableConfigs([{ name: 'clicks', bucket: 'lake', prefix: 'events/clicks' }]),
];
const policies = new Map(tables.map((t) => [t.name, DEFAULT_POLICY]));

function s3Body(eventName: string, key: string, object: Record<string, unknown>): string {
  return JSON.stringify({
    Records: [
      {
        eventSource: 'aws:s3',
        eventName,
        eventTime: new Date(NOW).toISOString(),
        s3: { bucket: { name: 'lake' }, object: { key, ...object } },
      },
    ],
  });
}

function resolved(key: string, kind: 'created' | 'removed', sequencer: string, size?: number): ResolvedEvent {
  const result = resolveEvent(tables, policies, {
    bucket: 'lake',
    key,
    kind,
    ...(size === undefined ? {} : { size }),
    sequencer: normalizeSequencer(sequencer),
    eventTime: NOW,
    eventName: kind,
  });
  if (result.kind !== 'data')
    throw new Error(`expected data, got ${result.kind === 'ignored' ? result.reason : result.kind}`);
  return result.event;
}

function record(event: ResolvedEvent): FileRecord {
  return planAccounting([event], new Map()).writes[0]?.next as FileRecord;
}

describe('sequencers', () => {
  it('orders sequencers of different lengths as numbers after left-padding, as AWS prescribes', () => {
    // Prepare
    const shorter = normalizeSequencer('FF');
    const longer = normalizeSequencer('100');

    // Act
    const ordered = [longer, shorter].sort();

    // Assess
    expect(ordered).toEqual([shorter, longer]);
    expect(normalizeSequencer('0055ab')).toBe(normalizeSequencer('55AB'));
  });

  it('refuses a sequencer that is not hex', () => {
    // Prepare / Act / Assess
    expect(() => normalizeSequencer('xyz')).toThrow(InvalidInputError);
  });
});

describe('parseQueueMessage', () => {
  it('reads S3 notifications with URL-encoded keys, quoted ETags and removal events', () => {
    // Prepare
    const created = s3Body('ObjectCreated:Put', 'events/date%3D2026-11-29/a+b%2Bc.parquet', {
      size: 123,
      eTag: '"abc"',
      sequencer: '0A',
    });
    const removed = s3Body('ObjectRemoved:DeleteMarkerCreated', 'events/x.parquet', { sequencer: '0B' });

    // Act
    const [a] = parseQueueMessage(created).events;
    const [b] = parseQueueMessage(removed).events;

    // Assess
    expect(a).toMatchObject({
      key: 'events/date=2026-11-29/a b+c.parquet',
      kind: 'created',
      size: 123,
      etag: 'abc',
    });
    expect(b).toMatchObject({ key: 'events/x.parquet', kind: 'removed' });
    expect(b?.size).toBeUndefined();
  });

  it('reads EventBridge "Object Created" events and skips S3 test events and other event types', () => {
    // Prepare
    const bridge = JSON.stringify({
      source: 'aws.s3',
      'detail-type': 'Object Created',
      time: new Date(NOW).toISOString(),
      detail: {
        bucket: { name: 'lake' },
        object: { key: 'events/y.parquet', size: 50, etag: 'e', sequencer: '01' },
      },
    });
    const restore = s3Body('ObjectRestore:Completed', 'events/z.parquet', { size: 5 });
    const test = JSON.stringify({ Service: 'Amazon S3', Event: 's3:TestEvent', Bucket: 'lake' });

    // Act
    const parsed = [bridge, restore, test].map(parseQueueMessage);

    // Assess
    expect(parsed[0]?.events).toMatchObject([{ key: 'events/y.parquet', kind: 'created', size: 50 }]);
    expect(parsed[1]?.events).toEqual([]);
    expect(parsed[1]?.skipped).toHaveLength(1);
    expect(parsed[2]).toEqual({ events: [], skipped: ['s3:TestEvent'] });
  });

  it.each([
    ['not JSON', 'oops'],
    ['an unrelated document', '{"hello":1}'],
    ['a create without size', s3Body('ObjectCreated:Put', 'events/a.parquet', { sequencer: '01' })],
    ['an event without sequencer', s3Body('ObjectRemoved:Delete', 'events/a.parquet', {})],
  ])('refuses %s with an InvalidInputError', (_title, body) => {
    // Prepare / Act / Assess
    expect(() => parseQueueMessage(body)).toThrow(InvalidInputError);
  });
});

describe('resolveEvent', () => {
  it('places a key in the longest-prefix table with its partition and date, and ignores non-data', () => {
    // Prepare
    const base = {
      bucket: 'lake',
      kind: 'created' as const,
      size: 1000,
      sequencer: normalizeSequencer('1'),
      eventTime: NOW,
      eventName: 'x',
    };

    // Act
    const data = resolveEvent(tables, policies, { ...base, key: 'events/date=2026-11-29/p.parquet' });
    const nested = resolveEvent(tables, policies, { ...base, key: 'events/clicks/p.parquet' });
    const marker = resolveEvent(tables, policies, { ...base, key: 'events/date=2026-11-29/_SUCCESS' });
    const outside = resolveEvent(tables, policies, { ...base, key: 'other/p.parquet' });

    // Assess
    expect(data).toMatchObject({
      kind: 'data',
      event: {
        ref: { table: 'events', partition: 'date=2026-11-29' },
        small: true,
        partitionDate: Date.UTC(2026, 10, 29),
      },
    });
    expect(nested).toMatchObject({ kind: 'data', event: { ref: { table: 'clicks', partition: '' } } });
    expect(marker.kind).toBe('ignored');
    expect(outside).toEqual({ kind: 'ignored', reason: 'outside every configured table' });
  });

  it('treats an overwrite with a zero-byte object as the removal of the data file', () => {
    // Prepare / Act
    const event = resolved('events/date=2026-11-29/p.parquet', 'created', '5', 0);

    // Assess
    expect(event.kind).toBe('removed');
  });
});

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

describe('execution names', () => {
  it('builds deterministic names of at most 80 allowed characters that change with the generation', () => {
    // Prepare
    const ref = { table: `very.long-table_${'x'.repeat(90)}`, partition: 'date=2026-11-29/région=eu west' };

    // Act
    const a = executionName(ref, 1);
    const again = executionName(ref, 1);
    const b = executionName(ref, 2);

    // Assess
    expect(a).toBe(again);
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThanOrEqual(80);
    expect(a).toMatch(/^[A-Za-z0-9_-]+-[0-9a-f]{12}-g1$/);
    expect(executionName({ table: 'events', partition: 'a' }, 1)).not.toBe(
      executionName({ table: 'events', partition: 'b' }, 1),
    );
  });
});

describe('isUnchanged', () => {
  it('skips re-recording the same verdict in the same due slot within the heartbeat, and nothing else', () => {
    // Prepare
    const previous = { at: NOW, compact: false, reasons: ['a'], eligibleAt: NOW + 60_000, action: 'waiting' };
    const snapshot = { partition: 'p', lastDecision: previous, dueAt: NOW + 60_000 };
    const next = { ...previous, at: NOW + 30_000, reasons: ['b'], eligibleAt: NOW + 90_000 };

    // Act / Assess
    expect(isUnchanged(snapshot, next, NOW + 90_000)).toBe(true);
    expect(isUnchanged(snapshot, next, NOW + 6 * 60_000)).toBe(false);
    expect(isUnchanged(snapshot, { ...next, action: 'blocked' }, undefined)).toBe(false);
    expect(isUnchanged(snapshot, { ...next, at: NOW + 3_600_000 }, NOW + 90_000)).toBe(false);
    expect(isUnchanged({ partition: 'p' }, next, NOW + 90_000)).toBe(false);
  });
});

describe('shouldStoreDecision', () => {
  it('stores a decision item when the verdict changes or an hour passed, not for every batch', () => {
    // Prepare
    const waiting = { at: NOW, compact: false, reasons: [], eligibleAt: NOW + 1, action: 'waiting' };

    // Act / Assess
    expect(shouldStoreDecision(undefined, { compact: false }, NOW)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: false, eligibleAt: NOW + 5 }, NOW + 60_000)).toBe(false);
    expect(shouldStoreDecision(waiting, { compact: false }, NOW + 60_000)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: false, eligibleAt: NOW + 5 }, NOW + 3_600_000)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: true }, NOW + 1)).toBe(true);
    expect(shouldStoreDecision({ ...waiting, compact: true }, { compact: true }, NOW + 60_000)).toBe(false);
    expect(decisionSignature({ compact: false, eligibleAt: 1 })).toBe('waiting');
  });
});
