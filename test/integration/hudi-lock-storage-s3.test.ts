// Hudi's storage-based lock against S3 on the local S3 server (its middleware enforces If-None-Match and If-Match as
// S3 does): the same contract the in-process stores run, so what the lock relies on is S3's own conditional PUTs.
import { afterAll, beforeAll } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { storageLockContract } from '../unit/core/formats/hudi/lock/storage-lock.contract.js';

const BUCKET = 'lake';
let s3: RunningS3Server;
let store: ObjectStore;

beforeAll(async () => {
  s3 = await startS3Server({ buckets: [BUCKET] });
  store = new S3ObjectStore({ client: s3.client(), bucket: BUCKET });
});

afterAll(async () => {
  await s3?.stop();
});

storageLockContract('S3 (local S3 server)', () => store);
