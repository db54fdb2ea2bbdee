// When a run's execution has ended for good, so its lease may be taken over or released: Step Functions
// does not stop the Lambda invocations of an aborted or timed-out execution, so those wait out a grace.
import type { ExecutionInfo } from '../ports/state-machine-starter.js';

/**
 * The longest any compaction Lambda can run (the compact and verify functions' 15-minute timeout): after
 * an execution was stopped (aborted, timed out), its invocations may act on S3 for up to this long.
 */
export const STOPPED_RUN_GRACE_MS = 15 * 60_000;

/**
 * Whether an execution's lease may be taken from it: it ended by itself (SUCCEEDED, FAILED: every task it
 * started has returned), or it was stopped at least {@link STOPPED_RUN_GRACE_MS} ago. Running, redrivable
 * and unknown executions keep their lease.
 */
export function executionEnded(info: ExecutionInfo | undefined, now: number): boolean {
  if (info === undefined) return false;
  if (info.status === 'SUCCEEDED' || info.status === 'FAILED') return true;
  if (info.status === 'ABORTED' || info.status === 'TIMED_OUT') {
    return info.stoppedAt !== undefined && now - info.stoppedAt >= STOPPED_RUN_GRACE_MS;
  }
  return false;
}
