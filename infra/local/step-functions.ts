// Runs the template's state machines with aws-local-stepfunctions (JSONPath only): every Task is
// wired to a local implementation, Distributed Map ItemReaders are fed from S3, history is kept.
//
// Task resources: a Lambda ARN or `lambda:invoke` → the handler of the function the ARN names;
// `dynamodb:*` / `aws-sdk:dynamodb:*` / `aws-sdk:s3:*` → real calls to DynamoDB Local / s3rver;
// `events:putEvents` → recorded and routed to matching rules; `sns:publish` → recorded; `sqs:sendMessage` → the local queue;
// `states:startExecution(.sync)` → a local execution. Anything else fails the Task with
// `LocalCloud.UnsupportedResource` unless the caller overrides that state by name. A Pass state whose
// `Result` is falsy (`false`, `0`, `""`, `null`), which the engine ignores (it passes its input on), runs as
// a local Task returning that Result.
import './polyfills.js';
import { randomUUID } from 'node:crypto';
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { StateMachine, type StateMachineDefinition } from 'aws-local-stepfunctions';
import { LocalCloudError } from './errors.js';
import type { TemplateModel } from './template.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };
type EventLog = Awaited<ReturnType<ReturnType<StateMachine['run']>['eventLogs']['next']>>['value'];

/** One state machine of the template. */
export interface LocalStateMachine {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** The runnable ASL (tokens resolved; Distributed Map ItemReaders rewritten for local feeding). */
  readonly definition: StateMachineDefinition;
  /** The ASL exactly as resolved from the template. */
  readonly originalDefinition: StateMachineDefinition;
  /** Distributed Maps with an ItemReader, by state name: the Map (minus reader) and its reader. */
  readonly itemReaders: ReadonlyMap<string, ItemReaderMap>;
}

/** A Distributed Map that the harness feeds: the original Map state without `ItemReader`, and the reader. */
export interface ItemReaderMap {
  readonly map: Record<string, unknown>;
  readonly reader: {
    readonly Resource?: string;
    readonly ReaderConfig?: { InputType?: string; MaxItems?: number };
  };
}

export type ExecutionStatus = 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'TIMED_OUT' | 'ABORTED';

/** One execution, live: fields change until `done` settles. */
export interface LocalExecution {
  readonly executionArn: string;
  readonly stateMachineArn: string;
  readonly stateMachineLogicalId: string;
  readonly name: string;
  readonly input: unknown;
  status: ExecutionStatus;
  output?: unknown;
  error?: string;
  cause?: string;
  readonly startDate: Date;
  stopDate?: Date;
  /** The engine's event log (StateEntered/Exited/Failed/Retried/Caught, Map iterations, ...). */
  readonly history: EventLog[];
  /** Settles (never rejects) when the execution has ended. */
  readonly done: Promise<LocalExecution>;
}

/** An EventBridge entry a state machine (or anything else in the harness) put. */
export interface RecordedEvent {
  readonly eventId: string;
  readonly eventBusName: string;
  readonly source?: string;
  readonly detailType?: string;
  readonly detail: unknown;
  readonly resources?: readonly string[];
  readonly time: Date;
}

/** An SNS message a state machine published. */
export interface RecordedNotification {
  readonly messageId: string;
  readonly topicArn?: string;
  readonly subject?: string;
  readonly message: string;
  readonly messageAttributes?: unknown;
  readonly time: Date;
}

/** What Task implementations need from the rest of the cloud. */
export interface TaskServices {
  readonly model: TemplateModel;
  readonly dynamodb: DynamoDBClient;
  readonly s3: S3Client;
  /** Synchronous invoke; rejects with the handler's error. */
  invokeFunction(logicalId: string, payload: unknown): Promise<unknown>;
  /** Asynchronous (`Event`) invoke: returns at once. */
  invokeFunctionAsync(logicalId: string, payload: unknown): void;
  sendToQueue(queueUrlOrArn: string, body: string): string;
  /** Records an EventBridge entry and routes it to matching rules. */
  putEvent(event: RecordedEvent): void;
  readonly notifications: RecordedNotification[];
}

