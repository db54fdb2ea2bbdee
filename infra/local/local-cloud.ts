// LocalCloud: runs what `cdk synth` produces for a stack on 127.0.0.1 — S3 (s3rver), DynamoDB Local,
// SQS-fed Lambdas, Step Functions and schedules — and tears all of it down, even after a crash.
//
// Everything is read from the synthesized template (tables, notifications, queues, mappings, state
// machines, rules); handlers are the project's own modules loaded in-process (see functions.ts).
import './polyfills.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { SFNClient } from '@aws-sdk/client-sfn';
import { CfnResource, type Stack, Token } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { S3EventRecord } from 'aws-lambda';
import type { IConstruct } from 'constructs';
import {
  createTablesFromTemplate,
  type DynamoDbLocalEndpoint,
  openDynamoDbNamespace,
  startDynamoDbLocal,
} from './dynamodb-local.js';
import { LocalCloudError } from './errors.js';
import {
  type EventRule,
  eventBridgeBucketsFromTemplate,
  eventRulesFromTemplate,
  matchesPattern,
  putEventsEnvelope,
  type RuleTarget,
  s3EventBridgeEvent,
  targetInput,
} from './eventbridge.js';
import {
  discoverFunctionSources,
  FunctionRunner,
  functionsFromTemplate,
  type Invocation,
  type InvokeOptions,
  stageCodeFiles,
} from './functions.js';
import { onProcessExit } from './process-hygiene.js';
import {
  type DeadLetter,
  type LocalQueue,
  type PollerOptions,
  QueuePoller,
  queueMappingsFromTemplate,
  queuesFromTemplate,
} from './queues.js';
import {
  type NotificationRule,
  type NotificationTarget,
  notificationRulesFromTemplate,
  observeBatchDeletes,
  type RawS3Event,
  rawEventsOf,
  ruleMatches,
  sequencerSource,
  toS3EventRecord,
} from './s3-events.js';
import { type RunningS3Server, startS3Server } from './s3-server.js';
import { type RunningServiceEndpoint, startServiceEndpoint } from './service-endpoint.js';
import {
  type LocalExecution,
  type RecordedEvent,
  type RecordedNotification,
  type StepFunctionsOptions,
  StepFunctionsRunner,
  stateMachinesFromTemplate,
} from './step-functions.js';
import { type CfnTemplate, TemplateModel } from './template.js';

const projectRootDefault = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A resource named by logical id, physical name, ARN, or by its CDK construct. */
export type ResourceRef = string | IConstruct;

export interface LocalCloudOptions {
  /** The stack to run. Synthesize it without bundling unless `useBundles` (context `{'aws:cdk:bundling-stacks': []}`). */
  readonly stack: Stack;
  /** Extra buckets to create (the template's own buckets and notified imported buckets are created anyway). */
  readonly buckets?: readonly string[];
  /** Handler modules by function logical id; win over discovery (NodejsFunction entry, then `functions/handlers/<id>.ts`). */
  readonly entries?: Readonly<Record<string, string>>;
  /** Run the esbuild bundles from cdk.out instead of the sources (the stack must have been bundled). */
  readonly useBundles?: boolean;
  /** Root for the handler convention. @default the repository root */
  readonly projectRoot?: string;
  /** Wait/retry shortening and Task overrides. */
  readonly stepFunctions?: StepFunctionsOptions;
  /** SQS poller tuning (batching window override, redelivery delay). */
  readonly sqs?: Omit<PollerOptions, 'region'>;
  /**
   * Buckets that send S3 events to EventBridge although the template does not say so (e.g. an
   * imported bucket configured outside the stack). Template buckets with EventBridgeConfiguration
   * are included anyway.
   */
  readonly eventBridgeBuckets?: readonly string[];
  /** Values of template Parameters. */
  readonly parameters?: Readonly<Record<string, string>>;
  /**
   * Run aws-cdk-lib's built-in CloudFormation validation (cfn-guard in WebAssembly) during synthesis.
   * Off by default: it costs ~1 s idle and 10+ s on a loaded 2-core machine, and template checks
   * belong to test/infra. @default false
   */
  readonly validateTemplate?: boolean;
  /**
   * The endpoint of a DynamoDB Local started with `databasePerCredentials` that many clouds share: this cloud
   * takes a database of its own there (`openDynamoDbNamespace`: nothing of another cloud's in sight) instead of
   * starting java, and `stop` deletes its tables but leaves the server running. For test runs, which would
   * otherwise start a JVM per cloud. Without it (the default, and the demo's way) the cloud starts its own java,
   * whose watchdog also removes the cloud's temp folder should this process be SIGKILLed.
   */
  readonly sharedDynamoDb?: string;
}

