// The Observability construct: alarms on the failures an operator must act on, including those that fail
// silently (a sweep that stopped, throttles, lost scheduled events), all notifying one SNS topic; a dashboard.
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import { DEFAULT_TABLE_FORMAT, TABLE_FORMATS } from '../functions/core/formats/index.js';
import {
  DECISION_OUTCOMES,
  DIMENSION,
  METRIC,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
  RUN_OUTCOMES,
} from '../functions/core/metrics.js';
import { formatCoordinationRefusals } from './formats/index.js';

export interface ObservabilityProps {
  /** Where alarms go: the workflow's run-notification topic, so operators subscribe once. */
  readonly topic: sns.ITopic;
  /** The compaction state machine (executions started/succeeded/failed). */
  readonly stateMachine: sfn.IStateMachine;
  /** The profiler's event queue (depth and age show a backlog building). */
  readonly profilerQueue: sqs.IQueue;
  /** The profiler's dead-letter queue: any message there is a lost statistics update until redriven. */
  readonly profilerDeadLetterQueue: sqs.IQueue;
  readonly profilerFunction: lambda.IFunction;
  readonly compactFunction: lambda.IFunction;
  readonly vacuumFunction: lambda.IFunction;
  readonly tieringFunction: lambda.IFunction;
  /** The sweep: its errors, and whether it still runs at all. */
  readonly sweepFunction: lambda.IFunction;
  /**
   * How long without a sweep invocation means the sweep stopped (missing data counts as stopped): two of its
   * schedule's periods (see `stoppedAfter`).
   */
  readonly sweepStoppedAfter: Duration;
  /** The workflow's functions by step (their throttles are alarmed with the sweep's, vacuum's and tiering's). */
  readonly workflowFunctions: Readonly<Record<string, lambda.IFunction>>;
  /** Scheduled events EventBridge could not deliver (see `LakeCompactor.scheduleDeadLetterQueue`). */
  readonly scheduleDeadLetterQueue: sqs.IQueue;
  /**
   * Names of the compacted tables: the `Table` dimension of the per-table metrics the handlers publish.
   * A CloudWatch graph needs every dimension value spelled out, so each table gets its own line.
   */
  readonly tables: readonly string[];
  /**
   * Period of the alarms' and the dashboard's metrics.
   * @default 5 minutes
   */
  readonly period?: Duration;
}

/** The sweep publishes the fragmentation gauges every 15 minutes: one point per period, no gaps. */
const GAUGE_PERIOD = Duration.minutes(15);

/**
 * Age of the oldest profiler event that alarms. A message the profiler keeps failing is redelivered every
 * 6 minutes and leaves the age metric after its third receive (SQS then reports the next oldest), so only a
 * backlog the profiler does not keep up with — throttled, erroring on every batch, or out of concurrency —
 * stays older than this.
 */
const PROFILER_BACKLOG_AGE = Duration.minutes(30);

/**
 * Alarms and a dashboard. AWS-published metrics (SQS, Lambda, Step Functions) show executions, errors and
 * queue depth; the handlers' EMF metrics (namespace `LakeCompactor`, names and dimensions from
 * functions/core/metrics.ts, the same constants the handlers emit with) show fragmentation, compactions,
 * throughput and cost per table, and the stuck leases the sweep found.
 */