export interface StepFunctionsOptions {
  /** Milliseconds every Wait state pauses instead of its Seconds/Timestamp (e.g. 0 in tests). */
  readonly waitTimeMs?: number;
  /** Milliseconds between retries instead of IntervalSeconds/BackoffRate (e.g. 0 in tests). */
  readonly retryIntervalMs?: number;
  /** Local implementations of Task states, by state name; they win over the built-in mapping. */
  readonly taskOverrides?: Readonly<Record<string, (input: unknown) => unknown>>;
}

/** Reads, resolves and prepares every `AWS::StepFunctions::StateMachine` of the template. */
export function stateMachinesFromTemplate(model: TemplateModel): Map<string, LocalStateMachine> {
  const machines = new Map<string, LocalStateMachine>();
  for (const [logicalId, resource] of model.resourcesOfType('AWS::StepFunctions::StateMachine')) {
    const props = resource.Properties ?? {};
    let text: string;
    if (props.DefinitionString !== undefined)
      text = model.resolveString(props.DefinitionString, `${logicalId}.DefinitionString`);
    else if (props.Definition !== undefined) text = JSON.stringify(model.resolve(props.Definition));
    else
      throw new LocalCloudError(
        `State machine ${logicalId} has no definition in the template (DefinitionS3Location is not supported).`,
      );
    const substitutions = (model.resolve(props.DefinitionSubstitutions ?? {}) ?? {}) as Record<
      string,
      unknown
    >;
    text = text.replace(/\$\{([^}]+)\}/g, (match, key: string) =>
      key in substitutions ? String(substitutions[key]) : match,
    );
    const originalDefinition = JSON.parse(text) as StateMachineDefinition;
    rejectJsonata(logicalId, originalDefinition);
    const itemReaders = new Map<string, ItemReaderMap>();
    machines.set(logicalId, {
      logicalId,
      name: model.physicalName(logicalId),
      arn: model.arn(logicalId),
      originalDefinition,
      definition: rewriteFalsyPassResults(
        rewriteItemReaders(structuredClone(originalDefinition), itemReaders),
      ),
      itemReaders,
    });
  }
  return machines;
}

/** The engine evaluates no JSONata (it fails silently): refuse such definitions up front. */
function rejectJsonata(logicalId: string, definition: unknown): void {
  const found = JSON.stringify(definition).includes('"QueryLanguage":"JSONata"');
  if (found) {
    throw new LocalCloudError(
      `State machine ${logicalId} uses JSONata, which the local engine (aws-local-stepfunctions 3) silently ignores; write it in JSONPath.`,
    );
  }
}

/** Resource (after `arn:aws:states:::`) of the Task states that stand in for Pass states with a falsy Result. */
const PASS_RESULT_MARK = 'LocalCloud::PassResult';

/**
 * aws-local-stepfunctions 3 ignores a Pass state's `Result` when it is falsy (`if (Result)`), so
 * `"Result": false` passed the input on. Such a state becomes a Task of the same name and paths whose local
 * handler returns the Result (carried in its Parameters), which is what Step Functions does.
 */
function rewriteFalsyPassResults(definition: StateMachineDefinition): StateMachineDefinition {
  const visit = (states: StatesMap): void => {
    for (const [name, state] of Object.entries(states)) {
      const processor = (state.ItemProcessor ?? state.Iterator) as { States?: StatesMap } | undefined;
      if (processor?.States !== undefined) visit(processor.States);
      for (const branch of (state.Branches as { States?: StatesMap }[] | undefined) ?? []) {
        if (branch.States !== undefined) visit(branch.States);
      }
      if (state.Type !== 'Pass' || !('Result' in state) || state.Result) continue;
      const { Type: _type, Result, Parameters: _parameters, ...paths } = state;
      states[name] = {
        ...paths,
        Type: 'Task',
        Resource: `arn:aws:states:::${PASS_RESULT_MARK}`,
        Parameters: { result: Result as Json },
      };
    }
  };
  visit(definition.States as unknown as StatesMap);
  return definition;
}

