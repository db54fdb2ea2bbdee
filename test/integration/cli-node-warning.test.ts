// The CLI in a process of its own, as a user runs it (`node bin/from-source.js`, what the bin runs in an unbuilt
// clone), on an s3:// location of the local S3 server: an SDK-touching command prints its result and no
// `NodeVersionSupportWarning` on stderr. Why a child process: the SDK warns once per process, when its first
// client is made, so only a fresh process shows it. On Node 22 or later the SDK would not warn anyway; the test
// then only proves the command's stderr is clean.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { SDK_NODE_WARNING_VARIABLE } from '../../functions/cli/node-support.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';

// The sources' runner, not the bin's launcher: the launcher would run dist/, which the package test rebuilds meanwhile.
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'from-source.js');

let s3: RunningS3Server;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: ['lake'] });
  const store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  await writeSampleLake((key, bytes) => store.put(`warehouse/${key}`, bytes).then(() => undefined), {
    days: 1,
    batches: 3,
    seed: 7,
    startDate: '2024-01-01',
  });
});

afterAll(async () => {
  await s3?.stop();
});

/** Runs the CLI's bin in a child process with only the local S3's settings (none of the developer's AWS ones). */
function runBin(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
  };
  // Never inherited: the CLI must silence the warning by itself.
  delete env[SDK_NODE_WARNING_VARIABLE];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('the CLI on the local S3, in a process of its own', () => {
  it('profiles an s3:// table with no NodeVersionSupportWarning on stderr', async () => {
    // Act
    const { code, stdout, stderr } = await runBin(['profile', 's3://lake/warehouse/events']);

    // Assess
    expect(stderr).not.toContain('NodeVersionSupportWarning');
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain('date=2024-01-01');
  });
});
