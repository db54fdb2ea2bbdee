// Template assertions for the LakeCompactor's observability: the four alarms on their metrics, each
// notifying the workflow's SNS topic, and a dashboard of AWS metrics plus the handlers' per-table EMF metrics.
import { App, type CfnElement } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { METRIC } from '../../functions/core/metrics.js';
import { LakeCompactorStack } from '../../infra/app.js';

function synth(): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'ObsTest', {
    compactor: {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
        { name: 'clicks', bucketName: 'lake', prefix: 'clicks/', partitionColumns: ['date'] },
      ],
    },
  });
  return { stack, template: Template.fromStack(stack) };
}

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

  it('alarms when any compaction execution fails, notifying the workflow topic', () => {
    // Prepare (the stack above) / Act / Assess
    template.hasResourceProperties('AWS::CloudWatch::Alarm', {
      Namespace: 'AWS/States',
      MetricName: 'ExecutionsFailed',
      Dimensions: [{ Name: 'StateMachineArn', Value: ref(stack.compactor.stateMachine) }],
      Statistic: 'Sum',
      Threshold: 1,
      ComparisonOperator: 'GreaterThanOrEqualToThreshold',
      AlarmActions: [topic],
    });
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

  it('creates exactly these five alarms, all with an operator-facing description', () => {
    // Prepare (the stack above) / Act
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: { AlarmDescription?: string };
    }[];
    // Assess
    expect(alarms).toHaveLength(5);
    for (const alarm of alarms) expect(alarm.Properties.AlarmDescription).toMatch(/^lake-compactor: .+\. /);
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