/** One S3 notification the harness produced, and where it went. */
export interface DeliveredS3Event {
  readonly record: S3EventRecord;
  readonly targets: readonly NotificationTarget[];
}

/** What one target of a fired rule did. */
export type FireResult =
  | {
      readonly targetId: string;
      readonly kind: 'lambda';
      readonly functionLogicalId: string;
      readonly result?: unknown;
      readonly error?: unknown;
    }
  | { readonly targetId: string; readonly kind: 'stateMachine'; readonly execution: LocalExecution }
  | { readonly targetId: string; readonly kind: 'queue'; readonly messageId: string }
  | { readonly targetId: string; readonly kind: 'topic'; readonly messageId: string };

/** What one matched rule did with an event (pattern rules; see `emitEvent`). */
export type RuleDelivery =
  | ({ readonly rule: string } & FireResult)
  | {
      readonly rule: string;
      readonly targetId: string;
      readonly kind: 'undelivered';
      readonly error: unknown;
    };

/**
 * The running local cloud. Start with `LocalCloud.start({ stack })`, always `await cloud.stop()`
 * (in afterAll); a crashed process still kills DynamoDB Local and removes the temp folder.
 */
export class LocalCloud {
  /** Client for the local S3 (path style, S3RVER credentials). */
  readonly s3: S3Client;
  /** Client for DynamoDB Local. */
  readonly dynamodb: DynamoDBClient;
  /** Client for the local Step Functions endpoint. */
  readonly sfn: SFNClient;
  /** Harness-wide environment every handler gets (endpoints, credentials, region, checksum mode). */
  readonly env: Readonly<Record<string, string>>;
  /** The synthesized template the cloud runs. */
  readonly template: CfnTemplate;
  readonly model: TemplateModel;
  /** DynamoDB tables created: logical id → local name. */
  readonly tables: ReadonlyMap<string, string>;
  /** Every execution started (by tests, handlers through the endpoint, state machines, schedules). */
  readonly executions: LocalExecution[];
  /** Entries put to EventBridge (by state machines). */
  readonly events: RecordedEvent[] = [];
  /** Messages published to SNS (by state machines, or S3 notifications to topics). */
  readonly notifications: RecordedNotification[] = [];
  /** Messages that exhausted their receives (moved to the queue's DLQ, or given up without one). */
  readonly deadLetters: DeadLetter[] = [];
  /** Every function invocation, with its event and result or error. */
  readonly invocations: Invocation[];
  /** Every S3 notification produced (encoded like S3), with its targets. */
  readonly s3Events: DeliveredS3Event[] = [];
  /** What pattern rules did with the events they matched. */
  readonly ruleDeliveries: RuleDelivery[] = [];
  /** How long `start` took, in ms. */
  readonly startupMs: number;
  /** Milliseconds since `start` began at which each startup phase ended (for slow-start diagnosis). */
  readonly startupPhases: Readonly<Record<string, number>>;
  /** pid of the DynamoDB Local java process; undefined on a shared one (`sharedDynamoDb`: not the cloud's). */
  readonly dynamoDbPid: number | undefined;
  /** The folder s3rver keeps objects in (removed by `stop`). */
  readonly s3Directory: string;
  /** Endpoints, for clients built elsewhere (`sfn` also answers EventBridge PutEvents and SNS Publish). */
  readonly endpoints: { readonly s3: string; readonly dynamodb: string; readonly sfn: string };

  private readonly queues: Map<string, LocalQueue>;
  private readonly pollers: QueuePoller[] = [];
  private readonly functions: FunctionRunner;
  private readonly runner: StepFunctionsRunner;
  private readonly rules: NotificationRule[];
  private readonly eventRules: EventRule[];
  private readonly eventBridgeBuckets: ReadonlySet<string>;
  private readonly stack: Stack;
  private s3Chain: Promise<void> = Promise.resolve();
  private s3Pending = 0;
  private asyncInvocations = 0;
  private stopping: Promise<void> | undefined;
  private readonly cleanups: (() => Promise<void> | void)[];

