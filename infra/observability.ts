// The Observability construct: alarms on the failures an operator must act on (profiler DLQ not empty,
// compaction executions failed, vacuum errors), all notifying one SNS topic, and a CloudWatch dashboard.
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as actions from 'aws-cdk-lib/aws-cloudwatch-actions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as sns from 'aws-cdk-lib/aws-sns';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import { Construct } from 'constructs';

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
  /**
   * Period of the alarms' and the dashboard's metrics.
   * @default 5 minutes
   */
  readonly period?: Duration;
}

/**
 * Alarms and a dashboard built only from metrics AWS publishes anyway (SQS, Lambda, Step Functions):
 * fragmentation, throughput and cost per table need the handlers' EMF metrics and come with them.
 */
export class Observability extends Construct {
  /** Profiler DLQ holds at least one message: statistics of some partitions are stale until redriven. */
  public readonly deadLetterQueueAlarm: cloudwatch.Alarm;
  /** At least one compaction execution failed (the run's own notification carries the cause). */
  public readonly executionsFailedAlarm: cloudwatch.Alarm;
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
      'lake-compactor: a compaction execution failed. Open it in the Step Functions console; staging was rolled back and the lease released, so it can be restarted once the cause is fixed.',
    );
    this.vacuumErrorsAlarm = alarmOnAny(
      'VacuumErrors',
      props.vacuumFunction.metricErrors(sum),
      'lake-compactor: the vacuum function failed. Read its logs; the next scheduled run resumes from its checkpoint once the cause is fixed.',
    );

    this.dashboard = new cloudwatch.Dashboard(this, 'Dashboard', {
      defaultInterval: Duration.days(1),
      widgets: [
        [
          new cloudwatch.AlarmStatusWidget({
            title: 'Alarms',
            alarms: [this.deadLetterQueueAlarm, this.executionsFailedAlarm, this.vacuumErrorsAlarm],
            width: 24,
            height: 3,
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Compaction executions',
            left: [
              props.stateMachine.metricStarted({ ...sum, label: 'Started' }),
              props.stateMachine.metricSucceeded({ ...sum, label: 'Succeeded' }),
              failed.with({ label: 'Failed' }),
            ],
            width: 12,
          }),
          new cloudwatch.GraphWidget({
            title: 'Profiler queue and DLQ depth',
            left: [
              props.profilerQueue.metricApproximateNumberOfMessagesVisible({
                period,
                statistic: cloudwatch.Stats.MAXIMUM,
                label: 'Profiler queue depth',
              }),
              dlqDepth.with({ label: 'Profiler DLQ depth' }),
            ],
            width: 12,
          }),
        ],
        [
          new cloudwatch.GraphWidget({
            title: 'Lambda errors',
            left: [
              props.compactFunction.metricErrors({ ...sum, label: 'Compact errors' }),
              props.profilerFunction.metricErrors({ ...sum, label: 'Profiler errors' }),
            ],
            width: 12,
          }),
          new cloudwatch.GraphWidget({
            title: 'Lambda duration (p50 / p99)',
            left: [
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
            ],
            width: 12,
          }),
        ],
      ],
    });
  }
}
