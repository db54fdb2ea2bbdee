// The one way this project builds a Lambda: Node.js 22 on arm64, an ESM bundle with source maps
// and kept class names, its own log group and X-Ray tracing — so every function behaves alike.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { ENGINE_NODE_OPTIONS } from '../functions/core/rewrite/runtime.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface ProjectFunctionOptions
  extends Pick<
    nodejs.NodejsFunctionProps,
    'description' | 'memorySize' | 'timeout' | 'environment' | 'ephemeralStorageSize'
  > {
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: logs.RetentionDays;
  /** Ship parquet-wasm's `.wasm` beside the bundle (functions that read or write Parquet data pages). */
  readonly parquetWasm?: boolean;
}

/** Creates `functions/handlers/<handlerFile>` as a Lambda with the project's runtime settings. */
export function projectFunction(
  scope: Construct,
  id: string,
  handlerFile: string,
  options: ProjectFunctionOptions,
): nodejs.NodejsFunction {
  const { logRetention, parquetWasm, ...functionOptions } = options;
  const logGroup = new logs.LogGroup(scope, `${id}Logs`, {
    retention: logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: RemovalPolicy.DESTROY,
  });
  const fn = new nodejs.NodejsFunction(scope, id, {
    entry: path.join(root, 'functions', 'handlers', handlerFile),
    handler: 'handler',
    runtime: lambda.Runtime.NODEJS_22_X,
    architecture: lambda.Architecture.ARM_64,
    logGroup,
    tracing: lambda.Tracing.ACTIVE,
    ...functionOptions,
    environment: {
      // Parquet functions run the rewrite engine: its V8 flags bound their peak RSS (see runtime.ts).
      NODE_OPTIONS: parquetWasm ? `--enable-source-maps ${ENGINE_NODE_OPTIONS}` : '--enable-source-maps',
      POWERTOOLS_SERVICE_NAME: 'lake-compactor',
      ...functionOptions.environment,
    },
    bundling: {
      format: nodejs.OutputFormat.ESM,
      target: 'node22',
      sourceMap: true,
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
      ...(parquetWasm
        ? {
            commandHooks: {
              beforeBundling: () => [],
              beforeInstall: () => [],
              afterBundling: (inputDir: string, outputDir: string) => [
                `cp "${inputDir}/node_modules/parquet-wasm/node/parquet_wasm_bg.wasm" "${outputDir}/"`,
                // The rewrite engine's worker thread, loaded as ./worker.js beside the handler
                // (functions/core/rewrite/parallel.ts). CommonJS: the Lambda folder has no
                // package.json marking .js as ESM, and CJS gives parquet-wasm its own __dirname.
                `"${inputDir}/node_modules/.bin/esbuild" "${inputDir}/functions/core/rewrite/worker.ts" --bundle --platform=node --format=cjs --target=node22 --minify --keep-names --sourcemap --outfile="${outputDir}/worker.js"`,
              ],
            },
          }
        : {}),
    },
    projectRoot: root,
    depsLockFilePath: path.join(root, 'package-lock.json'),
  });
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
