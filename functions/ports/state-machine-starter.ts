// The StateMachineStarter port: starts the compaction workflow under a deterministic execution name, so a
// repeated start of the same schedule is harmless, and tells whether an execution is still running.

export type ExecutionStatus =
  | 'RUNNING'
  | 'SUCCEEDED'
  | 'FAILED'
  | 'TIMED_OUT'
  | 'ABORTED'
  | 'PENDING_REDRIVE';

export interface StartResult {
  readonly executionArn: string;
  /** True when an execution with this name and the same input existed already (a retried start). */
  readonly alreadyStarted: boolean;
}

export interface ExecutionInfo {
  readonly status: ExecutionStatus;
  /** When it ended, epoch ms (undefined while running). */
  readonly stoppedAt?: number;
}

export interface StateMachineStarter {
  /** The ARN the execution named `name` has (or will have). */
  executionArn(name: string): string;
  /**
   * Starts an execution. An existing execution with the same name and input is success
   * (`alreadyStarted`); the same name with another input fails with PreconditionFailedError.
   */
  start(name: string, input: unknown): Promise<StartResult>;
  /** The execution's status, or undefined when no such execution exists. */
  describe(executionArn: string): Promise<ExecutionInfo | undefined>;
}