/** Resource (after `arn:aws:states:::`) of the Task states that stand in for Distributed Maps with an ItemReader. */
const ITEM_READER_MARK = 'LocalCloud::ItemReader';

type StatesMap = Record<string, Record<string, unknown>>;

/**
 * Replaces each Map state with an ItemReader by a Task of the same name (same InputPath,
 * ResultSelector, ResultPath, OutputPath, Retry, Catch, Next/End), whose Parameters evaluate the
 * reader's parameters and carry the input. Its local handler reads the items and runs the original
 * Map (without reader) as a nested machine. Catch/Retry and history therefore behave as in AWS.
 */
function rewriteItemReaders(
  definition: StateMachineDefinition,
  itemReaders: Map<string, ItemReaderMap>,
): StateMachineDefinition {
  const visit = (states: StatesMap): void => {
    for (const [name, state] of Object.entries(states)) {
      const processor = (state.ItemProcessor ?? state.Iterator) as { States?: StatesMap } | undefined;
      if (processor?.States !== undefined) visit(processor.States);
      for (const branch of (state.Branches as { States?: StatesMap }[] | undefined) ?? []) {
        if (branch.States !== undefined) visit(branch.States);
      }
      if (state.Type !== 'Map' || state.ItemReader === undefined) continue;
      const reader = state.ItemReader as ItemReaderMap['reader'] & { Parameters?: Json };
      const {
        InputPath,
        ResultSelector,
        ResultPath,
        OutputPath,
        Retry,
        Catch,
        Next,
        End,
        Comment,
        ItemReader: _reader,
        ...mapOnly
      } = state;
      const task: Record<string, unknown> = {
        Type: 'Task',
        Resource: `arn:aws:states:::${ITEM_READER_MARK}`,
        Parameters: { reader: reader.Parameters ?? {}, 'input.$': '$' },
        // A Distributed Map runs for as long as its children need (AWS: up to a year).
        TimeoutSeconds: 86_400,
      };
      for (const [key, value] of Object.entries({
        InputPath,
        ResultSelector,
        ResultPath,
        OutputPath,
        Retry,
        Catch,
        Next,
        End,
      })) {
        if (value !== undefined) task[key] = value;
      }
      if (Comment !== undefined) task.Comment = Comment;
      states[name] = task;
      // The ItemProcessor was visited above, so nested readers are already rewritten in `mapOnly`.
      itemReaders.set(name, {
        map: mapOnly,
        reader: { Resource: reader.Resource, ReaderConfig: reader.ReaderConfig },
      });
    }
  };
  visit(definition.States as unknown as StatesMap);
  return definition;
}

/** Every state of a definition (recursing into Map and Parallel), by name. */
function allStates(
  definition: { States?: unknown },
  itemReaders: ReadonlyMap<string, ItemReaderMap>,
): [string, Record<string, unknown>][] {
  const out: [string, Record<string, unknown>][] = [];
  const visit = (states: StatesMap | undefined): void => {
    for (const [name, state] of Object.entries(states ?? {})) {
      out.push([name, state]);
      visit(((state.ItemProcessor ?? state.Iterator) as { States?: StatesMap } | undefined)?.States);
      for (const branch of (state.Branches as { States?: StatesMap }[] | undefined) ?? [])
        visit(branch.States);
      const fed = itemReaders.get(name)?.map;
      if (fed !== undefined)
        visit(((fed.ItemProcessor ?? fed.Iterator) as { States?: StatesMap } | undefined)?.States);
    }
  };
  visit(definition.States as StatesMap | undefined);
  return out;
}

/** An error as Step Functions matches it: `name` is the ASL error name, `message` the Cause. */
export class StatesError extends Error {
  constructor(name: string, cause: string) {
    super(cause);
    this.name = name;
  }
}

/** Lambda failure as AWS reports it: Error = errorType, Cause = the JSON error document. */
function lambdaError(error: unknown): StatesError {
  const err = error instanceof Error ? error : new Error(String(error));
  const errorType = err.name || 'Error';
  return new StatesError(
    errorType,
    JSON.stringify({ errorType, errorMessage: err.message, trace: (err.stack ?? '').split('\n') }),
  );
}

