// What a compaction run ended with, as plain data: the outcome the state machine's path names and the summary
// finalize returns (the execution's output), shared by finalize, its metrics and the tools without a cycle.
import type { CostEstimate } from './cost.js';
import type { RewriteSummary } from './rewrite-plan.js';

/** The path a run ended on; `Runs` and `DurationMs` are published per outcome (see metrics.ts). */
export type RunOutcome = 'compacted' | 'dry-run' | 'nothing-to-do' | 'gave-up' | 'failed' | 'settled';

/** The run's summary: the execution's output, the completion event's detail, the SNS message. */
export interface RunSummary {
  readonly runId: string;
  readonly table: string;
  readonly partition: string;
  readonly outcome: RunOutcome;
  readonly status: 'SUCCEEDED' | 'FAILED';
  readonly trigger: string;
  readonly dryRun: boolean;
  readonly groups: number;
  readonly groupsDone: number;
  /** Groups left alone because an input changed concurrently (clean, not a failure). */
  readonly groupsAborted: number;
  readonly failedGroups: number;
  /** The first failed group's error (name = the Fail state's Error). */
  readonly firstError?: { readonly error: string; readonly cause: string; readonly groupId?: string };
  readonly filesBefore: number;
  readonly bytesBefore: number;
  /** Listed after the commit: includes files writers added meanwhile. */
  readonly filesAfter: number;
  readonly bytesAfter: number;
  readonly filesRetired: number;
  readonly filesPublished: number;
  readonly rows: number;
  readonly bytesRewritten: number;
  readonly durationMs: number;
  /** Longest window in which a listing reader could see a group's inputs and outputs together. */
  readonly visibilityWindowMs: number;
  /** Plan to the last group's `done` (see `rewriteWindowMs`); absent when no group finished. */
  readonly rewriteWindowMs?: number;
  readonly estimatedCost?: CostEstimate;
  readonly planKey?: string;
  readonly reason?: string;
  /** Groups finalize could not settle (they stay fenced in the journal until a settle run). */
  readonly unsettled?: readonly string[];
  /** Groups of earlier runs this run settled (rolled back or forward) because they had died midway. */
  readonly settledGroups?: number;
  /** Set when the partition was left needs-attention instead of idle: why. */
  readonly needsAttention?: string;
  /**
   * Files of the partition in quarantine when the run ended (left out of plans until they change or an
   * operator clears them), including any this run's groups quarantined; absent without a quarantine.
   */
  readonly quarantined?: number;
  /**
   * A partition rewrite (a run with a `transform`): the written schema, and in a dry run where the first rows of the
   * first input as rewritten were written (`preview.uri`) — what an operator checks before starting the real run. It
   * holds no table rows, so the summary may go wherever it goes (output, logs, events, notifications, history).
   */
  readonly rewrite?: RewriteSummary;
}
