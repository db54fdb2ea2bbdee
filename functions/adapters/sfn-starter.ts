// The StateMachineStarter port on AWS Step Functions: deterministic execution names make a repeated start
// a no-op (same name and input = the same execution), and a missing execution reads as undefined.
import { isDeepStrictEqual } from 'node:util';
import {
  DescribeExecutionCommand,
  ExecutionAlreadyExists,
  ExecutionDoesNotExist,
  type SFNClient,
  StartExecutionCommand,
} from '@aws-sdk/client-sfn';
import { InvalidInputError, PreconditionFailedError } from '../core/errors.js';
import type {
  ExecutionInfo,
  ExecutionStatus,
  StartResult,
  StateMachineStarter,
} from '../ports/state-machine-starter.js';

const STATE_MACHINE_ARN = /^arn:([^:]+):states:([^:]*):([^:]*):stateMachine:([^:]+)$/;
const STATUSES: readonly ExecutionStatus[] = [
  'RUNNING',
  'SUCCEEDED',
  'FAILED',
  'TIMED_OUT',
  'ABORTED',
  'PENDING_REDRIVE',
];

export class SfnStarter implements StateMachineStarter {
  private readonly executionPrefix: string;

  constructor(
    private readonly client: SFNClient,
    private readonly stateMachineArn: string,
  ) {
    const match = STATE_MACHINE_ARN.exec(stateMachineArn);
    if (match === null) {
      throw new InvalidInputError(
        `"${stateMachineArn}" is not a state machine ARN (arn:aws:states:<region>:<account>:stateMachine:<name>); fix STATE_MACHINE_ARN`,
      );
    }
    const [, partition, region, account, name] = match;
    this.executionPrefix = `arn:${partition}:states:${region}:${account}:execution:${name}:`;
  }

  executionArn(name: string): string {
    return `${this.executionPrefix}${name}`;
  }

  async start(name: string, input: unknown): Promise<StartResult> {
    try {
      const result = await this.client.send(
        new StartExecutionCommand({
          stateMachineArn: this.stateMachineArn,
          name,
          input: JSON.stringify(input),
        }),
      );
      return { executionArn: result.executionArn ?? this.executionArn(name), alreadyStarted: false };
    } catch (err) {
      if (!(err instanceof ExecutionAlreadyExists)) throw err;
      // Names are per schedule (generation), so an existing execution is this schedule's own start.
      const arn = this.executionArn(name);
      const existing = await this.client.send(new DescribeExecutionCommand({ executionArn: arn }));
      const existingInput: unknown = existing.input === undefined ? undefined : JSON.parse(existing.input);
      if (!isDeepStrictEqual(existingInput, JSON.parse(JSON.stringify(input)))) {
        throw new PreconditionFailedError(
          arn,
          `Execution ${name} exists with a different input; a partition's generation was reused — check the state table's generation for this partition`,
        );
      }
      return { executionArn: arn, alreadyStarted: true };
    }
  }

  async describe(executionArn: string): Promise<ExecutionInfo | undefined> {
    try {
      const result = await this.client.send(new DescribeExecutionCommand({ executionArn }));
      const status = STATUSES.find((s) => s === result.status) ?? 'RUNNING';
      return { status, ...(result.stopDate === undefined ? {} : { stoppedAt: result.stopDate.getTime() }) };
    } catch (err) {
      if (err instanceof ExecutionDoesNotExist) return undefined;
      throw err;
    }
  }
}
