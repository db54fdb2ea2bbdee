// The StatsStore contract over DynamoDB Local, on the state table the construct synthesizes (its keys-only
// gsi1 included): the reference the in-memory store is held to (test/unit/adapters/memory-stats-store.test.ts).
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll } from 'vitest';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { LakeCompactorStack } from '../../infra/app.js';
import {
  createTablesFromTemplate,
  type RunningDynamoDbLocal,
  startDynamoDbLocal,
} from '../../infra/local/dynamodb-local.js';
import { TemplateModel } from '../../infra/local/template.js';
import { statsStoreContract } from '../support/stats-store-contract.js';

let ddb: RunningDynamoDbLocal;
let stats: DynamoStatsStore;
let tables = 0;

beforeAll(async () => {
  const starting = startDynamoDbLocal({ startTimeoutMs: 120_000 }); // the shared machine is slow under load
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'StatsStoreContract', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const model = new TemplateModel(Template.fromStack(stack).toJSON());
  ddb = await starting;
  const created = await createTablesFromTemplate(ddb.client(), model);
  const tableName = [...created.values()][0];
  if (!tableName) throw new Error('the template defines no DynamoDB table');
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
