// Rewrite-engine benchmark: sets B (2,000 × 20,000 rows), C (10,000 × ~8 KB) and D (40 × ~24 MB), our rewrite +
// fingerprint and verification against DuckDB COPY with 1 and 2 threads, each measured in its own child process.

import { spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { tableFromIPC } from 'apache-arrow';
import pLimit from 'p-limit';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { columnsOfWasmBatch, hashWasmBatch } from '../../functions/adapters/parquet-wasm/batch-hash.js';
import { ENGINE_NODE_OPTIONS } from '../../functions/adapters/parquet-wasm/runtime.js';
import { columnPlan, pw, writerProperties } from '../../functions/adapters/parquet-wasm/wasm.js';
import type { GroupFingerprint } from '../../functions/core/fingerprint/fingerprint.js';
import { MultisetHash, OrderedDigest } from '../../functions/core/fingerprint/fingerprint.js';
import type { StatisticsMode } from '../../functions/core/parquet/statistics-policy.js';
import { type Reader, resolveDeltaEncoding } from '../../functions/core/readers.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { WrittenOutput } from '../../functions/ports/parquet-engine.js';
import { defaultParquetEngine as engine } from '../../functions/shared/parquet-engine.js';
import { generateEventsBatch, mulberry32 } from '../../functions/tools/sample-lake.js';
import { countingStore, type S3RequestCounts } from '../support/counting-store.js';
import { reportAllIn, reportCost } from './rewrite-cost.js';

const MB = 1e6;
const ROOT = join(process.cwd(), '.tmp', 'bench-rewrite');
const SELF = fileURLToPath(import.meta.url);

interface SetSpec {
  readonly name: string;
  readonly files: number;
  readonly rows: number;
}

interface Job {
  readonly engine: 'compactor' | 'duckdb' | 'phases' | 'verify';
  readonly dir: string;
  readonly out: string;
  readonly threads?: number;
  readonly latencyMs?: number;
  readonly workers?: number;
  /** The opt-in DELTA_BINARY_PACKED for integer/timestamp columns. */
  readonly deltaEncoding?: boolean;
  /** `false`: row-group stitching off (every row re-encoded). */
  readonly stitch?: false;
  /** Declared readers: DELTA_BINARY_PACKED follows from them as in a run (resolveDeltaEncoding). */
  readonly readers?: readonly Reader[];
  /** The column-chunk statistics policy (default `all`). */
  readonly statistics?: StatisticsMode;
  /** `native`: ZSTD pages compressed by a native ZSTD after the encoder (RewriteOptions.pageCompression). */
  readonly pageCompression?: 'native';
  /** `verify` only: the outputs a compactor child wrote under `out`, and its fingerprint. */
  readonly verify?: { readonly outputs: readonly WrittenOutput[]; readonly fingerprint: GroupFingerprint };
}

interface Measurement {
  readonly wallMs: number;
  /** CPU time of the child (all its threads), from start to the end of the rewrite: steadier than wall time on a shared machine. */
  readonly cpuMs: number;
  /** Wall time of the verification child (its own process, as verify is its own Lambda). */
  readonly verifyMs?: number;
  /** CPU time of the verification child (all its threads). */
  readonly verifyCpuMs?: number;
  /** Peak RSS of the child, from the kernel. */
  readonly peakRssMb: number;
  /** Peak RSS of the verification child (its own process, as verify is its own Lambda). */
  readonly verifyRssMb?: number;
  /** `compactor` only: what the verification child needs. */
  readonly written?: { readonly outputs: readonly WrittenOutput[]; readonly fingerprint: GroupFingerprint };
  readonly outputs: number[];
  readonly rows: number;
  /** `compactor` and `verify`: the S3 requests the engine sent through its ObjectStore (counted as S3 bills them). */
  readonly requests?: S3RequestCounts;
  /** `compactor`: the requests of its verification child. */
  readonly verifyRequests?: S3RequestCounts;
  /**
   * `phases` only: time inside parquet-wasm's decoder, the fingerprint an order-keeping rewrite records
   * (ordered-columns-v1) and the encoder; and, timed apart on the same batches, the row multiset hash
   * (multiset-v1, what sorted rewrites record and every rewrite recorded before).
   */
  readonly phases?: {
    readonly decodeMs: number;
    readonly hashMs: number;
    readonly multisetMs: number;
    readonly encodeMs: number;
  };
}

function flag(flags: readonly string[], name: string): string | undefined {
  const i = flags.indexOf(`--${name}`);
  return i >= 0 ? flags[i + 1] : undefined;
}

/** Generates a set once and caches it under .tmp keyed by its parameters. */
async function ensureSet(spec: SetSpec): Promise<string> {
  const dir = join(ROOT, `${spec.name}-${spec.files}x${spec.rows}-seed1`);
  const done = join(dir, '_COMPLETE');
  if (await stat(done).catch(() => undefined)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'data'), { recursive: true });
  const t0 = performance.now();
  for (let i = 0; i < spec.files; i++) {
    const bytes = generateEventsBatch(mulberry32(1_000_003 * i + 1), { rows: spec.rows, day: '2024-01-01' });
    await writeFile(join(dir, 'data', `part-${String(i).padStart(6, '0')}.parquet`), bytes);
  }
  await writeFile(done, '');
  console.log(
    `  generated ${spec.name}: ${spec.files} files in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  return dir;
}

/** Set D's rows per file: ~35 bytes per row in ZSTD, so ~24 MB per file, in one row group. */
const SET_D_ROWS = 690_000;

/**
 * Set D, the shape Spark batch jobs leave: `files` files of ~24 MB, ZSTD, one large row group each — what
 * row-group stitching copies instead of re-encoding. Written by DuckDB (~50× faster to generate than through
 * parquet-wasm, and an independent writer), deterministic (every value is a function of the row number),
 * cached like the other sets.
 */
async function ensureSetD(files: number): Promise<string> {
  const dir = join(ROOT, `D-${files}x${SET_D_ROWS}-v1`);
  const done = join(dir, '_COMPLETE');
  if (await stat(done).catch(() => undefined)) return dir;
  await rm(dir, { recursive: true, force: true });
  await mkdir(join(dir, 'data'), { recursive: true });
  const t0 = performance.now();
  const { DuckDBInstance } = await import('@duckdb/node-api');
  const db = await DuckDBInstance.create(':memory:', { threads: '2' });
  const con = await db.connect();
  for (let f = 0; f < files; f++) {
    const from = f * SET_D_ROWS;
    const path = join(dir, 'data', `part-${String(f).padStart(5, '0')}.zstd.parquet`);
    await con.run(
      `COPY (SELECT (hash(i) % 100000)::BIGINT AS user_id,
        (['view','click','purchase','signup'])[(hash(i * 7) % 4)::INT + 1] AS event_type,
        make_timestamptz(1704067200000000 + i * 1000)::TIMESTAMPTZ::TIMESTAMP_MS AS event_timestamp,
        md5((i // 8)::VARCHAR) AS session_id,
        md5(i::VARCHAR) || md5((i * 31)::VARCHAR)[1:16] AS payload,
        CASE WHEN hash(i * 3) % 10 = 0 THEN round((hash(i * 5) % 50000) / 100.0, 2)::DOUBLE ELSE 0 END AS revenue_usd
        FROM range(${from}, ${from + SET_D_ROWS}) t(i))
        TO '${path}' (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE ${SET_D_ROWS})`,
    );
  }
  con.closeSync();
  await writeFile(done, '');
  console.log(`  generated D: ${files} files in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return dir;
}

/** Adds a fixed delay to every read, like S3 first-byte latency. */
function withLatency(store: ObjectStore, ms: number): ObjectStore {
  const wait = () => new Promise((r) => setTimeout(r, ms));
  return Object.assign(Object.create(store) as ObjectStore, {
    get: async (key: string) => {
      await wait();
      return store.get(key);
    },
    getRange: async (key: string, s: number, e: number) => {
      await wait();
      return store.getRange(key, s, e);
    },
  });
}

function cpuSince(start: NodeJS.CpuUsage): number {
  const u = process.cpuUsage(start);
  return (u.user + u.system) / 1000;
}

/**
 * With BENCH_MEMORY_TRACE=1 (or `timeline`: also every 250 ms), samples the child's memory every 25 ms and prints, per phase, the
 * peak of each component to stderr: where the resident bytes are (V8 heap, external/ArrayBuffers,
 * parquet-wasm's linear memory, the rest native), for finding what holds memory.
 */
function memoryTracer(): { phase: (name: string) => void; stop: () => void } {
  if (process.env.BENCH_MEMORY_TRACE === undefined) return { phase: () => undefined, stop: () => undefined };
  let name = 'start';
  const mb = (n: number) => Math.round(n / 1e6);
  let peak = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0, wasm: 0 };
  let wasmOf = () => 0;
  import('parquet-wasm').then((pw) => {
    wasmOf = () => (pw.wasmMemory() as { buffer: ArrayBuffer }).buffer.byteLength;
  });
  const sample = () => {
    const m = process.memoryUsage();
    const w = wasmOf();
    peak = {
      rss: Math.max(peak.rss, m.rss),
      heapUsed: Math.max(peak.heapUsed, m.heapUsed),
      heapTotal: Math.max(peak.heapTotal, m.heapTotal),
      external: Math.max(peak.external, m.external),
      arrayBuffers: Math.max(peak.arrayBuffers, m.arrayBuffers),
      wasm: Math.max(peak.wasm, w),
    };
  };
  const flush = () => {
    sample();
    const p = peak;
    console.error(
      `    [mem ${name}] peak rss ${mb(p.rss)} heapUsed ${mb(p.heapUsed)} heapTotal ${mb(p.heapTotal)} external ${mb(p.external)} arrayBuffers ${mb(p.arrayBuffers)} wasm ${mb(p.wasm)} MB`,
    );
    peak = { rss: 0, heapUsed: 0, heapTotal: 0, external: 0, arrayBuffers: 0, wasm: 0 };
  };
  const timeline = process.env.BENCH_MEMORY_TRACE === 'timeline';
  let ticks = 0;
  const timer = setInterval(() => {
    sample();
    if (timeline && ++ticks % 10 === 0) {
      const m = process.memoryUsage();
      console.error(
        `    [mem ${name} @${ticks * 25} ms] rss ${mb(m.rss)} heapUsed ${mb(m.heapUsed)} heapTotal ${mb(m.heapTotal)} arrayBuffers ${mb(m.arrayBuffers)} wasm ${mb(wasmOf())} MB`,
      );
    }
  }, 25);
  timer.unref();
  return {
    phase: (next) => {
      flush();
      name = next;
    },
    stop: () => {
      flush();
      clearInterval(timer);
    },
  };
}

async function runChild(job: Job): Promise<Measurement> {
  if (job.engine === 'verify') return measureVerify(job);
  await rm(job.out, { recursive: true, force: true });
  await mkdir(job.out, { recursive: true });
  const names = (await readdir(join(job.dir, 'data'))).sort();
  if (job.engine === 'duckdb') {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const db = await DuckDBInstance.create(':memory:', { threads: String(job.threads ?? 1) });
    const con = await db.connect();
    const outFile = join(job.out, 'out.parquet');
    await con.run(
      `COPY (SELECT * FROM read_parquet('${join(job.dir, 'data')}/*.parquet')) TO '${outFile}' (FORMAT parquet, COMPRESSION zstd)`,
    );
    const wallMs = performance.now() - t0;
    const cpuMs = cpuSince(c0);
    const reader = await con.runAndReadAll(`SELECT count(*)::BIGINT FROM read_parquet('${outFile}')`);
    const rows = Number(reader.getRows()[0]?.[0]);
    return {
      wallMs,
      cpuMs,
      peakRssMb: process.resourceUsage().maxRSS / 1024,
      outputs: [(await stat(outFile)).size],
      rows,
    };
  }
  if (job.engine === 'phases') return measurePhases(job, names);
  const local = new LocalObjectStore(join(job.dir, 'data'));
  const reads = countingStore(job.latencyMs ? withLatency(local, job.latencyMs) : local);
  const writes = countingStore(new LocalObjectStore(job.out));
  const source = reads.store;
  const target = writes.store;
  // The sizes come from the plan in a deployed function; 10,000 stat() calls all at once would
  // grow this child's heap by ~50 MB before the rewrite starts and count against the engine.
  const statLimit = pLimit(32);
  const files = await Promise.all(
    names.map((key) =>
      statLimit(async () => {
        // The ETag as a plan records it: verify reads stitched outputs' inputs at it.
        const head = await local.head(key);
        return { key, size: head?.size ?? 0, etag: head?.etag ?? '' };
      }),
    ),
  );
  const trace = memoryTracer();
  trace.phase('rewrite');
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const result = await engine.rewriteGroup(
    { source, target },
    { groupId: 'bench', files },
    {
      outputKey: (i) => `out-${i}.zstd.parquet`,
      workers: job.workers ?? 1,
      ...(resolveDeltaEncoding(job.deltaEncoding, job.readers) && { deltaEncoding: true }),
      ...(job.stitch === false && { stitch: false }),
      ...(job.statistics === 'auto' && { statistics: { mode: 'auto' as const } }),
      ...(job.pageCompression === 'native' && { pageCompression: 'native' as const }),
    },
  );
  const wallMs = performance.now() - t0;
  const cpuMs = cpuSince(c0);
  trace.stop();
  return {
    wallMs,
    cpuMs,
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    outputs: result.outputs.map((o) => o.size),
    rows: result.fingerprint.rows,
    requests: addRequests(reads.counts(), writes.counts()),
    written: { outputs: result.outputs, fingerprint: result.fingerprint },
  };
}

/**
 * Verification of a compactor child's outputs in its own process, as the verify Lambda runs apart
 * from the compact Lambda, with the same threads (it gets the compact Lambda's memory).
 */
async function measureVerify(job: Job): Promise<Measurement> {
  if (job.verify === undefined) throw new Error('verify job without outputs');
  const counted = countingStore(new LocalObjectStore(job.out));
  const target = counted.store;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const report = await engine.verifyOutputs(target, job.verify.outputs, job.verify.fingerprint, {
    workers: job.workers ?? 1,
    // Stitched outputs are proven against their inputs' bytes.
    sources: new LocalObjectStore(join(job.dir, 'data')),
  });
  return {
    wallMs: performance.now() - t0,
    cpuMs: cpuSince(c0),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    outputs: job.verify.outputs.map((o) => o.size),
    rows: report.rows,
    requests: counted.counts(),
  };
}

/**
 * Where one thread's time goes: the set's files are read from disk, decoded, fingerprinted and fed
 * to one parquet-wasm writer with the engine's own settings (ZSTD, per-column dictionary plan from
 * the first file, 256 Ki-row row groups), each phase timed on its own. No ports, no multipart, no
 * roll-over: what is left of the wall time after decode and fingerprint is the encoder's floor —
 * what parquet-wasm needs to encode these rows however the rest of the engine is built.
 */
async function measurePhases(job: Job, names: readonly string[]): Promise<Measurement> {
  const path = (name: string) => join(job.dir, 'data', name);
  const settings = { codec: 'zstd' as const, rowGroupRows: 262_144 };
  const sample = pw.readParquet(await readFile(path(names[0] as string)), {
    batchSize: 65_536,
    limit: 65_536,
  });
  const { dictionary } = columnPlan(tableFromIPC(sample.intoIPCStream()), settings);
  const acc = new MultisetHash();
  const ordered = new OrderedDigest();
  let decodeMs = 0;
  let hashMs = 0;
  let multisetMs = 0;
  let readMs = 0;
  let next = 0;
  let queue: pw.RecordBatch[] = [];
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const input = new ReadableStream<pw.RecordBatch>(
    {
      async pull(controller) {
        while (queue.length === 0) {
          const name = names[next++];
          if (name === undefined) return controller.close();
          const r0 = performance.now();
          const bytes = await readFile(path(name));
          const d0 = performance.now();
          const table = pw.readParquet(bytes, { batchSize: 65_536 });
          queue = table.recordBatches();
          table.free();
          const h0 = performance.now();
          for (const batch of queue) {
            columnsOfWasmBatch(batch, (columns, offset, rows) => ordered.add(columns, offset, rows));
          }
          const h1 = performance.now();
          for (const batch of queue) hashWasmBatch(acc, batch);
          const h2 = performance.now();
          readMs += d0 - r0;
          decodeMs += h0 - d0;
          hashMs += h1 - h0;
          multisetMs += h2 - h1;
        }
        controller.enqueue(queue.shift() as pw.RecordBatch);
      },
    },
    { highWaterMark: 0 },
  );
  const encoded = await pw.transformParquetStream(
    input,
    writerProperties({ ...settings, keyValueMetadata: {}, dictionary }),
  );
  let size = 0;
  for await (const chunk of encoded as ReadableStream<Uint8Array>) size += chunk.length;
  const wallMs = performance.now() - t0;
  return {
    wallMs,
    cpuMs: cpuSince(c0),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    outputs: [size],
    rows: acc.rows,
    phases: { decodeMs, hashMs, multisetMs, encodeMs: wallMs - decodeMs - hashMs - multisetMs - readMs },
  };
}

/**
 * Bundles this file and the rewrite worker with esbuild (dependencies stay in node_modules), so
 * the children run as plain Node like the Lambda bundle does: under tsx every child carries
 * ~50 MB of loader RSS that a deployed function does not have. The worker lands beside the
 * bundle as `worker.js`, where the engine's parallel.ts looks for it.
 */
async function bundleChild(): Promise<string> {
  const { build } = await import('esbuild');
  const outdir = join(ROOT, 'bundle');
  await build({
    entryPoints: {
      child: SELF,
      worker: fileURLToPath(new URL('../../functions/adapters/parquet-wasm/worker.ts', import.meta.url)),
    },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    outdir,
    logLevel: 'warning',
  });
  return join(outdir, 'child.js');
}

let childScript: string | undefined;

/** A compactor job is followed by its verification in a second child; other jobs run alone. */
async function measure(job: Job): Promise<Measurement> {
  const m = await measureChild(job);
  if (job.engine !== 'compactor' || m.written === undefined) return m;
  const v = await measureChild({ ...job, engine: 'verify', verify: m.written });
  return {
    ...m,
    written: undefined,
    verifyMs: v.wallMs,
    verifyCpuMs: v.cpuMs,
    verifyRssMb: v.peakRssMb,
    ...(v.requests === undefined ? {} : { verifyRequests: v.requests }),
  };
}

function measureChild(job: Job): Promise<Measurement> {
  const args = childScript === undefined ? ['--import', 'tsx', SELF] : [childScript];
  return new Promise((resolve, reject) => {
    // The compactor's children run with the V8 flags the deployed Parquet functions get.
    const env =
      job.engine === 'compactor' || job.engine === 'verify'
        ? { ...process.env, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} ${ENGINE_NODE_OPTIONS}`.trim() }
        : process.env;
    const child = spawn(process.execPath, [...args, '--child', JSON.stringify(job)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env,
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.on('error', reject);
    child.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0) reject(new Error(`bench child ${job.engine} exited ${code}: ${out}`));
      else resolve(JSON.parse(line) as Measurement);
    });
  });
}

/** The higher of the rewrite's and its verification's peak RSS, MB. */
function peakOf(m: Measurement): string {
  return Math.max(m.peakRssMb, m.verifyRssMb ?? 0).toFixed(0);
}

/** A job's median run, with the wall times of all its runs (for the spread). */
type Measured = Measurement & { readonly walls: readonly number[] };

/**
 * Runs every job `repeat` times, interleaved (all jobs once, then again), and returns each job's
 * median run by wall time: on a shared machine a slow spell then hits every engine alike instead
 * of one engine's every run.
 */
async function medians(repeat: number, jobs: readonly Job[]): Promise<Measured[]> {
  const runs: Measurement[][] = jobs.map(() => []);
  for (let round = 0; round < repeat; round++) {
    for (const [i, job] of jobs.entries()) runs[i]?.push(await measure(job));
  }
  return runs.map((r) => {
    const sorted = [...r].sort((a, b) => a.wallMs - b.wallMs);
    const median = sorted[Math.floor((sorted.length - 1) / 2)] as Measurement;
    return { ...median, walls: r.map((m) => m.wallMs) };
  });
}

/** ` (runs: 9.1/9.8/10.2 s)` when a figure is a median of several runs, else ''. */
function spread(m: Measured): string {
  return m.walls.length > 1 ? ` (runs: ${m.walls.map((w) => (w / 1000).toFixed(1)).join('/')} s)` : '';
}

function report(label: string, inputBytes: number, m: Measured, peer?: Measurement): void {
  const s = m.wallMs / 1000;
  const outBytes = m.outputs.reduce((a, b) => a + b, 0);
  const parts = [
    `${label.padEnd(40)} ${s.toFixed(2).padStart(7)} s`,
    `CPU ${(m.cpuMs / 1000).toFixed(2).padStart(6)} s`,
    `${(inputBytes / MB / s).toFixed(1).padStart(6)} MB/s`,
    `${(m.rows / s / 1e6).toFixed(2).padStart(5)} M rows/s`,
    `RSS ${m.peakRssMb.toFixed(0).padStart(4)} MB`,
    `${m.outputs.length} out (${m.outputs.map((b) => (b / MB).toFixed(1)).join('/')} MB)`,
    `ratio ${(inputBytes / outBytes).toFixed(2)}x`,
  ];
  if (m.verifyMs !== undefined)
    parts.push(
      `verify ${(m.verifyMs / 1000).toFixed(2)} s (${((100 * m.verifyMs) / m.wallMs).toFixed(0)}%, own process, RSS ${(m.verifyRssMb ?? 0).toFixed(0)} MB)`,
    );
  if (peer !== undefined)
    parts.push(
      `speed vs peer ${(peer.wallMs / m.wallMs).toFixed(2)}x (CPU ${(peer.cpuMs / m.cpuMs).toFixed(2)}x)`,
    );
  console.log(`  ${parts.join(' | ')}${spread(m)}`);
}

function addRequests(a: S3RequestCounts, b: S3RequestCounts): S3RequestCounts {
  return { get: a.get + b.get, put: a.put + b.put, copy: a.copy + b.copy, delete: a.delete + b.delete };
}

/** Readers that all read DELTA_BINARY_PACKED: declaring them turns it on (core/readers.ts). */
const MODERN_READERS: readonly Reader[] = ['spark-3.3', 'trino', 'athena-v3', 'duckdb', 'pyarrow'];

/** One writer setting's effect beside the default row: wall, CPU and output bytes, each as a change. */
function effectOf(label: string, m: Measured, base: Measured): void {
  const change = (a: number, b: number) => `${a >= b ? '+' : ''}${((100 * (a - b)) / b).toFixed(1)} %`;
  const sum = (x: Measured) => x.outputs.reduce((n, b) => n + b, 0);
  console.log(
    `  ${label} vs default: wall ${change(m.wallMs, base.wallMs)} | CPU ${change(m.cpuMs, base.cpuMs)} | output bytes ${change(sum(m), sum(base))}`,
  );
}

async function inputBytesOf(dir: string): Promise<number> {
  let total = 0;
  for (const n of await readdir(join(dir, 'data'))) total += (await stat(join(dir, 'data', n))).size;
  return total;
}

/**
 * The profiler's cost per S3 event, from test/bench/profiler.ts's own measurement (its default workload, through
 * the real handler against DynamoDB Local), or undefined when it could not run (DynamoDB Local needs Java).
 */
async function measureProfiler(): Promise<number | undefined> {
  console.log('  profiler, measured for the all-in lines (test/bench/profiler.ts, its default workload):');
  try {
    const { run: profiler } = await import('./profiler.js');
    return (await profiler([])).usdPerEvent;
  } catch (err) {
    console.log(`  profiler not measured: ${(err as Error).message}`);
    return undefined;
  }
}

/**
 * Flags: `--scale <f>` multiplies the file counts (default 1: the full sets; 0.1 for a quick run),
 * `--sets B,C,D` picks sets (default B,C), `--repeat <n>` reports each figure as the median of n interleaved runs,
 * `--tsx` runs the children under tsx instead of as an esbuild bundle.
 * Goals are printed, not asserted.
 */
export async function run(flags: readonly string[]): Promise<void> {
  const scale = Number(flag(flags, 'scale') ?? process.env.BENCH_SCALE ?? '1');
  childScript = flags.includes('--tsx') ? undefined : await bundleChild();
  const sets = (flag(flags, 'sets') ?? 'B,C').split(',');
  console.log(
    `  rewrite bench: scale ${scale}, ${cpus().length} CPUs, node ${process.version}, children ${childScript === undefined ? 'under tsx' : 'bundled (esbuild)'}`,
  );
  const repeat = Math.max(1, Math.floor(Number(flag(flags, 'repeat') ?? '1')));
  if (repeat > 1) console.log(`  each figure: the median (by wall time) of ${repeat} interleaved runs`);
  const out = join(ROOT, 'out');
  const cores = cpus().length;
  // The all-in lines price the profiler's events at its cost per event, measured here in the same run.
  const profilerUsdPerEvent = sets.includes('B') || sets.includes('C') ? await measureProfiler() : undefined;
  if (sets.includes('B')) {
    const dir = await ensureSet({ name: 'B', files: Math.max(2, Math.round(2000 * scale)), rows: 20_000 });
    const bytes = await inputBytesOf(dir);
    console.log(`  set B: ${(bytes / MB).toFixed(0)} MB input`);
    const rows = await medians(repeat, [
      { engine: 'duckdb', dir, out, threads: 1 },
      { engine: 'duckdb', dir, out, threads: 2 },
      { engine: 'compactor', dir, out },
      { engine: 'phases', dir, out },
      { engine: 'compactor', dir, out, deltaEncoding: true },
      { engine: 'compactor', dir, out, readers: MODERN_READERS },
      { engine: 'compactor', dir, out, statistics: 'auto' },
      ...(cores > 1 ? [{ engine: 'compactor', dir, out, workers: cores } as const] : []),
      { engine: 'compactor', dir, out, pageCompression: 'native' },
      ...(cores > 1
        ? [{ engine: 'compactor', dir, out, workers: cores, pageCompression: 'native' } as const]
        : []),
    ]);
    const [d1, d2, ours, phases, delta, modern, auto] = rows as [
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
      Measured,
    ];
    // The workers rows exist only with more than one core: [7] workers, [8] native, [9] native on workers.
    const workersRow = cores > 1 ? rows[7] : undefined;
    const nativeRow = rows[cores > 1 ? 8 : 7] as Measured;
    const nativeWorkersRow = cores > 1 ? rows[9] : undefined;
    report('DuckDB COPY threads=1', bytes, d1);
    report('DuckDB COPY threads=2', bytes, d2);
    report('compactor rewrite+fingerprint, 1 thread', bytes, ours, d1);
    const p = phases.phases;
    if (p !== undefined) {
      console.log(
        `  one thread's phases (parquet-wasm, same settings, no I/O layer): decode ${(p.decodeMs / 1000).toFixed(2)} s | fingerprint ${(p.hashMs / 1000).toFixed(2)} s ordered-columns-v1 (${((100 * p.hashMs) / (p.decodeMs + p.hashMs + p.encodeMs)).toFixed(0)}% of the phases; multiset-v1 on the same batches: ${(p.multisetMs / 1000).toFixed(2)} s) | encode ${(p.encodeMs / 1000).toFixed(2)} s${spread(phases)}`,
      );
    }
    report('compactor, deltaEncoding, 1 thread', bytes, delta, d1);
    report('compactor, modern readers, 1 thread', bytes, modern, d1);
    effectOf(`readers ${MODERN_READERS.join(',')} (delta on)`, modern, ours);
    report('compactor, statistics auto, 1 thread', bytes, auto, d1);
    effectOf('statistics auto', auto, ours);
    if (workersRow !== undefined) report(`compactor, ${cores} worker threads`, bytes, workersRow, d2);
    report('compactor, native page compression, 1 thread', bytes, nativeRow, d1);
    effectOf('native page compression', nativeRow, ours);
    if (workersRow !== undefined && nativeWorkersRow !== undefined) {
      report(`compactor, native page compression, ${cores} worker threads`, bytes, nativeWorkersRow, d2);
      effectOf(`native page compression on ${cores} workers`, nativeWorkersRow, workersRow);
    }
    const two = workersRow ?? ours;
    const cost = await reportCost(
      dir,
      bytes,
      { ours, duckdb: d1 },
      workersRow === undefined ? undefined : { ours: workersRow, duckdb: d2 },
    );
    await reportAllIn('B', dir, bytes, ours, profilerUsdPerEvent);
    const hashShare = p === undefined ? undefined : (100 * p.hashMs) / ours.wallMs;
    console.log(
      `  goals (#19): fingerprint <=10% of the rewrite: ${hashShare === undefined ? 'n/a' : `${hashShare.toFixed(0)}%`} (its phase time / the 1-thread rewrite's wall) | verify <=35%: ${((100 * (ours.verifyMs ?? 0)) / ours.wallMs).toFixed(0)}% (1 thread), ${((100 * (two.verifyMs ?? 0)) / two.wallMs).toFixed(0)}% (${cores}) | compute <=$1/TB at 1,769 MB: $${cost.computeUsdPerTb.toFixed(2)} | for reference: 1 thread ${(d1.wallMs / ours.wallMs).toFixed(2)}x DuckDB t1 (CPU ${(d1.cpuMs / ours.cpuMs).toFixed(2)}x), ${cores} workers ${(d2.wallMs / two.wallMs).toFixed(2)}x DuckDB t2 (scaling ${(ours.wallMs / two.wallMs).toFixed(2)}x) | RSS ${peakOf(ours)} MB (1 thread), ${peakOf(two)} MB (${cores})`,
    );
  }
  if (sets.includes('C')) {
    const dir = await ensureSet({ name: 'C', files: Math.max(2, Math.round(10_000 * scale)), rows: 500 });
    const bytes = await inputBytesOf(dir);
    console.log(`  set C: ${(bytes / MB).toFixed(0)} MB input`);
    const [d1, d2, ours, slow, native] = (await medians(repeat, [
      { engine: 'duckdb', dir, out, threads: 1 },
      { engine: 'duckdb', dir, out, threads: 2 },
      { engine: 'compactor', dir, out },
      { engine: 'compactor', dir, out, latencyMs: 25 },
      { engine: 'compactor', dir, out, pageCompression: 'native' },
    ])) as [Measured, Measured, Measured, Measured, Measured];
    report('DuckDB COPY threads=1', bytes, d1);
    report('DuckDB COPY threads=2', bytes, d2);
    report('compactor', bytes, ours, d1);
    report('compactor, 25 ms per request', bytes, slow, d1);
    report('compactor, native page compression', bytes, native, d1);
    effectOf('native page compression', native, ours);
    console.log(
      `  goals: C >=0.8x DuckDB t1 (#19): ${(d1.wallMs / ours.wallMs).toFixed(2)}x (CPU time ${(d1.cpuMs / ours.cpuMs).toFixed(2)}x) | with latency >=80% of without: ${((100 * ours.wallMs) / slow.wallMs).toFixed(0)}% | RSS <=256 MB: ${Math.max(Number(peakOf(ours)), Number(peakOf(slow)))} MB`,
    );
    await reportCost(dir, bytes, { ours, duckdb: d1 });
    await reportAllIn('C', dir, bytes, ours, profilerUsdPerEvent);
  }
  if (sets.includes('D')) {
    const dir = await ensureSetD(Math.max(2, Math.round(40 * scale)));
    const bytes = await inputBytesOf(dir);
    console.log(`  set D: ${(bytes / MB).toFixed(0)} MB input, one ~24 MB ZSTD row group per file`);
    const [d1, ours, encoded] = (await medians(repeat, [
      { engine: 'duckdb', dir, out, threads: 1 },
      { engine: 'compactor', dir, out },
      { engine: 'compactor', dir, out, stitch: false },
    ])) as [Measured, Measured, Measured];
    report('DuckDB COPY threads=1', bytes, d1);
    report('compactor, stitching, 1 thread', bytes, ours, d1);
    report('compactor, stitching off, 1 thread', bytes, encoded, d1);
    console.log(
      `  goals: D >=3x DuckDB t1: ${(d1.wallMs / ours.wallMs).toFixed(2)}x (CPU time ${(d1.cpuMs / ours.cpuMs).toFixed(2)}x) | RSS: ${peakOf(ours)} MB`,
    );
    await reportCost(dir, bytes, { ours, duckdb: d1 });
  }
  await rm(out, { recursive: true, force: true });
}

if (process.argv[2] === '--child') {
  runChild(JSON.parse(process.argv[3] as string) as Job).then(
    (m) => console.log(JSON.stringify(m)),
    (err: unknown) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
}
