// A test stack for the compaction workflow: the real CompactionWorkflow construct over a state table
// shaped like LakeCompactor's, for one table `events` in bucket `lake` (created by the local cloud).
import { RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import type { Construct } from 'constructs';
import { CompactionWorkflow, type CompactionWorkflowProps } from '../../infra/compaction-workflow.js';
import { createStateTable } from '../../infra/state-table.js';

export const WORKFLOW_BUCKET = 'lake';

/** The table the tests compact: Hive-partitioned by `date`, under `events/`. */
export const WORKFLOW_TABLES = [
  {
    name: 'events',
    bucket: WORKFLOW_BUCKET,
    prefix: 'events/',
    format: 'parquet',
    partitionColumns: ['date'],
  },
];

export class WorkflowStack extends Stack {
  public readonly table: dynamodb.Table;
  public readonly workflow: CompactionWorkflow;

  constructor(
    scope: Construct,
    id: string,
    props: StackProps & { workflow?: Partial<Omit<CompactionWorkflowProps, 'stateTable'>> } = {},
  ) {
    super(scope, id, props);
    this.table = createStateTable(this, 'State', RemovalPolicy.DESTROY);
    this.workflow = new CompactionWorkflow(this, 'Workflow', {
      stateTable: this.table,
      tablesJson: JSON.stringify(WORKFLOW_TABLES),
      tables: [{ bucketName: WORKFLOW_BUCKET, prefix: 'events/' }],
      ...props.workflow,
    });
  }
}
