// Proves verification counts deleted rows from the plan, not from the rewrite: a group whose inputs carry
// deletes verifies when the rewrite dropped them, and fails when an engine ignores them — a rewrite that
// fingerprints what it kept would otherwise verify its own mistake.
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { tableFormat } from '../../../../functions/core/formats/index.js';
import type { TableFormat } from '../../../../functions/core/formats/table-format.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { compactGroup } from '../../../../functions/core/workflow/compact.js';
import { acquireLease } from '../../../../functions/core/workflow/lease.js';
import { planRun } from '../../../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../../../functions/core/workflow/verify.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { GroupJournalEntry } from '../../../../functions/ports/journal.js';
import type { ParquetEngine } from '../../../../functions/ports/parquet-engine.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
]);
const DAY = '2024-03-01';
const DELETED = [0, 3];

/** Hive-style Parquet, plus deletes of rows 0 and 3 of every input that the journal says has deletes. */
const formatWithDeletes: TableFormat = {
  ...tableFormat('parquet'),
  deletedRows: async () => DeletedRows.of(DELETED),
};

/** The default engine, except that it ignores every input's deleted rows. */
const ignoresDeletes: ParquetEngine = {
  ...defaultParquetEngine,
  rewriteGroup: (io, group, options) =>
    defaultParquetEngine.rewriteGroup(
      io,
      { ...group, files: group.files.map(({ deleted: _deleted, ...file }) => file) },
      options,
    ),
};

function runContext(runId: string): RunContext {
  const normalized = normalizeRunInput(
    { table: 'events', partition: `date=${DAY}`, quietMinutes: 0 },
    tables,
    {
      executionName: runId,
      startedAt: 1_000,
    },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('verification of a group with deleted rows', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  let clock: ManualClock;
  let run: RunContext;
  let planned: GroupJournalEntry;

  beforeEach(async () => {
    // A planned group, re-journaled with deletes of two rows on its first input (as a Delta plan would record).
    store = new MemoryObjectStore();
    clock = new ManualClock(5_000);
    await writeSampleLake((key, bytes) => store.put(key, bytes).then(() => undefined), {
      table: 'events',
      days: 1,
      batches: 6,
      startDate: DAY,
      minRows: 10,
      maxRows: 30,
      seed: 3,
    });
    run = runContext('dv-1');
    const leases = new MemoryLeases();
    const scratch = new MemoryJournal();
    await acquireLease(leases, run, clock.now());
    await planRun({ store, journal: scratch, clock, leases }, run, {
      inlineGroupLimit: 40,
      compactMemoryMb: 1024,
    });
    const entry = (await scratch.get(run.runId, 'g0001')) as GroupJournalEntry;
    // A format that records deletes plans from its log, which gives every file's rows: the inputs as it records them
    // (these tiny files were planned from the listing, their rows unread).
    const logged = await Promise.all(
      entry.inputs.map(async ({ footerDeferred: _deferred, ...input }) => ({
        ...input,
        rows: input.rows ?? (await defaultParquetEngine.readFooter(store, input.key, input.size)).rows,
      })),
    );
    const [first, ...rest] = logged;
    if (first === undefined) throw new Error('the plan recorded no input');
    planned = {
      ...entry,
      inputs: [{ ...first, deletes: { id: 'dv-a', rows: DELETED.length, descriptor: {} } }, ...rest],
    };
    journal = new MemoryJournal();
    const { state: _state, revision: _revision, ...fresh } = planned;
    await journal.create({ ...fresh, state: 'planned' });
  });

  it('verifies a rewrite that dropped the deleted rows: the outputs hold rows(inputs) − |deleted|', async () => {
    // Act
    const compacted = await compactGroup(
      { store, journal, clock, engine: defaultParquetEngine, format: formatWithDeletes },
      run,
      { groupId: 'g0001', expectedOutputFiles: 1 },
    );
    const verified = await verifyGroup(
      { store, journal, clock, engine: defaultParquetEngine },
      run,
      'g0001',
      compacted.fingerprint,
    );

    // Assess
    const inputRows = planned.inputs.reduce((n, i) => n + (i.rows ?? 0), 0);
    expect(verified).toMatchObject({ state: 'verified', rows: inputRows - DELETED.length });
  });

  it('fails an engine that ignored the deletes, although its outputs match its own fingerprint', async () => {
    // Prepare
    const compacted = await compactGroup(
      { store, journal, clock, engine: ignoresDeletes, format: formatWithDeletes },
      run,
      { groupId: 'g0001', expectedOutputFiles: 1 },
    );
    const inputRows = planned.inputs.reduce((n, i) => n + (i.rows ?? 0), 0);

    // Act
    const attempt = verifyGroup(
      { store, journal, clock, engine: defaultParquetEngine },
      run,
      'g0001',
      compacted.fingerprint,
    );

    // Assess
    await expect(attempt).rejects.toThrow(VerificationError);
    await expect(attempt).rejects.toThrow(
      `the inputs hold ${inputRows - DELETED.length} rows once their deleted rows are dropped, but the rewrite kept ${inputRows} rows and the outputs hold ${inputRows} rows`,
    );
    expect((await journal.get(run.runId, 'g0001'))?.state).toBe('staged');
  });
});
