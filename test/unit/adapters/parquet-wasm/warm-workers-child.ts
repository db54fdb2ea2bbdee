// Child process of warm-workers.test.ts: verifies one rewritten group on an engine worker, prints how many
// workers are idle, and then has nothing left to do — the process must exit by itself with the worker idle.

import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { engineWorkerStats } from '../../../../functions/adapters/parquet-wasm/worker-pool.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';

const source = new MemoryObjectStore();
const target = new MemoryObjectStore();
const files: { key: string; size: number; etag: string }[] = [];
await writeSampleLake(
  async (key, bytes) => {
    const { etag } = await source.put(key, bytes);
    files.push({ key, size: bytes.length, etag });
  },
  { files: 2, rows: 200, partitions: 'single', seed: 5 },
);
const result = await rewriteGroup(
  { source, target },
  { groupId: 'child', files },
  { outputKey: (i) => `out/${i}.parquet` },
);
const report = await verifyOutputs(target, result.outputs, result.fingerprint);
process.stdout.write(`${JSON.stringify({ rows: report.rows, idle: engineWorkerStats().idle })}\n`);
