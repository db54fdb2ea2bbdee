// Runs DynamoDB Local (the AWS emulator jar shipped in `amplify-dynamodb-simulator`) in memory on
// 127.0.0.1, and creates a template's tables in it; the Java process never outlives its Node parent.
//
// Lifetime: java is started by a tiny `sh` watchdog that reads its stdin; when Node exits for any
// reason (even SIGKILL) the pipe closes, `read` returns and the watchdog kills java. `stop()` and
// the process exit hooks kill java directly as well.
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { Agent, createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  type AttributeDefinition,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  ListTablesCommand,
  type LocalSecondaryIndex,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { LocalCloudError, LocalCloudStartupError } from './errors.js';
import { onProcessExit } from './process-hygiene.js';
import type { TemplateModel } from './template.js';

/** A DynamoDB Local database to talk to: a server of its own, or a namespace of a shared one. */
export interface DynamoDbLocalEndpoint {
  readonly endpoint: string;
  /** A new client for this database (any credentials DynamoDB Local accepts reach the same tables). */
  client(): DynamoDBClient;
  /** Ends it (kills java, or closes the namespace) and destroys the clients it made. Idempotent. */
  stop(): Promise<void>;
}

/** A running DynamoDB Local. */
export interface RunningDynamoDbLocal extends DynamoDbLocalEndpoint {
  readonly port: number;
  /** The pid of the java process (for tests that prove it is gone after `stop`). */
  readonly pid: number;
  /** Kills java and waits until it has exited. Idempotent. */
  stop(): Promise<void>;
}

export interface DynamoDbLocalOptions {
  /**
   * How long to wait for the emulator to answer. A JVM starting on a loaded 2-core machine (the test suite's
   * files run in parallel) took over 30 s; a long deadline costs nothing when it starts at once.
   * @default 120000
   */
  readonly startTimeoutMs?: number;
  /** Extra JVM flags. @default ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'] */
  readonly jvmArgs?: readonly string[];
  /**
   * Folders the watchdog deletes after java has exited — also when Node was SIGKILLed, when no
   * exit hook runs. The local cloud passes its temp root here.
   */
  readonly removeWhenGone?: readonly string[];
  /**
   * One database per access key id and region (DynamoDB Local without `-sharedDb`), for a server that
   * `openDynamoDbNamespace` divides between users. Off, every request reaches the one database whatever its
   * credentials and region, as a single user of the server expects (the SDK's clients, the local cloud's
   * handlers and a CLI each sign with their own keys). @default false
   */
  readonly databasePerCredentials?: boolean;
}

/** The folder holding `DynamoDBLocal.jar` and its native libraries. */
export function dynamoDbLocalDirectory(): string {
  const require = createRequire(import.meta.url);
  // Resolve the package folder without importing its JS (which needs ~/.amplify).
  const packageJson = require.resolve('amplify-dynamodb-simulator/package.json');
  return path.join(path.dirname(packageJson), 'emulator');
}

/** Starts DynamoDB Local in memory on a free loopback port and waits until it answers. */
export async function startDynamoDbLocal(options: DynamoDbLocalOptions = {}): Promise<RunningDynamoDbLocal> {
  const directory = dynamoDbLocalDirectory();
  const deadline = Date.now() + (options.startTimeoutMs ?? 120_000);
  const jvmArgs = options.jvmArgs ?? ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'];
  let lastError: unknown;
  // A free port can be taken between probing and java binding it; retry with another one.
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const logFile = path.join(tmpdir(), `dynamodb-local-${process.pid}-${port}.log`);
    const watchdog = spawnWatchdog(directory, port, jvmArgs, options.databasePerCredentials ?? false, [
      logFile,
      ...(options.removeWhenGone ?? []),
    ]);
    try {
      const pid = await watchdog.javaPid;
      const endpoint = `http://127.0.0.1:${port}`;
      const probe = makeClient(endpoint);
      try {
        await waitUntilReady(probe, watchdog.exited, deadline);
      } finally {
        probe.destroy();
      }
      return running(endpoint, port, pid, watchdog.child, watchdog.exited, logFile);
    } catch (error) {
      lastError = new LocalCloudStartupError(`${String(error)}; java said: ${tail(logFile)}`, {
        cause: error,
      });
      // A retry follows: the caller's folders must survive this attempt's watchdog.
      watchdog.child.stdin?.write('keep\n');
      await killAndWait(watchdog.child, watchdog.exited, await watchdog.javaPid.catch(() => undefined));
      if (Date.now() > deadline) break;
    }
  }
  throw new LocalCloudStartupError(
    `DynamoDB Local did not start (java -jar ${path.join(directory, 'DynamoDBLocal.jar')}). Check that Java 17+ is on PATH and that amplify-dynamodb-simulator is installed: ${String(lastError)}`,
    { cause: lastError },
  );
}

