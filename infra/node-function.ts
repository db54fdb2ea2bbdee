// The one way this project builds a Lambda: Node.js 22 on arm64, an ESM bundle with source maps
// and kept class names, its own log group and X-Ray tracing — so every function behaves alike.
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemovalPolicy, Stack, Stage, Token, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct, IConstruct } from 'constructs';
import { ENGINE_NODE_OPTIONS } from '../functions/adapters/parquet-wasm/runtime.js';
import { nodeHeapLimitMb } from '../functions/core/memory-budget.js';

/**
 * The package's root: the folder with its package.json, above infra/ in this repository and above dist/infra/ in
 * the compiled, installed package.
 */
function packageRootOf(from: string): string {
  let dir = from;
  while (!existsSync(path.join(dir, 'package.json'))) {
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`projectFunction: no package.json above ${from}`);
    dir = parent;
  }
  return dir;
}

const root = packageRootOf(path.dirname(fileURLToPath(import.meta.url)));

/**
 * Where `npm run build` puts the handlers pre-bundled (scripts/bundle-lambdas.mjs): what an installed package
 * deploys, since it ships no handler sources to bundle.
 */
const prebundledRoot = path.join(root, 'dist', 'lambda');

export interface ProjectFunctionOptions
  extends Pick<
    nodejs.NodejsFunctionProps,
    'description' | 'memorySize' | 'timeout' | 'environment' | 'ephemeralStorageSize'
  > {
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** Ship parquet-wasm's `.wasm` beside the bundle (functions that read or write Parquet data pages). */
  readonly parquetWasm?: boolean;
  /**
   * Files written beside the handler in the function's code (name → content), e.g. the table config: what
   * does not fit the environment (see `ENVIRONMENT_LIMIT_BYTES`) ships with the code. The function finds
   * them in `LAMBDA_TASK_ROOT`; the local cloud stages them the same way (see `codeFilesOf`).
   * @default none
   */
  readonly codeFiles?: Readonly<Record<string, string>>;
}

/** The memory Lambda gives a function that sets none. */
const LAMBDA_DEFAULT_MEMORY_MB = 128;

/** Lambda refuses a function whose environment variables (names and values) exceed 4 KB in total. */
export const ENVIRONMENT_LIMIT_BYTES = 4096;

/**
 * What a deploy-time value (a `Ref` or `Fn::GetAtt` in the environment) is counted as: every such value
 * here is a resource name or ARN, and DynamoDB table names, the longest of them, stop at 255 characters.
 */
const DEPLOY_TIME_VALUE_BYTES = 256;

const codeFilesByFunction = new WeakMap<IConstruct, Readonly<Record<string, string>>>();

/**
 * The files `projectFunction` writes into this function's code (`codeFiles`), for harnesses that run the
 * handler from source (the local cloud), where no bundle holds them.
 */
export function codeFilesOf(fn: IConstruct): Readonly<Record<string, string>> | undefined {
  return codeFilesByFunction.get(fn);
}

/** Creates `functions/handlers/<handlerFile>` as a Lambda with the project's runtime settings. */
export function projectFunction(
  scope: Construct,
  id: string,
  handlerFile: string,
  options: ProjectFunctionOptions,
): lambda.Function {
  const { logRetention, parquetWasm, codeFiles = {}, ...functionOptions } = options;
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
    retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const common = {
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    logGroup,
    tracing: lambda.Tracing.ACTIVE,
    ...functionOptions,
    environment: {
      // The heap limit is three quarters of the memory (nodeHeapLimitMb): V8 collects, and at worst fails by its
      // own limit, before Lambda kills the function for its size; the memory budget's shares assume it. Parquet
      // functions run the rewrite engine: its V8 flags bound their peak RSS (see runtime.ts).
      NODE_OPTIONS: [
        '--enable-source-maps',
        `--max-old-space-size=${nodeHeapLimitMb(functionOptions.memorySize ?? LAMBDA_DEFAULT_MEMORY_MB)}`,
        ...(parquetWasm ? [ENGINE_NODE_OPTIONS] : []),
      ].join(' '),
      POWERTOOLS_SERVICE_NAME: 'lake-compactor',
      ...functionOptions.environment,
    },
  };
  const source = path.join(root, 'functions', 'handlers', handlerFile);
  const fn = existsSync(source)
    ? sourceFunction(scope, id, source, common, parquetWasm === true, stageCodeFiles(scope, codeFiles))
    : prebundledFunction(scope, id, handlerFile, common, parquetWasm === true, codeFiles);
  if (Object.keys(codeFiles).length > 0) codeFilesByFunction.set(fn, { ...codeFiles });
  fn.node.addValidation({ validate: () => environmentProblems(fn) });
  // cdk-nag (AwsSolutions) findings every project function has by design; see the reasons.
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-L1',
    reason:
      'The runtime is pinned to Node.js 22 on purpose: bundles target node22 and parquet-wasm is tested there; moving to a newer runtime is a deliberate, tested change.',
  });
  Validations.of(fn).acknowledge({
    id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole]',
    reason:
      "AWSLambdaBasicExecutionRole only allows writing the function's own CloudWatch Logs; every data permission is an explicit, prefix-scoped statement.",
  });
  return fn;
}

