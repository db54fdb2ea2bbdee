// Which state of a file the partition counters include, from a stored record and its partition's writer
// registrations: the rule that keeps the profiler's transaction-free writes exact across a crashed writer.
import { describe, expect, it } from 'vitest';
import {
  countedState,
  type StoredFile,
  storedFromItem,
  writersOf,
} from '../../../functions/adapters/dynamodb-stats-items.js';
import type { FileRecord } from '../../../functions/core/profiler/model.js';

const NOW = Date.UTC(2026, 11, 6, 12, 0, 0);
const MARGIN = 30_000;

function record(sequencer: string, size: number): FileRecord {
  return {
    fileId: 'lake/t/date=1/a.parquet',
    present: true,
    size,
    small: true,
    bucket: 0,
    sequencer,
    table: 't',
    partition: 'date=1',
    eventTime: NOW - 60_000,
  };
}

const written = record('0002', 200);
const replaced = record('0001', 100);

function stored(file: StoredFile): Map<string, StoredFile> {
  return new Map([[file.record.fileId, file]]);
}

function registered(pid: string, deadline: number) {
  return new Map([['t#date=1', new Map([[pid, deadline]])]]);
}

describe('countedState', () => {
  it('counts a record whose writer is no longer registered (it committed)', () => {
    // Prepare
    const file = stored({ record: written, pid: 'a', prev: replaced });

    // Act
    const state = countedState(file, registered('other', NOW + 60_000), NOW, MARGIN);

    // Assess
    expect(state).toEqual({ known: new Map([[written.fileId, written]]), busy: false });
  });

  it('counts a record written before writers were recorded (no pid)', () => {
    // Act
    const state = countedState(stored({ record: written }), new Map(), NOW, MARGIN);

    // Assess
    expect(state.known.get(written.fileId)).toEqual(written);
    expect(state.busy).toBe(false);
  });

  it('reports the file busy while its registered writer may still commit, skew margin included', () => {
    // Prepare
    const file = stored({ record: written, pid: 'a', prev: replaced });

    // Act
    const beforeDeadline = countedState(file, registered('a', NOW + 1), NOW, MARGIN);
    const withinMargin = countedState(file, registered('a', NOW - MARGIN + 1), NOW, MARGIN);

    // Assess
    expect(beforeDeadline.busy).toBe(true);
    expect(withinMargin.busy).toBe(true);
    expect(beforeDeadline.known.size).toBe(0);
  });

  it('counts the replaced state once a registered writer is past its deadline and the margin (it died)', () => {
    // Prepare
    const overwrite = stored({ record: written, pid: 'a', prev: replaced });
    const firstWrite = stored({ record: written, pid: 'a', prev: null });

    // Act
    const took = countedState(overwrite, registered('a', NOW - MARGIN), NOW, MARGIN);
    const tookNew = countedState(firstWrite, registered('a', NOW - MARGIN), NOW, MARGIN);

    // Assess
    expect(took).toEqual({ known: new Map([[written.fileId, replaced]]), busy: false });
    expect(tookNew).toEqual({ known: new Map(), busy: false });
  });

  it('never takes over a dead writer’s record that lacks the replaced state', () => {
    // Act
    const state = countedState(
      stored({ record: written, pid: 'a' }),
      registered('a', NOW - 10 * MARGIN),
      NOW,
      MARGIN,
    );

    // Assess
    expect(state.busy).toBe(true);
  });
});

describe('stored records and registrations', () => {
  it('reads the writer and the replaced state of a record, and the w# registrations of a partition item', () => {
    // Prepare
    const item = {
      pk: 'FILE#lake/t/date=1/a.parquet',
      sk: 'FILE',
      present: true,
      size: 200,
      small: true,
      sizeBucket: 0,
      seq: '0002',
      table: 't',
      partition: 'date=1',
      eventTime: NOW - 60_000,
      pid: 'a',
      prev: {
        present: true,
        size: 100,
        small: true,
        sizeBucket: 0,
        seq: '0001',
        table: 't',
        partition: 'date=1',
        eventTime: NOW - 60_000,
      },
    };

    // Act
    const file = storedFromItem(item);
    const fresh = storedFromItem({ ...item, prev: undefined, prevNone: true });
    const writers = writersOf({ pk: 'PART#t#date=1', 'w#a': NOW, 'w#b': NOW + 1, version: 3 });

    // Assess
    expect(file).toEqual({ record: written, pid: 'a', prev: replaced });
    expect(fresh.prev).toBeNull();
    expect([...writers]).toEqual([
      ['a', NOW],
      ['b', NOW + 1],
    ]);
  });
});
