// A refusal for a coordination mismatch reaches the alarmed `CoordinationRefusals` metric from each function that can
// meet one: the plan step (a Delta table declared s3-conditional that Spark's S3DynamoDBLogStore writes; the error
// still fails the step), the commit step (a group aborted right before its put), and vacuum (that table's error,
// the other tables vacuumed all the same). Per table and in total (the total is what infra/observability.ts
// alarms on). A group aborted on an ordinary conflict counts nothing.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../../functions/adapters/memory-quarantine.js';
import { formatForTable, tableFormat } from '../../../functions/core/formats/index.js';
import type { CommitConflict, TableFormat } from '../../../functions/core/formats/table-format.js';
import { METRIC } from '../../../functions/core/metrics.js';
import { buildRunContext, type RunContext } from '../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createCommitHandler } from '../../../functions/handlers/commit.js';
import { createPlanHandler } from '../../../functions/handlers/plan.js';
import { createVacuumHandler } from '../../../functions/handlers/vacuum.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { parseEnv } from '../../../functions/shared/env.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { type WorkflowRuntime, workflowEnvSchema } from '../../../functions/shared/workflow-runtime.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../functions/tools/sample-delta.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';

const NOW = Date.UTC(2026, 0, 1);
const DAY = '2025-12-31';
const SPARK_TEMP = 'sparky/_delta_log/.tmp/00000000000000000002.json.0f0e6b7a-1f7c-4c55-9c59-0d3c1f7f5a21';
const output = capturePowertoolsOutput();

const TABLES = parseTableConfigs([
  {
    name: 'sparky',
    bucket: 'lake',
    prefix: 'sparky',
    partitionColumns: ['date'],
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
  {
    name: 'plain',
    bucket: 'lake',
    prefix: 'plain',
    partitionColumns: ['date'],
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  },
]);

/** `sparky`: a Delta table with a Spark S3DynamoDBLogStore temp file under `.tmp/`; `plain`: a put-if-absent one. */
async function world() {
  const clock = new ManualClock(NOW);
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  for (const table of ['sparky', 'plain']) {
    await createDeltaEventsTable(store, table, { now: NOW });
    for (let seed = 1; seed <= 6; seed += 1) {
      await appendDeltaEvents(store, table, { day: DAY, rows: 40 + seed, seed, now: NOW });
    }
  }
  await store.put(SPARK_TEMP, '{}');
  return { clock, store };
}

function runtimeOf(w: Awaited<ReturnType<typeof world>>, format?: TableFormat) {
  const leases = new MemoryLeases();
  const runtime: WorkflowRuntime = {
    env: parseEnv(workflowEnvSchema, { TABLE_NAME: 'state' }),
    tables: TABLES,
    clock: w.clock,
    leases,
    quarantine: new MemoryQuarantine(),
    storeFor: () => w.store,
    journalFor: () => new MemoryJournal(),
    formatFor: (run) => format ?? formatForTable(TABLES, run.table, {}),
  };
  return { runtime, leases };
}

function runOf(table: string): RunContext {
  const config = TABLES.find((t) => t.name === table);
  if (config === undefined) throw new Error(table);
  return buildRunContext(
    { ...config, bucket: config.bucket ?? 'lake', prefix: config.prefix.replace(/\/$/, '') },
    `date=${DAY}`,
    { force: true, quietMinutes: 0 },
    { executionName: `run-${table}`, startedAt: NOW },
  );
}

/** The `CoordinationRefusals` EMF lines written so far: [Table dimension or 'total', value]. */
function refusals(): [string, unknown][] {
  return output.lines
    .filter((l) => METRIC.coordinationRefusals in l)
    .map((l) => [typeof l.Table === 'string' ? l.Table : 'total', l[METRIC.coordinationRefusals]]);
}

describe('CoordinationRefusals, the alarmed metric of a coordination mismatch', () => {
  it('is counted by the plan step, which still fails with CoordinationMismatchError and plans nothing', async () => {
    // Prepare
    const w = await world();
    const { runtime, leases } = runtimeOf(w);
    const run = runOf('sparky');
    await leases.acquire({ table: run.table, partition: run.partition }, { runId: run.runId, now: NOW });
    const plan = createPlanHandler(runtime, createObservability('test').metrics);
    const before = w.store.keys();

    // Act
    const planning = plan({ run });

    // Assess
    await expect(planning).rejects.toMatchObject({
      name: 'CoordinationMismatchError',
      message: expect.stringContaining("temp file(s) of Spark's S3DynamoDBLogStore"),
    });
    expect(refusals()).toEqual([
      ['sparky', 1],
      ['total', 1],
    ]);
    expect(w.store.keys()).toEqual(before);
  });

  it('is not counted by a plan step that plans a table coordinated as declared', async () => {
    // Prepare
    const w = await world();
    const { runtime, leases } = runtimeOf(w);
    const run = runOf('plain');
    await leases.acquire({ table: run.table, partition: run.partition }, { runId: run.runId, now: NOW });
    const plan = createPlanHandler(runtime, createObservability('test').metrics);

    // Act
    const planned = await plan({ run });

    // Assess
    expect(planned.groupCount).toBe(1);
    expect(refusals()).toEqual([]);
  });

  // The commit step's own path to a mismatch (the check right before the put) is proven in
  // test/unit/cli-delta-quiet-window.test.ts; here a format stub returns that outcome, so that only the handler's
  // counting is under test.
  it.each([
    ['counts a group the format aborted for a coordination mismatch', true, 1],
    ['counts nothing for a group aborted on an ordinary conflict', false, 0],
  ])('the commit step %s', async (_case, mismatch, counted) => {
    // Prepare
    const w = await world();
    const conflict: CommitConflict = {
      key: 'sparky/_delta_log/',
      reason: 'seen',
      ...(mismatch ? { coordinationMismatch: true } : {}),
    };
    const format: TableFormat = {
      ...tableFormat('delta'),
      commit: async () => ({ state: 'aborted', published: [], retired: [], conflicts: [conflict] }),
    };
    const { runtime } = runtimeOf(w, format);
    const commit = createCommitHandler(runtime, createObservability('test').metrics);

    // Act
    const result = await commit({ run: runOf('sparky'), groupId: 'g0001' });

    // Assess
    expect(result.coordinationMismatch).toBe(mismatch ? true : undefined);
    expect(refusals()).toEqual(
      counted === 0
        ? []
        : [
            ['sparky', 1],
            ['total', 1],
          ],
    );
  });

  it('is counted by vacuum for the refused table, whose files stay, while the other table is vacuumed', async () => {
    // Prepare
    const w = await world();
    const observability = createObservability('test');
    const vacuum = createVacuumHandler(
      {
        tables: TABLES,
        workRoot: '_lake-compactor/',
        storeFor: () => w.store,
        journalFor: () => new MemoryJournal(),
        clock: w.clock,
      },
      observability,
    );
    const sparky = w.store.keys().filter((k) => k.startsWith('sparky/'));

    // Act
    const report = await vacuum({ dryRun: false });
    observability.metrics.publishStoredMetrics();

    // Assess
    expect(report.deltaTables?.map((t) => [t.table, t.error?.name])).toEqual([
      ['sparky', 'CoordinationMismatchError'],
      ['plain', undefined],
    ]);
    expect(w.store.keys().filter((k) => k.startsWith('sparky/'))).toEqual(sparky);
    expect(refusals()).toEqual([
      ['sparky', 1],
      ['total', 1],
    ]);
  });
});
