// One table cannot stop the others (issue #34 item 3), in the profiler: one SQS batch carries commits of two Delta
// tables; `bad`'s log read throws deep in the format, outlasts the invocation's time, or kills the process. Only
// `bad`'s message fails (the partial batch response keeps `good`'s), `good`'s statistics are applied, `bad` is
// reported by name and metered (TableFailures); after a crash, the redelivered batch does not read `bad` again while
// it holds other tables' events, so a second death cannot take `good`'s messages towards the dead-letter queue.
import type { Context, SQSEvent } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { MemoryTableLedger } from '../../../functions/adapters/memory-table-ledger.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../../functions/handlers/profiler.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../functions/tools/sample-delta.js';
import { poisonedStore } from '../../support/poison-store.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';
import { s3CreatedRecord } from '../../support/sqs-s3.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const MINUTE = 60_000;
const tables = parseTableConfigs(
  ['bad', 'good'].map((name) => ({
    name,
    bucket: 'lake',
    prefix: name,
    partitionColumns: ['date'],
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
  })),
);
const output = capturePowertoolsOutput();
const COMMIT = '_delta_log/00000000000000000001.json';

/** The batch: one commit message of each table, delivered for the `receives`-th time. */
function batch(receives: number, names: readonly string[] = ['bad', 'good']): SQSEvent {
  return {
    Records: names.map((name) => {
      const record = s3CreatedRecord(name, `${name}/${COMMIT}`, (0x100 + receives).toString(16), NOW);
      return { ...record, attributes: { ...record.attributes, ApproximateReceiveCount: String(receives) } };
    }),
  };
}

/** A Lambda context with `ms` left. */
function contextWith(ms: number, id = 'req-1'): Context {
  return { functionName: 'profiler', awsRequestId: id, getRemainingTimeInMillis: () => ms } as Context;
}

async function world(mode: { hang: true } | { throws: Error }) {
  const clock = new ManualClock(NOW);
  const memory = new MemoryObjectStore();
  for (const name of ['bad', 'good']) {
    await createDeltaEventsTable(memory, name, { now: NOW });
    await appendDeltaEvents(memory, name, { day: '2026-11-29', rows: 5, seed: 1, now: NOW });
  }
  const poison = poisonedStore(memory, 'bad/', mode);
  const stats = new MemoryStatsStore();
  const ledger = new MemoryTableLedger();
  const handler = () =>
    createProfilerHandler({
      tables,
      policies: policiesOf(tables),
      stats,
      storeFor: () => poison.store,
      clock,
      observability: createObservability('test'),
      ledger,
    });
  const counted = async (table: string) =>
    (await stats.listPartitions(table)).map((p) => [p.partition, p.fileCount]);
  return { clock, poison, stats, ledger, handler, counted };
}

function metricOf(table: string): unknown[] {
  return output.lines.filter((l) => 'TableFailures' in l && l.Table === table).map((l) => l.TableFailures);
}

describe('profiler: one table cannot stop the others in a batch', () => {
  it('an error thrown deep in a Delta log read fails only that table’s message; the other table is applied', async () => {
    // Prepare
    const w = await world({ throws: new TypeError("Cannot read properties of undefined (reading 'add')") });

    // Act
    const response = await w.handler()(batch(1), contextWith(50_000));

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
    expect(await w.counted('good')).toEqual([['date=2026-11-29', 1]]);
    expect(await w.counted('bad')).toEqual([]);
    expect(output.lines.find((l) => l.level === 'ERROR' && l.job === 'profiler')).toMatchObject({
      table: 'bad',
      kind: 'error',
      error: expect.stringMatching(/^TypeError: /),
    });
    expect(metricOf('bad')).toEqual([1]);
  });

  it('a read that outlasts the invocation’s time fails only that table’s message, before the function times out', async () => {
    // Prepare: 6.5 s left, 5 s of which the profiler keeps for the response; a turn may take half of the rest
    const w = await world({ hang: true });

    // Act
    const response = await w.handler()(batch(1), contextWith(6_500));

    // Assess
    expect(response).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
    expect(await w.counted('good')).toEqual([['date=2026-11-29', 1]]);
    expect(output.lines.find((l) => l.level === 'ERROR' && l.job === 'profiler')).toMatchObject({
      table: 'bad',
      kind: 'time-budget',
    });
  });

  it('after the process died reading a table, the redelivered batch keeps that table out and applies the others', async () => {
    // Prepare: the first delivery never returns from bad's read (in Lambda: the out-of-memory kill or the timeout;
    // here an invocation abandoned where it hangs); no context, so its attempt stays open 15 minutes
    const w = await world({ hang: true });
    let reached = w.poison.reached();
    void w.handler()(batch(1), { functionName: 'profiler' } as Context);
    await reached;
    const open = w.ledger.open().map((a) => a.table);
    w.clock.advance(16 * MINUTE);

    // Act: the redelivery (a new process), then a batch holding bad's message alone
    const mixed = await w.handler()(batch(2), contextWith(50_000, 'req-2'));
    const seenBefore = w.poison.requests.filter((k) => k.startsWith('bad/')).length;
    reached = w.poison.reached();
    void w.handler()(batch(3, ['bad']), contextWith(50_000, 'req-3'));
    const retried = await reached;

    // Assess
    expect(open).toEqual(['bad']);
    expect(mixed).toEqual({ batchItemFailures: [{ itemIdentifier: 'bad' }] });
    expect(await w.counted('good')).toEqual([['date=2026-11-29', 1]]);
    expect(w.poison.requests.filter((k) => k.startsWith('bad/')).length).toBeGreaterThanOrEqual(seenBefore);
    expect(retried.startsWith('bad/')).toBe(true);
    const errors = output.lines.filter((l) => l.level === 'ERROR' && l.table === 'bad');
    expect(errors[0]).toMatchObject({ job: 'profiler', kind: 'crash' });
    expect(
      output.lines.find((l) => l.level === 'ERROR' && /its messages are retried/.test(String(l.message))),
    ).toMatchObject({
      table: 'bad',
      error: expect.stringMatching(/^TableCrashedError: .*killed the profiler last time/),
    });
    expect(metricOf('bad')).toEqual([1]);
  });
});