/**
 * The region every namespace's requests are signed for on the shared server: one region, so a namespace is one
 * database whatever region its callers name (as with `-sharedDb`).
 */
const NAMESPACE_REGION = 'us-east-1';

/** The access key id and region in a SigV4 Authorization header's credential scope. */
const CREDENTIAL_SCOPE = /Credential=([^/\s,]+)\/(\d{8})\/([^/\s,]+)\//;

/**
 * Opens a database of its own on a shared DynamoDB Local (one started with `databasePerCredentials`): what reaches
 * the returned endpoint lands in this namespace's database whatever its credentials and region, and nothing else
 * does — as if it were a server of its own started with `-sharedDb`. Many test files can so share one java
 * process, each with nothing of the others' in sight.
 *
 * How: a loopback proxy rewrites the access key id and region of each request's credential scope to a random key
 * no other namespace holds (DynamoDB Local checks no signatures; it keeps one database per key and region). Why
 * not let the callers pick a key per namespace: the local cloud's handlers and the CLI get one key pair for S3 and
 * DynamoDB alike, and s3rver accepts only its `S3RVER` key, while a test's own client signs with another key and
 * must see the same tables; a region a test passes must stay what it passes. Why not a table-name prefix: the
 * namespaces would still share one database, so a name the prefix misses, or a ListTables, would reach another's.
 *
 * A key DynamoDB Local refuses (it accepts letters and digits only) passes as it came, so it is refused as by a
 * server of one's own (UnrecognizedClientException), and touches no database; an unsigned request is refused here.
 * `stop()` deletes the namespace's tables (the shared server lives for a whole test run: its heap would keep
 * them) and closes the proxy; the server runs on.
 */
export async function openDynamoDbNamespace(server: string): Promise<DynamoDbLocalEndpoint> {
  const upstream = new URL(server);
  const accessKeyId = `ns${randomBytes(12).toString('hex')}`;
  const agent = new Agent({ keepAlive: true });
  const proxy = createHttpServer((request, response) => {
    const authorization = rescope(request.headers.authorization, accessKeyId);
    if (authorization === undefined) {
      request.resume();
      response.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
      response.end(
        JSON.stringify({
          __type: 'com.amazon.coral.service#MissingAuthenticationTokenException',
          message:
            'Request is missing a SigV4 Authorization header (the DynamoDB Local namespace needs one).',
        }),
      );
      return;
    }
    const forwarded = httpRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: request.method,
        path: request.url,
        headers: { ...request.headers, authorization },
        agent,
      },
      (answer) => {
        response.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(response);
      },
    );
    forwarded.once('error', (error) => response.destroy(error));
    request.pipe(forwarded);
  });
  const port = await new Promise<number>((resolve, reject) => {
    proxy.once('error', reject);
    proxy.listen(0, '127.0.0.1', () => {
      const address = proxy.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else
        reject(new LocalCloudStartupError('Could not listen on 127.0.0.1 for the DynamoDB Local namespace.'));
    });
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const clients = clientsOf(endpoint);
  const closeProxy = (): void => {
    proxy.close();
    proxy.closeAllConnections();
    agent.destroy();
  };
  const probe = makeClient(endpoint);
  try {
    await probe.send(new ListTablesCommand({ Limit: 1 }));
  } catch (error) {
    closeProxy();
    throw new LocalCloudStartupError(
      `The shared DynamoDB Local at ${server} does not answer: ${String(error)}`,
      {
        cause: error,
      },
    );
  } finally {
    probe.destroy();
  }
  let stopping: Promise<void> | undefined;
  return {
    endpoint,
    client: clients.make,
    stop() {
      stopping ??= (async () => {
        clients.destroyAll();
        await deleteAllTables(server, accessKeyId).catch(() => undefined);
        closeProxy();
      })();
      return stopping;
    },
  };
}

/**
 * The Authorization header with the namespace's key and region in its credential scope; as it came when DynamoDB
 * Local would refuse its key anyway; undefined when the request is not SigV4-signed.
 */
function rescope(authorization: string | undefined, accessKeyId: string): string | undefined {
  const match = authorization === undefined ? null : CREDENTIAL_SCOPE.exec(authorization);
  if (authorization === undefined || match === null) return undefined;
  if (!/^[A-Za-z0-9]+$/.test(match[1] ?? '')) return authorization;
  return authorization.replace(CREDENTIAL_SCOPE, `Credential=${accessKeyId}/$2/${NAMESPACE_REGION}/`);
}

/** Deletes every table of one namespace, straight on the shared server. */
async function deleteAllTables(server: string, accessKeyId: string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint: server,
    region: NAMESPACE_REGION,
    credentials: { accessKeyId, secretAccessKey: accessKeyId },
    maxAttempts: 1,
  });
  try {
    const names: string[] = [];
    let after: string | undefined;
    do {
      const page = await client.send(new ListTablesCommand({ ExclusiveStartTableName: after }));
      names.push(...(page.TableNames ?? []));
      after = page.LastEvaluatedTableName;
    } while (after !== undefined);
    for (const TableName of names) await client.send(new DeleteTableCommand({ TableName }));
  } finally {
    client.destroy();
  }
}

