// Lambda functions of a template, run in-process: each function's module is loaded once, as its
// own instance, with that function's environment in process.env during the import (its cold start).
//
// Isolation: the entry is imported as `<file URL>?fn=<logicalId>&runner=<id>` (works under tsx and vitest),
// so two functions built from one entry get two module instances, each having parsed its own env, and so do the
// functions of two runners (two local clouds in one process).
// Modules imported *by* the entry are shared between functions: environment must be read at the
// entry's top level (or passed down), not in a shared module's top level. Imports are serialized,
// because process.env is global. The harness-wide variables (endpoints, credentials, region,
// checksum mode) stay in process.env while the cloud runs, since SDK clients read them lazily.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import { Stack } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Context } from 'aws-lambda';
import type { IConstruct } from 'constructs';
import { codeFilesOf } from '../node-function.js';
import { LocalCloudError } from './errors.js';
import type { TemplateModel } from './template.js';

/** A handler as Lambda calls it (async style; callback handlers are not supported). */
export type LambdaHandler = (event: unknown, context: Context) => Promise<unknown> | unknown;

/** The logical id of the function whose invocation the current async context belongs to. */
const running = new AsyncLocalStorage<string>();

/**
 * The logical id of the function whose handler is running in the caller's async context (undefined outside any
 * invocation): lets a test attribute what an SDK client sends to the function that sent it, as IAM would.
 */
export function runningFunction(): string | undefined {
  return running.getStore();
}

/** Where a function's code comes from. */
export interface FunctionSource {
  /** Source entry (TypeScript or JavaScript module). */
  readonly entry?: string;
  /** Bundled asset folder from `cdk.out` (holds `index.mjs` / `index.js`), used when `useBundles` is on. */
  readonly bundleDirectory?: string;
  /** Files the bundle carries beside the handler (`projectFunction`'s `codeFiles`): name → content. */
  readonly codeFiles?: Readonly<Record<string, string>>;
  /**
   * The function's code folder as Lambda's `LAMBDA_TASK_ROOT` names it, when running from source: a folder
   * holding its `codeFiles` (see `stageCodeFiles`). A bundle run uses the bundle's own folder instead.
   */
  readonly taskRoot?: string;
}

/** One function of the template, as the harness runs it. */
export interface LocalFunction {
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  /** The export called, from `Handler` (`index.handler` → `handler`). */
  readonly exportName: string;
  readonly timeoutSeconds: number;
  readonly memoryMb: number;
  /** What the function sees in process.env: harness variables + its resolved Environment.Variables. */
  readonly env: Readonly<Record<string, string>>;
  readonly source: FunctionSource;
}

/** Per-invocation choices. */
export interface InvokeOptions {
  /** Run the esbuild bundle from cdk.out instead of the source entry (proves the bundle). */
  readonly bundle?: boolean;
}

/** One recorded invocation (tests assert on what a handler received). */
export interface Invocation {
  readonly functionLogicalId: string;
  readonly event: unknown;
  readonly startedAt: Date;
  result?: unknown;
  error?: unknown;
  /** Settles when the invocation ends (success or error). */
  readonly done: Promise<void>;
}

/**
 * Finds each Lambda's source by walking the construct tree. For a NodejsFunction the entry is read
 * from its asset's bundling options (`relativeEntryPath` under `projectRoot`) — an internal of
 * aws-cdk-lib, so the caller's `entries` map wins and a convention (`functions/handlers/<kebab id>.ts`)
 * is the last resort. The bundle folder is the asset's staged path, when bundling ran.
 */
export function discoverFunctionSources(stack: Stack, projectRoot: string): Map<string, FunctionSource> {
  const sources = new Map<string, FunctionSource>();
  for (const construct of stack.node.findAll()) {
    if (!(construct instanceof lambda.Function)) continue;
    const cfn = construct.node.defaultChild as lambda.CfnFunction | undefined;
    if (cfn === undefined) continue;
    const logicalId = String(Stack.of(construct).resolve(cfn.logicalId));
    const stage = construct.node.tryFindChild('Code')?.node.tryFindChild('Stage') as
      | (IConstruct & {
          fingerprintOptions?: { bundling?: { relativeEntryPath?: string; projectRoot?: string } };
          absoluteStagedPath?: string;
        })
      | undefined;
    const bundling = stage?.fingerprintOptions?.bundling;
    let entry: string | undefined;
    if (bundling?.relativeEntryPath !== undefined) {
      entry = path.resolve(bundling.projectRoot ?? projectRoot, bundling.relativeEntryPath);
    } else {
      const conventional = path.join(projectRoot, 'functions', 'handlers', `${kebab(construct.node.id)}.ts`);
      if (existsSync(conventional)) entry = conventional;
    }
    const staged = stage?.absoluteStagedPath;
    const bundleDirectory =
      staged !== undefined && ['index.mjs', 'index.js'].some((file) => existsSync(path.join(staged, file)))
        ? staged
        : undefined;
    const codeFiles = codeFilesOf(construct);
    sources.set(logicalId, { entry, bundleDirectory, ...(codeFiles === undefined ? {} : { codeFiles }) });
  }
  return sources;
}

