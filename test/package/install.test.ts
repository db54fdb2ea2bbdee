// The published package works where a user installs it, not only in this repository: `npm run build`, `npm pack`,
// then in a scratch project the installed CLI answers --version and plans a local folder, and a CDK app of the
// user's own imports LakeCompactor from the package and synthesizes, its functions deployed from the Lambda code
// pre-bundled inside the installed package.
//
// How it installs with no network: the tarball is extracted as node_modules/lake-compactor, and every other
// package (its dependencies, aws-cdk-lib and constructs, its peers) is a link to this repository's node_modules.
// `npm install --offline <tgz>` would need every dependency in npm's cache, which `npm ci` does not promise.
// What is proven is the package's own content: its files, exports, bin and pre-bundled Lambda code.
//
// Slow by nature (a full build and pack: about a minute of CPU); it runs with the rest of `npm test`.
//
// The user's app synthesizes as `cdk synth` would, except for aws-cdk-lib's built-in CloudFormation validation:
// the app inherits `CDK_VALIDATION=false` from the test run (vitest.config.ts says why: ~9 s of CPU to start, and
// it can fail no synth here); what the app checks (cdk-nag, no data action on *) is checked as before.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { SourceMap } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
};

let scratch: string;
let project: string;
let installed: string;
let packed: string[];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-package-'));
  execFileSync('npm', ['run', 'build'], { cwd: repo, stdio: 'pipe' });
  const [pack] = JSON.parse(
    execFileSync('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: repo, encoding: 'utf8' }),
  ) as { filename: string; files: { path: string }[] }[];
  if (pack === undefined) throw new Error('npm pack reported no package');
  packed = pack.files.map((f) => f.path);

  project = join(scratch, 'app');
  const modules = join(project, 'node_modules');
  await mkdir(modules, { recursive: true });
  execFileSync('tar', ['-xzf', join(scratch, pack.filename), '-C', modules]);
  installed = join(modules, 'lake-compactor');
  await rename(join(modules, 'package'), installed);
  for (const entry of await readdir(join(repo, 'node_modules'))) {
    if (entry === '.bin' || entry === 'lake-compactor' || entry.startsWith('.')) continue;
    await symlink(join(repo, 'node_modules', entry), join(modules, entry));
  }
  await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'my-cdk-app', type: 'module' }));
}, 600_000);

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

function installedManifest(): { dependencies?: Record<string, string> } {
  return JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    dependencies?: Record<string, string>;
  };
}

function installedCli(args: readonly string[]): string {
  const bin = join(installed, manifest.bin['lake-compactor'] as string);
  return execFileSync(process.execPath, [bin, ...args], { cwd: project, encoding: 'utf8' });
}