/** What projectFunction gives every function, however its code is found. */
type CommonFunctionProps = Omit<lambda.FunctionProps, 'code' | 'handler'>;

/** In this repository: bundles the handler's source at synth (NodejsFunction with esbuild), as always. */
function sourceFunction(
  scope: Construct,
  id: string,
  entry: string,
  common: CommonFunctionProps,
  parquetWasm: boolean,
  copyCodeFiles: ((outputDir: string) => string)[],
): nodejs.NodejsFunction {
  return new nodejs.NodejsFunction(scope, id, {
    entry,
    handler: 'handler',
    ...common,
    bundling: {
      format: nodejs.OutputFormat.ESM,
      target: 'node22',
      sourceMap: true,
      // Stack traces need the maps' mappings and names (NODE_OPTIONS has --enable-source-maps), not a copy of
      // every bundled source: without it a function's code is half the size (~4.3 MB instead of ~9 MB), which
      // Lambda loads, and Node parses the map, at every cold start.
      sourcesContent: false,
      minify: true,
      // Error classes keep their names: Step Functions Retry/Catch match on them (minified, they would not).
      keepNames: true,
      // ESM bundles need `require` for the CommonJS dependencies esbuild inlines, and `__dirname` for
      // parquet-wasm, which reads its .wasm file from beside its module (copied there after bundling).
      banner: [
        "import { createRequire } from 'module';",
        "import { fileURLToPath as __lcFileUrlToPath } from 'url';",
        "import { dirname as __lcDirname } from 'path';",
        'const require = createRequire(import.meta.url);',
        'const __filename = __lcFileUrlToPath(import.meta.url);',
        'const __dirname = __lcDirname(__filename);',
      ].join(' '),
      externalModules: ['@aws-sdk/*'],
      ...(parquetWasm || copyCodeFiles.length > 0
        ? {
            commandHooks: {
              beforeBundling: () => [],
              beforeInstall: () => [],
              afterBundling: (inputDir: string, outputDir: string) => [
                ...(parquetWasm
                  ? [
                      `cp "${inputDir}/node_modules/parquet-wasm/node/parquet_wasm_bg.wasm" "${outputDir}/"`,
                      // The rewrite engine's worker thread, loaded as ./worker.js beside the handler
                      // (functions/adapters/parquet-wasm/worker-pool.ts). CommonJS: the Lambda folder has no
                      // package.json marking .js as ESM, and CJS gives parquet-wasm its own __dirname.
                      `"${inputDir}/node_modules/.bin/esbuild" "${inputDir}/functions/adapters/parquet-wasm/worker.ts" --bundle --platform=node --format=cjs --target=node22 --minify --keep-names --sourcemap --sources-content=false --outfile="${outputDir}/worker.js"`,
                    ]
                  : []),
                ...copyCodeFiles.map((copy) => copy(outputDir)),
              ],
            },
          }
        : {}),
    },
    projectRoot: root,
    depsLockFilePath: path.join(root, 'package-lock.json'),
  });
}

/**
 * In an installed package: the handler as `npm run build` pre-bundled it (scripts/bundle-lambdas.mjs, the same
 * esbuild options as {@link sourceFunction}), with the Parquet engine's files and the code files beside it, staged
 * under the cloud assembly as one asset folder.
 */
