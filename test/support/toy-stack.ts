// A test-only CDK stack shaped like the real one: an imported bucket notifying an SQS queue (with DLQ)
// consumed by a NodejsFunction, a JSONPath state machine, and an EventBridge schedule.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Duration, RemovalPolicy, Stack, type StackProps } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as targets from 'aws-cdk-lib/aws-events-targets';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as s3 from 'aws-cdk-lib/aws-s3';
import * as s3n from 'aws-cdk-lib/aws-s3-notifications';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import type { Construct } from 'constructs';
import { createStateTable } from '../../infra/state-table.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const handlers = path.join(root, 'test', 'support', 'handlers');

/** The bucket the toy stack imports (it is created by the local cloud, as a real lake already exists). */
export const TOY_BUCKET = 'lake';

/**
 * Everything the local-cloud integration test exercises, built with the same CDK constructs the
 * real LakeCompactor uses, so the harness is proven on the template shapes CDK really emits.
 */
export class ToyStack extends Stack {
  public readonly table: dynamodb.Table;
  public readonly queue: sqs.Queue;
  public readonly deadLetterQueue: sqs.Queue;
  public readonly recorder: nodejs.NodejsFunction;
  public readonly worker: nodejs.NodejsFunction;
  public readonly stateMachine: sfn.StateMachine;
  /** Exercises the non-Lambda service integrations: EventBridge, SNS, DynamoDB getItem, nested executions. */
  public readonly integrations: sfn.StateMachine;
  public readonly topic: sns.Topic;
  public readonly schedule: events.Rule;
  /** Receives S3 `Object Created` events for `landing/` through an EventBridge pattern rule. */
  public readonly auditQueue: sqs.Queue;

  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);

    this.table = createStateTable(this, 'State', RemovalPolicy.DESTROY);

    this.deadLetterQueue = new sqs.Queue(this, 'EventsDlq');
    this.queue = new sqs.Queue(this, 'Events', {
      visibilityTimeout: Duration.seconds(60),
      deadLetterQueue: { queue: this.deadLetterQueue, maxReceiveCount: 2 },
    });

    const lake = s3.Bucket.fromBucketName(this, 'Lake', TOY_BUCKET);
    const filter = { prefix: 'events/', suffix: '.parquet' };
    lake.addEventNotification(s3.EventType.OBJECT_CREATED, new s3n.SqsDestination(this.queue), filter);
    lake.addEventNotification(s3.EventType.OBJECT_REMOVED, new s3n.SqsDestination(this.queue), filter);
    lake.enableEventBridgeNotification();
    this.auditQueue = new sqs.Queue(this, 'Audit');
    new events.Rule(this, 'LandingCreated', {
      eventPattern: {
        source: ['aws.s3'],
        detailType: ['Object Created'],
        detail: { bucket: { name: [TOY_BUCKET] }, object: { key: events.Match.prefix('landing/') } },
      },
      targets: [new targets.SqsQueue(this.auditQueue)],
    });

    this.recorder = this.toyFunction('Recorder', 'recorder.ts', 'recorder');
    this.recorder.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: 4,
        maxBatchingWindow: Duration.seconds(1),
        reportBatchItemFailures: true,
      }),
    );
    this.worker = this.toyFunction('Worker', 'worker.ts', 'worker');

    this.stateMachine = this.toyStateMachine(lake);
    this.topic = new sns.Topic(this, 'Alerts');
    this.integrations = this.integrationsStateMachine();

    this.schedule = new events.Rule(this, 'Sweep', {
      schedule: events.Schedule.rate(Duration.hours(1)),
      targets: [
        // With Input: the target gets exactly that document.
        new targets.LambdaFunction(this.worker, {
          event: events.RuleTargetInput.fromObject({ task: 'sweep' }),
        }),
        // Without Input: the target gets the scheduled-event document.
        new targets.SfnStateMachine(this.stateMachine),
      ],
    });
  }

  private toyFunction(id: string, file: string, role: string): nodejs.NodejsFunction {
    const fn = new nodejs.NodejsFunction(this, id, {
      entry: path.join(handlers, file),
      handler: 'handler',
      runtime: lambda.Runtime.NODEJS_22_X,
      timeout: Duration.seconds(30),
      environment: { TABLE_NAME: this.table.tableName, TOY_ROLE: role },
      bundling: { format: nodejs.OutputFormat.ESM, target: 'node22', externalModules: ['@aws-sdk/*'] },
      projectRoot: root,
      depsLockFilePath: path.join(root, 'package-lock.json'),
    });
    this.table.grantReadWriteData(fn);
    return fn;
  }

  /** Child run (.sync) → read its DynamoDB row → put an EventBridge event → publish to SNS. */
  private integrationsStateMachine(): sfn.StateMachine {
    const child = new tasks.StepFunctionsStartExecution(this, 'RunChild', {
      stateMachine: this.stateMachine,
      integrationPattern: sfn.IntegrationPattern.RUN_JOB,
      input: sfn.TaskInput.fromObject({ 'value.$': '$.value' }),
      name: sfn.JsonPath.format('{}-child', sfn.JsonPath.executionName),
      resultSelector: { 'output.$': '$.Output' },
      resultPath: '$.child',
    });
    const read = new tasks.DynamoGetItem(this, 'ReadRow', {
      table: this.table,
      key: {
        pk: tasks.DynamoAttributeValue.fromString(
          sfn.JsonPath.format('run#{}-child', sfn.JsonPath.executionName),
        ),
        sk: tasks.DynamoAttributeValue.fromString('result'),
      },
      resultSelector: { 'doubled.$': '$.Item.doubled.N' },
      resultPath: '$.row',
    });
    const announce = new tasks.EventBridgePutEvents(this, 'Announce', {
      entries: [
        {
          source: 'toy.compactor',
          detailType: 'RunDone',
          detail: sfn.TaskInput.fromObject({ 'doubled.$': '$.row.doubled' }),
        },
      ],
      resultPath: sfn.JsonPath.DISCARD,
    });
    const notify = new tasks.SnsPublish(this, 'Notify', {
      topic: this.topic,
      message: sfn.TaskInput.fromJsonPathAt('$.row.doubled'),
      resultPath: sfn.JsonPath.DISCARD,
    });
    return new sfn.StateMachine(this, 'Integrations', {
      definitionBody: sfn.DefinitionBody.fromChainable(child.next(read).next(announce).next(notify)),
    });
  }

  /**
   * Double (Lambda, Catch) → Record (DynamoDB putItem) → Route (Choice) → Fan out (Map over items,
   * a Lambda per item) or Plan files (Distributed Map reading a JSON plan from S3) or Done.
   */
  private toyStateMachine(lake: s3.IBucket): sfn.StateMachine {
    const double = new tasks.LambdaInvoke(this, 'Double', {
      lambdaFunction: this.worker,
      payload: sfn.TaskInput.fromJsonPathAt('$'),
      resultSelector: { 'doubled.$': '$.Payload.doubled' },
      resultPath: '$.result',
    });
    const recordFailure = new tasks.DynamoPutItem(this, 'RecordFailure', {
      table: this.table,
      item: {
        pk: tasks.DynamoAttributeValue.fromString(
          sfn.JsonPath.format('failure#{}', sfn.JsonPath.executionName),
        ),
        sk: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.stringAt('$.error.Error')),
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    double.addCatch(
      recordFailure.next(new sfn.Pass(this, 'Recovered', { parameters: { 'recovered.$': '$.error.Error' } })),
      {
        errors: ['ToyFailure'],
        resultPath: '$.error',
      },
    );
    const record = new tasks.DynamoPutItem(this, 'Record', {
      table: this.table,
      item: {
        pk: tasks.DynamoAttributeValue.fromString(sfn.JsonPath.format('run#{}', sfn.JsonPath.executionName)),
        sk: tasks.DynamoAttributeValue.fromString('result'),
        doubled: tasks.DynamoAttributeValue.numberFromString(
          sfn.JsonPath.format('{}', sfn.JsonPath.stringAt('$.result.doubled')),
        ),
      },
      resultPath: sfn.JsonPath.DISCARD,
    });
    const fanOut = new sfn.Map(this, 'FanOut', {
      itemsPath: '$.items',
      maxConcurrency: 2,
      itemSelector: { 'value.$': '$$.Map.Item.Value' },
      resultPath: '$.fanned',
    });
    fanOut.itemProcessor(
      new tasks.LambdaInvoke(this, 'DoubleItem', {
        lambdaFunction: this.worker,
        payloadResponseOnly: true,
      }),
    );
    const planFiles = new sfn.DistributedMap(this, 'PlanFiles', {
      itemReader: new sfn.S3JsonItemReader({ bucket: lake, key: sfn.JsonPath.stringAt('$.planKey') }),
      maxConcurrency: 2,
      resultPath: '$.planned',
    });
    planFiles.itemProcessor(
      new tasks.LambdaInvoke(this, 'DoublePlanned', {
        lambdaFunction: this.worker,
        payloadResponseOnly: true,
      }),
    );
    const done = new sfn.Succeed(this, 'Done');
    const route = new sfn.Choice(this, 'Route')
      .when(sfn.Condition.isPresent('$.items'), fanOut.next(done))
      .when(sfn.Condition.isPresent('$.planKey'), planFiles.next(done))
      .otherwise(done);
    return new sfn.StateMachine(this, 'Toy', {
      definitionBody: sfn.DefinitionBody.fromChainable(double.next(record).next(route)),
      timeout: Duration.minutes(5),
    });
  }
}