/**
 * Writes each function's `codeFiles` into `<directory>/<logicalId>/` — what Lambda unpacks the bundle into
 * — and names that folder as the source's `taskRoot`, so a handler run from source finds them as it would
 * beside its bundle.
 */
export function stageCodeFiles(
  sources: ReadonlyMap<string, FunctionSource>,
  directory: string,
): Map<string, FunctionSource> {
  const staged = new Map<string, FunctionSource>();
  for (const [logicalId, source] of sources) {
    if (source.codeFiles === undefined) {
      staged.set(logicalId, source);
      continue;
    }
    const taskRoot = path.join(directory, logicalId);
    mkdirSync(taskRoot, { recursive: true });
    for (const [name, content] of Object.entries(source.codeFiles)) {
      writeFileSync(path.join(taskRoot, name), content);
    }
    staged.set(logicalId, { ...source, taskRoot });
  }
  return staged;
}

/** Reads every `AWS::Lambda::Function` of the template with its resolved environment. */
export function functionsFromTemplate(
  model: TemplateModel,
  sources: ReadonlyMap<string, FunctionSource>,
  harnessEnv: Readonly<Record<string, string>>,
): Map<string, LocalFunction> {
  const functions = new Map<string, LocalFunction>();
  for (const [logicalId, resource] of model.resourcesOfType('AWS::Lambda::Function')) {
    const props = model.resolve(resource.Properties ?? {}) as {
      Handler?: string;
      Timeout?: number;
      MemorySize?: number;
      Environment?: { Variables?: Record<string, unknown> };
    };
    const name = model.physicalName(logicalId);
    const variables = Object.fromEntries(
      Object.entries(props.Environment?.Variables ?? {}).map(([key, value]) => [key, String(value)]),
    );
    const timeoutSeconds = Number(props.Timeout ?? 3);
    const memoryMb = Number(props.MemorySize ?? 128);
    const handler = props.Handler ?? 'index.handler';
    const source = sources.get(logicalId) ?? {};
    functions.set(logicalId, {
      logicalId,
      name,
      arn: model.arn(logicalId),
      exportName: handler.slice(handler.lastIndexOf('.') + 1),
      timeoutSeconds,
      memoryMb,
      env: {
        ...harnessEnv,
        AWS_LAMBDA_FUNCTION_NAME: name,
        AWS_LAMBDA_FUNCTION_VERSION: '$LATEST',
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(memoryMb),
        AWS_LAMBDA_LOG_GROUP_NAME: `/aws/lambda/${name}`,
        ...(source.taskRoot === undefined ? {} : { LAMBDA_TASK_ROOT: source.taskRoot }),
        ...variables,
        // No STS locally: with per-table isolation on (`tableIsolation`), each table's store keeps its in-process
        // scope check on the harness's credentials (functions/shared/table-stores.ts).
        ...(variables.DATA_ACCESS_ROLE_ARN === undefined ? {} : { DATA_ACCESS_CREDENTIALS: 'caller' }),
      },
      source,
    });
  }
  return functions;
}

/** Variables that must not be copied into the test process while a module loads. */
const PROCESS_ONLY_SKIP = new Set(['NODE_OPTIONS']);

/** Loads handler modules (once per function) and invokes them with a Lambda-like context. */
export class FunctionRunner {
  readonly invocations: Invocation[] = [];
  private readonly handlers = new Map<string, Promise<LambdaHandler>>();
  private importQueue: Promise<unknown> = Promise.resolve();
  private inFlight = 0;
  /**
   * Part of every module URL this runner imports: the process's module cache keeps a module per URL, so without it a
   * second runner (a second local cloud in one process, on other endpoints) would get the first one's instances,
   * which parsed the first one's environment at their cold start.
   */
  private readonly instance = randomUUID();

  constructor(
    private readonly functions: ReadonlyMap<string, LocalFunction>,
    private readonly options: {
      /** Explicit entries by logical id (win over discovery). */
      readonly entries?: Readonly<Record<string, string>>;
      /** Load the bundled asset instead of the source entry. */
      readonly useBundles?: boolean;
      /** Where bundles are copied to run (next to a `node_modules` link), when `useBundles`. */
      readonly bundleScratch?: string;
      /** node_modules providing what the Lambda runtime provides (the externalized `@aws-sdk/*`). */
      readonly nodeModules?: string;
    } = {},
  ) {}

  /** Whether any invocation is running. */
  get busy(): boolean {
    return this.inFlight > 0;
  }

  /** The function with this logical id; throws listing the known ones. */
  get(logicalId: string): LocalFunction {
    const fn = this.functions.get(logicalId);
    if (fn === undefined) {
      throw new LocalCloudError(
        `No Lambda function "${logicalId}" in the template; known: ${[...this.functions.keys()].join(', ') || '(none)'}.`,
      );
    }
    return fn;
  }

