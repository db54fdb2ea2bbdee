// The Observability construct: alarms on the failures an operator must act on (profiler DLQ not empty,
// compaction executions failed, stuck leases, vacuum errors), all notifying one SNS topic, and a dashboard.
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';
import {
  DECISION_OUTCOMES,
  DIMENSION,
  METRIC,
  METRICS_NAMESPACE,
  METRICS_SERVICE,
  RUN_OUTCOMES,
} from '../functions/core/metrics.js';

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
  /** The sweep (its errors are graphed with the other functions'). */
  readonly sweepFunction: lambda.IFunction;
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
  public readonly dashboard: cloudwatch.Dashboard;

  constructor(scope: Construct, id: string, props: ObservabilityProps) {
    super(scope, id);
    const period = props.period ?? Duration.minutes(5);
    const sum = { period, statistic: cloudwatch.Stats.SUM };
    const alarmAction = new actions.SnsAction(props.topic);
    // Every alarm counts an event that should not happen at all: one occurrence is enough, and no data
    // (no traffic) is healthy.
    const alarmOnAny = (alarmId: string, metric: cloudwatch.IMetric, description: string) => {
      const alarm = new cloudwatch.Alarm(this, alarmId, {
        metric,
        threshold: 1,
        evaluationPeriods: 1,
        comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
        treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
        alarmDescription: description,
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
    this.executionsFailedAlarm = alarmOnAny(
      'ExecutionsFailed',
      failed,
      'lake-compactor: a compaction execution failed. Open it in the Step Functions console; its groups were rolled back before publishing or forward after it, and the lease released (or, when a group could not be settled, the partition marked needs-attention: see that alarm). Any run can be restarted once the cause is fixed.',
    );
    this.stuckLeasesAlarm = alarmOnAny(
      'StuckLeases',
      custom(METRIC.stuckLeases, {}, sum),
      'lake-compactor: the sweep found partition leases whose compaction execution had ended without releasing them (or had never started): a run died before its finalize step (timeout, abort, finalize error). The sweep settled what the run left (groups rolled back before publishing, forward after) and released or restarted the lease; a group it could not settle marks the partition needs-attention (its own alarm). The sweep log line "released a lease whose execution is no longer running" names the partition and the execution status; open that execution in the Step Functions console for the cause.',
    );
    this.needsAttentionAlarm = alarmOnAny(
      'PartitionsNeedAttention',
      custom(METRIC.partitionsNeedingAttention, {}, { period, statistic: cloudwatch.Stats.MAXIMUM }),
      'lake-compactor: a partition is needs-attention: a compaction run could not settle one of its groups (a request kept failing, e.g. S3 AccessDenied or a KMS denial), or found a cause only a person can fix (e.g. the location is a Delta or Iceberg table). Until settled, listing readers may see some rows twice, and no trigger starts a run on it. `lake-compactor status --state-table <table>` lists such partitions with the reason; fix the cause, then start an execution with {"table": "<table>", "partition": "<partition>", "settle": true} (events/workflow-settle.json).',
    );
    this.vacuumErrorsAlarm = alarmOnAny(
      'VacuumErrors',
      props.vacuumFunction.metricErrors(sum),
      'lake-compactor: the vacuum function failed. Read its logs; the next scheduled run resumes from its checkpoint once the cause is fixed.',
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
            ],
            width: 24,
            height: 3,
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
          graph('Failed runs and stuck leases per table', [
            ...perTable(METRIC.runs, { ...sum, suffix: 'failed runs' }, { [DIMENSION.outcome]: 'failed' }),
            ...perTable(METRIC.stuckLeases, { ...sum, suffix: 'stuck leases' }),
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
      ],
    });
  }
}