/**
 * Creates every `AWS::DynamoDB::Table` (and `GlobalTable`) of the template: keys, GSIs, LSIs and
 * TTL exactly as synthesized, under the table's local physical name. Returns logical id → name.
 */
export async function createTablesFromTemplate(
  client: DynamoDBClient,
  model: TemplateModel,
): Promise<Map<string, string>> {
  const created = new Map<string, string>();
  const tables = [
    ...model.resourcesOfType('AWS::DynamoDB::Table'),
    ...model.resourcesOfType('AWS::DynamoDB::GlobalTable'),
  ];
  for (const [logicalId, resource] of tables) {
    const props = (model.resolve(resource.Properties ?? {}) ?? {}) as TableProperties;
    const name = model.physicalName(logicalId);
    if (props.KeySchema === undefined || props.AttributeDefinitions === undefined) {
      throw new LocalCloudError(`Table ${logicalId} has no KeySchema/AttributeDefinitions in the template.`);
    }
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        KeySchema: props.KeySchema,
        AttributeDefinitions: props.AttributeDefinitions,
        GlobalSecondaryIndexes: props.GlobalSecondaryIndexes?.map((index) => ({
          IndexName: index.IndexName,
          KeySchema: index.KeySchema,
          Projection: index.Projection ?? { ProjectionType: 'ALL' },
        })),
        LocalSecondaryIndexes: props.LocalSecondaryIndexes?.map((index) => ({
          IndexName: index.IndexName,
          KeySchema: index.KeySchema,
          Projection: index.Projection ?? { ProjectionType: 'ALL' },
        })),
        StreamSpecification:
          props.StreamSpecification === undefined
            ? undefined
            : { StreamEnabled: true, StreamViewType: props.StreamSpecification.StreamViewType },
      }),
    );
    const ttl = props.TimeToLiveSpecification;
    if (ttl?.AttributeName !== undefined && ttl.Enabled !== false) {
      await client.send(
        new UpdateTimeToLiveCommand({
          TableName: name,
          TimeToLiveSpecification: { AttributeName: ttl.AttributeName, Enabled: true },
        }),
      );
    }
    created.set(logicalId, name);
  }
  return created;
}

interface TableProperties {
  KeySchema?: KeySchemaElement[];
  AttributeDefinitions?: AttributeDefinition[];
  GlobalSecondaryIndexes?: GlobalSecondaryIndex[];
  LocalSecondaryIndexes?: LocalSecondaryIndex[];
  TimeToLiveSpecification?: { AttributeName?: string; Enabled?: boolean };
  StreamSpecification?: { StreamViewType?: 'NEW_IMAGE' | 'OLD_IMAGE' | 'NEW_AND_OLD_IMAGES' | 'KEYS_ONLY' };
}

function makeClient(endpoint: string): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    maxAttempts: 1,
  });
}

