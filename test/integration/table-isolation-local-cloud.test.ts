// The synthesized stack with `tableIsolation: "session-policy"` on the local cloud: a real compaction run, the sweep,
// reconcile and a vacuum all succeed with every table's store confined to its table and the work root (the local
// cloud has no STS, so each isolated function runs on the harness's credentials with the in-process scope check:
// any key a step sent outside its run's table would fail it with OutsideTableScopeError).
import { App } from 'aws-cdk-lib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { functionsFromTemplate } from '../../infra/local/functions.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';
import { listPartition, writePartition } from '../support/workflow-harness.js';

describe('tableIsolation: "session-policy" on the local cloud', () => {
  let stack: LakeCompactorStack;
  let cloud: LocalCloud;

  beforeAll(async () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new LakeCompactorStack(app, 'IsolatedLocal', {
      compactor: {
        tableIsolation: 'session-policy',
        tables: [
          { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
          { name: 'orders', bucketName: 'lake', prefix: 'sales/orders/', partitionColumns: ['date'] },
        ],
      },
    });
    cloud = await LocalCloud.start({
      stack,
      sharedDynamoDb: await sharedDynamoDb(),
      sqs: { batchingWindowMs: 100, redeliveryDelayMs: 5 },
    });
  });

  afterAll(async () => {
    await cloud?.stop();
  });

  it('runs the isolated functions with the scope check on, on the harness credentials', () => {
    // Prepare / Act
    const functions = [...functionsFromTemplate(cloud.model, new Map(), cloud.env).values()];
    const isolated = functions.filter((f) => f.env.DATA_ACCESS_ROLE_ARN !== undefined);
    // Assess
    expect(isolated.map((f) => f.logicalId.replace(/[A-F0-9]{8}$/, '')).sort()).toEqual(
      [
        'CompactorMaintenanceTiering',
        'CompactorMaintenanceVacuum',
        'CompactorSweep',
        'CompactorWorkflowCommit',
        'CompactorWorkflowCompact',
        'CompactorWorkflowFinalize',
        'CompactorWorkflowPlan',
        'CompactorWorkflowRollback',
        'CompactorWorkflowVerify',
      ].sort(),
    );
    expect(isolated.every((f) => f.env.DATA_ACCESS_CREDENTIALS === 'caller')).toBe(true);
  });

  it('compacts a partition, sweeps, reconciles and vacuums with every store confined to its table', async () => {
    // Prepare: small files in one table, one file in the other (which must stay as it is)
    const store = new S3ObjectStore({ client: cloud.s3, bucket: 'lake' });
    await writePartition(store, '2024-03-01', 6);
    await store.put('sales/orders/date=2024-03-01/part-0.parquet', 'not touched');
    await cloud.drain();
    const before = await listPartition(store, '2024-03-01');

    // Act
    const execution = await cloud.runExecution(stack.compactor.stateMachine, {
      table: 'events',
      partition: 'date=2024-03-01',
      strategy: 'binpack',
      quietMinutes: 0,
    });
    await cloud.fire(stack.compactor.node.findChild('SweepSchedule') as never);
    await cloud.fire(stack.compactor.node.findChild('ReconcileSchedule') as never);
    const vacuum = await cloud.invoke(stack.compactor.maintenance.vacuumFunction, { dryRun: false });
    await cloud.drain();

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const after = await listPartition(store, '2024-03-01');
    expect(before.length).toBe(6);
    expect(after.length).toBeLessThan(before.length);
    const refused = cloud.invocations.filter((i) =>
      /OutsideTableScope|outside .*all this invocation may touch/.test(
        `${(i.error as Error | undefined)?.name} ${(i.error as Error | undefined)?.message} ${JSON.stringify(i.result ?? null)}`,
      ),
    );
    expect(refused).toEqual([]);
    expect(JSON.stringify(vacuum)).not.toMatch(/OutsideTableScope|all this invocation may touch/);
    expect(await store.head('sales/orders/date=2024-03-01/part-0.parquet')).toMatchObject({ size: 11 });
  });
});
