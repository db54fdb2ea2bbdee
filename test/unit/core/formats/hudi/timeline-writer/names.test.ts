// The names this module gives instant files, base files, markers and heartbeats are the names Hudi gives them:
// checked against the fixtures' own timelines (both layouts) and file names, and deterministic in their inputs.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HudiTimelineWriteError } from '../../../../../../functions/core/formats/hudi/timeline-writer/errors.js';
import {
  baseFileName,
  completedInstantFile,
  heartbeatPath,
  type InstantLocation,
  markerDir,
  markerPath,
  newFileId,
  pendingInstantFiles,
  relativeFilePath,
  writeToken,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/names.js';
import { HUDI_FIXTURES } from '../../../../../support/fixtures.js';

/** Instants of the fixtures and the files Hudi wrote for them (relative to the table's base path). */
const HUDI_WROTE: readonly {
  table: string;
  location: InstantLocation;
  completion?: string;
  files: string[];
}[] = [
  {
    table: 'cow_v9_txns_simple_meta',
    location: { tableVersion: 9, operation: 'clustering', instant: '20260307162454799' },
    completion: '20260307162456102',
    files: [
      '.hoodie/timeline/20260307162454799.clustering.requested',
      '.hoodie/timeline/20260307162454799.clustering.inflight',
      '.hoodie/timeline/20260307162454799_20260307162456102.replacecommit',
    ],
  },
  {
    table: 'cow_v9_txns_simple_meta',
    location: { tableVersion: 9, operation: 'commit', instant: '20260307162434124' },
    completion: '20260307162438653',
    files: [
      '.hoodie/timeline/20260307162434124.commit.requested',
      '.hoodie/timeline/20260307162434124.inflight',
      '.hoodie/timeline/20260307162434124_20260307162438653.commit',
    ],
  },
  {
    table: 'mor_v8_trips_8i3u1d',
    location: { tableVersion: 8, operation: 'compaction', instant: '20251220210129235' },
    completion: '20251220210129883',
    files: [
      '.hoodie/timeline/20251220210129235.compaction.requested',
      '.hoodie/timeline/20251220210129235.compaction.inflight',
      '.hoodie/timeline/20251220210129235_20251220210129883.commit',
    ],
  },
  {
    table: 'mor_v8_trips_8i3u1d',
    location: { tableVersion: 8, operation: 'deltacommit', instant: '20251220210108078' },
    completion: '20251220210109593',
    files: [
      '.hoodie/timeline/20251220210108078.deltacommit.requested',
      '.hoodie/timeline/20251220210108078.deltacommit.inflight',
      '.hoodie/timeline/20251220210108078_20251220210109593.deltacommit',
    ],
  },
  {
    // A v6 clustering is a replacecommit: the same three files as this overwrite's.
    table: 'cow_v6_simplekeygen_nonhivestyle_overwritetable',
    location: { tableVersion: 6, operation: 'clustering', instant: '20240707001303088' },
    files: [
      '.hoodie/20240707001303088.replacecommit.requested',
      '.hoodie/20240707001303088.replacecommit.inflight',
      '.hoodie/20240707001303088.replacecommit',
    ],
  },
  {
    table: 'cow_v6_simplekeygen_nonhivestyle_overwritetable',
    location: { tableVersion: 6, operation: 'commit', instant: '20240707001301554' },
    files: [
      '.hoodie/20240707001301554.commit.requested',
      '.hoodie/20240707001301554.inflight',
      '.hoodie/20240707001301554.commit',
    ],
  },
  {
    table: 'mor_v6_nonpartitioned_rollback',
    location: { tableVersion: 6, operation: 'rollback', instant: '20250126040936578' },
    files: [
      '.hoodie/20250126040936578.rollback.requested',
      '.hoodie/20250126040936578.rollback.inflight',
      '.hoodie/20250126040936578.rollback',
    ],
  },
];

describe('instant file names', () => {
  it.each(HUDI_WROTE)('names $location.operation on v$location.tableVersion as in $table', (c) => {
    // Act
    const pending = pendingInstantFiles(c.location);
    const completed = completedInstantFile(c.location, c.completion);

    // Assess
    expect([pending.requested, pending.inflight, completed]).toEqual(c.files);
    for (const file of c.files) expect(existsSync(join(HUDI_FIXTURES, c.table, file))).toBe(true);
  });

  it('names a v6 compaction compaction.requested / .inflight and completes it as a commit', () => {
    // Act
    const location = { tableVersion: 6, operation: 'compaction', instant: '20240707001303088' } as const;

    // Assess
    expect(pendingInstantFiles(location)).toEqual({
      requested: '.hoodie/20240707001303088.compaction.requested',
      inflight: '.hoodie/20240707001303088.compaction.inflight',
    });
    expect(completedInstantFile(location)).toBe('.hoodie/20240707001303088.commit');
  });

  it('follows a non-default hoodie.timeline.path', () => {
    // Act
    const files = pendingInstantFiles({
      tableVersion: 9,
      operation: 'clustering',
      instant: '20260307162454799',
      timelinePath: 'tl',
    });

    // Assess
    expect(files.requested).toBe('.hoodie/tl/20260307162454799.clustering.requested');
  });

  it('refuses a v8+ completion without a completion time after the instant, and unknown table versions', () => {
    // Prepare
    const location = { tableVersion: 9, operation: 'clustering', instant: '20260307162454799' } as const;

    // Act
    const missing = () => completedInstantFile(location);
    const before = () => completedInstantFile(location, '20260307162454798');
    const v7 = () => pendingInstantFiles({ ...location, tableVersion: 7 });
    const badInstant = () => pendingInstantFiles({ ...location, instant: '2026' });

    // Assess
    expect(missing).toThrow(HudiTimelineWriteError);
    expect(before).toThrow(/completion time after/);
    expect(v7).toThrow(/table version 7/);
    expect(badInstant).toThrow(/17-digit/);
  });
});

describe('new file names', () => {
  it("composes the v9 clustering output's real name from its file id, write token and instant", () => {
    // Act
    const name = baseFileName(
      'e1d239c0-049d-43de-a138-e1915a3e29a7-0',
      writeToken({ partitionId: 0, stageId: 235, attemptId: 586 }),
      '20260307162454799',
    );

    // Assess
    expect(name).toBe('e1d239c0-049d-43de-a138-e1915a3e29a7-0_0-235-586_20260307162454799.parquet');
    expect(existsSync(join(HUDI_FIXTURES, 'cow_v9_txns_simple_meta', 'region=apac', name))).toBe(true);
  });

  it('derives the same UUID-shaped file id from the same seed and ordinal, and different ids otherwise', () => {
    // Act
    const a = newFileId('run-42/region=eu', 0);
    const again = newFileId('run-42/region=eu', 0);
    const next = newFileId('run-42/region=eu', 1);
    const other = newFileId('run-43/region=eu', 0);

    // Assess
    expect(a).toBe(again);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}-0$/);
    expect(new Set([a, next, other]).size).toBe(3);
  });

  it('puts direct markers and the heartbeat where Hudi looks for them', () => {
    // Prepare
    const file = 'f-0_0-1-2_20260307162454799.parquet';

    // Act & Assess
    expect(markerPath('20260307162454799', 'region=eu', file)).toBe(
      `.hoodie/.temp/20260307162454799/region=eu/${file}.marker.CREATE`,
    );
    expect(markerPath('20260307162454799', '', file)).toBe(
      `.hoodie/.temp/20260307162454799/${file}.marker.CREATE`,
    );
    expect(markerDir('20260307162454799')).toBe('.hoodie/.temp/20260307162454799');
    expect(heartbeatPath('20260307162454799')).toBe('.hoodie/.heartbeat/20260307162454799');
    expect(relativeFilePath('a=1/b=2', file)).toBe(`a=1/b=2/${file}`);
  });

  it('names a compaction output’s marker MERGE, as Hudi’s merge handle does', () => {
    // Prepare
    const file = 'f-0_0-0-0_20260307162454799.parquet';

    // Act
    const marker = markerPath('20260307162454799', 'city=sf', file, 'MERGE');

    // Assess
    expect(marker).toBe(`.hoodie/.temp/20260307162454799/city=sf/${file}.marker.MERGE`);
  });

  it('refuses file ids and partition paths that would break Hudi’s name parsing', () => {
    // Act & Assess
    expect(() => baseFileName('a_b-0', '0-1-2', '20260307162454799')).toThrow(HudiTimelineWriteError);
    expect(() => baseFileName('a-0', '0-1', '20260307162454799')).toThrow(/write token/);
    expect(() => relativeFilePath('/abs', 'f')).toThrow(/relative partition path/);
    expect(() => writeToken({ partitionId: -1, stageId: 0, attemptId: 0 })).toThrow(HudiTimelineWriteError);
  });
});
