// An operator's `{ "table", "where" }` on an Iceberg table (no partition named), as the console example
// events/workflow-iceberg-where.json starts it: the validate step lists the table's partitions from its current
// snapshot, starts one child execution per partition the filter passes, and each child's plan step plans that
// partition under the same filter. A filter that passes nothing, or an entry point that cannot list, changes nothing.
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { icebergTable } from '../../../functions/core/formats/iceberg/format.js';
import { normalizeRunInput, type RunInput } from '../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { planRun, readPlan } from '../../../functions/core/workflow/plan.js';
import { createValidateHandler, type ValidateRuntime } from '../../../functions/handlers/validate.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import type { StateMachineStarter } from '../../../functions/ports/state-machine-starter.js';
import { parseEnv } from '../../../functions/shared/env.js';
import { workflowEnvSchema } from '../../../functions/shared/workflow-runtime.js';
import { ICEBERG_FIXTURES } from '../../support/fixtures.js';

const tables = parseTableConfigs([
  { name: 'clickstream', bucket: 'lake', prefix: 'clickstream', format: 'iceberg' },
  { name: 'orders', bucket: 'lake', prefix: 'orders', partitionColumns: ['date'] },
]);
const env = parseEnv(workflowEnvSchema, { TABLE_NAME: 'state' });
const EXECUTION = { name: 'ops-where', startTime: '2024-01-02T00:00:00Z' };
const ARN = 'arn:aws:states:us-east-1:111111111111:stateMachine:compact';

let store: MemoryObjectStore;
let started: { name: string; input: RunInput }[];
const starter: StateMachineStarter = {
  executionArn: (name) => `arn:aws:states:us-east-1:111111111111:execution:compact:${name}`,
  start: async (name, input) => {
    started.push({ name, input: input as RunInput });
    return { executionArn: name, alreadyStarted: false };
  },
  describe: async () => undefined,
};

function runtime(canList = true): ValidateRuntime {
  return {
    tables,
    env,
    ...(canList
      ? { storeFor: () => store, formatFor: () => icebergTable, clock: new ManualClock(5_000) }
      : {}),
  };
}

beforeEach(async () => {
  started = [];
  store = new MemoryObjectStore();
  const folder = join(ICEBERG_FIXTURES, 'spark_v1_hour_identity_partitioned');
  for (const entry of (await readdir(folder, { recursive: true, withFileTypes: true })).filter((e) =>
    e.isFile(),
  )) {
    const path = join(entry.parentPath, entry.name);
    await store.put(`clickstream/${relative(folder, path).split('\\').join('/')}`, await readFile(path));
  }
});

describe('validate with a where filter and no partitions', () => {
  it('starts one child per partition the filter passes, and each child plans its partition', async () => {
    // Prepare
    const validate = createValidateHandler(runtime(), () => starter);
    const all = (await icebergTable.snapshot(store, 'clickstream', { now: 5_000 })).partitions;
    const views = all.map((p) => p.partition).filter((p) => p.endsWith('/action=view'));

    // Act
    const result = await validate({
      input: { table: 'clickstream', where: "action = 'view'", force: true },
      execution: EXECUTION,
      stateMachineArn: ARN,
    });
    const child = started[0];
    if (child === undefined) throw new Error('no child started');
    const normalized = normalizeRunInput(child.input, tables, {
      executionName: child.name,
      startedAt: 1_000,
    });
    if (normalized.mode !== 'single') throw new Error('a child runs one partition');
    const deps = {
      store,
      journal: new MemoryJournal(),
      clock: new ManualClock(5_000),
      leases: { holds: async () => true },
      format: icebergTable,
    };
    const planned = await planRun(deps, normalized.run, { inlineGroupLimit: 40, compactMemoryMb: 1024 });

    // Assess
    expect(views.length).toBeGreaterThan(0);
    expect(views.length).toBeLessThan(all.length);
    expect(result.mode).toBe('fanout');
    expect(started.map((s) => s.input.partition)).toEqual([...views].sort());
    expect(started.every((s) => s.input.where === "action = 'view'" && s.input.force === true)).toBe(true);
    expect(normalized.run.partition).toBe(child.input.partition);
    expect(planned.plannedFiles).toBeGreaterThan(0);
    expect((await readPlan(store, normalized.run))?.groups.length).toBe(planned.groupCount);
  });

  it('changes nothing and says what the table has when no partition passes the filter', async () => {
    // Prepare
    const validate = createValidateHandler(runtime(), () => starter);

    // Act
    const act = validate({
      input: { table: 'clickstream', where: "action = 'purchase'" },
      execution: EXECUTION,
      stateMachineArn: ARN,
    });

    // Assess
    await expect(act).rejects.toThrow(InvalidInputError);
    await expect(act).rejects.toThrow(/No partition of table "clickstream" passes where action = 'purchase'/);
    expect(started).toEqual([]);
  });

  it('is refused with what to do instead where the entry point cannot list the table', async () => {
    // Prepare
    const validate = createValidateHandler(runtime(false), () => starter);

    // Act
    const act = validate({
      input: { table: 'clickstream', where: "action = 'view'" },
      execution: EXECUTION,
      stateMachineArn: ARN,
    });

    // Assess
    await expect(act).rejects.toThrow(/list the partitions in `partitions`/);
    expect(started).toEqual([]);
  });

  it('is refused on a table that is not Iceberg, naming the field', async () => {
    // Prepare
    const validate = createValidateHandler(runtime(), () => starter);

    // Act
    const act = validate({
      input: { table: 'orders', where: "date = '2024-01-01'" },
      execution: EXECUTION,
      stateMachineArn: ARN,
    });

    // Assess
    await expect(act).rejects.toThrow(/where: applies to Apache Iceberg tables/);
    expect(started).toEqual([]);
  });

  it('still refuses a request naming neither partitions nor a filter', async () => {
    // Prepare
    const validate = createValidateHandler(runtime(), () => starter);

    // Act
    const act = validate({ input: { table: 'clickstream' }, execution: EXECUTION, stateMachineArn: ARN });

    // Assess
    await expect(act).rejects.toThrow(/`where` alone compacts every partition it passes/);
    expect(started).toEqual([]);
  });
});