  private constructor(init: {
    options: LocalCloudOptions;
    template: CfnTemplate;
    model: TemplateModel;
    s3Server: RunningS3Server;
    dynamo: DynamoDbLocalEndpoint & { readonly pid?: number };
    tables: Map<string, string>;
    env: Record<string, string>;
    cleanups: (() => Promise<void> | void)[];
    startedAt: number;
    phases: Record<string, number>;
    serviceEndpoint: RunningServiceEndpoint;
    scratch: string;
    codeRoot: string;
  }) {
    const { options, model, s3Server, dynamo } = init;
    this.stack = options.stack;
    this.template = init.template;
    this.model = model;
    this.tables = init.tables;
    this.env = init.env;
    this.cleanups = init.cleanups;
    this.s3 = s3Server.client();
    this.dynamodb = dynamo.client();
    this.dynamoDbPid = dynamo.pid;
    this.s3Directory = s3Server.directory;
    this.endpoints = { s3: s3Server.endpoint, dynamodb: dynamo.endpoint, sfn: init.serviceEndpoint.endpoint };
    this.sfn = new SFNClient({
      endpoint: init.serviceEndpoint.endpoint,
      region: model.region,
      credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    });

    const functions = functionsFromTemplate(
      model,
      stageCodeFiles(
        discoverFunctionSources(options.stack, options.projectRoot ?? projectRootDefault),
        init.codeRoot,
      ),
      init.env,
    );
    this.functions = new FunctionRunner(functions, {
      entries: options.entries,
      useBundles: options.useBundles,
      bundleScratch: init.scratch,
      nodeModules: path.join(options.projectRoot ?? projectRootDefault, 'node_modules'),
    });
    this.invocations = this.functions.invocations;

    this.queues = queuesFromTemplate(model);
    for (const mapping of queueMappingsFromTemplate(model)) {
      const queue = this.queues.get(mapping.queue);
      if (queue === undefined) continue;
      this.pollers.push(
        new QueuePoller(
          mapping,
          queue,
          this.queues,
          (event) => this.functions.invoke(mapping.functionLogicalId, event),
          this.deadLetters,
          { ...options.sqs, region: model.region },
        ),
      );
    }
    this.rules = notificationRulesFromTemplate(model);
    this.eventRules = eventRulesFromTemplate(model);
    this.eventBridgeBuckets = new Set([
      ...eventBridgeBucketsFromTemplate(model),
      ...(options.eventBridgeBuckets ?? []),
    ]);

    this.runner = new StepFunctionsRunner(
      stateMachinesFromTemplate(model),
      {
        model,
        dynamodb: this.dynamodb,
        s3: this.s3,
        invokeFunction: (logicalId, payload) => this.functions.invoke(logicalId, payload),
        invokeFunctionAsync: (logicalId, payload) => this.invokeAsync(logicalId, payload),
        sendToQueue: (queue, body) => this.sendMessage(queue, body),
        putEvent: (entry) => this.putEvent(entry),
        notifications: this.notifications,
      },
      options.stepFunctions,
    );
    this.executions = this.runner.executions;

    const nextSequencer = sequencerSource();
    const store = s3Server.server.store;
    const recordContext = {
      region: model.region,
      nextSequencer,
      etagOf: async (bucket: string, key: string) => {
        try {
          return String((await store.getMetadata(bucket, key)).etag ?? '').replaceAll('"', '');
        } catch {
          return undefined;
        }
      },
    };
    const report = (raw: RawS3Event[]): void => {
      this.s3Pending += 1;
      this.s3Chain = this.s3Chain
        .then(async () => {
          for (const event of raw) {
            const record = await toS3EventRecord(event, recordContext);
            this.route(record, event);
          }
        })
        .catch(() => undefined)
        .finally(() => {
          this.s3Pending -= 1;
        });
    };
    this.cleanups.unshift(s3Server.onEvent((event) => report(rawEventsOf(event))));
    this.cleanups.unshift(observeBatchDeletes(s3Server, report));
    this.startupMs = Math.round(performance.now() - init.startedAt);
    this.startupPhases = { ...init.phases, wired: this.startupMs };
  }