const SERVICE_ERROR_PREFIX: Readonly<Record<string, string>> = {
  dynamodb: 'DynamoDB',
  s3: 'S3',
  sqs: 'SQS',
  sns: 'SNS',
  events: 'EventBridge',
  eventbridge: 'EventBridge',
  states: 'StepFunctions',
  sfn: 'Sfn',
};

/** Service integration failure as AWS names it, e.g. `DynamoDB.ConditionalCheckFailedException`. */
function serviceError(service: string, error: unknown): StatesError {
  const err = error instanceof Error ? error : new Error(String(error));
  if (err instanceof StatesError) return err;
  const prefix = SERVICE_ERROR_PREFIX[service] ?? service;
  const name = err.name.endsWith('Exception') ? err.name : `${err.name}Exception`;
  return new StatesError(`${prefix}.${name}`, err.message);
}

/** Executes state machines and keeps every execution (for tests, the SFN endpoint and `drain`). */
export class StepFunctionsRunner {
  readonly executions: LocalExecution[] = [];
  private readonly engines = new Map<string, StateMachine>();
  private readonly aborts = new Map<string, () => void>();

  constructor(
    readonly machines: ReadonlyMap<string, LocalStateMachine>,
    private readonly services: TaskServices,
    private readonly options: StepFunctionsOptions = {},
  ) {}

  /** Whether an execution is running. */
  get busy(): boolean {
    return this.executions.some((execution) => execution.status === 'RUNNING');
  }

  /** The machine named by logical id, name or ARN; throws listing the known ones. */
  machine(idOrArn: string): LocalStateMachine {
    const direct = this.machines.get(idOrArn);
    if (direct !== undefined) return direct;
    const logicalId = this.services.model.findResource('AWS::StepFunctions::StateMachine', idOrArn);
    const found = logicalId === undefined ? undefined : this.machines.get(logicalId);
    if (found === undefined) {
      throw new StatesError(
        'StateMachineDoesNotExist',
        `State machine does not exist: ${idOrArn}. Known: ${[...this.machines.values()].map((m) => m.logicalId).join(', ') || '(none)'}.`,
      );
    }
    return found;
  }

  /**
   * Starts an execution (returns at once; await `execution.done` for the end). Like AWS, a name
   * already used is refused (`ExecutionAlreadyExists`) unless it is still running with the same input.
   */
  start(idOrArn: string, input: unknown = {}, name: string = randomUUID()): LocalExecution {
    const machine = this.machine(idOrArn);
    const executionArn = `${machine.arn.replace(':stateMachine:', ':execution:')}:${name}`;
    const existing = this.executions.find((execution) => execution.executionArn === executionArn);
    if (existing !== undefined) {
      if (existing.status === 'RUNNING' && JSON.stringify(existing.input) === JSON.stringify(input))
        return existing;
      throw new StatesError('ExecutionAlreadyExists', `Execution Already Exists: '${executionArn}'`);
    }
    const startDate = new Date();
    let finish: (execution: LocalExecution) => void = () => {};
    const execution: LocalExecution = {
      executionArn,
      stateMachineArn: machine.arn,
      stateMachineLogicalId: machine.logicalId,
      name,
      input: structuredClone(input),
      status: 'RUNNING',
      startDate,
      history: [],
      done: new Promise((resolve) => {
        finish = resolve;
      }),
    };
    this.executions.push(execution);
    const context = {
      Execution: {
        Id: executionArn,
        Name: name,
        Input: input as Json,
        StartTime: startDate.toISOString(),
        RoleArn: 'arn:aws:iam::000000000000:role/local',
      },
      StateMachine: { Id: machine.arn, Name: machine.name },
    };
    const run = this.engine(machine).run(input as Json, {
      overrides: this.overrides(machine, context),
      context,
      noThrowOnAbort: true,
    });
    this.aborts.set(executionArn, run.abort);
    const history = (async () => {
      for await (const event of run.eventLogs) {
        execution.history.push(event);
        if (event.type === 'ExecutionFailed') {
          execution.error = event.Error;
          execution.cause = typeof event.Cause === 'string' ? event.Cause : JSON.stringify(event.Cause);
        }
      }
    })().catch(() => undefined);
    void run.result
      .then(
        (output) => {
          if (execution.status === 'RUNNING') {
            execution.status = 'SUCCEEDED';
            execution.output = output;
          }
        },
        (error: unknown) => {
          if (execution.status !== 'RUNNING') return;
          const name = error instanceof Error ? error.name : 'Error';
          execution.status = name === 'ExecutionTimeoutError' ? 'TIMED_OUT' : 'FAILED';
          execution.error ??= name === 'ExecutionTimeoutError' ? 'States.Timeout' : name;
          execution.cause ??= error instanceof Error ? error.message : String(error);
        },
      )
      .finally(async () => {
        // The event log closes after the final event; report the end once history holds it.
        await Promise.race([history, new Promise((resolve) => setTimeout(resolve, 1000))]);
        this.aborts.delete(executionArn);
        execution.stopDate ??= new Date();
        finish(execution);
      });
    return execution;
  }

