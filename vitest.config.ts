import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    exclude: ['test/bench/**', 'node_modules/**'],
    // One private temp folder per run, removed at the end (CDK leaves a `cdk.outXXXX` per App).
    globalSetup: ['test/support/global-setup.ts'],
    // In-process handlers log at INFO and print EMF metrics in production; in tests only warnings and
    // errors reach the output (the test that checks log lines and EMF turns both back on for itself).
    env: { POWERTOOLS_LOG_LEVEL: 'WARN', POWERTOOLS_METRICS_DISABLED: 'true' },
    // Hang guards only (nothing is timed): generous, because CI machines are shared and 2-core.
    testTimeout: 180_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
  },
});