  /**
   * Synthesizes the stack, starts s3rver, DynamoDB Local (tables from the template) and the SFN
   * endpoint on 127.0.0.1, and wires notifications, queues, functions, state machines and rules.
   */
  static async start(options: LocalCloudOptions): Promise<LocalCloud> {
    const startedAt = performance.now();
    const cleanups: (() => Promise<void> | void)[] = [];
    const phases: Record<string, number> = {};
    const phase = (name: string): void => {
      phases[name] = Math.round(performance.now() - startedAt);
    };
    // One temp root for everything on disk (s3rver's objects, copies of bundles, code files); the DynamoDB
    // watchdog removes it even if this process is SIGKILLed.
    const root = mkdtempSync(path.join(tmpdir(), 'local-cloud-'));
    const removeRoot = (): void => rmSync(root, { recursive: true, force: true });
    const unhookRoot = onProcessExit(removeRoot);
    cleanups.push(() => {
      removeRoot();
      unhookRoot();
    });
    // Java boots while the stack synthesizes (synthesis blocks this thread).
    const dynamoStarting: Promise<DynamoDbLocalEndpoint & { readonly pid?: number }> =
      options.sharedDynamoDb === undefined
        ? startDynamoDbLocal({ removeWhenGone: [root] })
        : openDynamoDbNamespace(options.sharedDynamoDb);
    try {
      const template = synthesize(options.stack, options.validateTemplate ?? false);
      phase('synthesized');
      const region = Token.isUnresolved(options.stack.region) ? undefined : options.stack.region;
      const accountId = Token.isUnresolved(options.stack.account) ? undefined : options.stack.account;
      const model = new TemplateModel(template, {
        region,
        accountId,
        stackName: options.stack.stackName,
        parameters: options.parameters,
      });
      const buckets = new Set<string>(options.buckets ?? []);
      for (const [logicalId] of model.resourcesOfType('AWS::S3::Bucket'))
        buckets.add(model.physicalName(logicalId));
      for (const rule of notificationRulesFromTemplate(model)) buckets.add(rule.bucket);

      const directory = path.join(root, 's3');
      const s3Server = await startS3Server({ buckets: [...buckets], directory });
      cleanups.unshift(() => s3Server.stop());
      phase('s3');

      const dynamo = await dynamoStarting;
      cleanups.unshift(() => dynamo.stop());
      const admin = dynamo.client();
      phase('dynamodb');
      const tables = await createTablesFromTemplate(admin, model);
      phase('tables');

      // The endpoint must be up before the env (which names it) is built; requests reach the runner once wired.
      let cloud: LocalCloud | undefined;
      const serviceEndpoint = await startServiceEndpoint(() => {
        if (cloud === undefined) throw new LocalCloudError('The local cloud is still starting; retry.');
        const ready = cloud;
        return {
          runner: ready.runner,
          putEvent: (entry) => ready.putEvent(entry),
          notifications: ready.notifications,
        };
      });
      cleanups.unshift(() => serviceEndpoint.stop());

      const env: Record<string, string> = {
        AWS_REGION: model.region,
        AWS_DEFAULT_REGION: model.region,
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
        AWS_ENDPOINT_URL_S3: s3Server.endpoint,
        AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
        AWS_ENDPOINT_URL_SFN: serviceEndpoint.endpoint,
        AWS_ENDPOINT_URL_EVENTBRIDGE: serviceEndpoint.endpoint,
        AWS_ENDPOINT_URL_SNS: serviceEndpoint.endpoint,
        AWS_REQUEST_CHECKSUM_CALCULATION: 'WHEN_REQUIRED',
        AWS_RESPONSE_CHECKSUM_VALIDATION: 'WHEN_REQUIRED',
        AWS_EC2_METADATA_DISABLED: 'true',
      };
      cleanups.push(applyProcessEnv(env));
      cleanups.unshift(() => admin.destroy());

      cloud = new LocalCloud({
        options,
        template,
        model,
        s3Server,
        dynamo,
        tables,
        env,
        cleanups,
        startedAt,
        phases,
        serviceEndpoint,
        scratch: path.join(root, 'bundles'),
        codeRoot: path.join(root, 'code'),
      });
      return cloud;
    } catch (error) {
      await dynamoStarting.then((dynamo) => dynamo.stop()).catch(() => undefined);
      for (const cleanup of cleanups) await Promise.resolve(cleanup()).catch(() => undefined);
      throw error;
    }
  }