  /** The execution with this ARN; throws `ExecutionDoesNotExist`. */
  describe(executionArn: string): LocalExecution {
    const execution = this.executions.find((candidate) => candidate.executionArn === executionArn);
    if (execution === undefined)
      throw new StatesError('ExecutionDoesNotExist', `Execution Does Not Exist: '${executionArn}'`);
    return execution;
  }

  /** Aborts a running execution (status ABORTED, like StopExecution). */
  stop(executionArn: string, error?: string, cause?: string): LocalExecution {
    const execution = this.describe(executionArn);
    if (execution.status === 'RUNNING') {
      execution.status = 'ABORTED';
      execution.error = error;
      execution.cause = cause;
      execution.stopDate = new Date();
      this.aborts.get(executionArn)?.();
    }
    return execution;
  }

  /** Aborts every running execution (used by `LocalCloud.stop`). */
  async stopAll(): Promise<void> {
    const running = this.executions.filter((execution) => execution.status === 'RUNNING');
    for (const execution of running)
      this.stop(execution.executionArn, 'LocalCloud.Stopped', 'The local cloud stopped.');
    await Promise.all(running.map((execution) => execution.done));
  }

  private engine(machine: LocalStateMachine): StateMachine {
    let engine = this.engines.get(machine.logicalId);
    if (engine === undefined) {
      engine = new StateMachine(machine.definition, { validationOptions: { checkArn: false } });
      this.engines.set(machine.logicalId, engine);
    }
    return engine;
  }

  private overrides(machine: LocalStateMachine, context: Record<string, unknown>) {
    const taskResourceLocalHandlers: Record<string, (input: Json) => Promise<Json>> = {};
    const waitTimeOverrides: Record<string, number> = {};
    const retryIntervalOverrides: Record<string, number> = {};
    for (const [name, state] of allStates(machine.definition, machine.itemReaders)) {
      if (state.Type === 'Wait' && this.options.waitTimeMs !== undefined)
        waitTimeOverrides[name] = this.options.waitTimeMs;
      if (state.Retry !== undefined && this.options.retryIntervalMs !== undefined) {
        retryIntervalOverrides[name] = this.options.retryIntervalMs;
      }
      if (state.Type !== 'Task') continue;
      const override = this.options.taskOverrides?.[name];
      taskResourceLocalHandlers[name] =
        override !== undefined
          ? async (input) => (await override(input)) as Json
          : (input) => this.task(name, state, input, machine, context);
    }
    return { taskResourceLocalHandlers, waitTimeOverrides, retryIntervalOverrides };
  }