export class Observability extends Construct {
  /** Profiler DLQ holds at least one message: statistics of some partitions are stale until redriven. */
  public readonly deadLetterQueueAlarm: cloudwatch.Alarm;
  /** At least one compaction execution failed (the run's own notification carries the cause). */
  public readonly executionsFailedAlarm: cloudwatch.Alarm;
  /** The sweep found a lease whose execution had ended (or never started) and released or restarted it. */
  public readonly stuckLeasesAlarm: cloudwatch.Alarm;
  /** A partition is needs-attention: a run could not settle a group (e.g. S3 kept denying a request). */
  public readonly needsAttentionAlarm: cloudwatch.Alarm;
  /** The vacuum function failed: retired versions and trash keep costing storage until it succeeds. */
  public readonly vacuumErrorsAlarm: cloudwatch.Alarm;
  /** The sweep failed: due partitions are not started and stuck leases not released until it succeeds. */
  public readonly sweepErrorsAlarm: cloudwatch.Alarm;
  /** The sweep was not invoked for `sweepStoppedAfter` (its schedule disabled or deleted, events lost). */
  public readonly sweepStoppedAlarm: cloudwatch.Alarm;
  /** The tiering function failed: cold partitions stay in their storage class until it succeeds. */
  public readonly tieringErrorsAlarm: cloudwatch.Alarm;
  /** The profiler's oldest event is older than 30 minutes: statistics (and triggers) lag behind the lake. */
  public readonly profilerBacklogAlarm: cloudwatch.Alarm;
  /** A compaction execution hit the state machine's timeout. */
  public readonly executionsTimedOutAlarm: cloudwatch.Alarm;
  /** A compaction execution was stopped (by a person or a redeploy). */
  public readonly executionsAbortedAlarm: cloudwatch.Alarm;
  /** The profiler was throttled. */
  public readonly profilerThrottlesAlarm: cloudwatch.Alarm;
  /** The compact function was throttled. */
  public readonly compactThrottlesAlarm: cloudwatch.Alarm;
  /** Any other function of the deployment was throttled. */
  public readonly functionThrottlesAlarm: cloudwatch.Alarm;
  /** A scheduled event (sweep, reconcile, vacuum, tiering) could not be delivered to its function. */
  public readonly scheduleDeadLetterQueueAlarm: cloudwatch.Alarm;
  /** A run's end could not be announced on EventBridge or notified on SNS (the run itself is recorded). */
  public readonly notificationsFailedAlarm: cloudwatch.Alarm;
  /** A table refused because its log shows a writer that does not coordinate its commits as declared. */
  public readonly coordinationRefusalsAlarm: cloudwatch.Alarm;
  /**
   * A table's turn failed in the sweep, reconcile, vacuum, tiering or profiler (its metadata unreadable, its time
   * budget spent, the process dying in it): the others were served, this one was not.
   */
  public readonly tableFailuresAlarm: cloudwatch.Alarm;
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);
    const sum = { period, statistic: cloudwatch.Stats.SUM };
    const alarmAction = new actions.SnsAction(props.topic);
    // Most alarms count an event that should not happen at all: one occurrence is enough, and no data
    // (no traffic) is healthy.
    const alarmOnAny = (
      alarmId: string,
      metric: cloudwatch.IMetric,
      description: string,
      options: Partial<cloudwatch.AlarmProps> = {},
    ) => {
      const alarm = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
        ...options,
      });
      alarm.addAlarmAction(alarmAction);
      return alarm;
    };
    /** A handler metric: Powertools adds the `service` dimension to every metric, so it is named too. */
    const custom = (
      name: string,
      dimensions: Readonly<Record<string, string>>,
      options: { statistic: string; period?: Duration; label?: string },
    ) =>
      new cloudwatch.Metric({
        namespace: METRICS_NAMESPACE,
        metricName: name,
        dimensionsMap: { [DIMENSION.service]: METRICS_SERVICE, ...dimensions },
        statistic: options.statistic,
        period: options.period ?? period,
        ...(options.label === undefined ? {} : { label: options.label }),
      });
    /** One line per table. */
    const perTable = (
      name: string,
      options: { statistic: string; period?: Duration; suffix?: string },
      extra: Readonly<Record<string, string>> = {},
    ) =>
      props.tables.map((table) =>
        custom(
          name,
          { [DIMENSION.table]: table, ...extra },
          { ...options, label: options.suffix ? `${table} ${options.suffix}` : table },
        ),
      );
    const gauge = { statistic: cloudwatch.Stats.MAXIMUM, period: GAUGE_PERIOD };

    // Alarm metrics carry no label: a labelled metric is synthesized as metric math, not a plain alarm.
    const dlqDepth = props.profilerDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period,
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    this.deadLetterQueueAlarm = alarmOnAny(
      'ProfilerDlqNotEmpty',
      dlqDepth,
      'lake-compactor: S3 events the profiler failed 5 times are in its DLQ. Read the profiler logs for the cause, fix it, then redrive the DLQ to the profiler queue.',
    );
    const failed = props.stateMachine.metricFailed(sum);
    // Not the state machine's ExecutionsFailed: an execution refused because its input was invalid or the
    // partition's lease was held (a newer schedule, an operator's double start) ends Failed in the console,
    // so whoever started it sees it was not done, but nothing is broken. Finalize counts every run that
    // failed after taking its lease (Runs, Outcome=failed); runs that die before finalize leave a lease the
    // sweep reports (StuckLeases), and timeouts and aborts have their own alarms.
    const runsFailed = custom(METRIC.runs, { [DIMENSION.outcome]: 'failed' }, sum);
    this.executionsFailedAlarm = alarmOnAny(
      'ExecutionsFailed',
      runsFailed,
      'lake-compactor: a compaction run failed (finalize recorded it as failed; refused starts — invalid input, lease held — are not counted, nor the sweep’s settle retries of a needs-attention partition, which its own alarm reports). Open the execution in the Step Functions console (`lake-compactor history` lists the run and its first error); its groups were rolled back before publishing or forward after it, and the lease released (or, when a group could not be settled, the partition marked needs-attention: see that alarm). Any run can be restarted once the cause is fixed.',
    );
    this.stuckLeasesAlarm = alarmOnAny(
      'StuckLeases',
      custom(METRIC.stuckLeases, {}, sum),
      'lake-compactor: the sweep found partition leases whose compaction execution had ended without releasing them (or had never started): a run died before its finalize step (timeout, abort, finalize error). The sweep settled what the run left (groups rolled back before publishing, forward after) and released or restarted the lease; a group it could not settle marks the partition needs-attention (its own alarm). The sweep log line "released a lease whose execution is no longer running" names the partition and the execution status; open that execution in the Step Functions console for the cause.',
    );
    this.needsAttentionAlarm = alarmOnAny(
      'PartitionsNeedAttention',
      custom(METRIC.partitionsNeedingAttention, {}, { period, statistic: cloudwatch.Stats.MAXIMUM }),
      'lake-compactor: a partition is needs-attention: a compaction run could not settle one of its groups (a request kept failing, e.g. S3 AccessDenied or a KMS denial), or found a cause only a person can fix (e.g. the location is ' +
        otherFormatTables() +
        '). Until settled, listing readers may see some rows twice, and no trigger starts a compaction on it. The sweep retries the settle of a partition with an open group (a settle run, every 1, 2, then 4 sweep periods) and ends it once the cause is gone; SettleRetries counts those runs. `lake-compactor status --state-table <table>` lists such partitions with the reason and the next retry; fix the cause, and to act sooner start an execution with {"table": "<table>", "partition": "<partition>", "settle": true} (events/workflow-settle.json).',
    );
    this.vacuumErrorsAlarm = alarmOnAny(
      'VacuumErrors',
      props.vacuumFunction.metricErrors(sum),
      'lake-compactor: the vacuum function failed. Read its logs; the next scheduled run resumes from its checkpoint once the cause is fixed.',
    );
    this.sweepErrorsAlarm = alarmOnAny(
      'SweepErrors',
      props.sweepFunction.metricErrors(sum),
      'lake-compactor: the sweep function failed. Until it succeeds, partitions whose quiet window passed are not started (unless new events arrive) and leases of dead runs are not released. Read its logs (a failing reconcile names its table); fix the cause, then test-invoke it with {"mode": "sweep"}.',
    );
    this.sweepStoppedAlarm = alarmOnAny(
      'SweepStopped',
      props.sweepFunction.metricInvocations({
        period: props.sweepStoppedAfter,
        statistic: cloudwatch.Stats.SUM,
      }),
      `lake-compactor: the sweep was not invoked for ${props.sweepStoppedAfter.toHumanString()}: its EventBridge schedule is disabled or gone, or its events cannot be delivered (see the schedule dead-letter queue alarm). No partition waiting for its quiet window is started and no stuck lease released. Check the rule *SweepSchedule* is enabled and targets the sweep function; redeploy to restore it.`,
      {
        threshold: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.LESS_THAN_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.BREACHING,
      },
    );
    this.tieringErrorsAlarm = alarmOnAny(
      'TieringErrors',
      props.tieringFunction.metricErrors(sum),
      'lake-compactor: the tiering function failed. Cold partitions stay in their storage class until it succeeds. Read its logs; the next scheduled run resumes from its checkpoint once the cause is fixed.',
    );
    const queueAge = props.profilerQueue.metricApproximateAgeOfOldestMessage({
      period,
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    this.profilerBacklogAlarm = alarmOnAny(
      'ProfilerBacklog',
      queueAge,
      `lake-compactor: the profiler's oldest S3 event is more than ${PROFILER_BACKLOG_AGE.toMinutes()} minutes old: partition statistics, and so triggers, lag behind the lake. Check the profiler's errors and throttles (its reserved concurrency, profilerReservedConcurrency, caps its pollers) and its duration; events are kept 4 days, so nothing is lost yet.`,
      { threshold: PROFILER_BACKLOG_AGE.toSeconds() },
    );
    this.executionsTimedOutAlarm = alarmOnAny(
      'ExecutionsTimedOut',
      props.stateMachine.metricTimedOut(sum),
      'lake-compactor: a compaction execution hit the state machine timeout (workflow.executionTimeoutHours) and was stopped where it was. Its lease stays until the sweep settles what it left (rolled back before publishing, forward after) and releases it (the stuck-lease alarm follows). Open the execution to see the step it was in (a quiet wait on a partition written without pause, a very large plan); raise the timeout only if such runs are expected.',
    );
    this.executionsAbortedAlarm = alarmOnAny(
      'ExecutionsAborted',
      props.stateMachine.metricAborted(sum),
      'lake-compactor: a compaction execution was stopped (StopExecution from the console or CLI, or a redeploy that replaced a running execution). Its lease stays until the sweep settles what it left and releases it (the stuck-lease alarm follows). If nobody meant to stop it, find who did in CloudTrail (StopExecution); the partition is compacted again once due.',
    );
    this.profilerThrottlesAlarm = alarmOnAny(
      'ProfilerThrottles',
      props.profilerFunction.metricThrottles(sum),
      "lake-compactor: the profiler was throttled. Its SQS event source polls within its reserved concurrency, so this means the reservation was lowered outside the stack or the account ran out of concurrency; throttled messages count towards the dead-letter queue. Check the function's reserved concurrency and the account's ConcurrentExecutions.",
    );
    this.compactThrottlesAlarm = alarmOnAny(
      'CompactThrottles',
      props.compactFunction.metricThrottles(sum),
      'lake-compactor: the compact function was throttled: the account ran out of Lambda concurrency. Steps retry throttling with backoff, so runs slow down before they fail. Lower triggers.maxConcurrentRuns or workflow.distributedMaxConcurrency, or raise the account limit.',
    );
    const others = [
      ...Object.entries(props.workflowFunctions)
        .filter(([step]) => step !== 'compact')
        .map(([, fn]) => fn),
      props.sweepFunction,
      props.vacuumFunction,
      props.tieringFunction,
    ];
    this.functionThrottlesAlarm = alarmOnAny(
      'FunctionThrottles',
      new cloudwatch.MathExpression({
        expression: `SUM([${others.map((_, i) => `m${i}`).join(', ')}])`,
        usingMetrics: Object.fromEntries(others.map((fn, i) => [`m${i}`, fn.metricThrottles(sum)])),
        period,
      }),
      'lake-compactor: a function other than the profiler and compact (a workflow step, the sweep, vacuum or tiering) was throttled: the account ran out of Lambda concurrency. Workflow steps retry with backoff; scheduled functions are retried by Lambda for up to 6 hours. Lower triggers.maxConcurrentRuns, or raise the account limit.',
    );
    const scheduleDlqDepth = props.scheduleDeadLetterQueue.metricApproximateNumberOfMessagesVisible({
      period,
      statistic: cloudwatch.Stats.MAXIMUM,
    });
    this.scheduleDeadLetterQueueAlarm = alarmOnAny(
      'ScheduleDlqNotEmpty',
      scheduleDlqDepth,
      'lake-compactor: EventBridge could not deliver a scheduled event (sweep, reconcile, vacuum or tiering) to its function within an hour. The message attributes name the rule and the error (e.g. the function or its permission is missing). Fix the cause, invoke the function with the message body if that run matters, then purge the message.',
    );
    this.notificationsFailedAlarm = alarmOnAny(
      'NotificationsFailed',
      custom(METRIC.notificationsFailed, {}, sum),
      'lake-compactor: the end of a compaction run could not be put on EventBridge or published to SNS. The run itself is recorded and its execution ended with its real outcome; its output says notified: false with announceError or notifyError. Check the topic and bus (policy, KMS key, deleted topic); consumers of the completion events missed this run (`lake-compactor history` lists it).',
    );
    this.coordinationRefusalsAlarm = alarmOnAny(
      'CoordinationRefusals',
      custom(METRIC.coordinationRefusals, {}, sum),
      `lake-compactor: a table was refused (plan, commit or vacuum) because its log shows a writer that does not coordinate its commits the way the table's config declares: ${formatCoordinationRefusals().join('; ')}. Nothing was committed or deleted; the table is refused until fixed. The error (CoordinationMismatchError) in the plan step's, commit step's or vacuum's log names what was seen and what to declare (docs/table-formats.md, Commit coordination).`,
    );
    // The total (no Table dimension) the handlers publish beside each table's count: one alarm for any table,
    // including one added after deployment; the per-table series on the dashboard says which.
    this.tableFailuresAlarm = alarmOnAny(
      'TableFailures',
      custom(METRIC.tableFailures, {}, sum),
      "lake-compactor: a table could not be served by the sweep, reconcile, vacuum, tiering or the profiler (its metadata failed to read, its turn outlasted its time budget, or the process died in it); the other tables were served all the same, and this one goes last in line until it succeeds. The function's ERROR line \"a table's turn failed\" names the table, the error and how many turns in a row failed (the dashboard graphs TableFailures per table). Fix the cause (often a table written by a writer that does not follow its format, or denied access); the next scheduled run serves it again, and the profiler's messages of that table are retried and then kept in its DLQ.",
    );

    const row = (title: string) =>
      new cloudwatch.TextWidget({ markdown: `### ${title}`, width: 24, height: 1 });
    const graph = (
      title: string,
      left: cloudwatch.IMetric[],
      extra: Partial<cloudwatch.GraphWidgetProps> = {},
    ) => new cloudwatch.GraphWidget({ title, left, width: 8, ...extra });

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(1),
      widgets: [
        [
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: [
              this.deadLetterQueueAlarm,
              this.executionsFailedAlarm,
              this.stuckLeasesAlarm,
              this.needsAttentionAlarm,
              this.vacuumErrorsAlarm,
              this.sweepErrorsAlarm,
              this.sweepStoppedAlarm,
              this.tieringErrorsAlarm,
              this.profilerBacklogAlarm,
              this.executionsTimedOutAlarm,
              this.executionsAbortedAlarm,
              this.profilerThrottlesAlarm,
              this.compactThrottlesAlarm,
              this.functionThrottlesAlarm,
              this.scheduleDeadLetterQueueAlarm,
              this.notificationsFailedAlarm,
              this.coordinationRefusalsAlarm,
              this.tableFailuresAlarm,
            ],
            width: 24,
            height: 5,
          }),
        ],
        [row('Fragmentation per table (sweep, every 15 minutes)')],
        [
          graph('Small-file ratio per table (%)', perTable(METRIC.smallFileRatio, gauge), {
            leftYAxis: { min: 0, max: 100 },
          }),
          graph('Files per table (all / small)', [
            ...perTable(METRIC.totalFiles, { ...gauge, suffix: 'files' }),
            ...perTable(METRIC.smallFiles, { ...gauge, suffix: 'small files' }),
          ]),
          graph('Partitions over the trigger per table', [
            ...perTable(METRIC.partitionsOverTrigger, { ...gauge, suffix: 'over trigger' }),
            ...perTable(METRIC.partitions, { ...gauge, suffix: 'partitions' }),
          ]),
        ],
        [row('Compactions')],
        [
          graph(
            'Runs by outcome',
            RUN_OUTCOMES.map((outcome) =>
              custom(METRIC.runs, { [DIMENSION.outcome]: outcome }, { ...sum, label: outcome }),
            ),
          ),
          graph('Files before / after compaction per table', [
            ...perTable(METRIC.filesBefore, { ...sum, suffix: 'before' }),
            ...perTable(METRIC.filesAfter, { ...sum, suffix: 'after' }),
          ]),
          graph('Compaction executions', [
            props.stateMachine.metricStarted({ ...sum, label: 'Started' }),
            props.stateMachine.metricSucceeded({ ...sum, label: 'Succeeded' }),
            failed.with({ label: 'Failed' }),
          ]),
        ],
        [row('Throughput')],
        [
          graph(
            'Rewrite throughput per table (MiB/s, plan to last commit)',
            perTable(METRIC.throughput, { period, statistic: cloudwatch.Stats.AVERAGE }),
          ),
          graph(
            'Bytes / rows rewritten per table',
            perTable(METRIC.bytesRewritten, { ...sum, suffix: 'bytes' }),
            {
              right: perTable(METRIC.rowsRewritten, { ...sum, suffix: 'rows' }),
            },
          ),
          graph('Compacted-run duration per table (ms, average)', [
            ...perTable(
              METRIC.duration,
              { period, statistic: cloudwatch.Stats.AVERAGE, suffix: 'run' },
              { [DIMENSION.outcome]: 'compacted' },
            ),
            ...perTable(METRIC.rewriteDuration, {
              period,
              statistic: cloudwatch.Stats.AVERAGE,
              suffix: 'rewrite',
            }),
          ]),
        ],
        [row('Cost (estimated from list prices at planning; an order of magnitude, not a bill)')],
        [
          graph('Estimated cost per table (USD)', perTable(METRIC.estimatedCost, sum), { width: 16 }),
          new cloudwatch.SingleValueWidget({
            title: 'Estimated cost over the time range (USD)',
            metrics: [custom(METRIC.estimatedCost, {}, { ...sum, label: 'All tables' })],
            setPeriodToTimeRange: true,
            width: 8,
          }),
        ],
        [row('Failures')],
        [
          graph('Failed runs, stuck leases, settle retries and failed table turns per table', [
            ...perTable(METRIC.runs, { ...sum, suffix: 'failed runs' }, { [DIMENSION.outcome]: 'failed' }),
            ...perTable(METRIC.stuckLeases, { ...sum, suffix: 'stuck leases' }),
            ...perTable(METRIC.partitionsNeedingAttention, { ...gauge, suffix: 'needing attention' }),
            ...perTable(METRIC.settleRetries, { ...sum, suffix: 'settle retries' }),
            ...perTable(METRIC.tableFailures, { ...sum, suffix: 'failed turns' }),
          ]),
          graph('Lambda errors', [
            props.compactFunction.metricErrors({ ...sum, label: 'Compact errors' }),
            props.profilerFunction.metricErrors({ ...sum, label: 'Profiler errors' }),
            props.sweepFunction.metricErrors({ ...sum, label: 'Sweep errors' }),
            props.vacuumFunction.metricErrors({ ...sum, label: 'Vacuum errors' }),
          ]),
          graph('Lambda duration (p50 / p99)', [
            props.compactFunction.metricDuration({
              period,
              statistic: cloudwatch.Stats.p(50),
              label: 'Compact p50',
            }),
            props.compactFunction.metricDuration({
              period,
              statistic: cloudwatch.Stats.p(99),
              label: 'Compact p99',
            }),
            props.profilerFunction.metricDuration({
              period,
              statistic: cloudwatch.Stats.p(50),
              label: 'Profiler p50',
            }),
            props.profilerFunction.metricDuration({
              period,
              statistic: cloudwatch.Stats.p(99),
              label: 'Profiler p99',
            }),
          ]),
        ],
        [row('Queues and trigger decisions')],
        [
          graph(
            'Profiler queue and DLQ depth',
            [
              props.profilerQueue.metricApproximateNumberOfMessagesVisible({
                period,
                statistic: cloudwatch.Stats.MAXIMUM,
                label: 'Profiler queue depth',
              }),
              dlqDepth.with({ label: 'Profiler DLQ depth' }),
            ],
            { width: 12 },
          ),
          graph(
            'Trigger decisions by outcome (profiler and sweep)',
            DECISION_OUTCOMES.map((outcome) =>
              custom(METRIC.decisions, { [DIMENSION.outcome]: outcome }, { ...sum, label: outcome }),
            ),
            { width: 12 },
          ),
        ],
        [row('Guardrails (concurrency caps, throttles, backlogs)')],
        [
          graph('Compactions running (counted against the caps; sweep)', [
            custom(METRIC.concurrentRuns, {}, { ...gauge, label: 'Deployment' }),
            ...perTable(METRIC.concurrentRuns, gauge),
          ]),
          graph('Lambda throttles', [
            props.profilerFunction.metricThrottles({ ...sum, label: 'Profiler' }),
            props.compactFunction.metricThrottles({ ...sum, label: 'Compact' }),
            ...others.map((fn) => fn.metricThrottles({ ...sum, label: fn.node.id })),
          ]),
          graph(
            'Profiler backlog age (s) and undelivered scheduled events',
            [queueAge.with({ label: 'Oldest profiler event (s)' })],
            {
              right: [scheduleDlqDepth.with({ label: 'Schedule DLQ depth' })],
            },
          ),
        ],
      ],
    });
  }
}

/**
 * The tables a partition's location may turn out to be instead of the plain Parquet files its config declares: every
 * registered format but the default, by title ("a A, B or C table").
 */
function otherFormatTables(): string {
  const titles = [...TABLE_FORMATS.values()]
    .filter((f) => f.name !== DEFAULT_TABLE_FORMAT)
    .map((f) => f.title);
  const last = titles.pop();
  return last === undefined
    ? 'a table of another format'
    : `a ${titles.length === 0 ? last : `${titles.join(', ')} or ${last}`} table`;
}
