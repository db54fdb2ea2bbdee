// One HTTP endpoint on 127.0.0.1 for the AWS services the harness emulates itself, so handlers use
// the real SDK clients: Step Functions (JSON 1.0), EventBridge PutEvents (JSON 1.1), SNS Publish (Query).
//
// Step Functions: StartExecution, DescribeExecution, ListExecutions, StopExecution,
// GetExecutionHistory (engine events, not the AWS event shape), backed by the local runner.
// EventBridge PutEvents (recorded in `cloud.events` and routed to rules) and SNS Publish (recorded
// in `cloud.notifications`).
// Other operations answer `UnknownOperationException`. Signatures are not checked.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  type LocalExecution,
  type RecordedEvent,
  type RecordedNotification,
  StatesError,
  type StepFunctionsRunner,
} from './step-functions.js';

/** A running endpoint. */
export interface RunningServiceEndpoint {
  /** `http://127.0.0.1:<port>`: use for AWS_ENDPOINT_URL_SFN, _EVENTBRIDGE and _SNS. */
  readonly endpoint: string;
  readonly server: Server;
  stop(): Promise<void>;
}

/** What the endpoint serves; read per request, so it may be wired after the server is up. */
export interface ServiceBackends {
  readonly runner: StepFunctionsRunner;
  /** Records an EventBridge entry and routes it to matching rules. */
  putEvent(event: RecordedEvent): void;
  readonly notifications: RecordedNotification[];
}