  /** Runs one Task state's resource locally; errors carry the names AWS would use. */
  private async task(
    stateName: string,
    state: Record<string, unknown>,
    input: Json,
    machine: LocalStateMachine,
    context: Record<string, unknown>,
  ): Promise<Json> {
    const resource = String(state.Resource);
    const integration = /^arn:aws[\w-]*:states:::(.+)$/.exec(resource)?.[1];
    if (integration === undefined) {
      // A bare ARN: Lambda (payload = effective input, result = handler output).
      const fn = this.services.model.findResource('AWS::Lambda::Function', resource);
      if (fn === undefined) throw unsupported(stateName, resource);
      try {
        return toJson(await this.services.invokeFunction(fn, input));
      } catch (error) {
        throw lambdaError(error);
      }
    }
    const [action = '', pattern] = integration.split(/\.(?=sync|waitForTaskToken)/);
    if (action === ITEM_READER_MARK) return this.distributedMap(stateName, input, machine, context);
    if (action === PASS_RESULT_MARK) return ((input ?? {}) as JsonObject).result ?? null;
    if (pattern === 'waitForTaskToken') {
      throw new StatesError(
        'LocalCloud.UnsupportedResource',
        `${stateName}: .waitForTaskToken is not supported by the local cloud.`,
      );
    }
    const params = (input ?? {}) as JsonObject;
    switch (action) {
      case 'lambda:invoke':
        return this.lambdaInvoke(stateName, params);
      case 'events:putEvents':
        return this.putEvents(params);
      case 'sns:publish':
        return this.publish(params);
      case 'sqs:sendMessage': {
        const body =
          typeof params.MessageBody === 'string' ? params.MessageBody : JSON.stringify(params.MessageBody);
        try {
          const messageId = this.services.sendToQueue(String(params.QueueUrl), body);
          return { MessageId: messageId };
        } catch (error) {
          throw serviceError('sqs', error);
        }
      }
      case 'states:startExecution':
        return this.startChild(params, pattern);
    }
    const optimizedDynamo = /^dynamodb:(\w+)$/.exec(action)?.[1];
    if (optimizedDynamo !== undefined) return this.sdkCall('dynamodb', optimizedDynamo, params);
    const sdk = /^aws-sdk:(\w+):(\w+)$/.exec(action);
    if (sdk?.[1] !== undefined && sdk[2] !== undefined) {
      const [, service, sdkAction] = sdk;
      if (service === 'dynamodb' || service === 's3') return this.sdkCall(service, sdkAction, params);
      if (service === 'eventbridge' && sdkAction === 'putEvents') return this.putEvents(params);
      if (service === 'sns' && sdkAction === 'publish') return this.publish(params);
      if (service === 'sfn' && sdkAction === 'startExecution') return this.startChild(params, undefined);
    }
    throw unsupported(stateName, resource);
  }

  private async lambdaInvoke(stateName: string, params: JsonObject): Promise<Json> {
    const target = String(params.FunctionName ?? '');
    const fn = this.services.model.findResource('AWS::Lambda::Function', target);
    if (fn === undefined) throw unsupported(stateName, `lambda:invoke of ${target}`);
    const payload = params.Payload ?? {};
    if (params.InvocationType === 'Event') {
      this.services.invokeFunctionAsync(fn, payload);
      return { StatusCode: 202, Payload: '' };
    }
    try {
      const result = await this.services.invokeFunction(fn, payload);
      return {
        ExecutedVersion: '$LATEST',
        Payload: toJson(result),
        SdkHttpMetadata: { HttpStatusCode: 200 },
        SdkResponseMetadata: { RequestId: randomUUID() },
        StatusCode: 200,
      };
    } catch (error) {
      throw lambdaError(error);
    }
  }

  private putEvents(params: JsonObject): Json {
    const entries = (params.Entries as JsonObject[] | undefined) ?? [];
    const ids = entries.map((entry) => {
      const eventId = randomUUID();
      const detail = typeof entry.Detail === 'string' ? safeParse(entry.Detail) : entry.Detail;
      this.services.putEvent({
        eventId,
        eventBusName: String(entry.EventBusName ?? 'default'),
        source: entry.Source === undefined ? undefined : String(entry.Source),
        detailType: entry.DetailType === undefined ? undefined : String(entry.DetailType),
        detail,
        resources: (entry.Resources as string[] | undefined) ?? undefined,
        time: new Date(),
      });
      return { EventId: eventId };
    });
    return { Entries: ids, FailedEntryCount: 0 };
  }

