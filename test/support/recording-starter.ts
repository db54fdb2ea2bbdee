// The state machine a trigger starts, as the profiler's and the sweep's tests see it: it records each start and
// knows no execution (`describe` answers none, as after a lost start).
import type {
  ExecutionInfo,
  StartResult,
  StateMachineStarter,
} from '../../functions/ports/state-machine-starter.js';

/** Records the name of every execution started, in order; every start is a new one. */
export class RecordingStarter implements StateMachineStarter {
  readonly starts: string[] = [];
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string): Promise<StartResult> {
    this.starts.push(name);
    return { executionArn: this.executionArn(name), alreadyStarted: false };
  }
  async describe(): Promise<ExecutionInfo | undefined> {
    return undefined;
  }
}
