// The Delta log read as history (core/formats/delta/history.ts): every JSON commit still in `_delta_log/` summarised
// from its own actions — operation, files and bytes removed and added, time (inCommitTimestamp first) — our OPTIMIZE
// versions told apart by their `lakeCompactor` tag, and where a cleaned-up log's history starts.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { DeltaLogError } from '../../../../../functions/core/formats/delta/errors.js';
import { compactorCommits, readDeltaHistory } from '../../../../../functions/core/formats/delta/history.js';
import {
  addAction,
  commitKey,
  commitText,
  metaDataAction,
  protocolAction,
  removeAction,
} from './delta-test-kit.js';

const ROOT = 'lake/t/';

function optimizeInfo(runId: string, readVersion: number, extra: Record<string, unknown> = {}): object {
  return {
    commitInfo: {
      timestamp: 5_000,
      operation: 'OPTIMIZE',
      operationParameters: { predicate: `["(\`day\` = '2024-01-01')"]`, zOrderBy: '[]' },
      readVersion,
      lakeCompactor: { runId, groupId: 'g1' },
      ...extra,
    },
  };
}

async function tableOf(commits: Readonly<Record<number, readonly object[]>>): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore();
  for (const [version, actions] of Object.entries(commits)) {
    await store.put(commitKey(ROOT, Number(version)), commitText(actions));
  }
  return store;
}

describe('readDeltaHistory', () => {
  it('summarises each commit from its actions and tags the OPTIMIZE versions our runs committed', async () => {
    // Prepare: create, two appends, our OPTIMIZE of both, another engine's OPTIMIZE (no tag), a commit without info
    const store = await tableOf({
      0: [
        { commitInfo: { timestamp: 1_000, operation: 'CREATE TABLE' } },
        protocolAction(1, 2),
        metaDataAction(),
      ],
      1: [
        { commitInfo: { timestamp: 2_000, operation: 'WRITE' } },
        addAction('a.parquet', '2024-01-01', { size: 10 }),
      ],
      2: [
        { commitInfo: { timestamp: 3_000, operation: 'WRITE' } },
        addAction('b.parquet', '2024-01-01', { size: 30 }),
      ],
      3: [
        optimizeInfo('run-1', 1, { inCommitTimestamp: 4_500 }),
        removeAction('a.parquet', 5_000, { size: 10 }),
        removeAction('b.parquet', 5_000, { size: 30 }),
        addAction('c.parquet', '2024-01-01', { size: 25, dataChange: false }),
      ],
      4: [{ commitInfo: { timestamp: 6_000, operation: 'OPTIMIZE' } }],
      5: [addAction('d.parquet', '2024-01-02')],
    });

    // Act
    const history = await readDeltaHistory(store, ROOT);

    // Assess
    expect(history).toMatchObject({ latestVersion: 5, earliestVersion: 0, checkpoints: [] });
    expect(history.commits.map((c) => [c.version, c.operation, c.timestamp])).toEqual([
      [0, 'CREATE TABLE', 1_000],
      [1, 'WRITE', 2_000],
      [2, 'WRITE', 3_000],
      [3, 'OPTIMIZE', 4_500],
      [4, 'OPTIMIZE', 6_000],
      [5, undefined, undefined],
    ]);
    expect(compactorCommits(history)).toEqual([
      {
        version: 3,
        timestamp: 4_500,
        operation: 'OPTIMIZE',
        runId: 'run-1',
        groupId: 'g1',
        predicate: `["(\`day\` = '2024-01-01')"]`,
        readVersion: 1,
        filesRemoved: 2,
        filesAdded: 1,
        bytesRemoved: 40,
        bytesAdded: 25,
      },
    ]);
  });

  it('starts at the oldest commit a log cleanup left, and names the checkpoints', async () => {
    // Prepare: commits 0..9 cleaned up after a checkpoint at 10
    const store = await tableOf({
      10: [optimizeInfo('run-2', 9)],
      11: [{ commitInfo: { timestamp: 7_000, operation: 'WRITE' } }, addAction('e.parquet', '2024-01-01')],
    });
    await store.put(`${ROOT}_delta_log/${String(10).padStart(20, '0')}.checkpoint.parquet`, 'x');
    await store.put(`${ROOT}_delta_log/_last_checkpoint`, '{"version":10,"size":1}');

    // Act
    const history = await readDeltaHistory(store, ROOT);

    // Assess
    expect(history).toMatchObject({ latestVersion: 11, earliestVersion: 10, checkpoints: [10] });
    expect(compactorCommits(history).map((c) => [c.version, c.runId])).toEqual([[10, 'run-2']]);
  });

  it('refuses a folder with no commit as not a Delta table, naming the log folder', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put(`${ROOT}day=2024-01-01/a.parquet`, 'x');

    // Act
    const reading = readDeltaHistory(store, ROOT);

    // Assess
    await expect(reading).rejects.toBeInstanceOf(DeltaLogError);
    await expect(reading).rejects.toThrow(`no commit under ${ROOT}_delta_log/: it is not a Delta table`);
  });
});
