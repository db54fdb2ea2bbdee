// Template assertions for the LakeCompactor's observability: the three alarms on their metrics, each
// notifying the workflow's SNS topic, and a dashboard of executions, Lambda errors/durations and DLQ depth.
import { App, type CfnElement } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { IConstruct } from 'constructs';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';

function synth(): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'ObsTest', {
    compactor: {
      tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
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

  it('creates exactly these three alarms, all with an operator-facing description', () => {
    // Prepare (the stack above) / Act
    const alarms = Object.values(template.findResources('AWS::CloudWatch::Alarm')) as {
      Properties: { AlarmDescription?: string };
    }[];
    // Assess
    expect(alarms).toHaveLength(3);
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
});
