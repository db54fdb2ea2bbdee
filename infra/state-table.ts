// The DynamoDB single table every function shares (see README, "State table"): one definition, used
// by the LakeCompactor construct and by the test stacks, so tests never run against a drifted schema.
import { RemovalPolicy } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';

/** Creates the state table: `pk`/`sk`, on-demand, PITR, TTL on `expiresAt`, keys-only GSI `gsi1`. */
export function createStateTable(
  scope: Construct,
  id: string,
  removalPolicy: RemovalPolicy = RemovalPolicy.RETAIN,
): dynamodb.Table {
  const table = new dynamodb.Table(scope, id, {
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
    timeToLiveAttribute: 'expiresAt',
    removalPolicy,
  });
  // Lists partitions by state and priority (status CLI, sweep) without scanning. Keys only: the
  // profiler updates a partition's counters on every batch, and with projected counters each of those
  // writes would also be a write to the table's single index key; readers fetch the items themselves.
  table.addGlobalSecondaryIndex({
    indexName: 'gsi1',
    partitionKey: { name: 'gsi1pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'gsi1sk', type: dynamodb.AttributeType.STRING },
    projectionType: dynamodb.ProjectionType.KEYS_ONLY,
  });
  return table;
}
