// Unit tests of the profiler's event handling: sequencer order, S3 and EventBridge message parsing, and the
// resolution of a key to its table, partition and file, all without I/O.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import {
  normalizeSequencer,
  parseQueueMessage,
  resolveEvent,
} from '../../../../functions/core/profiler/events.js';
import { NOW, policies, resolved, s3Body, tables } from './support.js';

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
