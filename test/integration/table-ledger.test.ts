// The TableLedger port's contract, on DynamoDB Local (the state table's adapter) and in memory: failures count in a
// row and a success forgets them; an attempt left open past its deadline comes back as a crash exactly once, however
// many invocations review at the same moment (the profiler's run concurrently); one still within it is not touched.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoTableLedger } from '../../functions/adapters/dynamodb-table-ledger.js';
import { MemoryTableLedger } from '../../functions/adapters/memory-table-ledger.js';
import type { TableFailure } from '../../functions/core/isolation.js';
import type { TableAttempt, TableLedger } from '../../functions/ports/table-ledger.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { createKeyValueTable } from '../support/dynamodb-table.js';

const T0 = Date.UTC(2026, 0, 1);
let ddb: DynamoDbLocalEndpoint;
let seq = 0;

beforeAll(async () => {
  ddb = await startTestDynamoDb();
}, 150_000);

afterAll(async () => {
  await ddb?.stop();
});

const failure = (table: string): TableFailure => ({
  table,
  kind: 'error',
  name: 'DeltaLogError',
  message: 'bad log',
});
const attempt = (table: string, id: string, until: number): TableAttempt => ({
  job: 'sweep',
  table,
  id,
  since: until - 600_000,
  until,
});

const adapters: [string, () => Promise<TableLedger>][] = [
  ['memory', async () => new MemoryTableLedger()],
  [
    'DynamoDB Local',
    async () => {
      const tableName = `ledger-${++seq}`;
      await createKeyValueTable(ddb.client(), tableName);
      return new DynamoTableLedger({ client: ddb.client(), tableName });
    },
  ],
];

describe.each(adapters)('TableLedger (%s)', (_name, make) => {
  it('counts failures in a row per job and table, and a success forgets them', async () => {
    // Prepare
    const ledger = await make();
    const a = attempt('orders', 'inv-1#orders', T0 + 600_000);

    // Act
    await ledger.begin(a);
    const once = await ledger.end(a, failure('orders'), T0 + 1);
    await ledger.begin({ ...a, id: 'inv-2#orders' });
    const twice = await ledger.end({ ...a, id: 'inv-2#orders' }, failure('orders'), T0 + 2);
    const failing = await ledger.review('sweep', T0 + 3);
    const otherJob = await ledger.review('reconcile', T0 + 3);
    await ledger.begin({ ...a, id: 'inv-3#orders' });
    const healed = await ledger.end({ ...a, id: 'inv-3#orders' }, undefined, T0 + 4);
    const after = await ledger.review('sweep', T0 + 5);

    // Assess
    expect(once.failures).toBe(1);
    expect(twice).toMatchObject({ failures: 2, last: { kind: 'error', name: 'DeltaLogError', at: T0 + 2 } });
    expect(failing.health.get('orders')?.failures).toBe(2);
    expect(otherJob.health.size).toBe(0);
    expect(healed.failures).toBe(0);
    expect(after.health.size).toBe(0);
  }, 30_000);

  it('turns an attempt left open past its deadline into one crash, claimed once among concurrent reviews', async () => {
    // Prepare: one attempt whose process died (deadline passed), one still running (deadline ahead)
    const ledger = await make();
    await ledger.begin(attempt('orders', 'dead#orders', T0 + 600_000));
    await ledger.begin(attempt('events', 'alive#events', T0 + 2_000_000));

    // Act: five invocations review at once, after the first deadline and before the second
    const reviews = await Promise.all(Array.from({ length: 5 }, () => ledger.review('sweep', T0 + 900_000)));

    // Assess
    const crashed = reviews.flatMap((r) => r.crashed.map((c) => c.table));
    expect(crashed).toEqual(['orders']);
    const last = await ledger.review('sweep', T0 + 900_001);
    expect(last.health.get('orders')).toMatchObject({
      failures: 1,
      last: { kind: 'crash', name: 'TableCrashedError' },
    });
    expect(last.health.has('events')).toBe(false);
    expect(last.crashed).toEqual([]);
  }, 30_000);
});
