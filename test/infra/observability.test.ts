// Template assertions for the LakeCompactor's observability: every alarm on its metric, each notifying the
// workflow's SNS topic, and a dashboard of AWS metrics plus the handlers' per-table EMF metrics.
import { App, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { METRIC, tableFailureMetrics } from '../../functions/core/metrics.js';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

function synth(extra: Partial<LakeCompactorProps> = {}): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'ObsTest', {
    compactor: {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
        { name: 'clicks', bucketName: 'lake', prefix: 'clicks/', partitionColumns: ['date'] },
      ],
      ...extra,
    },
  });
  return { stack, template: Template.fromStack(stack) };
}

type AlarmResource = { Properties: Record<string, unknown> & { AlarmDescription?: string } };

describe('LakeCompactor observability', () => {
  const { stack, template } = synth();
  const logicalId = (construct: IConstruct) => stack.getLogicalId(construct.node.defaultChild as CfnElement);
  const ref = (construct: IConstruct) => ({ Ref: logicalId(construct) });
  const topic = ref(stack.compactor.workflow.notificationTopic);

  it('alarms when the profiler DLQ holds any message, notifying the workflow topic', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [logicalId(stack.compactor.profilerDeadLetterQueue), 'QueueName'] },
        },
      ],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
    });
  });

  it('alarms on runs finalize recorded as failed, not on ExecutionsFailed, so refused starts (invalid input, lease held) do not alarm', () => {
    // Prepare (the stack above)
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as AlarmResource[];

    // Act
    const onExecutionsFailed = alarms.filter((a) => a.Properties.MetricName === 'ExecutionsFailed');

    // Assess
    expect(onExecutionsFailed).toEqual([]);
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: METRIC.runs,
      Dimensions: [
        { Name: 'Outcome', Value: 'failed' },
        { Name: 'service', Value: 'lake-compactor' },
      ],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('refused starts'),
    });
    expect(logicalId(stack.compactor.observability.executionsFailedAlarm)).toMatch(/ExecutionsFailed/);
  });

  it('alarms when the vacuum function errors, notifying the workflow topic', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Errors',
      Dimensions: [{ Name: 'FunctionName', Value: ref(stack.compactor.maintenance.vacuumFunction) }],
      Statistic: 'Sum',
      Threshold: 1,
      AlarmActions: [topic],
    });
  });

  it('alarms on any stuck lease the sweep released, on the metric the sweep emits (service dimension included)', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: 'StuckLeases',
      Dimensions: [{ Name: 'service', Value: 'lake-compactor' }],
      Statistic: 'Sum',
      Threshold: 1,
      EvaluationPeriods: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('sweep settled what the run left'),
    });
  });

  it('alarms when any partition needs attention, on the gauge the sweep emits, saying how to settle it', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: 'PartitionsNeedingAttention',
      Dimensions: [{ Name: 'service', Value: 'lake-compactor' }],
      Statistic: 'Maximum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('"settle": true'),
    });
  });

  it('alarms when the sweep or tiering errors, notifying the workflow topic', () => {
    // Prepare (the stack above) / Act / Assess
    for (const fn of [stack.compactor.sweepFunction, stack.compactor.maintenance.tieringFunction]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Errors',
        Dimensions: [{ Name: 'FunctionName', Value: ref(fn) }],
        Statistic: 'Sum',
        Threshold: 1,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        AlarmActions: [topic],
      });
    }
  });

  it('alarms when the sweep was not invoked for two of its 15-minute periods, missing data counting as stopped', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/Lambda',
      MetricName: 'Invocations',
      Dimensions: [{ Name: 'FunctionName', Value: ref(stack.compactor.sweepFunction) }],
      Statistic: 'Sum',
      Period: 1800,
      EvaluationPeriods: 1,
      Threshold: 1,
      ComparisonOperator: 'LessThanThreshold',
      TreatMissingData: 'breaching',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('^lake-compactor: the sweep was not invoked for 30 minutes'),
    });
  });

  it('derives the stopped-sweep period from a rate schedule, and expects a daily run of a cron schedule', () => {
    // Prepare
    const periodOf = (schedule: string) => {
      const { stack: s, template: t } = synth({ sweep: { schedule } });
      const alarm = t.toJSON().Resources[
        s.getLogicalId(s.compactor.observability.sweepStoppedAlarm.node.defaultChild as CfnElement)
      ] as AlarmResource;
      return alarm.Properties.Period;
    };

    // Act
    const periods = [periodOf('rate(5 minutes)'), periodOf('rate(1 hour)'), periodOf('cron(0/10 * * * ? *)')];

    // Assess
    expect(periods).toEqual([600, 7200, 86_400]);
  });

  it('alarms when the oldest profiler event is 30 minutes old', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateAgeOfOldestMessage',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [logicalId(stack.compactor.profilerQueue), 'QueueName'] },
        },
      ],
      Statistic: 'Maximum',
      Threshold: 1800,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [topic],
    });
  });

  it('alarms when a compaction execution times out or is aborted', () => {
    // Prepare (the stack above) / Act / Assess
    for (const metric of ['ExecutionsTimedOut', 'ExecutionsAborted']) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/States',
        MetricName: metric,
        Dimensions: [{ Name: 'StateMachineArn', Value: ref(stack.compactor.stateMachine) }],
        Statistic: 'Sum',
        Threshold: 1,
        AlarmActions: [topic],
      });
    }
  });

  it('alarms on throttles of the profiler, of compact, and of every other function in one expression', () => {
    // Prepare
    const others = [
      ...['validate', 'lease', 'plan', 'verify', 'commit', 'rollback', 'finalize'].map(
        (step) => stack.compactor.workflow.functions[step] as IConstruct,
      ),
      stack.compactor.sweepFunction,
      stack.compactor.maintenance.vacuumFunction,
      stack.compactor.maintenance.tieringFunction,
    ];
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: { Metrics?: { Expression?: string; MetricStat?: { Metric: Record<string, unknown> } }[] };
    }[];

    // Act
    const expression = alarms.find((a) => a.Properties.Metrics?.some((m) => m.Expression?.startsWith('SUM')));
    const summed = (expression?.Properties.Metrics ?? [])
      .flatMap((m) => (m.MetricStat === undefined ? [] : [m.MetricStat.Metric]))
      .map((m) => JSON.stringify(m));

    // Assess
    for (const fn of [
      stack.compactor.profilerFunction,
      stack.compactor.workflow.functions.compact as IConstruct,
    ]) {
      template.hasResourceProperties('AWS::CloudWatch::Alarm', {
        Namespace: 'AWS/Lambda',
        MetricName: 'Throttles',
        Dimensions: [{ Name: 'FunctionName', Value: ref(fn) }],
        Statistic: 'Sum',
        Threshold: 1,
        AlarmActions: [topic],
      });
    }
    expect(summed).toHaveLength(10);
    for (const fn of others) {
      expect(summed).toContainEqual(
        JSON.stringify({
          Dimensions: [{ Name: 'FunctionName', Value: ref(fn) }],
          MetricName: 'Throttles',
          Namespace: 'AWS/Lambda',
        }),
      );
    }
  });

  it('alarms when the scheduled targets’ dead-letter queue holds any message', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/SQS',
      MetricName: 'ApproximateNumberOfMessagesVisible',
      Dimensions: [
        {
          Name: 'QueueName',
          Value: { 'Fn::GetAtt': [logicalId(stack.compactor.scheduleDeadLetterQueue), 'QueueName'] },
        },
      ],
      Threshold: 1,
      AlarmActions: [topic],
    });
  });

  it('alarms on the NotificationsFailed metric the state machine counts when a run end was not delivered', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: METRIC.notificationsFailed,
      Dimensions: [{ Name: 'service', Value: 'lake-compactor' }],
      Statistic: 'Sum',
      Threshold: 1,
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('notified: false'),
    });
  });

  it('alarms on any CoordinationRefusals: a table refused because a writer does not coordinate as declared', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: METRIC.coordinationRefusals,
      Dimensions: [{ Name: 'service', Value: 'lake-compactor' }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp('deltaLogStore.*CoordinationMismatchError'),
    });
  });

  it('alarms on any failed table turn, on the TableFailures total the sweep, vacuum, tiering and profiler publish', () => {
    // Prepare: the datum the handlers publish for one failed table (shared/table-failures.ts)
    const published = tableFailureMetrics([{ table: 'events' }]);

    // Act
    const total = published.find((d) => d.dimensionSets.length === 0);

    // Assess: the total is published under the service dimension alone, exactly what the alarm watches
    expect(total).toMatchObject({ name: METRIC.tableFailures, unit: 'Count', value: 1 });
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'LakeCompactor',
      MetricName: METRIC.tableFailures,
      Dimensions: [{ Name: 'service', Value: 'lake-compactor' }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      TreatMissingData: 'notBreaching',
      AlarmActions: [topic],
      AlarmDescription: Match.stringLikeRegexp("a table's turn failed"),
    });
  });

  it('creates exactly these eighteen alarms, all notifying the topic with an operator-facing description, all on the dashboard', () => {
    // Prepare (the stack above)
    const alarms = template.findResources('AWS::CloudWatch::Alarm') as Record<
      string,
      AlarmResource & { Properties: { AlarmActions?: unknown[] } }
    >;
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };

    // Act
    const body = JSON.stringify(dashboard.Properties.DashboardBody);

    // Assess
    expect(Object.keys(alarms)).toHaveLength(18);
    for (const [id, alarm] of Object.entries(alarms)) {
      expect(alarm.Properties.AlarmDescription, id).toMatch(/^lake-compactor: .+\. /);
      expect(alarm.Properties.AlarmActions, id).toEqual([topic]);
      expect(body, id).toContain(id);
    }
  });

  it('builds a dashboard of executions, Lambda errors and durations of compact and profiler, and DLQ depth', () => {
    // Prepare
    template.resourceCountIs('AWS::CloudWatch::Dashboard', 1);
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };
    // Act: the body is an Fn::Join of literal JSON pieces and references; the literals carry the metrics.
    const body = JSON.stringify(dashboard.Properties.DashboardBody);
    // Assess
    for (const fragment of [
      'Compaction executions',
      'ExecutionsStarted',
      'ExecutionsSucceeded',
      'ExecutionsFailed',
      'Compact errors',
      'Profiler errors',
      'Compact p99',
      'Profiler p99',
      'Profiler DLQ depth',
      'ApproximateNumberOfMessagesVisible',
    ]) {
      expect(body, fragment).toContain(fragment);
    }
    expect(body).toContain(logicalId(stack.compactor.profilerDeadLetterQueue));
    expect(body).toContain(logicalId(stack.compactor.observability.executionsFailedAlarm));
  });

  it('graphs every per-table EMF metric once per table, with the Table and service dimensions the handlers emit', () => {
    // Prepare
    const dashboard = Object.values(template.findResources('AWS::CloudWatch::Dashboard'))[0] as {
      Properties: { DashboardBody: unknown };
    };
    // Act: metric arrays render as [namespace, name, dimension name, value, ...] with dimensions sorted.
    const body = JSON.stringify(dashboard.Properties.DashboardBody).replaceAll('\\"', '"');
    // Assess
    const perTable = [
      METRIC.smallFileRatio,
      METRIC.totalFiles,
      METRIC.smallFiles,
      METRIC.partitions,
      METRIC.partitionsOverTrigger,
      METRIC.filesBefore,
      METRIC.filesAfter,
      METRIC.bytesRewritten,
      METRIC.rowsRewritten,
      METRIC.throughput,
      METRIC.rewriteDuration,
      METRIC.estimatedCost,
      METRIC.stuckLeases,
      METRIC.tableFailures,
    ];
    for (const name of perTable) {
      for (const table of ['events', 'clicks']) {
        expect(body, `${name} ${table}`).toContain(
          `["LakeCompactor","${name}","Table","${table}","service","lake-compactor"`,
        );
      }
    }
    for (const table of ['events', 'clicks']) {
      expect(body).toContain(
        `["LakeCompactor","${METRIC.duration}","Outcome","compacted","Table","${table}","service","lake-compactor"`,
      );
      expect(body).toContain(
        `["LakeCompactor","${METRIC.runs}","Outcome","failed","Table","${table}","service","lake-compactor"`,
      );
    }
    for (const outcome of ['compacted', 'dry-run', 'nothing-to-do', 'gave-up', 'failed']) {
      expect(body).toContain(
        `["LakeCompactor","${METRIC.runs}","Outcome","${outcome}","service","lake-compactor"`,
      );
    }
    for (const outcome of ['started', 'waiting', 'blocked', 'leased']) {
      expect(body).toContain(
        `["LakeCompactor","${METRIC.decisions}","Outcome","${outcome}","service","lake-compactor"`,
      );
    }
    expect(body).toContain(`["LakeCompactor","${METRIC.estimatedCost}","service","lake-compactor"`);
    for (const title of [
      'Fragmentation per table',
      'Compactions',
      'Throughput',
      'Cost',
      'Failures',
      'DLQ depth',
    ]) {
      expect(body, title).toContain(title);
    }
    expect(body).toContain(logicalId(stack.compactor.observability.stuckLeasesAlarm));
  });
});