describe('the packed lake-compactor, installed in a project of its own', () => {
  it('ships compiled JavaScript, declarations and pre-bundled Lambdas, and no TypeScript source or tsx', () => {
    // Assess
    expect(packed).toContain('dist/functions/cli/main.js');
    expect(packed).toContain('dist/infra/lake-compactor.d.ts');
    expect(packed).toContain('dist/lambda/compact/index.mjs');
    expect(packed.filter((p) => p.endsWith('.ts') && !p.endsWith('.d.ts'))).toEqual([]);
    // The one mention of tsx the engine's code keeps is the worker bootstrap worker-pool.ts evaluates only when it
    // runs from TypeScript sources (its URL ends in .ts), which a compiled file never does.
    const bootstrap = "import('tsx/esm/api').then(";
    const compiled = packed.filter((p) => p.endsWith('.js') || p.endsWith('.mjs'));
    const importingTsx = compiled.filter((p) =>
      /from ?['"]tsx|import\(['"]tsx|require\(['"]tsx/.test(
        readFileSync(join(installed, p), 'utf8').replaceAll(bootstrap, ''),
      ),
    );
    expect(importingTsx).toEqual([]);
    expect(Object.keys({ ...installedManifest().dependencies })).not.toContain('tsx');
  });

  it('ships the bin launcher but not the clone-only runner of the TypeScript sources', () => {
    // Assess
    expect(manifest.bin['lake-compactor']).toBe('bin/lake-compactor.js');
    expect(packed).toContain('bin/lake-compactor.js');
    expect(packed).not.toContain('bin/from-source.js');
  });

  it('its Lambda bundles map stack traces to the TypeScript sources without carrying the sources', () => {
    // Prepare: a generated position in a handler's bundle (a string literal of the run-input code it bundles).
    const dir = join(installed, 'dist', 'lambda', 'validate');
    const code = readFileSync(join(dir, 'index.mjs'), 'utf8');
    const map = JSON.parse(readFileSync(join(dir, 'index.mjs.map'), 'utf8')) as { sourcesContent?: unknown };
    const at = code.indexOf('"fanout"');
    const line = code.slice(0, at).split('\n').length - 1;
    const column = at - (code.lastIndexOf('\n', at - 1) + 1);

    // Act: what --enable-source-maps (the functions' NODE_OPTIONS) looks up for a frame there.
    const entry = new SourceMap(map as ConstructorParameters<typeof SourceMap>[0]).findEntry(line, column);

    // Assess
    expect(at).toBeGreaterThan(0);
    expect(map.sourcesContent).toBeUndefined();
    expect('originalSource' in entry ? entry.originalSource : undefined).toMatch(/functions\/.+\.ts$/);
  });

  it('its CLI answers --version and plans a local folder', async () => {
    // Prepare: a tiny table, two small files in one partition.
    const table = join(scratch, 'lake', 'events', 'date=2024-01-01');
    await mkdir(table, { recursive: true });
    for (const n of [0, 1]) {
      const bytes = parquetWriteBuffer({
        columnData: [
          { name: 'id', data: Int32Array.from({ length: 10 }, (_, i) => i + n * 10), type: 'INT32' },
        ],
      });
      await writeFile(join(table, `part-${n}.parquet`), new Uint8Array(bytes));
    }

    // Act
    const version = installedCli(['--version']);
    const plan = installedCli(['plan', join(scratch, 'lake', 'events')]);

    // Assess
    expect(version.trim()).toBe(manifest.version);
    expect(plan).toMatch(/date=2024-01-01\s+2\s/);
  });

  it('a CDK app imports LakeCompactor from it and synthesizes, its Lambda code from inside the package, cdk-nag clean and no data action on *', async () => {
    // Prepare: the user's app, one table of each format.
    const app = join(project, 'app.mjs');
    await writeFile(
      app,
      `import { App, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { LakeCompactor } from 'lake-compactor';

const app = new App({ outdir: process.argv[2] });
const stack = new Stack(app, 'Lake');
const compactor = new LakeCompactor(stack, 'C', {
  tables: [
    { name: 'events', bucketName: 'lake', prefix: 'events/', format: 'parquet' },
    { name: 'orders', bucketName: 'lake', prefix: 'orders/', format: 'delta', deltaLogStore: { type: 's3-conditional' } },
    { name: 'clicks', bucketName: 'lake', prefix: 'clicks/', format: 'iceberg' },
  ],
});
compactor.addOutputs();
const template = Template.fromStack(stack).toJSON();
app.synth();
const resources = Object.values(template.Resources);
// The checks the repository's own stack passes (test/infra/nag.test.ts): no unacknowledged AwsSolutions error, and
// no S3 or DynamoDB action on Resource "*".
const nagErrors = new AwsSolutionsChecks()
  .validateScope(stack)
  .violations.filter((v) => v.severity === 'error')
  .flatMap((v) => v.violatingResources.map((r) => v.ruleName + ' @ ' + (r.constructPath ?? r.resourceLogicalId)));
const dataOnStar = resources
  .filter((r) => r.Type === 'AWS::IAM::Policy')
  .flatMap((r) => r.Properties.PolicyDocument.Statement)
  .filter((st) => st.Resource === '*' && [st.Action].flat().some((a) => /^(s3|dynamodb):/.test(a)))
  .map((st) => JSON.stringify(st.Action));
console.log(JSON.stringify({
  stateMachines: resources.filter((r) => r.Type === 'AWS::StepFunctions::StateMachine').length,
  handlers: resources.filter((r) => r.Type === 'AWS::Lambda::Function').map((r) => r.Properties.Handler),
  nagErrors,
  dataOnStar,
  outputs: Object.keys(template.Outputs ?? {}).sort(),
}));
`,
    );
    const outdir = join(scratch, 'cdk.out');

    // Act
    const synth = JSON.parse(
      execFileSync(process.execPath, [app, outdir], { cwd: project, encoding: 'utf8' })
        .trim()
        .split('\n')
        .at(-1) ?? '{}',
    ) as {
      stateMachines: number;
      handlers: string[];
      nagErrors: string[];
      dataOnStar: string[];
      outputs: string[];
    };

    // Assess: the workflow and its functions, each deployed from the package's pre-bundled code.
    expect(synth.stateMachines).toBeGreaterThanOrEqual(1);
    expect(synth.handlers.length).toBeGreaterThan(5);
    expect(new Set(synth.handlers)).toEqual(new Set(['index.handler']));
    expect(synth.nagErrors).toEqual([]);
    expect(synth.dataOnStar).toEqual([]);
    // addOutputs() gives the user's stack the outputs `--stack` reads.
    expect(synth.outputs).toEqual([
      'AlarmTopicArn',
      'DashboardUrl',
      'StateMachineArn',
      'StateTableName',
      'SweepFunctionName',
      'TieringFunctionName',
      'VacuumFunctionName',
    ]);
    const staged = await readdir(join(outdir, 'prebundled'));
    expect(staged.length).toBeGreaterThan(0);
    const compact = staged
      .map((dir) => join(outdir, 'prebundled', dir))
      .filter((dir) => existsSync(join(dir, 'worker.js')));
    expect(compact.length).toBeGreaterThan(0);
    const bundles = new Set(
      (await readdir(join(installed, 'dist', 'lambda')))
        .filter((fn) => !fn.startsWith('_'))
        .map((fn) => readFileSync(join(installed, 'dist', 'lambda', fn, 'index.mjs'), 'utf8')),
    );
    for (const dir of staged)
      expect(bundles.has(readFileSync(join(outdir, 'prebundled', dir, 'index.mjs'), 'utf8'))).toBe(true);
  });
});