  /** Invokes a function's handler; rejects with the handler's error, as a synchronous Lambda invoke would. */
  async invoke(logicalId: string, event: unknown, options: InvokeOptions = {}): Promise<unknown> {
    const fn = this.get(logicalId);
    let settle: () => void = () => {};
    const invocation: Invocation = {
      functionLogicalId: logicalId,
      event: structuredClone(event),
      startedAt: new Date(),
      done: new Promise<void>((resolve) => {
        settle = resolve;
      }),
    };
    this.invocations.push(invocation);
    this.inFlight += 1;
    try {
      const handler = await this.load(fn, options.bundle ?? this.options.useBundles ?? false);
      const result = await running.run(logicalId, () => handler(event, lambdaContext(fn)));
      invocation.result = result;
      return result;
    } catch (error) {
      invocation.error = error;
      throw error;
    } finally {
      this.inFlight -= 1;
      settle();
    }
  }

  /** Imports the function's module (once), with its env in process.env during the import. */
  load(fn: LocalFunction, bundle: boolean): Promise<LambdaHandler> {
    const key = `${fn.logicalId}${bundle ? '#bundle' : ''}`;
    let loaded = this.handlers.get(key);
    if (loaded === undefined) {
      loaded = this.importQueue.then(() => this.importModule(fn, bundle));
      this.importQueue = loaded.catch(() => undefined);
      this.handlers.set(key, loaded);
    }
    return loaded;
  }

  private async importModule(fn: LocalFunction, bundle: boolean): Promise<LambdaHandler> {
    const file = this.moduleFile(fn, bundle);
    const previous = new Map<string, string | undefined>();
    // A bundle's code folder is where it runs from, as Lambda's /var/task is for the deployed function.
    const env = bundle ? { ...fn.env, LAMBDA_TASK_ROOT: path.dirname(file) } : fn.env;
    for (const [key, value] of Object.entries(env)) {
      if (PROCESS_ONLY_SKIP.has(key)) continue;
      previous.set(key, process.env[key]);
      process.env[key] = value;
    }
    try {
      const module = (await import(
        `${pathToFileURL(file).href}?fn=${encodeURIComponent(fn.logicalId)}&runner=${this.instance}`
      )) as Record<string, unknown>;
      const handler = module[fn.exportName];
      if (typeof handler !== 'function') {
        throw new LocalCloudError(
          `${file} does not export a function "${fn.exportName}" (the Handler of ${fn.logicalId}).`,
        );
      }
      return handler as LambdaHandler;
    } finally {
      for (const [key, value] of previous) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  }

  /**
   * A bundle excludes `@aws-sdk/*` (the Lambda runtime provides it), so it cannot run where CDK
   * staged it. The asset folder is copied (cdk.out stays untouched, so a later deploy zips only
   * the bundle) next to a `node_modules` link to the project's packages, which stand in for the runtime's.
   */
  private runnableBundle(fn: LocalFunction, directory: string): string {
    const scratch = this.options.bundleScratch;
    if (scratch === undefined) return directory;
    const target = path.join(scratch, fn.logicalId);
    mkdirSync(target, { recursive: true });
    cpSync(directory, target, { recursive: true });
    if (this.options.nodeModules !== undefined && !existsSync(path.join(target, 'node_modules'))) {
      symlinkSync(this.options.nodeModules, path.join(target, 'node_modules'), 'dir');
    }
    return target;
  }

  private moduleFile(fn: LocalFunction, bundle: boolean): string {
    const explicit = this.options.entries?.[fn.logicalId];
    if (bundle) {
      const directory = fn.source.bundleDirectory;
      if (directory === undefined) {
        throw new LocalCloudError(
          `No bundle for ${fn.logicalId}: build the stack with bundling (do not set the context 'aws:cdk:bundling-stacks' to []), or do not ask for the bundle.`,
        );
      }
      const runnable = this.runnableBundle(fn, directory);
      const mjs = path.join(runnable, 'index.mjs');
      return existsSync(mjs) ? mjs : path.join(runnable, 'index.js');
    }
    if (explicit !== undefined) return path.resolve(explicit);
    if (fn.source.entry === undefined) {
      throw new LocalCloudError(
        `Cannot find the handler module of ${fn.logicalId}; pass it in LocalCloud.start({ entries: { ${fn.logicalId}: 'path/to/handler.ts' } }).`,
      );
    }
    return fn.source.entry;
  }
}

function lambdaContext(fn: LocalFunction): Context {
  const deadline = Date.now() + fn.timeoutSeconds * 1000;
  const unsupported = (): never => {
    throw new LocalCloudError(
      'Callback-style Lambda completion (done/succeed/fail) is not supported; return a promise.',
    );
  };
  return {
    callbackWaitsForEmptyEventLoop: true,
    functionName: fn.name,
    functionVersion: '$LATEST',
    invokedFunctionArn: fn.arn,
    memoryLimitInMB: String(fn.memoryMb),
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${fn.name}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: unsupported,
    fail: unsupported,
    succeed: unsupported,
  };
}

function kebab(id: string): string {
  return id
    .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
    .replace(/[\s_]+/g, '-')
    .toLowerCase();
}