/** Clients of `endpoint` handed out to callers, each destroyed when the endpoint stops. */
function clientsOf(endpoint: string): { make(): DynamoDBClient; destroyAll(): void } {
  const made: DynamoDBClient[] = [];
  return {
    make() {
      const client = makeClient(endpoint);
      made.push(client);
      return client;
    },
    destroyAll() {
      for (const client of made.splice(0)) client.destroy();
    },
  };
}

function running(
  endpoint: string,
  port: number,
  pid: number,
  child: ChildProcess,
  exited: Promise<void>,
  logFile: string,
): RunningDynamoDbLocal {
  const clients = clientsOf(endpoint);
  let stopping: Promise<void> | undefined;
  const unhook = onProcessExit(() => {
    killQuietly(pid, 'SIGKILL');
    child.kill('SIGKILL');
    rmSync(logFile, { force: true });
  });
  return {
    endpoint,
    port,
    pid,
    client: clients.make,
    stop() {
      stopping ??= (async () => {
        clients.destroyAll();
        await killAndWait(child, exited, pid);
        rmSync(logFile, { force: true });
        unhook();
      })();
      return stopping;
    },
  };
}

/**
 * `sh` runs java in the background, prints its pid, and kills it when stdin closes (EOF, also when
 * Node dies), then removes the log and the caller's folders — unless it first read `keep`.
 */
function spawnWatchdog(
  directory: string,
  port: number,
  jvmArgs: readonly string[],
  databasePerCredentials: boolean,
  removeWhenGone: readonly [logFile: string, ...folders: string[]],
): { child: ChildProcess; javaPid: Promise<number>; exited: Promise<void> } {
  const java = ['java', ...jvmArgs, '-Djava.library.path=./DynamoDBLocal_lib', '-jar', 'DynamoDBLocal.jar']
    .map(shellQuote)
    .join(' ');
  const [logFile, ...folders] = removeWhenGone;
  const script = `${java} -inMemory${databasePerCredentials ? '' : ' -sharedDb'} -port ${port} >${shellQuote(logFile)} 2>&1 </dev/null & pid=$!
echo "pid $pid"
read command
kill -9 "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
rm -f ${shellQuote(logFile)}
if [ "$command" != keep ]; then rm -rf ${folders.map(shellQuote).join(' ')}; fi
exit 0`;
  const child = spawn('sh', ['-c', script], { cwd: directory, stdio: ['pipe', 'pipe', 'ignore'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const javaPid = new Promise<number>((resolve, reject) => {
    let buffer = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      const match = /pid (\d+)/.exec(buffer);
      if (match?.[1] !== undefined) resolve(Number(match[1]));
    });
    child.once('error', reject);
    void exited.then(() =>
      reject(new LocalCloudStartupError('The DynamoDB Local watchdog exited before java started.')),
    );
  });
  return { child, javaPid, exited };
}

async function waitUntilReady(
  client: DynamoDBClient,
  exited: Promise<void>,
  deadline: number,
): Promise<void> {
  let gone = false;
  void exited.then(() => {
    gone = true;
  });
  for (;;) {
    try {
      await client.send(new ListTablesCommand({ Limit: 1 }));
      return;
    } catch (error) {
      if (gone) throw new LocalCloudStartupError('DynamoDB Local exited during startup.', { cause: error });
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Kills java (by pid) and the watchdog, then waits until both are gone (bounded). */
async function killAndWait(
  child: ChildProcess,
  exited: Promise<void>,
  javaPid: number | undefined,
): Promise<void> {
  child.stdin?.end();
  if (javaPid !== undefined) killQuietly(javaPid, 'SIGTERM');
  const timeout = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  for (let waited = 0; javaPid !== undefined && isAlive(javaPid) && waited < 5000; waited += 25) {
    if (waited === 2000) killQuietly(javaPid, 'SIGKILL');
    await timeout(25);
  }
  await Promise.race([exited, timeout(2000)]);
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
}

/** Whether a process with this pid exists (a zombie counts as gone once its parent reaped it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Already gone.
  }
}

/** The last lines java wrote, for startup error messages. */
function tail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join(' | ') || '(nothing)';
  } catch {
    return '(no log)';
  }
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]+$/.test(value) ? value : `'${value.replaceAll("'", "'\\''")}'`;
}

/** An OS-assigned free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new LocalCloudStartupError('Could not get a free port on 127.0.0.1.'));
      });
    });
  });
}
