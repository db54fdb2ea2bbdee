// Toy task Lambda for the local-cloud test: doubles numbers, fails on request with a named error,
// records schedule runs, and starts executions through the real Step Functions SDK client.
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import { DescribeExecutionCommand, SFNClient, StartExecutionCommand } from '@aws-sdk/client-sfn';

const tableName = process.env.TABLE_NAME ?? '';
const role = process.env.TOY_ROLE ?? '';
if (tableName === '' || role === '')
  throw new Error('worker: TABLE_NAME and TOY_ROLE must be set at cold start');
const dynamodb = new DynamoDBClient({});
const sfn = new SFNClient({});

/** A failure the toy state machine catches by name. */
export class ToyFailure extends Error {
  override readonly name = 'ToyFailure';
}

type WorkerEvent = {
  value?: number;
  fail?: boolean;
  task?: string;
  'detail-type'?: string;
  startExecution?: { stateMachineArn: string; input: unknown; name?: string };
};

/** Dispatches on the event's shape; see the module comment. */
export async function handler(event: WorkerEvent): Promise<unknown> {
  if (event.task === 'sweep') {
    await dynamodb.send(
      new PutItemCommand({
        TableName: tableName,
        Item: { pk: { S: 'schedule#sweep' }, sk: { S: 'run' }, role: { S: role } },
      }),
    );
    return { swept: true };
  }
  if (event['detail-type'] === 'Scheduled Event') return { doubled: 0, scheduled: true };
  if (event.startExecution !== undefined) return startAndWait(event.startExecution);
  if (event.fail === true) throw new ToyFailure(`asked to fail with value ${event.value}`);
  if (typeof event.value !== 'number') throw new TypeError('worker: event.value must be a number');
  return { doubled: event.value * 2 };
}

async function startAndWait(request: {
  stateMachineArn: string;
  input: unknown;
  name?: string;
}): Promise<unknown> {
  const { executionArn } = await sfn.send(
    new StartExecutionCommand({
      stateMachineArn: request.stateMachineArn,
      input: JSON.stringify(request.input),
      name: request.name,
    }),
  );
  for (;;) {
    const described = await sfn.send(new DescribeExecutionCommand({ executionArn }));
    if (described.status !== 'RUNNING') {
      return {
        executionArn,
        status: described.status,
        output: described.output ? JSON.parse(described.output) : null,
      };
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
