// Proves the verify step holds stitched outputs to the journal's plan: a group whose inputs were all copied row
// group by row group verifies, and the same outputs fail once the plan says an input had another ETag — the
// rewrite's fingerprint (which names the ETag it copied) is not taken at its word.
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { isStitchedSegment } from '../../../../functions/core/fingerprint/fingerprint.js';
import { tableFormat } from '../../../../functions/core/formats/index.js';
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

/** The default engine with every row group counting as large and the sample lake's codec: its inputs are stitched. */
const stitchesAll: ParquetEngine = {
  ...defaultParquetEngine,
  rewriteGroup: (io, group, options) =>
    defaultParquetEngine.rewriteGroup(io, group, {
      ...options,
      codec: 'snappy',
      stitch: { minRowGroupRows: 1, minRowGroupBytes: 1 },
    }),
};

describe('the verify step with stitched outputs', () => {
  let store: MemoryObjectStore;
  let journal: MemoryJournal;
  let clock: ManualClock;
  let run: RunContext;

  beforeEach(async () => {
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
    const normalized = normalizeRunInput(
      { table: 'events', partition: `date=${DAY}`, quietMinutes: 0 },
      tables,
      { executionName: 'st-1', startedAt: 1_000 },
    );
    if (normalized.mode !== 'single') throw new Error('expected one partition');
    run = normalized.run;
    const leases = new MemoryLeases();
    const scratch = new MemoryJournal();
    await acquireLease(leases, run, clock.now());
    await planRun({ store, journal: scratch, clock, leases }, run, {
      inlineGroupLimit: 40,
      compactMemoryMb: 1024,
    });
    const {
      state: _state,
      revision: _revision,
      ...fresh
    } = (await scratch.get(run.runId, 'g0001')) as GroupJournalEntry;
    journal = new MemoryJournal();
    await journal.create({ ...fresh, state: 'planned' });
  });

  it('verifies a stitched group against its plan, and refuses it once the plan names another ETag for an input', async () => {
    // Prepare
    const deps = { store, journal, clock, engine: stitchesAll, format: tableFormat('parquet') };
    const compacted = await compactGroup(deps, run, { groupId: 'g0001', expectedOutputFiles: 1 });
    const segments =
      compacted.fingerprint?.kind === 'ordered-columns-v1' ? compacted.fingerprint.segments : [];
    expect(segments.some(isStitchedSegment)).toBe(true);
    const entry = (await journal.get(run.runId, 'g0001')) as GroupJournalEntry;
    const other = new MemoryJournal();
    const { state: _s, revision: _r, ...fresh } = entry;
    const [first, ...rest] = entry.inputs;
    await other.create({
      ...fresh,
      state: 'staged',
      inputs: [{ ...(first as (typeof entry.inputs)[number]), etag: 'not-the-copied-one' }, ...rest],
    });

    // Act
    const verified = await verifyGroup(
      { store, journal, clock, engine: defaultParquetEngine },
      run,
      'g0001',
      compacted.fingerprint,
    );
    const refused = verifyGroup(
      { store, journal: other, clock, engine: defaultParquetEngine },
      run,
      'g0001',
      compacted.fingerprint,
    );

    // Assess
    expect(verified.state).toBe('verified');
    await expect(refused).rejects.toThrow(VerificationError);
    await expect(refused).rejects.toThrow(/copied at ETag .*, planned at not-the-copied-one/);
  });
});
