// `lake-compactor history` against DynamoDB Local with the deployed table's schema: runs recorded by the
// workflow's lease adapter come back newest first, filtered by table and partition, cut at --limit. With --stack, the
// state table is found through the stack's outputs: DescribeStacks is a FAKE answering from this synthesized
// template's Outputs (no local CloudFormation exists; see test/support/fake-cloudformation.ts), its StateTableName
// mapped to the table DynamoDB Local made from the same template.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { run } from '../../functions/cli/index.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import type { RunHistory } from '../../functions/core/workflow/ports.js';
import { policiesOf } from '../../functions/handlers/profiler.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { captureIo } from '../support/cli-io.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';
import { fakeCloudFormation, type TemplateWithOutputs } from '../support/fake-cloudformation.js';

const BUCKET = 'lake';
const T0 = Date.UTC(2026, 10, 1, 8, 0, 0);
const HOUR = 3_600_000;

let dynamo: DynamoDbLocalEndpoint;
let client: DynamoDBClient;
let tableName: string;
let template: TemplateWithOutputs;

function capture() {
  return captureIo({
    now: T0 + 10 * HOUR,
    env: {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    },
  });
}

function history(
  runId: string,
  table: string,
  partition: string,
  startedAt: number,
  failed = false,
): RunHistory {
  return {
    runId,
    table,
    partition,
    outcome: failed ? 'failed' : 'compacted',
    status: failed ? 'FAILED' : 'SUCCEEDED',
    startedAt,
    finishedAt: startedAt + 42_000,
    filesBefore: 20,
    filesAfter: failed ? 20 : 1,
    bytesBefore: 2_000_000,
    bytesAfter: failed ? 2_000_000 : 1_500_000,
    rows: failed ? 0 : 9_000,
    ...(failed ? { firstError: { error: 'VerificationError', cause: 'row count differs' } } : {}),
  };
}

async function runsOf(args: readonly string[]): Promise<{ code: number; runIds: string[] }> {
  const io = capture();
  const code = await run(['history', '--state-table', tableName, '--json', ...args], io);
  const rows = code === 0 ? (JSON.parse(io.stdout.join('\n')) as { runId: string }[]) : [];
  return { code, runIds: rows.map((r) => r.runId) };
}

beforeAll(async () => {
  const starting = startTestDynamoDb();
  const configs = [
    { name: 'events', bucketName: BUCKET, prefix: 'events/', partitionColumns: ['date'] },
    { name: 'clicks', bucketName: BUCKET, prefix: 'clicks/', partitionColumns: ['date'] },
  ];
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'HistoryTest', { compactor: { tables: configs } });
  const synthesized = Template.fromStack(stack).toJSON();
  template = synthesized as TemplateWithOutputs;
  const model = new TemplateModel(synthesized as CfnTemplate);
  dynamo = await starting;
  client = dynamo.client();
  tableName = [...(await createTablesFromTemplate(client, model)).values()][0] as string;
  const tables = parseTableConfigs([
    { name: 'events', bucket: BUCKET, prefix: 'events', partitionColumns: ['date'] },
    { name: 'clicks', bucket: BUCKET, prefix: 'clicks', partitionColumns: ['date'] },
  ]);
  const leases = new DynamoPartitionLease({ client, tableName, tables, policies: policiesOf(tables) });
  // Each run as the workflow records it: lease, history item, release.
  const runs = [
    history('run-1', 'events', 'date=2024-01-01', T0),
    history('run-2', 'events', 'date=2024-01-02', T0 + HOUR),
    history('run-3', 'events', 'date=2024-01-01', T0 + 2 * HOUR, true),
    history('run-4', 'clicks', 'date=2024-01-01', T0 + 3 * HOUR),
  ];
  for (const h of runs) {
    const ref = { table: h.table, partition: h.partition };
    await leases.acquire(ref, { runId: h.runId, now: h.startedAt });
    await leases.putHistory(h);
    await leases.release(ref, h.runId, { lastCompactedAt: h.finishedAt });
  }
}, 180_000);

afterAll(async () => {
  await dynamo?.stop();
});

describe('lake-compactor history', () => {
  it("lists one partition's runs newest first", async () => {
    // Act
    const result = await runsOf(['--table', 'events', '--partition', 'date=2024-01-01']);

    // Assess
    expect(result).toEqual({ code: 0, runIds: ['run-3', 'run-1'] });
  });

  it("merges a table's partitions newest first and leaves other tables out", async () => {
    // Act
    const result = await runsOf(['--table', 'events']);

    // Assess
    expect(result).toEqual({ code: 0, runIds: ['run-3', 'run-2', 'run-1'] });
  });

  it('keeps only the newest --limit runs', async () => {
    // Act
    const result = await runsOf(['--table', 'events', '--limit', '2']);

    // Assess
    expect(result).toEqual({ code: 0, runIds: ['run-3', 'run-2'] });
  });

  it('prints a table with the outcome, file counts and the first error of each run', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(['history', '--state-table', tableName, '--table', 'events'], io);

    // Assess
    expect(code).toBe(0);
    const lines = io.stdout.join('\n').split('\n');
    const run3 = lines.find((l) => l.includes('run-3')) ?? '';
    expect(run3).toMatch(/2026-11-01T10:00:00\.000Z\s+events\s+date=2024-01-01\s+failed\s+FAILED\s+20 → 20/);
    expect(run3).toContain('VerificationError: row count differs');
    expect(lines.find((l) => l.includes('run-2'))).toMatch(/compacted\s+SUCCEEDED\s+20 → 1\s+9000/);
    expect(io.stdout.join('\n')).toContain('3 runs');
  });

  it("--stack finds the state table through the stack's StateTableName output, over LAKE_COMPACTOR_TABLE", async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation('HistoryTest', template, { StateTableName: tableName });
    const base = capture();
    const io = {
      ...base,
      env: { ...base.env, LAKE_COMPACTOR_TABLE: 'not-this-table' },
      aws: { cloudFormation },
    };

    // Act
    const code = await run(['history', '--stack', 'HistoryTest', '--table', 'events', '--json'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(cloudFormation.requests).toEqual(['HistoryTest']);
    const runIds = (JSON.parse(io.stdout.join('\n')) as { runId: string }[]).map((r) => r.runId);
    expect(runIds).toEqual(['run-3', 'run-2', 'run-1']);
  });

  it('exits 2 (a usage error, like a missing required option) and says how to name the state table when none is given', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await run(['history', '--table', 'events'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain(
      'pass --stack <stack-name> (its StateTableName output) or --state-table <name>, or set LAKE_COMPACTOR_TABLE',
    );
  });
});
