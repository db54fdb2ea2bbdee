// Scheduled maintenance runs resume where the previous one stopped (a cursor checkpoint in the work root),
// so a lake larger than one invocation's budget is covered across runs instead of only its first pages.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { createVacuumHandler } from '../../../../functions/handlers/vacuum.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { createObservability } from '../../../../functions/shared/middleware.js';

const HOUR = 3_600_000;
const CHECKPOINT = '_lake-compactor/maintenance/vacuum.cursor.json';

function setup() {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  const tables = parseTableConfigs([{ name: 'events', bucket: 'lake', prefix: 'events/' }]);
  const handler = createVacuumHandler(
    {
      tables,
      workRoot: '_lake-compactor/',
      storeFor: () => store,
      journalFor: () => new MemoryJournal(),
      clock,
    },
    createObservability('test'),
  );
  return { clock, store, handler };
}

describe('resumable scheduled vacuum', () => {
  it('continues from the saved cursor on each scheduled run and removes the checkpoint when the pass completes', async () => {
    // Prepare
    const { clock, store, handler } = setup();
    for (let i = 0; i < 10; i++) await store.put(`events/_temporary/0/part-${i}.parquet`, 'x');
    clock.advance(100 * HOUR);
    const scheduled = { dryRun: false, resume: true, maxObjects: 4 };
    // Act
    const first = await handler(scheduled);
    const afterFirst = store.keys().filter((k) => k.includes('_temporary')).length;
    const checkpointed = (await store.head(CHECKPOINT)) !== undefined;
    await handler(scheduled);
    const third = await handler(scheduled);
    // Assess
    expect(first.cursor).toBeDefined();
    expect(checkpointed).toBe(true);
    expect(afterFirst).toBe(6);
    expect(third.cursor).toBeUndefined();
    expect(store.keys()).toEqual([]);
  });

  it('ignores the checkpoint without resume, so a console run starts from the beginning', async () => {
    // Prepare
    const { clock, store, handler } = setup();
    for (let i = 0; i < 6; i++) await store.put(`events/_temporary/0/part-${i}.parquet`, 'x');
    clock.advance(100 * HOUR);
    await handler({ dryRun: true, resume: true, maxObjects: 4 });
    // Act
    const report = await handler({ dryRun: true, maxObjects: 100 });
    // Assess
    expect(report.candidates).toHaveLength(6);
    expect(await store.head(CHECKPOINT)).toBeDefined();
  });
});
