// The rule that lets a test file share a worker process (vitest.config.ts's 'shared' project) keeps every file that
// changes or depends on process-wide state in a fresh fork: its own source, and the test modules it imports.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mayShareProcess, sharedWorkerFiles } from '../support/shared-worker-files.js';

let root: string;
let testRoot: string;

/** Writes `source` as test/<path> under the scratch root and returns its absolute path. */
async function testFile(path: string, source: string): Promise<string> {
  const file = join(testRoot, path);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, source);
  return file;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'shared-worker-files-'));
  testRoot = join(root, 'test');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('which test files may share a worker process', () => {
  it('shares a file that only imports product code and vitest', async () => {
    // Prepare
    const file = await testFile(
      'unit/plain.test.ts',
      "import { it } from 'vitest';\nimport { plan } from '../../functions/core/plan.js';\nit('plans', () => {});\n",
    );

    // Act / Assess
    expect(mayShareProcess(file, testRoot)).toBe(true);
  });

  it.each([
    ["vi.mock('node:fs')", 'a module mock'],
    ["vi.spyOn(console, 'log')", 'a spy'],
    ["vi.stubGlobal('fetch', f)", 'a stubbed global'],
    ["vi.stubEnv('AWS_REGION', 'x')", 'a stubbed env variable'],
    ['vi.useFakeTimers()', 'fake timers'],
    ['vi.resetModules()', 'a module reset'],
    ['const region = process.env.AWS_REGION;', 'reading process.env'],
    ["process.env.AWS_REGION = 'x';", 'writing process.env'],
    ["process.chdir('/')", 'the working directory'],
    ['process.exitCode = 1;', 'the exit code'],
    ["process.on('exit', f)", 'a process listener'],
    ['globalThis.fetch = f;', 'globalThis'],
    ['expect(engineWorkerStats().spawned).toBe(1);', "the engine's process-wide worker counters"],
    ["import { FunctionRunner } from '../../infra/local/functions.js';", "the local cloud's function runner"],
    ["import { LocalCloud } from '../../infra/local/local-cloud.js';", 'the local cloud'],
  ])('keeps a file using %s (%s) isolated', async (line) => {
    // Prepare
    const file = await testFile(
      `unit/${encodeURIComponent(line)}.test.ts`,
      `import { it } from 'vitest';\n${line}\n`,
    );

    // Act / Assess
    expect(mayShareProcess(file, testRoot)).toBe(false);
  });

  it('keeps a file isolated when a test module it imports, at any depth, changes the process', async () => {
    // Prepare: test → support/outer → support/inner, which writes process.env.
    await testFile('support/inner.ts', "export function quiet() { process.env.LOG_LEVEL = 'SILENT'; }\n");
    await testFile('support/outer.ts', "export { quiet } from './inner.js';\n");
    const file = await testFile(
      'unit/uses-support.test.ts',
      "import { quiet } from '../support/outer.js';\n",
    );

    // Act / Assess
    expect(mayShareProcess(file, testRoot)).toBe(false);
  });

  it('lists only the sharing files of the folders given, relative to the root', async () => {
    // Prepare
    await mkdir(join(testRoot, 'infra'), { recursive: true });
    await testFile('infra/template.test.ts', "import { it } from 'vitest';\nit('synthesizes', () => {});\n");
    await testFile('infra/env.test.ts', 'const account = process.env.CDK_DEFAULT_ACCOUNT;\n');
    await testFile('infra/helper.ts', 'export const x = 1;\n');

    // Act
    const shared = sharedWorkerFiles(root, ['test/infra']);

    // Assess
    expect(shared).toEqual(['test/infra/template.test.ts']);
  });
});
