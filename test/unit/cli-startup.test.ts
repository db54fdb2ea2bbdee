// The CLI answers --help, --version, a command's --help and usage errors without loading what its commands run on:
// the AWS SDK, the Parquet engine (parquet-wasm, Apache Arrow) and DuckDB are imported by a command's action, when
// it runs. Proven by the modules a real `lake-compactor` process resolves (a loader hook records them), not by
// timing: a test that timed start-up would fail on a loaded machine and pass a regression on a fast one.
import { spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const repo = fileURLToPath(new URL('../..', import.meta.url));
// The sources' runner, not the bin's launcher: the launcher would run dist/, which the package test rebuilds meanwhile.
const bin = join(repo, 'bin', 'from-source.js');
const recorder = join(repo, 'test', 'support', 'record-loads.mjs');

/** Packages only a command's action may load. */
const HEAVY = /\/node_modules\/(@aws-sdk\/[^/]+|@smithy\/[^/]+|parquet-wasm|apache-arrow|@duckdb\/[^/]+)\//;

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-cli-startup-'));
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** Runs the installed-style bin with `args` and returns its exit code and the heavy packages it loaded. */
async function startCli(name: string, args: readonly string[]) {
  const log = join(scratch, `${name}.log`);
  const child = spawnSync(process.execPath, ['--import', recorder, bin, ...args], {
    cwd: scratch,
    env: { ...process.env, LAKE_COMPACTOR_LOAD_LOG: log, AWS_REGION: 'eu-west-1' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  const urls = (await readFile(log, 'utf8')).split('\n').filter((u) => u !== '');
  const heavy = [...new Set(urls.flatMap((u) => HEAVY.exec(u)?.[1] ?? []))].sort();
  return { status: child.status, stdout: child.stdout, stderr: child.stderr, urls, heavy };
}

describe('lake-compactor starts without loading what its commands run on', () => {
  it.each<[string, string[], number]>([
    ['version', ['--version'], 0],
    ['help', ['--help'], 0],
    ['compact-help', ['compact', '--help'], 0],
    ['invalid-value', ['plan', '.', '--target-mb', 'big'], 2],
  ])('%s: answers with no AWS SDK, Parquet engine or DuckDB module loaded', async (name, args, code) => {
    // Act
    const started = await startCli(name, args);

    // Assess
    expect(started.status, started.stderr).toBe(code);
    expect(started.urls.some((u) => u.endsWith('/functions/cli/index.ts'))).toBe(true);
    expect(started.heavy).toEqual([]);
  });

  it('the record is real: a command that runs loads the AWS SDK through its action', async () => {
    // Prepare: an empty folder, so `plan` runs its action (and fails there, finding no Parquet file).
    const empty = await mkdtemp(join(scratch, 'empty-'));

    // Act
    const started = await startCli('plan-runs', ['plan', empty]);

    // Assess
    expect(started.status).toBe(1);
    expect(started.heavy).toContain('@aws-sdk/client-s3');
  });
});
