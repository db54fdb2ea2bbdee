// The CloudFormation outputs an operator needs after `cdk deploy`: the resources' names are generated, and the CLI
// (`--stack`), the console and the README's steps need them. The keys are the CLI's own constant
// (functions/core/stack-output-keys.ts), so a renamed output cannot leave `--stack` asking for a key that is gone.
import { CfnOutput, Stack } from 'aws-cdk-lib';
import type * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import type { Construct } from 'constructs';
import { STACK_OUTPUT_KEYS, type StackOutputKey } from '../functions/core/stack-output-keys.js';

/** What the outputs name, as the LakeCompactor construct holds it (structural: this module does not import it). */
export interface OutputSources extends Construct {
  readonly table: dynamodb.ITable;
  readonly stateMachine: sfn.IStateMachine;
  readonly sweepFunction: lambda.IFunction;
  readonly maintenance: {
    readonly vacuumFunction: lambda.IFunction;
    readonly tieringFunction: lambda.IFunction;
  };
  readonly observability: { readonly dashboard: cloudwatch.Dashboard };
  readonly workflow: { readonly notificationTopic: sns.ITopic };
  readonly dataBucket?: s3.IBucket;
}

/**
 * Defines the deployment's outputs in `scope` (its stack by default), each under its shared key.
 *
 * Output ids are unique per stack, and `--stack` reads them by those exact keys: one LakeCompactor per stack can
 * define them; a second one in the same stack fails synth with CDK's duplicate-id error (use its resources'
 * attributes in your own outputs instead).
 * @returns the outputs by key, so an app can reference or export them.
 */
export function addStackOutputs(
  compactor: OutputSources,
  scope: Construct = Stack.of(compactor),
): Partial<Record<StackOutputKey, CfnOutput>> {
  const region = Stack.of(compactor).region;
  const outputs: Record<
    Exclude<StackOutputKey, typeof STACK_OUTPUT_KEYS.dataBucket>,
    { value: string; description: string }
  > = {
    [STACK_OUTPUT_KEYS.stateTable]: {
      value: compactor.table.tableName,
      description:
        'DynamoDB state table: pass it to the CLI as --state-table (status, history, settle, vacuum)',
    },
    [STACK_OUTPUT_KEYS.stateMachine]: {
      value: compactor.stateMachine.stateMachineArn,
      description:
        'Compaction workflow: start a run from the Step Functions console with an events/workflow-*.json input',
    },
    [STACK_OUTPUT_KEYS.sweepFunction]: {
      value: compactor.sweepFunction.functionName,
      description:
        'Sweep Lambda: invoke with {"mode":"reconcile","table":"<name>"} to load existing partitions',
    },
    [STACK_OUTPUT_KEYS.vacuumFunction]: {
      value: compactor.maintenance.vacuumFunction.functionName,
      description: 'Vacuum Lambda: invoke with an events/vacuum-*.json input to run it now',
    },
    [STACK_OUTPUT_KEYS.tieringFunction]: {
      value: compactor.maintenance.tieringFunction.functionName,
      description: 'Tiering Lambda: invoke with an events/tiering-*.json input to run it now',
    },
    [STACK_OUTPUT_KEYS.dashboard]: {
      value: `https://${region}.console.aws.amazon.com/cloudwatch/home?region=${region}#dashboards/dashboard/${compactor.observability.dashboard.dashboardName}`,
      description:
        'CloudWatch dashboard: fragmentation per table, compactions, throughput, cost and failures',
    },
    [STACK_OUTPUT_KEYS.alarmTopic]: {
      value: compactor.workflow.notificationTopic.topicArn,
      description:
        'SNS topic every alarm and run notification goes to: subscribe an email, chat or pager endpoint',
    },
  };
  const made: Partial<Record<StackOutputKey, CfnOutput>> = {};
  for (const [id, output] of Object.entries(outputs)) {
    made[id as StackOutputKey] = new CfnOutput(scope, id, output);
  }
  if (compactor.dataBucket !== undefined) {
    // Writers need the generated name: the tables without `bucketName` live there.
    made[STACK_OUTPUT_KEYS.dataBucket] = new CfnOutput(scope, STACK_OUTPUT_KEYS.dataBucket, {
      value: compactor.dataBucket.bucketName,
      description: 'Bucket created for the tables without bucketName; write their Parquet files here',
    });
  }
  return made;
}
