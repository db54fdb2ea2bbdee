// The active timeline as read through the ObjectStore: every instant with its state, completed commit metadata (v6
// JSON, v8+ Avro), rollbacks, and the instants of every action the vendored tables hold.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  completionTimeOf,
  decodeCommitMetadata,
  isCommitted,
  readTimeline,
} from '../../../../../functions/core/formats/hudi/timeline.js';
import { HUDI_FIXTURES } from '../../../../support/fixtures.js';

const store = new LocalObjectStore(HUDI_FIXTURES);

describe('the active timeline', () => {
  it('reads a 1.x timeline with commits, an insert_overwrite, a clustering and indexing, each with its furthest state', async () => {
    // Act
    const timeline = await readTimeline(store, 't', 'cow_v9_txns_simple_meta', 2, '.hoodie/timeline/');

    // Assess
    expect(timeline.instants).toHaveLength(42);
    expect(timeline.latest.map((i) => `${i.action}:${i.state}`)).toEqual([
      ...Array(7).fill('commit:completed'),
      'replacecommit:completed',
      'commit:completed',
      'commit:completed',
      'replacecommit:completed',
      'commit:completed',
      'indexing:completed',
      'indexing:completed',
    ]);
    expect(timeline.completedWrites).toHaveLength(12);
    const clustering = timeline.completedWrites.find((w) => w.instant.time === '20260307162454799');
    expect(clustering?.metadata.operationType).toBe('CLUSTER');
    expect([...(clustering?.metadata.partitionToReplaceFileIds.keys() ?? [])].sort()).toEqual([
      'region=apac',
      'region=eu',
      'region=us',
    ]);
    expect(timeline.timelineStart).toBe('20260307162434124');
    expect(timeline.latestCompletedWrite?.completionTime).toBe('20260307162456976');
    expect(completionTimeOf(timeline, '20260307162454799')).toBe('20260307162456102');
    expect(timeline.pendingPlans).toEqual([]);
    expect(timeline.pendingRollbacks).toEqual([]);
  });

  it('reads a completed compaction as a commit, and a completed rollback as the instants it undid', async () => {
    // Act
    const mor = await readTimeline(store, 't', 'mor_v8_trips_8i3u1d', 2, '.hoodie/timeline/');
    const rolledBack = await readTimeline(store, 't', 'mor_v6_nonpartitioned_rollback', 1, '.hoodie/');

    // Assess
    const compaction = mor.completedWrites.find((w) => w.instant.time === '20251220210129235');
    expect(compaction?.instant.action).toBe('commit');
    expect(compaction?.metadata.compacted).toBe(true);
    expect(compaction?.metadata.operationType).toBe('COMPACT');
    expect([...rolledBack.rolledBack]).toEqual([['20250126040826878', '20250126040936578']]);
    expect(isCommitted(rolledBack, '20250126040826878')).toBe(false);
    expect(isCommitted(rolledBack, '20250126040823628')).toBe(true);
    expect(isCommitted(rolledBack, '20200101000000000')).toBe(true);
    expect(isCommitted(rolledBack, '20990101000000000')).toBe(false);
  });

  it('decodes v6 JSON and v8 Avro commit metadata to the same shape, numbers as numbers', async () => {
    // Prepare
    const json = await readFile(
      join(HUDI_FIXTURES, 'cow_v6_simplekeygen_nonhivestyle/.hoodie/20240418172804498.commit'),
    );
    const avro = await readFile(
      join(
        HUDI_FIXTURES,
        'cow_v8_simplekeygen_nonhivestyle/.hoodie/timeline/20250713011316909_20250713011317225.commit',
      ),
    );

    // Act
    const v6 = await decodeCommitMetadata('t', 'c', new Uint8Array(json), 1);
    const v8 = await decodeCommitMetadata('t', 'c', new Uint8Array(avro), 2);

    // Assess
    expect(v6.partitionToWriteStats.get('30')).toEqual([
      {
        fileId: '6db57019-98ee-480e-8eb1-fb3de48e1c24-0',
        path: '30/6db57019-98ee-480e-8eb1-fb3de48e1c24-0_1-119-167_20240418172804498.parquet',
        partitionPath: '30',
        prevCommit: 'null',
        numWrites: 1,
        numInserts: 1,
        numDeletes: 0,
        numUpdateWrites: 0,
        fileSizeInBytes: 441186,
      },
    ]);
    expect(v8.partitionToWriteStats.get('10')?.[0]).toMatchObject({
      fileId: '7b0ea4f9-3768-4e87-b12c-8d33efd22b55-0',
      prevCommit: '20250713011315930',
      numWrites: 2,
      numUpdateWrites: 1,
      fileSizeInBytes: 441354,
    });
    expect(v8.extraMetadata.get('schema')).toMatch(/^\{"type":"record"/);
    expect(v6.compacted).toBe(false);
  });
});