  /** The local name of a DynamoDB table (by logical id, name or construct). */
  tableName(table: ResourceRef): string {
    const logicalId = this.logicalId(table, ['AWS::DynamoDB::Table', 'AWS::DynamoDB::GlobalTable']);
    return this.model.physicalName(logicalId);
  }

  /** The environment one function's handler gets: `env` plus its resolved Environment.Variables. */
  functionEnv(fn: ResourceRef): Readonly<Record<string, string>> {
    return this.functions.get(this.logicalId(fn, 'AWS::Lambda::Function')).env;
  }

  /** The logical id of a resource named by logical id, physical name, ARN or construct. */
  logicalId(ref: ResourceRef, type: string | readonly string[]): string {
    if (typeof ref !== 'string') {
      const resource = CfnResource.isCfnResource(ref) ? ref : ref.node.defaultChild;
      if (resource === undefined || !CfnResource.isCfnResource(resource)) {
        throw new LocalCloudError(
          `${ref.node.path} is not backed by a CloudFormation resource; pass its logical id.`,
        );
      }
      return this.stack.resolve(resource.logicalId) as string;
    }
    const found = this.model.findResource(type, ref);
    if (found === undefined) {
      const types = typeof type === 'string' ? [type] : type;
      const known = types.flatMap((t) => this.model.resourcesOfType(t).map(([id]) => id));
      throw new LocalCloudError(
        `No ${types.join(' or ')} "${ref}" in the template (known: ${known.join(', ') || 'none'}); pass a logical id, name, ARN or the construct.`,
      );
    }
    return found;
  }

  /**
   * Invokes a function synchronously (as `lambda:Invoke` RequestResponse); rejects with its error.
   * `{ bundle: true }` runs the esbuild bundle CDK staged instead of the source.
   */
  invoke(fn: ResourceRef, event: unknown, options?: InvokeOptions): Promise<unknown> {
    return this.functions.invoke(this.logicalId(fn, 'AWS::Lambda::Function'), event, options);
  }

  /** Sends a message to a queue of the template (by logical id, name, URL, ARN or construct). */
  sendMessage(queue: ResourceRef, body: string): string {
    const logicalId = this.logicalId(queue, 'AWS::SQS::Queue');
    const target = this.queues.get(logicalId);
    if (target === undefined)
      throw new LocalCloudError(`Queue ${logicalId} is not known to the local cloud.`);
    const messageId = target.send(body);
    for (const poller of this.pollers) poller.kick();
    return messageId;
  }

  /** Messages currently held by a queue (e.g. a DLQ). */
  queueMessages(
    queue: ResourceRef,
  ): readonly { readonly messageId: string; readonly body: string; readonly receiveCount: number }[] {
    const logicalId = this.logicalId(queue, 'AWS::SQS::Queue');
    return this.queues.get(logicalId)?.messages ?? [];
  }

  /** Starts an execution; returns at once (`await execution.done` for its end). */
  startExecution(stateMachine: ResourceRef, input: unknown = {}, name?: string): LocalExecution {
    const id = this.logicalId(stateMachine, 'AWS::StepFunctions::StateMachine');
    return this.runner.start(id, input, name);
  }

  /** Starts an execution and waits for its end. */
  runExecution(stateMachine: ResourceRef, input: unknown = {}, name?: string): Promise<LocalExecution> {
    return this.startExecution(stateMachine, input, name).done;
  }

  /** The runnable definition of a state machine (tokens resolved). */
  definition(stateMachine: ResourceRef): unknown {
    return this.runner.machine(this.logicalId(stateMachine, 'AWS::StepFunctions::StateMachine'))
      .originalDefinition;
  }

