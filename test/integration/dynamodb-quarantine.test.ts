// The DynamoDB quarantine against DynamoDB Local, on the table the synthesized template defines: it holds
// to the port's contract, keeps its items beside the partition without TTL, and stays out of the profiler's view.
import { GetItemCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoQuarantine } from '../../functions/adapters/dynamodb-quarantine.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { quarantineContract, quarantined } from '../support/quarantine-contract.js';

let ddb: DynamoDbLocalEndpoint;
let tableName: string;
let tables = 0;

beforeAll(async () => {
  ddb = await startTestDynamoDb();
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'QuarantineTest', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const created = await createTablesFromTemplate(
    ddb.client(),
    new TemplateModel(Template.fromStack(stack).toJSON()),
  );
  const name = [...created.values()][0];
  if (!name) throw new Error('the template defines no DynamoDB table');
  tableName = name;
});

afterAll(async () => {
  await ddb?.stop();
});

// One shared state table: each test gets table names of its own.
quarantineContract('DynamoDB Local', async () => {
  tables += 1;
  return {
    quarantine: new DynamoQuarantine({ client: ddb.client(), tableName }),
    table: `events${tables}`,
  };
});

describe('DynamoQuarantine', () => {
  it('keeps an item beside its partition (PART#<table>#<partition> / QUARANTINE#<key>) with no TTL', async () => {
    // Prepare
    const q = new DynamoQuarantine({ client: ddb.client(), tableName });
    const record = quarantined('date=2024-01-01', 'events/date=2024-01-01/part-1.parquet', {
      table: 'items',
    });

    // Act
    await q.record(record);

    // Assess
    const item = await ddb.client().send(
      new GetItemCommand({
        TableName: tableName,
        Key: {
          pk: { S: 'PART#items#date=2024-01-01' },
          sk: { S: 'QUARANTINE#events/date=2024-01-01/part-1.parquet' },
        },
        ConsistentRead: true,
      }),
    );
    expect(item.Item).toBeDefined();
    const stored = unmarshall(item.Item ?? {});
    expect(stored).toMatchObject({ ...record, type: 'quarantine' });
    expect(stored.expiresAt).toBeUndefined();
  });

  it('is invisible to the profiler’s partition listing, which reads the same index', async () => {
    // Prepare
    const q = new DynamoQuarantine({ client: ddb.client(), tableName });
    await q.record(
      quarantined('date=2024-01-01', 'events/date=2024-01-01/part-1.parquet', { table: 'prof' }),
    );
    const stats = new DynamoStatsStore({ client: ddb.client(), tableName });

    // Act
    const partitions = await stats.listPartitions('prof');

    // Assess
    expect(partitions).toEqual([]);
    expect((await q.listTable('prof')).map((r) => r.key)).toEqual(['events/date=2024-01-01/part-1.parquet']);
  });
});
