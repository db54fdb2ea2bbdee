// Exit codes are the same for every command: 2 when the command line itself is wrong (unknown command or
// option, missing argument or required option, invalid value, malformed location), 1 when a well-formed
// command meets a world that disagrees (a folder that does not exist), 0 for help and --version; no stack.
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';

let root: string;
let missing: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-exit-codes-'));
  missing = join(root, 'no-such-folder');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

async function runCaptured(argv: readonly string[]) {
  const io = captureIo();
  const code = await run(argv, io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

describe('usage errors exit 2 with an error line and nothing on stdout', () => {
  it.each<[string, () => string[], RegExp]>([
    ['an unknown command', () => ['frobnicate'], /unknown command 'frobnicate'/],
    ['an unknown option', () => ['profile', root, '--frobnicate'], /unknown option '--frobnicate'/],
    ['a missing location', () => ['compact'], /missing required argument 'uri'/],
    ['a missing required option', () => ['report', root], /required option '--html <file>' not specified/],
    ['an invalid number', () => ['plan', root, '--target-mb', 'big'], /expected a positive number/],
    ['an invalid choice', () => ['compact', root, '--codec', 'lz4'], /Allowed choices are zstd, snappy/],
    ['too many workers', () => ['compact', root, '--workers', '17'], /integer from 1 to 16/],
    ['an invalid limit', () => ['history', '--state-table', 's', '--limit', '0'], /positive integer/],
    ['a malformed bucket name', () => ['profile', 's3://Bad_Bucket/x'], /is not a bucket name/],
    ['an unsupported scheme', () => ['plan', 'gs://lake/events'], /scheme gs:\/\/ is not supported/],
    ['an empty location', () => ['quarantine', ''], /Empty store location/],
    ['an unsupported scheme to settle', () => ['settle', 'gs://lake/events'], /is not supported/],
    [
      'an unsupported scheme to report',
      () => ['report', 'gs://lake/x', '--html', 'r.html'],
      /is not supported/,
    ],
    ['an unsupported scheme to vacuum', () => ['vacuum', 'gs://lake/x', '--dry-run'], /is not supported/],
    [
      'status without a state table',
      () => ['status', '--table', 'events'],
      /pass --stack <stack-name> .* or --state-table <name>/,
    ],
    [
      'history without a state table',
      () => ['history', '--table', 'events'],
      /pass --stack <stack-name> .* or --state-table <name>/,
    ],
    [
      'history of a partition without a table',
      () => ['history', '--state-table', 's', '--partition', 'date=2024-01-01'],
      /Name the table/,
    ],
    [
      'settle --state-table on a local folder',
      () => ['settle', root, '--state-table', 's', '--partition', 'p'],
      /drop --state-table/,
    ],
    [
      'tier on a local folder',
      () => ['tier', root, '--dry-run'],
      /tier needs an s3:\/\/bucket\/prefix location/,
    ],
  ])('%s', async (_case, argv, message) => {
    // Act
    const result = await runCaptured(argv());
    // Assess
    expect(result.code).toBe(2);
    expect(result.stdout).toEqual([]);
    expect(result.stderr[0]).toMatch(/^error: /);
    expect(result.stderr.join('\n')).toMatch(message);
    expect(result.stderr.join('\n')).not.toMatch(/\n\s+at /);
  });
});

describe('a folder that does not exist exits 1 for every command, saying so', () => {
  it.each([
    [['profile']],
    [['plan']],
    [['compact']],
    [['compact', '--dry-run']],
    [['settle']],
    [['quarantine']],
    [['report', '--html', 'r.html']],
    [['vacuum', '--dry-run']],
  ])('%j', async ([command, ...options]) => {
    // Act
    const result = await runCaptured([command as string, missing, ...options]);
    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr).toEqual([
      `error: Local folder ${missing} (from "${missing}") does not exist; create it or fix the path`,
    ]);
  });

  it('status with a --config file that does not exist exits 1, saying so', async () => {
    // Act
    const result = await runCaptured(['status', '--state-table', 's', '--config', missing]);
    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr).toEqual([
      `error: --config ${missing} does not exist: pass the deployment's config file, or name the table with --table <name>`,
    ]);
  });
});

describe('help exits 0', () => {
  it.each([[['--help']], [['compact', '--help']], [['help', 'vacuum']]])('%j', async (argv) => {
    // Act
    const result = await runCaptured(argv);
    // Assess
    expect(result.code).toBe(0);
    expect(result.stdout.join('\n')).toMatch(/Usage: lake-compactor/);
  });
});

describe('--version', () => {
  it.each([[['--version']], [['-V']]])('%j prints the package version alone and exits 0', async (argv) => {
    // Prepare
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    // Act
    const result = await runCaptured(argv);
    // Assess
    expect(result.code).toBe(0);
    expect(result.stdout).toEqual([version]);
    expect(result.stderr).toEqual([]);
  });
});
