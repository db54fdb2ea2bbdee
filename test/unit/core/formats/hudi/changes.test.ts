// The profiler's view of a Hudi table (hudiTable.changes): a completed write instant is the table's change, and
// every other file under the root (data files, pending instants, clean instants) is not; the whole state (what a
// rebuild reads) is the state at the latest completed instant, so duplicate and reordered instant events converge on
// one state. The incremental read is tested through the profiler (test/unit/core/profiler/hudi-commits.test.ts).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  decodeHudiMemo,
  encodeHudiMemo,
  readHudiChanges,
} from '../../../../../functions/core/formats/hudi/changes.js';
import { hudiTable } from '../../../../../functions/core/formats/hudi/format.js';
import { appendHudiInsert, createHudiTable } from '../../../../support/hudi-appender.js';

let dir: string | undefined;

afterEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe('the profiler view of a Hudi table', () => {
  it('takes completed write instants as changes and nothing else', () => {
    // Act
    const role = (key: string) => hudiTable.changes.roleOf(key, 'created').kind;

    // Assess
    expect(role('.hoodie/20240301000000001.commit')).toBe('commit');
    expect(role('.hoodie/timeline/20240301000000001_20240301000000002.replacecommit')).toBe('commit');
    expect(role('.hoodie/timeline/20240301000000001.clean.requested')).toBe('ignored');
    expect(role('.hoodie/20240301000000003.clean')).toBe('ignored');
    expect(role('.hoodie/20240301000000001.inflight')).toBe('ignored');
    expect(role('10/abc-0_0-1-0_20240301000000001.parquet')).toBe('ignored');
  });

  it('reads the whole state at the latest completed instant on every event, so a duplicate or a late event yields that same state', async () => {
    // Prepare
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-changes-'));
    const store = new LocalObjectStore(dir);
    const table = await createHudiTable(store, '', 8);
    const first = await appendHudiInsert(table, '10', 3);
    const second = await appendHudiInsert(table, '20', 4);

    // Act: one read per event (the second instant's, a duplicate of it, the first's arriving late); the read takes
    // no event, so each is the state at the latest completed instant
    const states = [];
    for (let i = 0; i < 3; i += 1) states.push(await hudiTable.changes.readState(store, ''));

    // Assess
    expect(states[1]).toEqual(states[0]);
    expect(states[2]).toEqual(states[0]);
    expect(states[0]?.cursor.memo).toMatch(
      new RegExp(`^${second.instant} pending none since ${first.instant} merge [0-9a-f]{12}$`),
    );
    expect(states[0]?.partitions.flatMap((p) => p.files.map((f) => f.key)).sort()).toEqual(
      [first.key, second.key].sort(),
    );
  });
});

describe('the incremental read of a Hudi table after an upgrade', () => {
  it('reads the whole state from a cursor the earlier reader wrote (the bare instant: it recorded no pending writes)', async () => {
    // Prepare: a cursor as the reader before pending instants were remembered wrote it
    dir = await mkdtemp(join(tmpdir(), 'lc-hudi-changes-'));
    const store = new LocalObjectStore(dir);
    const table = await createHudiTable(store, '', 6);
    const first = await appendHudiInsert(table, '10', 3);
    await appendHudiInsert(table, '10', 2);
    const version = Number(first.instant.slice(0, 14));

    // Act
    const fromOld = await readHudiChanges(store, '', { version, memo: first.instant });

    // Assess: the old memo is not taken for "nothing was pending"; this reader's memos say so explicitly
    expect(fromOld).toMatchObject({
      kind: 'rebuild',
      reason: expect.stringMatching(/names no completed Hudi instant this reader can continue from/),
    });
    expect(decodeHudiMemo(first.instant)).toBeUndefined();
    expect(decodeHudiMemo(encodeHudiMemo({ latest: first.instant, pending: [] }))).toEqual({
      latest: first.instant,
      pending: [],
    });
    const pending = [{ time: '20240301000000001', action: 'commit' }];
    expect(decodeHudiMemo(encodeHudiMemo({ latest: first.instant, pending }))).toEqual({
      latest: first.instant,
      pending,
    });
  });
});
