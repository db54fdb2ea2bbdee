// The keys of the deployed stack's outputs, shared by the stack that defines them (infra/app.ts) and the CLI that
// reads them (`--stack`, cli/stack-outputs.ts). One constant, so a renamed output cannot leave the CLI asking for
// a key the stack no longer has; a module of its own, so the CLI reads it without loading aws-cdk-lib.

/** Each output an operator needs after `cdk deploy`, by what it names → its CloudFormation output key. */
export const STACK_OUTPUT_KEYS = {
  /** The DynamoDB state table (`--state-table`). */
  stateTable: 'StateTableName',
  /** The compaction workflow's state machine. */
  stateMachine: 'StateMachineArn',
  /** The sweep Lambda (`reconcile` invokes it). */
  sweepFunction: 'SweepFunctionName',
  /** The vacuum Lambda. */
  vacuumFunction: 'VacuumFunctionName',
  /** The tiering Lambda. */
  tieringFunction: 'TieringFunctionName',
  /** The SNS topic every alarm notifies. */
  alarmTopic: 'AlarmTopicArn',
  /** The CloudWatch dashboard's console URL. */
  dashboard: 'DashboardUrl',
  /** The bucket the construct creates for tables without `bucketName` (only then an output). */
  dataBucket: 'DataBucketName',
} as const;

/** A stack output key the stack defines. */
export type StackOutputKey = (typeof STACK_OUTPUT_KEYS)[keyof typeof STACK_OUTPUT_KEYS];
