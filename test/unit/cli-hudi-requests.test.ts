// What a Hudi clustering run (`compact --format hudi` on a Copy-on-Write table) sends to the object store, request by
// request, on tables of 6 and of 12 small base files in one partition, versions 6 and 8: which requests grow with the
// table and which do not. Counted with the counting store the cost tests use, as S3 bills each request. Measured
// figures and what they cost: docs/benchmarks.md ("Requests of a Hudi run"); the run's own view of the table state is
// read whole several times (each read lists the timeline and the partition), and each completed instant is GET once
// per run (the CLI's instant cache decodes it once, instant-cache.ts), so its instant GETs grow with the active
// timeline, not with the inputs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { appendHudiInsert, createHudiTable } from '../../functions/tools/sample-hudi.js';
import { countingStore, type LoggedRequest } from '../support/counting-store.js';

const FLAGS = { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' } as const;
const NOW = Date.UTC(2024, 2, 2);
const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

/** Where a request goes: the timeline, the table's lock, Hudi's working folders, our own state, or the data files. */
function placeOf(key: string): string {
  if (key.startsWith('_lake-compactor/')) return 'ours';
  if (/(^|\/)\.hoodie\/\.(temp|heartbeat)\//.test(key)) return 'hudi-work';
  if (/lock/i.test(key)) return 'lock';
  if (key.startsWith('.hoodie/') || key === '.hoodie') return 'timeline';
  return 'data';
}

/** `op:place` → count, over one run's requests. */
function tally(requests: readonly LoggedRequest[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const r of requests) {
    const k = `${r.op}:${placeOf(r.key)}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

/** Clusters a fresh table of `files` small base files in partition 10 and returns its requests, tallied. */
async function countedClustering(version: 6 | 8, files: number): Promise<Record<string, number>> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-requests-'));
  scratch.push(dir);
  const table = await createHudiTable(new LocalObjectStore(dir), '', version);
  for (let i = 0; i < files; i++) await appendHudiInsert(table, '10', 3 + i);
  let counting: ReturnType<typeof countingStore> | undefined;
  await runCompact(
    dir,
    { ...FLAGS },
    { out: () => {}, clock: { now: () => NOW }, env: {} },
    {
      wrapStore: (inner) => {
        counting = countingStore(inner);
        return counting.store;
      },
    },
  );
  if (counting === undefined) throw new Error('the run opened no store');
  return tally(counting.requests());
}

/** The tallies that must not grow with the table's base files: every place but the data files' GETs and HEADs. */
function fixedPart(t: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.entries(t).filter(([k]) => !['get:data', 'head:data', 'get:timeline'].includes(k)),
  );
}

describe('requests of a Hudi clustering run, by where they go', () => {
  for (const version of [6, 8] as const)
    it(`v${version}: a fixed number of timeline, partition, lock and journal requests per run; per input base file a fixed number of data GETs; each completed instant GET once per run`, async () => {
      // Act: 6 and 12 small base files (one insert instant each), each table clustered into one file
      const six = await countedClustering(version, 6);
      const twelve = await countedClustering(version, 12);

      // Assess: everything but the data files' GETs and the timeline's instant reads is the same for either size
      if (process.env.LAKE_COMPACTOR_PRINT_REQUESTS === '1') console.info(JSON.stringify({ six, twelve }));
      expect(fixedPart(twelve)).toEqual(fixedPart(six));
      expect(six['list:timeline']).toBeGreaterThan(0);
      // Per input: the same GETs and one HEAD, no constant part
      const perInput = (six['get:data'] ?? 0) / 6;
      expect(perInput).toBeGreaterThan(0);
      expect(twelve['get:data']).toBe(perInput * 12);
      expect([six['head:data'], twelve['head:data']]).toEqual([6, 12]);
      // The table state is read whole several times, but each completed instant is decoded once per run (the CLI's
      // instant cache): 6 more instants, 6 more GETs
      const perInstant = ((twelve['get:timeline'] ?? 0) - (six['get:timeline'] ?? 0)) / 6;
      expect(perInstant).toBe(1);
    });
});
