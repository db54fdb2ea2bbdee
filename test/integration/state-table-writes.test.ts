// Every item write the functions make to the state table during a real run — profiler, validate, lease, plan,
// compact, verify, commit, finalize, the sweep and reconcile — is allowed by that function's own IAM statements in
// the synthesized template, LeadingKeys conditions included. DynamoDB Local authorises nothing, so the writes are
// recorded on the SDK clients and checked against the template here, as IAM would check them.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { LocalCloud } from '../../infra/local/local-cloud.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';
import { type RecordedWrite, recordStateTableWrites } from '../support/state-table-writes.js';
import { writePartition } from '../support/workflow-harness.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** IAM's StringLike: `*` any run of characters, `?` one, everything else literal. */
function likeMatches(pattern: string, value: string): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(value);
}

/** Whether the statements of `functionId`'s role allow `write` on the state table (`tableId`). */
function allowedBy(template: Template, functionId: string, tableId: string, write: RecordedWrite): boolean {
  const fn = template.toJSON().Resources[functionId] as { Properties: { Role: { 'Fn::GetAtt': [string] } } };
  const roleId = fn.Properties.Role['Fn::GetAtt'][0];
  const policies = Object.values(template.findResources('AWS::IAM::Policy')) as {
    Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] };
  }[];
  return policies
    .filter((p) => p.Properties.Roles.some((r) => r.Ref === roleId))
    .flatMap((p) => p.Properties.PolicyDocument.Statement)
    .some((s) => {
      if (s.Effect !== 'Allow' || !list(s.Action).includes(write.action)) return false;
      const onTable = list(s.Resource).some(
        (r) => JSON.stringify(r) === JSON.stringify({ 'Fn::GetAtt': [tableId, 'Arn'] }),
      );
      if (!onTable) return false;
      if (s.Condition === undefined) return true;
      const like = (s.Condition as Record<string, Record<string, string | string[]>>)[
        'ForAllValues:StringLike'
      ];
      const patterns = like?.['dynamodb:LeadingKeys'];
      return (
        Object.keys(s.Condition as object).length === 1 &&
        patterns !== undefined &&
        list(patterns).some((p) => likeMatches(p, write.pk))
      );
    });
}

describe('state table writes of a real run against the template', () => {
  let stack: LakeCompactorStack;
  let template: Template;
  let cloud: LocalCloud;
  let recording: ReturnType<typeof recordStateTableWrites>;

  beforeAll(async () => {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stack = new LakeCompactorStack(app, 'StateWrites', {
      compactor: {
        tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
      },
    });
    cloud = await LocalCloud.start({
      stack,
      sharedDynamoDb: await sharedDynamoDb(),
      sqs: { batchingWindowMs: 100, redeliveryDelayMs: 5 },
    });
    // The template the cloud runs: Template.fromStack would synthesize the stack a second time.
    template = Template.fromJSON(cloud.template);
    recording = recordStateTableWrites();
  });

  afterAll(async () => {
    recording?.stop();
    await cloud?.stop();
  });

  it('is allowed for every function, and every function that writes was seen writing', async () => {
    // Prepare: small files the profiler counts
    const store = new S3ObjectStore({ client: cloud.s3, bucket: 'lake' });
    await writePartition(store, '2024-03-01', 6);
    await cloud.drain();

    // Act: an operator run of the partition, then the sweep and reconcile schedules
    const execution = await cloud.runExecution(stack.compactor.stateMachine, {
      table: 'events',
      partition: 'date=2024-03-01',
      strategy: 'binpack',
      quietMinutes: 0,
    });
    await cloud.fire(stack.compactor.node.findChild('SweepSchedule') as never);
    await cloud.fire(stack.compactor.node.findChild('ReconcileSchedule') as never);
    await cloud.drain();

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const tableName = cloud.tableName(stack.compactor.table);
    const tableId = Object.keys(template.findResources('AWS::DynamoDB::Table'))[0] ?? '';
    const writes = recording.writes.filter(
      (w) => w.tableName === tableName && w.functionLogicalId !== undefined,
    );
    const denied = writes
      .filter((w) => !allowedBy(template, w.functionLogicalId as string, tableId, w))
      .map((w) => `${w.functionLogicalId}: ${w.action} ${w.pk}`);
    expect(denied).toEqual([]);
    const writers = new Set(
      writes.map(
        (w) => /^Compactor(?:Workflow|Maintenance)?([A-Z][a-z]+)/.exec(w.functionLogicalId ?? '')?.[1],
      ),
    );
    for (const fn of ['Profiler', 'Lease', 'Plan', 'Compact', 'Verify', 'Commit', 'Finalize', 'Sweep']) {
      expect(writers, fn).toContain(fn);
    }
    // The checker refuses what the conditions refuse: the profiler writing a journal entry.
    const profilerId = writes.find((w) =>
      w.functionLogicalId?.startsWith('CompactorProfiler'),
    )?.functionLogicalId;
    expect(
      allowedBy(template, profilerId as string, tableId, {
        functionLogicalId: profilerId,
        action: 'dynamodb:PutItem',
        tableName,
        pk: 'RUN#forged-run',
      }),
    ).toBe(false);
  });
});
