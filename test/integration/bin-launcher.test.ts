// The `lake-compactor` command works in a clone without a build and in an installed package without tsx (#32): the
// bin (bin/lake-compactor.js) runs the compiled CLI when dist/ holds it, else, in a clone, the TypeScript sources
// through tsx (bin/from-source.js), and otherwise says exactly what to run. Each case is the real bin files copied
// into a scratch folder laid out as that case (a clone, a built clone, an installed package), with a stand-in CLI
// that says which one ran — the repository's own dist/ is rebuilt by the package test meanwhile, so it is not used.
// Last, a clone's `npx lake-compactor --version` with no dist/, through npm itself, offline.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = join(import.meta.dirname, '..', '..');
const manifest = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as {
  version: string;
  bin: Record<string, string>;
  files: string[];
};

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-bin-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** A scratch folder holding `files` (path → content, or the repository file to copy), its folders made. */
async function layout(
  name: string,
  files: Readonly<Record<string, string | { copy: string }>>,
): Promise<string> {
  const root = join(scratch, name);
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    if (typeof content === 'string') await writeFile(join(root, path), content);
    else await copyFile(join(repo, content.copy), join(root, path));
  }
  return root;
}

const BIN = { copy: 'bin/lake-compactor.js' };
const FROM_SOURCE = { copy: 'bin/from-source.js' };
const PACKAGE = JSON.stringify({ name: 'lake-compactor', type: 'module' });

function runBin(root: string, args: readonly string[]) {
  return spawnSync(process.execPath, [join(root, 'bin', 'lake-compactor.js'), ...args], {
    cwd: root,
    encoding: 'utf8',
  });
}

describe('the lake-compactor bin', () => {
  it('is the launcher, which the package ships without the clone-only runner', () => {
    // Assess
    expect(manifest.bin['lake-compactor']).toBe('bin/lake-compactor.js');
    expect(manifest.files).toContain('bin/lake-compactor.js');
    expect(manifest.files.filter((f) => f === 'bin' || f.startsWith('bin/from-source'))).toEqual([]);
  });

  it('runs the compiled CLI with the arguments when dist/ holds it (an installed package, a built clone)', async () => {
    // Prepare
    const root = await layout('built', {
      'package.json': PACKAGE,
      'bin/lake-compactor.js': BIN,
      'bin/from-source.js': FROM_SOURCE,
      'dist/functions/cli/main.js': "console.log('compiled', JSON.stringify(process.argv.slice(2)));\n",
    });

    // Act
    const child = runBin(root, ['plan', './lake']);

    // Assess
    expect({ status: child.status, stdout: child.stdout, stderr: child.stderr }).toEqual({
      status: 0,
      stdout: 'compiled ["plan","./lake"]\n',
      stderr: '',
    });
  });

  it('runs the TypeScript sources through tsx in a clone with no dist/', async () => {
    // Prepare: the stand-in CLI is TypeScript (a type annotation plain Node cannot run).
    const root = await layout('clone', {
      'package.json': PACKAGE,
      'bin/lake-compactor.js': BIN,
      'bin/from-source.js': FROM_SOURCE,
      'functions/cli/main.ts':
        "const ran: string = 'source';\nconsole.log(ran, JSON.stringify(process.argv.slice(2)));\n",
    });
    await symlink(join(repo, 'node_modules'), join(root, 'node_modules'));

    // Act
    const child = runBin(root, ['--version']);

    // Assess
    expect({ status: child.status, stdout: child.stdout }).toEqual({
      status: 0,
      stdout: 'source ["--version"]\n',
    });
  });

  it('tells a clone with neither dist/ nor its devDependencies to run npm ci', async () => {
    // Prepare: no node_modules, so no tsx.
    const root = await layout('bare-clone', {
      'package.json': PACKAGE,
      'bin/lake-compactor.js': BIN,
      'bin/from-source.js': FROM_SOURCE,
      'functions/cli/main.ts': "console.log('never');\n",
    });

    // Act
    const child = runBin(root, ['--version']);

    // Assess
    expect(child.status).toBe(1);
    expect(child.stdout).toBe('');
    expect(child.stderr).toContain(`in ${root}/ run \`npm ci\``);
  });

  it('tells an installed package that lost dist/ to reinstall', async () => {
    // Prepare: what the package ships, minus dist/.
    const root = await layout('broken-install', { 'package.json': PACKAGE, 'bin/lake-compactor.js': BIN });

    // Act
    const child = runBin(root, ['--version']);

    // Assess
    expect(child.status).toBe(1);
    expect(child.stderr).toContain('reinstall the package (npm install lake-compactor)');
  });

  it('answers `npx lake-compactor --version` in a clone that was never built, offline', async () => {
    // Prepare: a clone's files (the real sources and dependencies, linked) and an npm cache of its own, so npx
    // links this clone afresh rather than reusing a link made from another checkout.
    const root = await layout('npx-clone', {
      'package.json': readFileSync(join(repo, 'package.json'), 'utf8'),
      'bin/lake-compactor.js': BIN,
      'bin/from-source.js': FROM_SOURCE,
    });
    await symlink(join(repo, 'functions'), join(root, 'functions'));
    await symlink(join(repo, 'node_modules'), join(root, 'node_modules'));

    // Act
    const child = spawnSync('npx', ['--offline', '--yes', 'lake-compactor', '--version'], {
      cwd: root,
      encoding: 'utf8',
      env: {
        ...process.env,
        npm_config_cache: join(scratch, 'npm-cache'),
        npm_config_update_notifier: 'false',
      },
    });

    // Assess
    expect({ status: child.status, stdout: child.stdout.trim() }).toEqual({
      status: 0,
      stdout: manifest.version,
    });
  }, 120_000);
});
