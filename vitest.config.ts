import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { sharedWorkerFiles } from './test/support/shared-worker-files.js';
import { SlowFirstSequencer } from './test/support/slow-first-sequencer.js';

/**
 * The unit and template tests that change nothing process-wide (the rule and why: test/support/shared-worker-files.ts).
 * They share worker processes too: each fresh fork re-imports the AWS SDK, aws-cdk-lib and the Parquet engine,
 * ~1.5 s of CPU per file. The pure core has a project of its own (below); integration, fault and package tests
 * start servers, kill processes or run the local cloud (which puts each function's environment in process.env),
 * so they stay isolated whatever their text shows.
 */
const sharing = sharedWorkerFiles(fileURLToPath(new URL('.', import.meta.url)), [
  'test/unit',
  'test/infra',
]).filter((file) => !file.startsWith('test/unit/core/'));
/** The shared files that check templates (they keep aws-cdk-lib's built-in validation on: see `cdkValidation`). */
const sharingInfra = sharing.filter((file) => file.startsWith('test/infra/'));
const sharingRest = sharing.filter((file) => !file.startsWith('test/infra/'));

/** What every project's tests run with (the global setup is the root's alone: it runs once per run). */
const shared = {
  // In-process handlers log at INFO and print EMF metrics in production. In tests they are silent, so a
  // real failure stands out: expected errors (a refused run, an injected fault) fail executions that the
  // tests assert on, and their stack traces would bury it. LAKE_COMPACTOR_TEST_LOG_LEVEL=DEBUG (or WARN)
  // brings the handlers' logs back when a test needs investigating; the test that checks log lines and
  // EMF turns both on for itself. The AWS SDK's Node 20 deprecation notice is printed once per test
  // file's process otherwise (the Lambda runtime is Node 22; local tests run on Node 20 by design).
  env: {
    POWERTOOLS_LOG_LEVEL: process.env.LAKE_COMPACTOR_TEST_LOG_LEVEL ?? 'SILENT',
    POWERTOOLS_METRICS_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  },
  // vitest's toEqual on Buffers walks them byte by byte, seconds per file-sized Buffer: a fast path with the same
  // verdict (test/support/byte-equality.ts).
  setupFiles: ['test/support/byte-equality.ts'] as string[],
  // Hang guards only (nothing is timed): generous, because CI machines are shared and 2-core.
  testTimeout: 180_000,
  hookTimeout: 120_000,
  pool: 'forks',
} as const;

/**
 * aws-cdk-lib runs a CloudFormation validation (cfn-guard in WebAssembly) in every synthesis unless
 * `CDK_VALIDATION=false`: ~9 s of CPU to start its engine in each process, and ~0.75 s per synthesis after that,
 * measured on the 2-core machine. Outside test/infra a stack is synthesized to run it on the local cloud (which
 * turns the validation off itself: infra/local/local-cloud.ts), to create its tables in DynamoDB Local or to install
 * the package, never to check the template, and the validation can fail no test there: without the
 * `@aws-cdk/core:validateAgainstDefaultRules` flag (this project does not set it) its findings are downgraded to
 * warnings. So it is off outside test/infra, and stays on where templates are checked (test/infra) and wherever a
 * stack is synthesized for real (`cdk synth`, CI's offline synth, a user's app).
 */
const withoutCdkValidation = { ...shared, env: { ...shared.env, CDK_VALIDATION: 'false' } } as const;

export default defineConfig({
  test: {
    // One private temp folder per run, removed at the end (CDK leaves a `cdk.outXXXX` per App), the
    // engine's worker bundled once for the run, and one DynamoDB Local for the run, of which each test file
    // takes an empty namespace (see the setup file).
    globalSetup: ['test/support/global-setup.ts'],
    maxWorkers: 2,
    // The known-slow files start first, so the two workers finish together (test/support/slow-first-sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    projects: [
      {
        // The pure core's tests (110 files, most of them done in well under a second) share their worker
        // processes instead of paying a fresh process and module graph each: ~1.2 s of CPU per file, more
        // than most of these files take to run. Safe because core/ holds no environment, clock, SDK client
        // or mutable module state (test/unit/architecture.test.ts enforces the first three), and none of
        // these files mocks a module, stubs a global or changes process.env. Everything else stays isolated.
        test: { ...shared, name: 'core', include: ['test/unit/core/**/*.test.ts'], isolate: false },
      },
      { test: { ...withoutCdkValidation, name: 'shared', include: sharingRest, isolate: false } },
      { test: { ...shared, name: 'infra', include: sharingInfra, isolate: false } },
      {
        test: {
          ...shared,
          name: 'infra-isolated',
          include: ['test/infra/**/*.test.ts'],
          exclude: sharingInfra,
        },
      },
      {
        test: {
          ...withoutCdkValidation,
          name: 'isolated',
          include: ['test/**/*.test.ts'],
          exclude: ['test/bench/**', 'node_modules/**', 'test/unit/core/**', 'test/infra/**', ...sharing],
        },
      },
    ],
  },
});