describe('who hears the alarms (`alarms`)', () => {
  const TOPIC = 'arn:aws:sns:eu-west-1:111122223333:oncall';

  it('subscribes the e-mail addresses and HTTPS endpoints given to the topic every alarm notifies', () => {
    // Prepare / Act
    const { template } = synth({
      alarms: { emails: ['oncall@example.com'], httpsEndpoints: ['https://hooks.example.com/lake'] },
    });
    // Assess
    const [topicId] = Object.keys(template.findResources('AWS::SNS::Topic'));
    const subscriptions = Object.values(template.findResources('AWS::SNS::Subscription')).map(
      (s) => (s as { Properties: Record<string, unknown> }).Properties,
    );
    expect(subscriptions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          Protocol: 'email',
          Endpoint: 'oncall@example.com',
          TopicArn: { Ref: topicId },
        }),
        expect.objectContaining({
          Protocol: 'https',
          Endpoint: 'https://hooks.example.com/lake',
          TopicArn: { Ref: topicId },
        }),
      ]),
    );
    expect(subscriptions).toHaveLength(2);
  });

  it('sends to an existing topic by ARN: no topic is created, every alarm and the output name it', () => {
    // Prepare / Act
    const { template } = synth({ alarms: { topicArn: TOPIC, emails: ['oncall@example.com'] } });
    // Assess
    expect(Object.keys(template.findResources('AWS::SNS::Topic'))).toEqual([]);
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as AlarmResource[];
    expect(alarms.length).toBeGreaterThan(0);
    for (const alarm of alarms) expect(alarm.Properties.AlarmActions).toEqual([TOPIC]);
    template.hasOutput('AlarmTopicArn', { Value: TOPIC });
    template.hasResourceProperties('AWS::SNS::Subscription', { TopicArn: TOPIC, Protocol: 'email' });
  });

  it('refuses at synth an address that is not one, a plain-http endpoint, a bad ARN and two topics, naming each', () => {
    // Prepare
    const bad = () =>
      synth({
        alarms: { emails: ['oncall'], httpsEndpoints: ['http://hooks.example.com/lake'], topicArn: 'oncall' },
      });
    const twoTopics = () =>
      synth({
        alarms: { topicArn: TOPIC },
        workflow: { notificationTopic: { topicArn: TOPIC } as never },
      });
    // Act / Assess
    expect(bad).toThrow(/alarms\.emails\.0: "oncall" is not an e-mail address/);
    expect(bad).toThrow(
      /alarms\.httpsEndpoints\.0: "http:\/\/hooks\.example\.com\/lake" is not an https:\/\/ URL/,
    );
    expect(bad).toThrow(/alarms\.topicArn: "oncall" is not an SNS topic ARN/);
    expect(twoTopics).toThrow(/alarms\.topicArn and workflow\.notificationTopic both name the topic/);
  });
});