  /**
   * Fires an `AWS::Events::Rule` with a schedule now: each target gets the rule's Input, or the
   * scheduled-event document (`detail-type: 'Scheduled Event'`, `source: 'aws.events'`). Lambda
   * targets are awaited; state machine targets are started (await `execution.done`).
   */
  async fire(rule: ResourceRef): Promise<FireResult[]> {
    const logicalId = this.logicalId(rule, 'AWS::Events::Rule');
    const found = this.eventRules.find((candidate) => candidate.logicalId === logicalId);
    if (found?.scheduleExpression === undefined) {
      throw new LocalCloudError(`Rule ${logicalId} has no ScheduleExpression; fire() only runs schedules.`);
    }
    const scheduled = {
      version: '0',
      id: crypto.randomUUID(),
      'detail-type': 'Scheduled Event',
      source: 'aws.events',
      account: this.model.accountId,
      time: `${new Date().toISOString().slice(0, 19)}Z`,
      region: this.model.region,
      resources: [found.arn],
      detail: {},
    };
    const results: FireResult[] = [];
    for (const target of found.targets) {
      results.push(await this.deliver(found, target, scheduled, 'sync'));
    }
    return results;
  }

  /**
   * Routes an EventBridge event (an S3 `Object Created`, a PutEvents entry) to every enabled rule
   * of its bus whose pattern matches. Lambda targets are invoked asynchronously, as EventBridge does.
   */
  emitEvent(event: Record<string, unknown>, eventBusName = 'default'): void {
    for (const rule of this.eventRules) {
      if (!rule.enabled || rule.eventPattern === undefined || rule.eventBusName !== eventBusName) continue;
      if (!matchesPattern(rule.eventPattern, event)) continue;
      for (const target of rule.targets) {
        this.asyncInvocations += 1;
        void this.deliver(rule, target, event, 'async')
          .then((result) => this.ruleDeliveries.push({ rule: rule.logicalId, ...result }))
          .catch((error: unknown) =>
            this.ruleDeliveries.push({
              rule: rule.logicalId,
              targetId: target.Id,
              kind: 'undelivered',
              error,
            }),
          )
          .finally(() => {
            this.asyncInvocations -= 1;
          });
      }
    }
  }

  /** Delivers a rule's event to one target (Lambda, state machine, queue or topic of the template). */
  private async deliver(
    rule: EventRule,
    target: RuleTarget,
    event: unknown,
    mode: 'sync' | 'async',
  ): Promise<FireResult> {
    const input = targetInput(rule, target, event);
    const fn = this.model.findResource('AWS::Lambda::Function', target.Arn);
    if (fn !== undefined) {
      if (mode === 'async') {
        this.invokeAsync(fn, input);
        return { targetId: target.Id, kind: 'lambda', functionLogicalId: fn };
      }
      try {
        return {
          targetId: target.Id,
          kind: 'lambda',
          functionLogicalId: fn,
          result: await this.functions.invoke(fn, input),
        };
      } catch (error) {
        return { targetId: target.Id, kind: 'lambda', functionLogicalId: fn, error };
      }
    }
    const machine = this.model.findResource('AWS::StepFunctions::StateMachine', target.Arn);
    if (machine !== undefined) {
      return { targetId: target.Id, kind: 'stateMachine', execution: this.runner.start(machine, input) };
    }
    const queue = this.model.findResource('AWS::SQS::Queue', target.Arn);
    if (queue !== undefined) {
      return {
        targetId: target.Id,
        kind: 'queue',
        messageId: this.sendMessage(queue, JSON.stringify(input)),
      };
    }
    const topic = this.model.findResource('AWS::SNS::Topic', target.Arn);
    if (topic !== undefined) {
      const messageId = crypto.randomUUID();
      this.notifications.push({
        messageId,
        topicArn: this.model.arn(topic),
        message: JSON.stringify(input),
        time: new Date(),
      });
      return { targetId: target.Id, kind: 'topic', messageId };
    }
    throw new LocalCloudError(
      `Rule ${rule.logicalId} target ${target.Id} (${target.Arn}) is not a Lambda, state machine, queue or topic of the template.`,
    );
  }

  /** Records a PutEvents entry and routes it to matching rules. */
  private putEvent(entry: RecordedEvent): void {
    this.events.push(entry);
    this.emitEvent(putEventsEnvelope(entry, this.model), entry.eventBusName);
  }

  /** Whether S3 events, queues, invocations or executions are still in progress. */
  get busy(): boolean {
    return (
      this.s3Pending > 0 ||
      this.asyncInvocations > 0 ||
      this.pollers.some((poller) => poller.busy) ||
      this.functions.busy ||
      this.runner.busy
    );
  }

