// The StatsStore contract over DynamoDB Local, on the state table the construct synthesizes (its keys-only
// gsi1 included): the reference the in-memory store is held to (test/unit/adapters/memory-stats-store.test.ts);
// then the settle-retry record and lease renewals on the partition item, as the sweep reads them.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { DEFAULT_POLICY } from '../../functions/core/policy.js';
import type { PartitionSnapshot } from '../../functions/core/profiler/model.js';
import { LEASE_GRACE_MS, sweepTable } from '../../functions/core/profiler/sweep.js';
import type { StateMachineStarter } from '../../functions/ports/state-machine-starter.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { statsStoreContract } from '../support/stats-store-contract.js';

let ddb: DynamoDbLocalEndpoint;
let stats: DynamoStatsStore;
let tables = 0;
let tableName: string;

beforeAll(async () => {
  const starting = startTestDynamoDb();
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'StatsStoreContract', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const model = new TemplateModel(Template.fromStack(stack).toJSON());
  ddb = await starting;
  const created = await createTablesFromTemplate(ddb.client(), model);
  const created0 = [...created.values()][0];
  if (!created0) throw new Error('the template defines no DynamoDB table');
  tableName = created0;
  stats = new DynamoStatsStore({ client: ddb.client(), tableName, backoffBaseMs: 2 });
});

afterAll(async () => {
  await ddb?.stop();
});

// One shared state table: each test gets a table name of its own.
statsStoreContract('DynamoStatsStore on DynamoDB Local', async () => {
  tables += 1;
  return { stats, table: `events${tables}` };
});

describe('the sweep’s settle-retry record on the partition item (DynamoPartitionLease over DynamoDB Local)', () => {
  it('survives a settle run that ends needs-attention again, and is dropped when one ends the partition idle', async () => {
    // Prepare: a partition needs attention, and the sweep claimed its first retry
    tables += 1;
    const table = `events${tables}`;
    const ref = { table, partition: 'p' };
    const leases = new DynamoPartitionLease({
      client: ddb.client(),
      tableName,
      tables: [],
      policies: new Map(),
    });
    const now = Date.UTC(2026, 10, 30, 12, 0, 0);
    await leases.acquire(ref, { runId: 'run-1', now });
    await leases.release(ref, 'run-1', { attention: { reason: 'AccessDenied', runId: 'run-1', since: now } });
    const retry = { attempts: 1, lastAt: now, nextAt: now + 30 * 60_000, executionName: 'settle-1' };
    expect(await stats.claimSettleRetry((await stats.get(ref)) as PartitionSnapshot, retry)).toBe(true);

    // Act 1: the retry's settle run takes the partition, and cannot settle it either
    await leases.acquire(ref, { runId: 'settle-1', settle: true, now });
    const held = await stats.get(ref);
    await leases.release(ref, 'settle-1', {
      attention: { reason: 'AccessDenied', runId: 'settle-1', since: now },
    });
    const stillStuck = await stats.get(ref);

    // Act 2: the next one settles it
    await leases.acquire(ref, { runId: 'settle-2', settle: true, now });
    await leases.release(ref, 'settle-2', { lastCompactedAt: now });
    const settled = await stats.get(ref);

    // Assess
    expect(held).toMatchObject({ state: 'compacting', settleRetry: retry, attention: { runId: 'run-1' } });
    expect(stillStuck).toMatchObject({ state: 'needs-attention', settleRetry: retry, generation: 2 });
    expect(settled).toMatchObject({ state: 'idle', generation: 3 });
    expect(settled?.settleRetry).toBeUndefined();
    expect(settled?.attention).toBeUndefined();
  });
});

describe('a lease its holder renews (DynamoPartitionLease over DynamoDB Local, and the sweep reading it)', () => {
  /** A starter that knows no execution: what the sweep finds for an operator's settle or undo. */
  const noExecutions: StateMachineStarter = {
    executionArn: (name) => `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`,
    start: async () => {
      throw new Error('the sweep must start nothing here');
    },
    describe: async () => undefined,
  };

  it('is renewed only by its holder, on the lease the sweep lists', async () => {
    // Prepare
    tables += 1;
    const ref = { table: `events${tables}`, partition: 'p' };
    const leases = new DynamoPartitionLease({
      client: ddb.client(),
      tableName,
      tables: [],
      policies: new Map(),
    });
    const now = Date.UTC(2026, 11, 1, 12, 0, 0);
    await leases.acquire(ref, { runId: 'undo-run-1', now });

    // Act
    const byHolder = await leases.renew(ref, 'undo-run-1', now + 60_000);
    const byOther = await leases.renew(ref, 'run-2', now + 120_000);
    const listed = await stats.listLeased(ref.table);
    await leases.release(ref, 'undo-run-1', {});
    const afterRelease = await leases.renew(ref, 'undo-run-1', now + 180_000);

    // Assess
    expect([byHolder, byOther, afterRelease]).toEqual([true, false, false]);
    expect(listed.map((s) => s.lease)).toEqual([
      { runId: 'undo-run-1', executionName: 'undo-run-1', acquiredAt: now, renewedAt: now + 60_000 },
    ]);
    expect((await stats.get(ref))?.state).toBe('idle');
  });

  it('is left to its holder by the sweep while renewed, and released once the renewals stop for the grace period', async () => {
    // Prepare: an operator's undo took the lease ten minutes ago and renewed it a minute ago
    tables += 1;
    const table = `events${tables}`;
    const ref = { table, partition: 'p' };
    const leases = new DynamoPartitionLease({
      client: ddb.client(),
      tableName,
      tables: [],
      policies: new Map(),
    });
    const taken = Date.UTC(2026, 11, 1, 12, 0, 0);
    await leases.acquire(ref, { runId: 'undo-run-1', now: taken });
    await leases.renew(ref, 'undo-run-1', taken + 9 * 60_000);
    const deps = { stats, policies: new Map([[table, DEFAULT_POLICY]]), starter: noExecutions };

    // Act
    const whileRenewed = await sweepTable(deps, table, taken + 10 * 60_000);
    const heldMeanwhile = await stats.get(ref);
    const afterRenewalsStopped = await sweepTable(deps, table, taken + 9 * 60_000 + LEASE_GRACE_MS + 1);

    // Assess
    expect(whileRenewed.leases).toEqual([]);
    expect(heldMeanwhile).toMatchObject({ state: 'compacting', lease: { runId: 'undo-run-1' } });
    expect(afterRenewalsStopped.leases.map((l) => l.action)).toEqual(['released (NOT_FOUND)']);
    expect((await stats.get(ref))?.state).toBe('idle');
  });
});
