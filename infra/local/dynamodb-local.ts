// Runs DynamoDB Local (the AWS emulator jar shipped in `amplify-dynamodb-simulator`) in memory on
// 127.0.0.1, and creates a template's tables in it; the Java process never outlives its Node parent.
//
// Lifetime: java is started by a tiny `sh` watchdog that reads its stdin; when Node exits for any
// reason (even SIGKILL) the pipe closes, `read` returns and the watchdog kills java. `stop()` and
// the process exit hooks kill java directly as well.
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import {
  type AttributeDefinition,
  CreateTableCommand,
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

/** A running DynamoDB Local. */
export interface RunningDynamoDbLocal {
  readonly endpoint: string;
  readonly port: number;
  /** The pid of the java process (for tests that prove it is gone after `stop`). */
  readonly pid: number;
  /** A new client for this server (any credentials are accepted). */
  client(): DynamoDBClient;
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
    const watchdog = spawnWatchdog(directory, port, jvmArgs, [logFile, ...(options.removeWhenGone ?? [])]);
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

function running(
  endpoint: string,
  port: number,
  pid: number,
  child: ChildProcess,
  exited: Promise<void>,
  logFile: string,
): RunningDynamoDbLocal {
  const clients: DynamoDBClient[] = [];
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
    client() {
      const client = makeClient(endpoint);
      clients.push(client);
      return client;
    },
    stop() {
      stopping ??= (async () => {
        for (const client of clients.splice(0)) client.destroy();
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
  removeWhenGone: readonly [logFile: string, ...folders: string[]],
): { child: ChildProcess; javaPid: Promise<number>; exited: Promise<void> } {
  const java = ['java', ...jvmArgs, '-Djava.library.path=./DynamoDBLocal_lib', '-jar', 'DynamoDBLocal.jar']
    .map(shellQuote)
    .join(' ');
  const [logFile, ...folders] = removeWhenGone;
  const script = `${java} -inMemory -sharedDb -port ${port} >${shellQuote(logFile)} 2>&1 </dev/null & pid=$!
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