  private publish(params: JsonObject): Json {
    const messageId = randomUUID();
    this.services.notifications.push({
      messageId,
      topicArn: params.TopicArn === undefined ? undefined : String(params.TopicArn),
      subject: params.Subject === undefined ? undefined : String(params.Subject),
      message: typeof params.Message === 'string' ? params.Message : JSON.stringify(params.Message),
      messageAttributes: params.MessageAttributes,
      time: new Date(),
    });
    return { MessageId: messageId };
  }

  private async startChild(params: JsonObject, pattern: string | undefined): Promise<Json> {
    const input = typeof params.Input === 'string' ? safeParse(params.Input) : (params.Input ?? {});
    const child = this.start(
      String(params.StateMachineArn),
      input,
      params.Name === undefined ? undefined : String(params.Name),
    );
    if (pattern === undefined) {
      return { ExecutionArn: child.executionArn, StartDate: child.startDate.toISOString() };
    }
    const ended = await child.done;
    if (ended.status !== 'SUCCEEDED') {
      throw new StatesError(
        'States.TaskFailed',
        JSON.stringify({ Error: ended.error, Cause: ended.cause, Status: ended.status }),
      );
    }
    return {
      ExecutionArn: ended.executionArn,
      StateMachineArn: ended.stateMachineArn,
      Name: ended.name,
      Status: ended.status,
      StartDate: ended.startDate.getTime(),
      StopDate: ended.stopDate?.getTime() ?? null,
      Input: JSON.stringify(ended.input),
      Output: pattern === 'sync:2' ? toJson(ended.output) : JSON.stringify(ended.output),
    };
  }

  /** Calls `<Action>Command` of the service's SDK v3 client with the Task's (PascalCase) parameters. */
  private async sdkCall(service: 'dynamodb' | 's3', action: string, params: JsonObject): Promise<Json> {
    const module = (
      service === 'dynamodb' ? await import('@aws-sdk/client-dynamodb') : await import('@aws-sdk/client-s3')
    ) as Record<string, unknown>;
    const commandName = `${action.charAt(0).toUpperCase()}${action.slice(1)}Command`;
    const Command = module[commandName] as (new (input: unknown) => never) | undefined;
    if (Command === undefined) {
      throw new StatesError(
        'LocalCloud.UnsupportedResource',
        `${service}:${action} has no SDK command ${commandName}.`,
      );
    }
    const client = (service === 'dynamodb' ? this.services.dynamodb : this.services.s3) as unknown as {
      send(command: unknown): Promise<Record<string, unknown>>;
    };
    try {
      const { $metadata: _metadata, ...response } = await client.send(new Command(params));
      const body = response.Body as { transformToString?: () => Promise<string> } | undefined;
      if (body?.transformToString !== undefined) response.Body = await body.transformToString();
      return toJson(response);
    } catch (error) {
      throw serviceError(service, error);
    }
  }

