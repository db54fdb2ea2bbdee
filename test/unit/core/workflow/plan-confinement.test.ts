// The plan step's last line of the confinement rule: a partition whose output keys the rule refuses (control
// characters, an encoded traversal climbing out of the table root) is refused before anything is listed, leased,
// journaled or written — and a well-behaved partition of the same table is still planned.
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { planRun } from '../../../../functions/core/workflow/plan.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { countingStore } from '../../../support/counting-store.js';

const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'warehouse/events', partitionColumns: ['date'] },
  { name: 'raw', bucket: 'lake', prefix: 'warehouse/raw' },
]);
const planOptions = { inlineGroupLimit: 40, compactMemoryMb: 1024 };

/** The run the workflow would plan: the operator's partition as the run input validation accepts it. */
function runContext(runId: string, table: string, partition: string): RunContext {
  const normalized = normalizeRunInput({ table, partition, quietMinutes: 0, force: true }, tables, {
    executionName: runId,
    startedAt: 1_000,
  });
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('the plan step refuses a partition whose output keys leave the table root', () => {
  let inner: MemoryObjectStore;
  let journalCalls: string[];
  let leaseChecks: number;

  beforeEach(async () => {
    inner = new MemoryObjectStore();
    await inner.put('warehouse/events/date=2024-03-01/a.parquet', 'A');
    await inner.put('warehouse/other/secret.parquet', 'SECRET');
    journalCalls = [];
    leaseChecks = 0;
  });

  it.each([
    [
      'a control character (ANSI escape) in the value',
      'events',
      'date=2024-03-01\u001b[2J',
      'control characters',
    ],
    [
      'an encoded traversal that climbs out of the root',
      'raw',
      '%2e%2e/%2e%2e/%2e%2e/pwn',
      'climbs out of the table root once percent-decoded',
    ],
  ])(
    '%s: InvalidInputError naming the partition escaped, with no request, journal entry or lease check',
    async (_what, table, partition, reason) => {
      // Prepare: run input validation lets these through (no raw "..", no hidden segment); the plan step must not
      const counted = countingStore(inner);
      const journal = new MemoryJournal((method) => {
        journalCalls.push(method);
      });
      const deps = {
        store: counted.store,
        journal,
        clock: new ManualClock(5_000),
        leases: {
          holds: async () => {
            leaseChecks++;
            return true;
          },
        },
      };
      const run = runContext('run-1', table, partition);

      // Act
      const planned = planRun(deps, run, planOptions);

      // Assess
      const err = (await planned.then(
        () => undefined,
        (e: unknown) => e,
      )) as Error;
      expect(err).toMatchObject({ name: 'InvalidInputError' });
      expect(err.message).toContain(reason);
      expect(err.message).toContain(`of table ${table}`);
      expect(err.message).toContain('nothing was planned');
      expect(err.message).not.toMatch(/\p{Cc}/u);
      expect(counted.requests()).toEqual([]);
      expect(journalCalls).toEqual([]);
      expect(leaseChecks).toBe(0);
    },
  );

  it('still plans a well-behaved partition of the same table', async () => {
    // Prepare
    const deps = {
      store: inner,
      journal: new MemoryJournal(),
      clock: new ManualClock(5_000),
      leases: { holds: async () => true },
    };
    const run = runContext('run-2', 'events', 'date=2024-03-01');

    // Act
    const planned = planRun(deps, run, planOptions);

    // Assess
    await expect(planned).resolves.toBeDefined();
  });
});
