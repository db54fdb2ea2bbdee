// The commit of a group on a format-v3 table refuses outputs that may lack their rows' lineage: a group whose
// inputs were planned without it (an older plan, or a table upgraded to v3 since) aborts, committing nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../../functions/adapters/memory-journal.js';
import { icebergTable, loadTable } from '../../../../../functions/core/formats/iceberg/index.js';
import { snapshotIcebergTable } from '../../../../../functions/core/formats/iceberg/table-snapshot.js';
import type { PlanInputFile } from '../../../../../functions/core/planning.js';
import type { GroupJournalEntry, JournalInput } from '../../../../../functions/ports/journal.js';
import { copyFixtureTable, type TableCopy } from './commit-harness.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const TABLE = 'spark_v3_deletion_vectors';

let copy: TableCopy;
beforeAll(() => {
  copy = copyFixtureTable(TABLE);
});
afterAll(() => copy.remove());

/** A published group of `inputs` planned at `snapshotId`, as the journal keeps it. */
function publishedEntry(inputs: readonly PlanInputFile[], snapshotId: string): GroupJournalEntry {
  return {
    runId: 'r1',
    groupId: 'g0001',
    table: TABLE,
    partition: 'data',
    state: 'published',
    inputs: inputs.map(
      (f): JournalInput => ({
        key: f.key,
        etag: f.etag,
        size: f.size,
        ...(f.rows === undefined ? {} : { rows: f.rows }),
        ...(f.rowLineage === undefined ? {} : { rowLineage: f.rowLineage }),
      }),
    ),
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: `${TABLE}/_compactor/staging/r1/g0001/`,
    trashPrefix: `${TABLE}/_compactor/trash/r1/g0001/`,
    format: 'iceberg',
    formatState: { tableRoot: TABLE, snapshotId },
    createdAt: NOW,
    updatedAt: NOW,
    revision: 1,
  };
}

describe('the Iceberg commit of a group on a format-v3 table', () => {
  it('aborts, committing nothing, when its inputs were rewritten without their row lineage', async () => {
    // Prepare: the files without deletes, as planned, then stripped of their lineage
    const read = await snapshotIcebergTable(copy.store, TABLE, { now: NOW, readFooters: true });
    const planned = read.snapshot.partitions.flatMap((p) => p.files).filter((f) => f.deletes === undefined);
    expect(planned.every((f) => f.rowLineage !== undefined)).toBe(true);
    const stripped = planned.map(({ rowLineage: _lineage, ...f }) => f);
    const journal = new MemoryJournal();
    await journal.create(publishedEntry(stripped, String(read.snapshotId)));
    const snapshotsBefore = (await loadTable(copy.store, TABLE)).metadata.snapshots.length;

    // Act
    const outcome = await icebergTable.commit(
      { store: copy.store, journal, clock: { now: () => NOW } },
      'r1',
      'g0001',
    );

    // Assess
    expect(outcome.state).toBe('aborted');
    expect(outcome.conflicts).toEqual(
      stripped.map((f) => ({ key: f.key, reason: expect.stringMatching(/without its row lineage/) })),
    );
    expect((await loadTable(copy.store, TABLE)).metadata.snapshots).toHaveLength(snapshotsBefore);
  });
});
