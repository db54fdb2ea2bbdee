// Runs one state machine execution by hand on the local cloud: synthesizes the stack, optionally
// uploads local folders to the local S3, starts the execution, prints the result, tears down.
//
//   npx tsx infra/local/run-execution.ts <stateMachine> [input.json] [--upload dir=s3://bucket/prefix]
//     [--stack module.ts:ExportedStackClass] [-c config.json] [--name run-1] [--history]
//
// <stateMachine> is a logical id or name (the command lists them when it does not exist). The default
// stack is infra/app.ts's LakeCompactorStack with the example config (or -c <file>).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { App, type Stack } from 'aws-cdk-lib';
import { Command } from 'commander';
import { LocalCloudError } from './errors.js';
import { LocalCloud } from './local-cloud.js';

interface Options {
  readonly upload: string[];
  readonly stack?: string;
  readonly config?: string;
  readonly name?: string;
  readonly history?: boolean;
  readonly waitMs?: string;
}

/** Builds the stack to run: a `module:Class` given on the command line, or the project's own app. */
async function buildStack(app: App, options: Options): Promise<Stack> {
  if (options.stack !== undefined) {
    const [file, exportName] = options.stack.split(':');
    if (file === undefined || exportName === undefined) {
      throw new LocalCloudError(
        '--stack takes module.ts:ExportedStackClass, e.g. test/support/toy-stack.ts:ToyStack',
      );
    }
    const module = (await import(pathToFileURL(path.resolve(file)).href)) as Record<string, unknown>;
    const StackClass = module[exportName] as (new (scope: App, id: string) => Stack) | undefined;
    if (typeof StackClass !== 'function')
      throw new LocalCloudError(`${file} does not export a stack class ${exportName}.`);
    return new StackClass(app, exportName);
  }
  const { LakeCompactorStack, loadConfig } = await import('../app.js');
  const config = loadConfig(app);
  return new LakeCompactorStack(app, config.stackName ?? 'LakeCompactor', { compactor: config });
}

/** Uploads every file under `dir` to `s3://bucket/prefix` (keys keep the relative paths). */
async function upload(cloud: LocalCloud, spec: string): Promise<number> {
  const match = /^(.+)=s3:\/\/([^/]+)\/?(.*)$/.exec(spec);
  if (match?.[1] === undefined || match[2] === undefined) {
    throw new LocalCloudError(`--upload takes dir=s3://bucket/prefix, got "${spec}".`);
  }
  const [, dir, bucket, prefix = ''] = match;
  const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile());
  for (const file of files) {
    const full = path.join(file.parentPath, file.name);
    const key = `${prefix}${prefix === '' || prefix.endsWith('/') ? '' : '/'}${path.relative(dir, full).split(path.sep).join('/')}`;
    await cloud.s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: readFileSync(full) }));
  }
  return files.length;
}

async function main(argv: readonly string[]): Promise<number> {
  const program = new Command()
    .name('run-execution')
    .argument('<stateMachine>', 'logical id or name of the state machine')
    .argument('[input]', 'JSON file with the execution input (default {})')
    .option(
      '--upload <spec>',
      'dir=s3://bucket/prefix to upload before the run (repeatable)',
      (v: string, all: string[]) => [...all, v],
      [],
    )
    .option('--stack <module:Class>', 'a stack class to run instead of infra/app.ts')
    .option('-c, --config <file>', 'LakeCompactor config JSON (as `cdk -c config=`)')
    .option('--name <name>', 'execution name')
    .option('--wait-ms <ms>', 'milliseconds every Wait state pauses', '0')
    .option('--history', 'print the execution history')
    .parse(argv);
  const [stateMachine, inputFile] = program.processedArgs as [string, string | undefined];
  const options = program.opts<Options>();
  // The cloud assembly goes to a temp folder removed at the end (CDK would leave /tmp/cdk.out*).
  const outdir = mkdtempSync(path.join(tmpdir(), 'run-execution-cdk-'));
  let cloud: LocalCloud | undefined;
  try {
    const app = new App({
      outdir,
      context: {
        'aws:cdk:bundling-stacks': [],
        ...(options.config === undefined ? {} : { config: options.config }),
      },
    });
    const running = await LocalCloud.start({
      stack: await buildStack(app, options),
      stepFunctions: { waitTimeMs: Number(options.waitMs ?? 0), retryIntervalMs: 0 },
    });
    cloud = running;
    for (const spec of options.upload)
      console.error(`uploaded ${await upload(running, spec)} files (${spec})`);
    await running.drain();
    const input = inputFile === undefined ? {} : (JSON.parse(readFileSync(inputFile, 'utf8')) as unknown);
    const execution = await running.runExecution(stateMachine, input, options.name);
    await running.drain();
    if (options.history) for (const event of execution.history) console.error(JSON.stringify(event));
    const { name, status, output, error, cause } = execution;
    console.log(JSON.stringify({ name, status, output, error, cause }, null, 2));
    return status === 'SUCCEEDED' ? 0 : 1;
  } finally {
    await cloud?.stop();
    rmSync(outdir, { recursive: true, force: true });
  }
}

main(process.argv).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? `${error.name}: ${error.message}` : String(error));
    process.exitCode = 2;
  },
);
