// Proves a one-output group encoded on two workers and joined (split-output.ts) on S3 (the local s3rver, which
// refuses a multipart part under 5 MiB that is not the last, as S3 does): the joined output, large enough to go up
// as a multipart upload, is byte for byte the one-thread output, DuckDB reads the inputs' rows in it row for row,
// verify proves it from S3 at the fingerprint's cuts, and no upload is left pending; and a later part of that upload
// refused every time aborts it, its first part stored: no output, no pending upload, inputs untouched.

import { readdir } from 'node:fs/promises';
import type { S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rewriteGroup } from '../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../functions/adapters/parquet-wasm/verify.js';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { InputFile, RewriteOptions } from '../../functions/ports/parquet-engine.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from '../unit/adapters/parquet-wasm/helpers.js';

const INPUTS = 3;
/** Rows per input: ~6 MiB of two hex digests per row each, so the joined output (~18 MiB) is a multipart upload. */
const ROWS = 160_000;
/** Row groups of 40,000 rows: 12 in the output, cut into parts of whole row groups for the two workers. */
const ROW_GROUP_ROWS = 40_000;
const MULTIPART_THRESHOLD = 8 * 1024 * 1024;

let s3: RunningS3Server;
let client: S3Client;
let duck: DuckWorkspace;
const inputs: Uint8Array[] = [];
/** The commands the S3 client sent, by name. */
const sent: string[] = [];
/** While set, the client refuses every UploadPart but an upload's first, before it is sent. */
let refuseLaterParts = false;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: ['lake'] });
  client = s3.client();
  client.middlewareStack.add(
    (next, context) => async (args) => {
      sent.push(context.commandName ?? '');
      const part = (args.input as { PartNumber?: number }).PartNumber;
      if (refuseLaterParts && context.commandName === 'UploadPartCommand' && (part ?? 1) > 1) {
        throw Object.assign(new Error('Access Denied (injected: UploadPart)'), {
          name: 'AccessDenied',
          $metadata: { httpStatusCode: 403 },
        });
      }
      return next(args);
    },
    { step: 'initialize' },
  );
  duck = await duckWorkspace();
  for (let i = 0; i < INPUTS; i++) {
    const select = `SELECT (i + ${i * ROWS})::BIGINT AS id, md5(i::VARCHAR || '-${i}') AS a,
      CASE WHEN i % 17 = 0 THEN NULL ELSE md5((i * 7 + ${i})::VARCHAR) END AS b
      FROM range(${ROWS}) t(i)`;
    inputs.push(await duck.parquet(select, { compression: 'zstd' }));
  }
}, 300_000);

afterAll(async () => {
  await duck?.close();
  await s3?.stop();
});

function options(workers: number): RewriteOptions {
  return { outputKey: (i) => `out/part-${i}.parquet`, rowGroupRows: ROW_GROUP_ROWS, workers };
}

async function stored(store: ObjectStore, prefix: string): Promise<InputFile[]> {
  const files: InputFile[] = [];
  for (const [i, bytes] of inputs.entries()) {
    const key = `${prefix}/in-${i}.parquet`;
    await store.put(key, bytes);
    files.push(await fileOf(store, key));
  }
  return files;
}

/** Multipart uploads s3rver still holds (neither completed nor aborted). */
async function pendingUploads(): Promise<number> {
  const folder = s3.server.store.getResourcePath('lake', undefined, 'uploads');
  return (await readdir(folder).catch(() => [])).length;
}

/** Rows of DuckDB list `a` not in `b` and of `b` not in `a`, each row numbered by its position in its list. */
async function rowForRowDifference(a: string, b: string): Promise<number> {
  const numbered = (list: string) => `SELECT row_number() OVER () AS n, * FROM read_parquet(${list})`;
  return Number(
    await duck.db.scalar(
      `SELECT count(*) FROM ((${numbered(a)} EXCEPT ALL ${numbered(b)}) UNION ALL (${numbered(b)} EXCEPT ALL ${numbered(a)}))`,
    ),
  );
}

