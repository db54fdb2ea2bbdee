// A table whose format is not implemented (an unknown one, or Hudi: recognised, not supported yet), in a table
// list that reached a function without passing the config schema: the profiler profiles and triggers nothing for
// it (one log line, `UnsupportedFormatRefusals`), the sweep starts, releases and reconciles nothing for it, and the
// validate step refuses a run of it — each with the registry's one refusal message, which names Hudi as such.
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { unsupportedFormatMessage } from '../../../functions/core/formats/index.js';
import type { TriggerDeps } from '../../../functions/core/profiler/trigger.js';
import { parseTableConfigs, type TableConfig } from '../../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../../functions/handlers/profiler.js';
import { createSweepHandler } from '../../../functions/handlers/sweep.js';
import { createValidateHandler } from '../../../functions/handlers/validate.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import type { ObjectStore } from '../../../functions/ports/object-store.js';
import type { StateMachineStarter } from '../../../functions/ports/state-machine-starter.js';
import type { StatsStore } from '../../../functions/ports/stats-store.js';
import { parseEnv } from '../../../functions/shared/env.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { workflowEnvSchema } from '../../../functions/shared/workflow-runtime.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';
import { s3CreatedRecord } from '../../support/sqs-s3.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const context = { functionName: 'profiler', awsRequestId: 'req-1' } as Context;

/** `orders` as a newer version (or a hand-written list) would hand it over: format `format`, unparsed. */
function tablesOf(format: string): TableConfig[] {
  return parseTableConfigs([
    { name: 'orders', bucket: 'lake', prefix: 'orders', partitionColumns: ['date'] },
  ]).map((t) => ({ ...t, format }) as unknown as TableConfig);
}

/** A StatsStore and a starter that record every call: a refused table must cause none. */
function recorders(): { stats: StatsStore; starter: StateMachineStarter; calls: string[] } {
  const calls: string[] = [];
  const stats = new Proxy({} as StatsStore, {
    get: (_target, name) => () => {
      calls.push(`stats.${String(name)}`);
      throw new Error(`unexpected call of ${String(name)}`);
    },
  });
  const starter: StateMachineStarter = {
    executionArn: (name) => `arn:aws:states:us-east-1:111111111111:execution:compact:${name}`,
    start: async (name) => {
      calls.push(`start ${name}`);
      return { executionArn: name, alreadyStarted: false };
    },
    describe: async (arn) => {
      calls.push(`describe ${arn}`);
      return undefined;
    },
  };
  return { stats, starter, calls };
}

/** Every JSON line written to stdout/stderr while the test runs (Powertools writes EMF and logs there). */
const output = capturePowertoolsOutput();

function s3Message(id: string, key: string, sequencer: string): SQSEvent['Records'][number] {
  return s3CreatedRecord(id, key, sequencer, NOW);
}

describe.each(['orc'])('a table whose format (%s) is not implemented', (format) => {
  const MESSAGE = unsupportedFormatMessage(format);
  const TABLES = tablesOf(format);

  it('is refused with a message that says what the format is', () => {
    // Assess: an unknown name is "not supported"; Hudi, which every step recognises by its .hoodie/ folder, is
    // named as recognised but not supported yet
    expect(MESSAGE).toMatch(
      format === 'hudi'
        ? /^table format "hudi" \(Apache Hudi\) is recognised but not supported yet: lake-compactor refuses Apache Hudi tables wherever it meets them and compacts only "parquet"/
        : /^table format "orc" is not supported: lake-compactor supports "parquet"/,
    );
  });

  it('is never profiled or triggered by the profiler, which logs the refusal and counts the events', async () => {
    // Prepare
    const { stats, starter, calls } = recorders();
    const handler = createProfilerHandler({
      tables: TABLES,
      policies: policiesOf(TABLES),
      stats,
      starter,
      clock: new ManualClock(NOW),
      observability: createObservability(),
    });
    const batch: SQSEvent = {
      Records: [
        s3Message('a', 'orders/date=2026-11-30/part-1.parquet', '11'),
        s3Message('b', 'orders/date=2026-11-30/part-2.parquet', '12'),
        s3Message('c', 'orders/metadata/00003-7c1a.metadata.json', '13'),
      ],
    };

    // Act
    const response = await handler(batch, context);

    // Assess: nothing recorded or started, no message retried; the refusal said once at start and per batch
    expect(response).toEqual({ batchItemFailures: [] });
    expect(calls).toEqual([]);
    const refusals = output.lines.filter((l) => l.message === MESSAGE);
    expect(refusals.map((l) => [l.level, l.table])).toEqual([
      ['ERROR', 'orders'],
      ['WARN', 'orders'],
    ]);
    expect(refusals[1]).toMatchObject({ events: 3 });
    expect(output.lines.find((l) => 'UnsupportedFormatRefusals' in l)).toMatchObject({
      Table: 'orders',
      UnsupportedFormatRefusals: 3,
    });
  });

  it('is skipped by the sweep, which starts, releases and reconciles nothing for it', async () => {
    // Prepare
    const { stats, starter, calls } = recorders();
    const trigger: TriggerDeps = {
      stats,
      starter,
      policies: policiesOf(TABLES),
      log: () => undefined,
      trigger: 'sweep',
    };
    const sweep = createSweepHandler({
      tables: TABLES,
      trigger,
      storeFor: () => ({}) as ObjectStore,
      clock: new ManualClock(NOW),
      observability: createObservability(),
    });

    // Act
    const swept = await sweep({ mode: 'sweep', table: 'orders' });
    const reconciled = await sweep({ mode: 'reconcile', table: 'orders' });

    // Assess
    expect(swept).toEqual({ mode: 'sweep', reports: [], tableFailures: [], notReached: [] });
    expect(reconciled).toEqual({ mode: 'reconcile', reports: [], tableFailures: [], notReached: [] });
    expect(calls).toEqual([]);
    expect(output.lines.filter((l) => l.message === MESSAGE).map((l) => [l.level, l.table])).toEqual([
      ['ERROR', 'orders'],
      ['ERROR', 'orders'],
    ]);
    expect(output.lines.filter((l) => 'UnsupportedFormatRefusals' in l)).toHaveLength(2);
  });

  it('is refused by the validate step before any execution is started', async () => {
    // Prepare
    const { starter, calls } = recorders();
    const env = parseEnv(workflowEnvSchema, { TABLE_NAME: 'state' });
    const validate = createValidateHandler({ tables: TABLES, env }, () => starter);

    // Act
    const act = validate({
      input: { table: 'orders', partitions: ['date=2026-11-29', 'date=2026-11-30'] },
      execution: { name: 'run-1', startTime: '2026-11-30T12:00:00Z' },
      stateMachineArn: 'arn:aws:states:us-east-1:111111111111:stateMachine:compact',
    });

    // Assess
    await expect(act).rejects.toThrow(InvalidInputError);
    await expect(act).rejects.toThrow(`table: "orders": ${MESSAGE}`);
    expect(calls).toEqual([]);
  });
});