/** Starts the endpoint on a free loopback port. */
export async function startServiceEndpoint(backends: () => ServiceBackends): Promise<RunningServiceEndpoint> {
  const server = createServer((request, response) => {
    void handle(backends, request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    server,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function handle(
  backends: () => ServiceBackends,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  const target = String(request.headers['x-amz-target'] ?? '');
  if (
    target === '' &&
    String(request.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded')
  ) {
    return handleSns(backends, new URLSearchParams(text), response);
  }
  try {
    const body = (text === '' ? {} : JSON.parse(text)) as Record<string, unknown>;
    const operation = target.slice(target.indexOf('.') + 1);
    if (target.startsWith('AWSEvents.')) {
      send(response, 200, putEvents(backends(), operation, body), 'application/x-amz-json-1.1');
    } else {
      send(response, 200, operate(backends().runner, operation, body));
    }
  } catch (error) {
    const name =
      error instanceof StatesError
        ? error.name
        : error instanceof SyntaxError
          ? 'SerializationException'
          : 'InternalFailure';
    const status = name === 'InternalFailure' ? 500 : 400;
    send(response, status, {
      __type: `com.amazonaws.states#${name}`,
      message: error instanceof Error ? error.message : String(error),
    });
  }
}

function putEvents(backends: ServiceBackends, operation: string, body: Record<string, unknown>): unknown {
  if (operation !== 'PutEvents') {
    throw new StatesError(
      'UnknownOperationException',
      `The local EventBridge endpoint only implements PutEvents, not ${operation}.`,
    );
  }
  const entries = (body.Entries as Record<string, unknown>[] | undefined) ?? [];
  return {
    FailedEntryCount: 0,
    Entries: entries.map((entry) => {
      const eventId = randomUUID();
      const detail = typeof entry.Detail === 'string' ? parseOr(entry.Detail) : entry.Detail;
      backends.putEvent({
        eventId,
        eventBusName: String(entry.EventBusName ?? 'default'),
        source: entry.Source === undefined ? undefined : String(entry.Source),
        detailType: entry.DetailType === undefined ? undefined : String(entry.DetailType),
        detail,
        resources: entry.Resources as string[] | undefined,
        time: new Date(),
      });
      return { EventId: eventId };
    }),
  };
}

function handleSns(backends: () => ServiceBackends, form: URLSearchParams, response: ServerResponse): void {
  const action = form.get('Action');
  if (action !== 'Publish') {
    const xml = `<ErrorResponse><Error><Type>Sender</Type><Code>InvalidAction</Code><Message>The local SNS endpoint only implements Publish, not ${escapeXml(String(action))}.</Message></Error><RequestId>${randomUUID()}</RequestId></ErrorResponse>`;
    response.writeHead(400, { 'content-type': 'text/xml' });
    response.end(xml);
    return;
  }
  const messageId = randomUUID();
  backends().notifications.push({
    messageId,
    topicArn: form.get('TopicArn') ?? form.get('TargetArn') ?? undefined,
    subject: form.get('Subject') ?? undefined,
    message: form.get('Message') ?? '',
    time: new Date(),
  });
  response.writeHead(200, { 'content-type': 'text/xml' });
  response.end(
    `<PublishResponse xmlns="http://sns.amazonaws.com/doc/2010-03-31/"><PublishResult><MessageId>${messageId}</MessageId></PublishResult><ResponseMetadata><RequestId>${randomUUID()}</RequestId></ResponseMetadata></PublishResponse>`,
  );
}

function parseOr(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function escapeXml(text: string): string {
  return text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;');
}

function operate(runner: StepFunctionsRunner, operation: string, body: Record<string, unknown>): unknown {
  switch (operation) {
    case 'StartExecution': {
      const input = body.input === undefined ? {} : parseInput(String(body.input));
      const execution = runner.start(
        String(body.stateMachineArn),
        input,
        body.name === undefined ? undefined : String(body.name),
      );
      return { executionArn: execution.executionArn, startDate: seconds(execution.startDate) };
    }
    case 'DescribeExecution':
      return describe(runner.describe(String(body.executionArn)));
    case 'StopExecution': {
      const execution = runner.stop(
        String(body.executionArn),
        body.error === undefined ? undefined : String(body.error),
        body.cause === undefined ? undefined : String(body.cause),
      );
      return { stopDate: seconds(execution.stopDate ?? new Date()) };
    }
    case 'ListExecutions': {
      const machine = runner.machine(String(body.stateMachineArn));
      const filter = body.statusFilter === undefined ? undefined : String(body.statusFilter);
      const offset = body.nextToken === undefined ? 0 : Number(body.nextToken);
      const max = Number(body.maxResults ?? 100) || 100;
      const matching = runner.executions
        .filter(
          (execution) =>
            execution.stateMachineArn === machine.arn &&
            (filter === undefined || execution.status === filter),
        )
        .reverse();
      const page = matching.slice(offset, offset + max);
      return {
        executions: page.map((execution) => ({
          executionArn: execution.executionArn,
          stateMachineArn: execution.stateMachineArn,
          name: execution.name,
          status: execution.status,
          startDate: seconds(execution.startDate),
          ...(execution.stopDate === undefined ? {} : { stopDate: seconds(execution.stopDate) }),
        })),
        ...(offset + max < matching.length ? { nextToken: String(offset + max) } : {}),
      };
    }
    case 'GetExecutionHistory': {
      const execution = runner.describe(String(body.executionArn));
      return {
        events: execution.history.map((event, index) => ({
          id: index + 1,
          timestamp: seconds(new Date((event as { timestamp?: number }).timestamp ?? Date.now())),
          type: (event as { type?: string }).type,
          localDetails: JSON.stringify(event),
        })),
      };
    }
    default:
      throw new StatesError(
        'UnknownOperationException',
        `The local Step Functions endpoint does not implement ${operation}.`,
      );
  }
}

function describe(execution: LocalExecution): Record<string, unknown> {
  return {
    executionArn: execution.executionArn,
    stateMachineArn: execution.stateMachineArn,
    name: execution.name,
    status: execution.status,
    startDate: seconds(execution.startDate),
    ...(execution.stopDate === undefined ? {} : { stopDate: seconds(execution.stopDate) }),
    input: JSON.stringify(execution.input),
    ...(execution.status === 'SUCCEEDED' ? { output: JSON.stringify(execution.output ?? null) } : {}),
    ...(execution.error === undefined ? {} : { error: execution.error }),
    ...(execution.cause === undefined ? {} : { cause: execution.cause }),
  };
}

function parseInput(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new StatesError('InvalidExecutionInput', 'The execution input is not valid JSON.');
  }
}

function seconds(date: Date): number {
  return date.getTime() / 1000;
}

function send(
  response: ServerResponse,
  status: number,
  body: unknown,
  contentType = 'application/x-amz-json-1.0',
): void {
  const text = JSON.stringify(body);
  response.writeHead(status, {
    'content-type': contentType,
    'content-length': Buffer.byteLength(text),
    'x-amzn-requestid': randomUUID(),
  });
  response.end(text);
}