function prebundledFunction(
  scope: Construct,
  id: string,
  handlerFile: string,
  common: CommonFunctionProps,
  parquetWasm: boolean,
  codeFiles: Readonly<Record<string, string>>,
): lambda.Function {
  const bundle = path.join(prebundledRoot, handlerFile.replace(/\.ts$/, ''));
  if (!existsSync(path.join(bundle, 'index.mjs')))
    throw new Error(
      `projectFunction: neither the source of ${handlerFile} nor its pre-bundled code (${bundle}/index.mjs) was found; in a clone of lake-compactor run \`npm run build\``,
    );
  const parts = [bundle, ...(parquetWasm ? [path.join(prebundledRoot, '_parquet-wasm')] : [])];
  const files = Object.entries(codeFiles);
  const key = createHash('sha256')
    .update(JSON.stringify([handlerFile, parquetWasm, files]))
    .digest('hex')
    .slice(0, 16);
  const staged = path.join(path.resolve(Stage.of(scope)?.outdir ?? '.'), 'prebundled', key);
  mkdirSync(staged, { recursive: true });
  for (const part of parts) cpSync(part, staged, { recursive: true });
  for (const [name, content] of files) {
    checkCodeFileName(name);
    writeFileSync(path.join(staged, name), content);
  }
  return new lambda.Function(scope, id, {
    ...common,
    code: lambda.Code.fromAsset(staged),
    handler: 'index.handler',
  });
}

/**
 * Writes each code file where the bundling step copies it from (under the cloud assembly, named by its
 * content, so identical files are written once and a changed file changes the bundle's hash), and returns
 * one copy command per file. Nothing is written when this stack is not bundled (tests skip bundling).
 */
function stageCodeFiles(
  scope: Construct,
  files: Readonly<Record<string, string>>,
): ((outputDir: string) => string)[] {
  const bundled = Stack.of(scope).bundlingRequired;
  return Object.entries(files).map(([name, content]) => {
    checkCodeFileName(name);
    const hash = createHash('sha256').update(content).digest('hex');
    const source = path.join(path.resolve(Stage.of(scope)?.outdir ?? '.'), 'code-files', hash);
    if (bundled) {
      mkdirSync(path.dirname(source), { recursive: true });
      writeFileSync(source, content);
    }
    return (outputDir: string) => `cp "${source}" "${outputDir}/${name}"`;
  });
}

function checkCodeFileName(name: string): void {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) {
    throw new Error(
      `projectFunction: code file name "${name}" must be a plain file name (letters, digits, . _ -).`,
    );
  }
}

/**
 * The function's environment as Lambda counts it (names plus values, in bytes), each deploy-time value
 * counted as `DEPLOY_TIME_VALUE_BYTES`; and the largest variables, for the message.
 */
export function environmentSize(fn: lambda.Function): { bytes: number; variables: [string, number][] } {
  const cfn = fn.node.defaultChild as lambda.CfnFunction;
  const resolved = Stack.of(fn).resolve(cfn.environment) as
    | { variables?: Record<string, unknown> }
    | undefined;
  const variables = Object.entries(resolved?.variables ?? {}).map(([name, value]): [string, number] => [
    name,
    Buffer.byteLength(name) + resolvedBytes(value),
  ]);
  return {
    bytes: variables.reduce((sum, [, bytes]) => sum + bytes, 0),
    variables: variables.sort((a, b) => b[1] - a[1]),
  };
}

function resolvedBytes(value: unknown): number {
  if (typeof value === 'string') {
    return Token.isUnresolved(value) ? DEPLOY_TIME_VALUE_BYTES : Buffer.byteLength(value);
  }
  if (typeof value === 'number' || typeof value === 'boolean') return String(value).length;
  if (typeof value === 'object' && value !== null && 'Fn::Join' in value) {
    const [separator, parts] = (value as { 'Fn::Join': [string, unknown[]] })['Fn::Join'];
    return (
      parts.reduce<number>((sum, part) => sum + resolvedBytes(part), 0) +
      Buffer.byteLength(separator) * Math.max(0, parts.length - 1)
    );
  }
  return DEPLOY_TIME_VALUE_BYTES;
}

/** A synth-time error when the environment would make the deploy fail. */
function environmentProblems(fn: lambda.Function): string[] {
  const { bytes, variables } = environmentSize(fn);
  if (bytes <= ENVIRONMENT_LIMIT_BYTES) return [];
  const largest = variables
    .slice(0, 3)
    .map(([name, size]) => `${name} (${size} bytes)`)
    .join(', ');
  return [
    `The environment of this function is about ${bytes} bytes, over Lambda's ${ENVIRONMENT_LIMIT_BYTES}-byte limit for all variables together, so the deploy would fail. The largest: ${largest}. Move large settings into the function's code (projectFunction's \`codeFiles\`) or shorten them.`,
  ];
}
