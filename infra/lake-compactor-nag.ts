// The cdk-nag (AwsSolutions) findings LakeCompactor's design needs, each acknowledged with its reason: any
// other finding, and any wildcard that no grant below explains, still fails the check.
import { Aspects, Stack, Token, Validations } from 'aws-cdk-lib';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { Construct } from 'constructs';
import { formatWildcardGrants } from './formats/index.js';
import { AcknowledgeWildcards, type WildcardGrant } from './nag-acknowledgements.js';
import { normalizeTablePrefix, type TableLocation } from './s3-access.js';

/**
 * The cdk-nag (AwsSolutions) findings this design needs, each with its reason. Wildcards are acknowledged
 * per policy and finding by `AcknowledgeWildcards`, so a new, unexplained wildcard still fails the check.
 */
export function acknowledgeNagFindings(scope: Construct, locations: readonly TableLocation[]): void {
  Aspects.of(scope).add(new AcknowledgeWildcards(wildcardGrants(rootBuckets(scope, locations))));
  // The stack-wide singleton CDK adds for bucket notifications on imported buckets.
  const notificationsHandler = Stack.of(scope).node.tryFindChild(
    'BucketNotificationsHandler050a0587b7544547bf325f094a3db834',
  );
  if (notificationsHandler !== undefined) {
    Validations.of(notificationsHandler).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
      reason:
        "CDK's bucket-notifications custom resource handler: its managed policy only writes its own logs, and it runs at deploy time only.",
    });
  }
}

/**
 * Buckets holding a table at their root, as cdk-nag prints them in a resource: a literal name, or
 * `<LogicalId>` for the owned bucket (its name is a `Ref`).
 */
function rootBuckets(scope: Construct, locations: readonly TableLocation[]): string[] {
  const names = locations.filter((l) => normalizeTablePrefix(l.prefix) === '').map((l) => l.bucketName);
  return [...new Set(names)].map((name) =>
    Token.isUnresolved(name) ? flattenCfnReference(Stack.of(scope).resolve(name)) : name,
  );
}

/**
 * The wildcards the design needs (see `AcknowledgeWildcards`): anything else is a cdk-nag error. Whole-bucket
 * object access (`<bucket>/*`) is acknowledged only for `rootBuckets`, the buckets holding a table at their
 * root; everywhere else S3 grants name a table prefix or a folder of the work root (`workRoot`).
 */
export function wildcardGrants(rootBuckets: readonly string[]): WildcardGrant[] {
  const grants: WildcardGrant[] = [
    {
      actions: /^(xray|logs):[A-Za-z]+$/,
      resource: /^\*$/,
      reason:
        'X-Ray trace submission and CloudWatch Logs vended-log delivery (state machine logging) do not support resource-level permissions.',
    },
    {
      actions: /^cloudwatch:PutMetricData$/,
      resource: /^\*$/,
      reason:
        'The state machine counts failed run notifications (NotificationsFailed); PutMetricData has no resource-level permissions, so the grant is conditioned on the LakeCompactor namespace instead.',
    },
    {
      actions: /^dynamodb:[A-Za-z]+$/,
      resource: /^<[A-Za-z0-9]+\.Arn>\/index\/\*$/,
      reason:
        "The state table's own indexes (gsi1), granted with the table by grantReadData/grantReadWriteData.",
    },
    {
      actions: /^states:[A-Za-z]+$/,
      resource: /^arn:<AWS::Partition>:states:<AWS::Region>:<AWS::AccountId>:execution:.+:\*$/,
      reason:
        'Executions of the compaction state machine only: execution ARNs carry a per-run name (and the Distributed Map a per-run child), so they are matched by the machine name plus a wildcard.',
    },
    {
      actions: /^lambda:InvokeFunction$/,
      resource: /^<[A-Za-z0-9]+\.Arn>:\*$/,
      reason: "The state machine invokes the versions and aliases of the workflow's own functions only.",
    },
    // What the table formats' own statements need (e.g. a catalog's resources named by conditions).
    ...formatWildcardGrants(),
    {
      actions: /^s3:[A-Za-z]+$/,
      // A literal bucket name, or `<LogicalId>` for the owned bucket; at least one key segment before `/*`.
      resource: /^arn:aws:s3:::(?:[a-z0-9.-]+|<[A-Za-z0-9]+>)\/[^*]+\/\*$/,
      reason:
        "Object keys under a configured table prefix, or the deployment's work root (`workRoot`, default `_lake-compactor/`) or one of its folders (plans, staging, trash, journal, maintenance): prefix-scoped S3 access is inherently a key wildcard.",
    },
  ];
  if (rootBuckets.length > 0) {
    const names = rootBuckets.map((b) => b.replace(/[.*+?^${}()|[\]\\<>]/g, '\\$&')).join('|');
    grants.push({
      actions: /^s3:[A-Za-z]+$/,
      resource: new RegExp(`^arn:aws:s3:::(?:${names})\\/\\*$`),
      reason:
        'Whole-bucket object keys of a bucket holding a table at its root (prefix ""): every key of the bucket belongs to that table or to the work root (`workRoot`).',
    });
  }
  return grants;
}
