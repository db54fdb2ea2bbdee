// S3 client benchmark: the CPU the AWS SDK spends per request, which is what a streaming writer's tiny files
// cost on S3 beyond their bytes (a GET at planning, a GET at pre-flight, a HEAD at commit, per input). The
// server (s3rver on 127.0.0.1) runs in a child process, so only the client's CPU is counted; the client is
// configured as the deployment's (open-store.ts) with the middleware cache off and on, in interleaved rounds.
//
// `npm run bench -- s3-client [--objects 2000] [--size 8192] [--inflight 16] [--repeat 7]`
import { fork } from 'node:child_process';
import { createRequire } from 'node:module';
import { S3Client } from '@aws-sdk/client-s3';
import pLimit from 'p-limit';
import { defaultS3ClientConfig } from '../../functions/adapters/open-store.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { LAMBDA_ARM_USD_PER_GB_SECOND, S3_USD_PER_GET } from '../../functions/core/workflow/cost.js';

function flag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  if (!Number.isSafeInteger(value) || value <= 0) throw new Error(`--${name} must be a positive integer`);
  return value;
}

const median = (values: readonly number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
};

/** CPU microseconds of this process per call of `one` over every key, `inflight` at a time. */
async function cpuPerRequest(
  keys: readonly string[],
  inflight: number,
  one: (key: string) => Promise<unknown>,
): Promise<{ cpuUs: number; wallMs: number }> {
  const limit = pLimit(inflight);
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(keys.map((key) => limit(() => one(key))));
  const c = process.cpuUsage(c0);
  return { cpuUs: (c.user + c.system) / keys.length, wallMs: performance.now() - t0 };
}

export async function run(flags: readonly string[]): Promise<void> {
  const objects = flag(flags, 'objects', 2000);
  const size = flag(flags, 'size', 8192);
  const inflight = flag(flags, 'inflight', 16);
  const repeat = flag(flags, 'repeat', 7);
  const child = fork(new URL('./s3-client-server.ts', import.meta.url), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  try {
    const endpoint = await new Promise<string>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { endpoint: string }).endpoint));
      child.once('exit', (code) => reject(new Error(`the S3 server process exited (${code})`)));
    });
    const env = {
      AWS_ENDPOINT_URL_S3: endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    };
    const clientOf = (cache: boolean) =>
      new S3Client({ ...defaultS3ClientConfig(env), cacheMiddleware: cache });
    const setup = new S3ObjectStore({ client: clientOf(true), bucket: 'bench' });
    const body = new Uint8Array(size).map((_, i) => (i * 31) & 0xff);
    const keys = Array.from({ length: objects }, (_, i) => `tiny/part-${String(i).padStart(6, '0')}.parquet`);
    const upload = pLimit(inflight);
    await Promise.all(keys.map((key) => upload(() => setup.put(key, body))));

    const results = {
      get: { off: [] as number[], on: [] as number[] },
      head: { off: [] as number[], on: [] as number[] },
    };
    for (let round = 0; round < repeat; round++) {
      for (const cache of round % 2 === 0 ? [false, true] : [true, false]) {
        // A fresh client per measurement, warmed up first (connections, JIT), as a warm Lambda's would be.
        const store = new S3ObjectStore({ client: clientOf(cache), bucket: 'bench' });
        await cpuPerRequest(keys.slice(0, 200), inflight, (key) => store.getRange(key, 0, size - 1));
        const get = await cpuPerRequest(keys, inflight, (key) => store.getRange(key, 0, size - 1));
        const head = await cpuPerRequest(keys, inflight, (key) => store.head(key));
        results.get[cache ? 'on' : 'off'].push(get.cpuUs);
        results.head[cache ? 'on' : 'off'].push(head.cpuUs);
      }
    }
    const sdk = createRequire(import.meta.url)('@aws-sdk/client-s3/package.json') as { version: string };
    console.log(
      `  S3 client CPU per request (AWS SDK for JavaScript ${sdk.version}; s3rver in another process on 127.0.0.1; ${objects.toLocaleString('en-US')} objects of ${size.toLocaleString('en-US')} B, ${inflight} in flight; median of ${repeat}):`,
    );
    const line = (name: string, r: { off: number[]; on: number[] }) => {
      const off = median(r.off);
      const on = median(r.on);
      console.log(
        `    ${name.padEnd(20)} cacheMiddleware off ${off.toFixed(0).padStart(5)} µs | on ${on.toFixed(0).padStart(5)} µs (${(on / off).toFixed(2)}x)`,
      );
      return { off, on };
    };
    const get = line('GetObject (ranged)', results.get);
    const head = line('HeadObject', results.head);
    const perInput = (k: 'off' | 'on') => (2 * get[k] + head[k]) / 1e6;
    console.log(
      `    per 10,000 tiny inputs (a GET at planning, a GET at pre-flight, a HEAD at commit): ${(10_000 * perInput('off')).toFixed(1)} s of client CPU with the cache off, ${(10_000 * perInput('on')).toFixed(1)} s on (the deployment's setting)`,
    );
    const usd = (seconds: number) => seconds * 1.769 * LAMBDA_ARM_USD_PER_GB_SECOND;
    console.log(
      `    in money, per 10,000 tiny inputs: that CPU at 1,769 MB $${usd(10_000 * perInput('on')).toFixed(5)} (cache on), the three requests' fees $${(30_000 * S3_USD_PER_GET).toFixed(4)}`,
    );
  } finally {
    child.disconnect();
  }
}