  /**
   * Waits until nothing is in progress (checked twice, 20 ms apart); throws after `timeoutMs` — a hang guard
   * only, so generous: at 30 s one redelivery test timed out once in a full run on a 2-core machine that was
   * also running benchmarks, and passed alone in 10 s.
   */
  async drain(timeoutMs = 120_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let idleChecks = 0;
    while (idleChecks < 2) {
      if (Date.now() > deadline) {
        throw new LocalCloudError(
          `drain() timed out after ${timeoutMs} ms: ${this.describeBusy()}. A handler may be stuck, or a Wait state not shortened (stepFunctions.waitTimeMs).`,
        );
      }
      idleChecks = this.busy ? 0 : idleChecks + 1;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Stops everything and removes the temp folder. Idempotent; safe after a failed test. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      for (const poller of this.pollers) await poller.stop().catch(() => undefined);
      await this.runner.stopAll().catch(() => undefined);
      this.sfn.destroy();
      for (const cleanup of this.cleanups) await Promise.resolve(cleanup()).catch(() => undefined);
    })();
    return this.stopping;
  }

  private route(record: S3EventRecord, raw: RawS3Event): void {
    const targets: NotificationTarget[] = [];
    for (const rule of this.rules) {
      if (!ruleMatches(rule, raw.bucket, record.eventName, raw.key)) continue;
      targets.push(rule.target);
      const event = { Records: [record] };
      switch (rule.target.kind) {
        case 'queue':
          this.sendMessage(rule.target.logicalId, JSON.stringify(event));
          break;
        case 'lambda':
          this.invokeAsync(rule.target.logicalId, event);
          break;
        case 'topic':
          this.notifications.push({
            messageId: crypto.randomUUID(),
            topicArn: this.model.arn(rule.target.logicalId),
            subject: 'Amazon S3 Notification',
            message: JSON.stringify(event),
            time: new Date(),
          });
          break;
        case 'external':
          break;
      }
    }
    this.s3Events.push({ record, targets });
    if (this.eventBridgeBuckets.has(raw.bucket)) this.emitEvent(s3EventBridgeEvent(raw, record, this.model));
  }

  private invokeAsync(logicalId: string, event: unknown): void {
    this.asyncInvocations += 1;
    void this.functions
      .invoke(logicalId, event)
      .catch(() => undefined)
      .finally(() => {
        this.asyncInvocations -= 1;
      });
  }

  private describeBusy(): string {
    const parts: string[] = [];
    if (this.s3Pending > 0) parts.push(`${this.s3Pending} S3 event batches`);
    for (const [id, queue] of this.queues)
      if (queue.consumed && queue.messages.length > 0)
        parts.push(`${queue.messages.length} messages in ${id}`);
    const running = this.runner.executions.filter((execution) => execution.status === 'RUNNING');
    if (running.length > 0)
      parts.push(`executions running: ${running.map((execution) => execution.name).join(', ')}`);
    if (this.functions.busy || this.asyncInvocations > 0) parts.push('invocations in flight');
    return parts.join('; ') || 'busy';
  }
}

/** Synthesizes the stack's template; `CDK_VALIDATION=false` (read at synth time) skips the built-in validation. */
function synthesize(stack: Stack, validate: boolean): CfnTemplate {
  const previous = process.env.CDK_VALIDATION;
  if (!validate) process.env.CDK_VALIDATION = 'false';
  try {
    return Template.fromStack(stack).toJSON() as CfnTemplate;
  } finally {
    if (previous === undefined) delete process.env.CDK_VALIDATION;
    else process.env.CDK_VALIDATION = previous;
  }
}

/** Sets the harness variables in process.env (SDK clients read them lazily); returns the restore. */
function applyProcessEnv(env: Readonly<Record<string, string>>): () => void {
  const previous = new Map<string, string | undefined>();
  // Credentials from the developer's shell must not leak into (or override) the local ones.
  for (const key of ['AWS_SESSION_TOKEN', 'AWS_PROFILE', 'AWS_ENDPOINT_URL']) {
    previous.set(key, process.env[key]);
    delete process.env[key];
  }
  for (const [key, value] of Object.entries(env)) {
    previous.set(key, process.env[key]);
    process.env[key] = value;
  }
  return () => {
    for (const [key, value] of previous) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  };
}