  /** A Distributed Map with an ItemReader: read the items, then run the Map as a nested machine. */
  private async distributedMap(
    stateName: string,
    input: Json,
    machine: LocalStateMachine,
    context: Record<string, unknown>,
  ): Promise<Json> {
    const fed = machine.itemReaders.get(stateName);
    if (fed === undefined) throw unsupported(stateName, 'an ItemReader the harness did not prepare');
    const { map, reader } = fed;
    const { reader: parameters, input: mapInput } = input as { reader: JsonObject; input: Json };
    let items = await this.readItems(
      stateName,
      reader.Resource ?? '',
      reader.ReaderConfig?.InputType,
      parameters,
    );
    if (reader.ReaderConfig?.MaxItems !== undefined) items = items.slice(0, reader.ReaderConfig.MaxItems);
    const batcher = map.ItemBatcher as { MaxItemsPerBatch?: number; BatchInput?: Json } | undefined;
    if (batcher !== undefined) {
      const size = Math.max(1, batcher.MaxItemsPerBatch ?? 100);
      const batches: Json[] = [];
      for (let i = 0; i < items.length; i += size) {
        batches.push({
          Items: items.slice(i, i + size),
          ...(batcher.BatchInput === undefined ? {} : { BatchInput: batcher.BatchInput }),
        });
      }
      items = batches;
    }
    const {
      ItemBatcher: _batcher,
      ResultWriter: _writer,
      ToleratedFailurePercentage: _percentage,
      ToleratedFailureCount: _count,
      Label: _label,
      ...inner
    } = map;
    const field = '__localCloudItems';
    const nested: StateMachineDefinition = {
      StartAt: stateName,
      States: { [stateName]: { ...inner, ItemsPath: `$.${field}`, End: true } as never },
    };
    const nestedInput: Json =
      mapInput !== null && typeof mapInput === 'object' && !Array.isArray(mapInput)
        ? { ...mapInput, [field]: items }
        : { [field]: items };
    const engine = new StateMachine(nested, { validationOptions: { checkArn: false } });
    const run = engine.run(nestedInput, { overrides: this.overrides(machine, context), context });
    const events: EventLog[] = [];
    const consumer = (async () => {
      for await (const event of run.eventLogs) events.push(event);
    })();
    const parent = this.executions.find(
      (execution) => execution.executionArn === (context.Execution as { Id?: string }).Id,
    );
    const keepHistory = async (): Promise<void> => {
      await consumer.catch(() => undefined);
      // The nested run's events join the parent's history, marked with the Map's name.
      parent?.history.push(...events.map((event) => ({ ...event, distributedMap: stateName }) as EventLog));
    };
    try {
      const result = (await run.result) as Json;
      await keepHistory();
      return result;
    } catch {
      await keepHistory();
      const failed = events.find((event) => event?.type === 'ExecutionFailed') as
        | { Error?: string; Cause?: unknown }
        | undefined;
      throw new StatesError(
        failed?.Error ?? 'States.TaskFailed',
        typeof failed?.Cause === 'string' ? failed.Cause : JSON.stringify(failed?.Cause ?? ''),
      );
    }
  }

  private async readItems(
    stateName: string,
    resource: string,
    inputType: string | undefined,
    params: JsonObject,
  ): Promise<Json[]> {
    const action = /:::(s3:\w+)$/.exec(resource)?.[1];
    if (action === 's3:getObject' && (inputType === undefined || inputType === 'JSON')) {
      const response = (await this.sdkCall('s3', 'getObject', params)) as { Body?: string };
      const parsed = safeParse(response.Body ?? 'null');
      if (!Array.isArray(parsed)) {
        throw new StatesError(
          'States.ItemReaderFailed',
          `${stateName}: s3://${params.Bucket}/${params.Key} does not hold a JSON array.`,
        );
      }
      return parsed;
    }
    if (action === 's3:listObjectsV2') {
      const items: Json[] = [];
      let token: string | undefined;
      do {
        const page = (await this.sdkCall('s3', 'listObjectsV2', {
          ...params,
          ...(token ? { ContinuationToken: token } : {}),
        })) as {
          Contents?: JsonObject[];
          NextContinuationToken?: string;
        };
        items.push(...(page.Contents ?? []));
        token = page.NextContinuationToken;
      } while (token !== undefined);
      return items;
    }
    throw new StatesError(
      'LocalCloud.UnsupportedResource',
      `${stateName}: ItemReader ${resource} (${inputType ?? 'no InputType'}) is not supported locally; use a JSON file (s3:getObject) or s3:listObjectsV2.`,
    );
  }
}

function unsupported(stateName: string, resource: string): StatesError {
  return new StatesError(
    'LocalCloud.UnsupportedResource',
    `Task ${stateName}: the local cloud has no implementation for ${resource}; pass taskOverrides: { '${stateName}': (input) => ... }.`,
  );
}

function toJson(value: unknown): Json {
  return value === undefined ? null : (JSON.parse(JSON.stringify(value)) as Json);
}

function safeParse(text: string): Json {
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}