describe('one output encoded on two workers, joined on S3', () => {
  it('uploads in parts the one-thread output byte for byte, which DuckDB reads row for row and verify proves at its cuts', async () => {
    // Prepare
    const store = new S3ObjectStore({ client, bucket: 'lake' });
    const files = await stored(store, 'split');
    const single = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'one', files, expectedOutputFiles: 1 },
      { ...options(1), outputKey: (i) => `one/part-${i}.parquet` },
    );
    sent.length = 0;

    // Act
    const split = await rewriteGroup(
      { source: store, target: store },
      { groupId: 'split', files, expectedOutputFiles: 1 },
      options(2),
    );

    // Assess: one output, uploaded in parts (each part S3 accepted, so every one but the last ≥ 5 MiB), equal to
    // the one-thread output byte for byte; its fingerprint has the parts' cuts; verify proves it from S3.
    expect(split.outputs.length).toBe(1);
    const out = split.outputs[0];
    const one = single.outputs[0];
    if (out === undefined || one === undefined) throw new Error('expected one output each');
    expect(out.size).toBeGreaterThan(MULTIPART_THRESHOLD);
    expect(sent.filter((c) => c === 'CreateMultipartUploadCommand').length).toBe(1);
    expect(sent.filter((c) => c === 'UploadPartCommand').length).toBeGreaterThan(1);
    expect(sent.filter((c) => c === 'CompleteMultipartUploadCommand').length).toBe(1);
    const segment =
      split.fingerprint.kind === 'ordered-columns-v1' ? split.fingerprint.segments[0] : undefined;
    const cuts = segment !== undefined && 'cuts' in segment ? segment.cuts : undefined;
    expect(cuts?.length).toBeGreaterThan(1);
    expect(cuts?.reduce((a, b) => a + b, 0)).toBe(INPUTS * ROWS);
    const joined = await store.get(out.key);
    expect(Buffer.from(joined).equals(Buffer.from(await store.get(one.key)))).toBe(true);
    const inputList = await duck.materialise(
      store,
      files.map((f) => f.key),
    );
    const outputList = await duck.materialise(store, [out.key]);
    expect(await rowForRowDifference(inputList, outputList)).toBe(0);
    const report = await verifyOutputs(store, split.outputs, split.fingerprint, { workers: 2 });
    expect(report.rows).toBe(INPUTS * ROWS);
    expect(await pendingUploads()).toBe(0);
  }, 300_000);

  it("aborts the output's upload, a part already stored, when a later part is refused every time, leaving no output", async () => {
    // Prepare: every UploadPart after the first is refused (as a missing KMS grant on the target would be).
    const store = new S3ObjectStore({ client, bucket: 'lake' });
    const files = await stored(store, 'refused');
    refuseLaterParts = true;
    sent.length = 0;

    // Act
    const attempt = rewriteGroup(
      { source: store, target: store },
      { groupId: 'refused', files, expectedOutputFiles: 1 },
      { ...options(2), outputKey: (i) => `refused-out/part-${i}.parquet` },
    ).finally(() => {
      refuseLaterParts = false;
    });

    // Assess: the refusal reaches the caller; the upload, which had stored its first part, was aborted (once its
    // parts in flight settled: s3-object-store.ts), no object and no upload is left, and the inputs are untouched.
    await expect(attempt).rejects.toThrow(/AccessDenied|Access Denied/);
    const count = (command: string) => sent.filter((c) => c === command).length;
    expect(count('CreateMultipartUploadCommand')).toBe(1);
    expect(count('UploadPartCommand')).toBeGreaterThan(1);
    expect(count('AbortMultipartUploadCommand')).toBeGreaterThanOrEqual(1);
    expect(count('CompleteMultipartUploadCommand')).toBe(0);
    expect((await store.list('refused-out/')).objects).toEqual([]);
    expect(await pendingUploads()).toBe(0);
    for (const [i, file] of files.entries())
      expect(Buffer.from(await store.get(file.key)).equals(Buffer.from(inputs[i] as Uint8Array))).toBe(true);
  }, 300_000);
});
