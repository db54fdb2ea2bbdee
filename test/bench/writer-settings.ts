// Isolated, same-process measurement of the writer settings chosen from readers and data (issue #19 item 4): set
// B's shape (files of 20,000 events) rewritten in memory with the default settings, with declared modern readers
// (DELTA_BINARY_PACKED on), with statistics `auto`, and with both, in interleaved rounds so machine load hits every
// variant alike. Prints CPU and wall medians, output bytes, each as a change against the default, and which
// columns `auto` wrote without statistics. No child processes, no disk: less noise than the rewrite bench.
//
//   npx tsx test/bench/writer-settings.ts [--files 200] [--rounds 5]
import { parquetMetadata } from 'hyparquet';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../functions/adapters/parquet-wasm/rewrite.js';
import { type Reader, resolveDeltaEncoding } from '../../functions/core/readers.js';
import type { InputFile, RewriteOptions } from '../../functions/ports/parquet-engine.js';
import { generateEventsBatch, mulberry32 } from '../../functions/tools/sample-lake.js';

const MODERN: readonly Reader[] = ['spark-3.3', 'trino', 'athena-v3', 'duckdb', 'pyarrow'];

interface Variant {
  readonly label: string;
  readonly options: Partial<RewriteOptions>;
}

const VARIANTS: readonly Variant[] = [
  { label: 'default (readers undeclared, statistics all)', options: {} },
  {
    label: `readers ${MODERN.join(',')} (delta ${resolveDeltaEncoding(undefined, MODERN) ? 'on' : 'off'})`,
    options: { deltaEncoding: resolveDeltaEncoding(undefined, MODERN) },
  },
  { label: 'statistics auto', options: { statistics: { mode: 'auto' } } },
  {
    label: 'both',
    options: { deltaEncoding: resolveDeltaEncoding(undefined, MODERN), statistics: { mode: 'auto' } },
  },
];

interface Sample {
  readonly cpuMs: number;
  readonly wallMs: number;
  readonly bytes: number;
  readonly withoutStatistics: readonly string[];
}

function flag(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
};

async function once(
  source: MemoryObjectStore,
  files: readonly InputFile[],
  variant: Variant,
): Promise<Sample> {
  const target = new MemoryObjectStore();
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'bench', files },
    { outputKey: (i) => `out-${i}.parquet`, ...variant.options },
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(c0);
  const first = await target.get(result.outputs[0]?.key as string);
  const meta = parquetMetadata(new Uint8Array(first).buffer);
  const withoutStatistics = (meta.row_groups[0]?.columns ?? [])
    .filter((c) => c.meta_data?.statistics === undefined)
    .map((c) => c.meta_data?.path_in_schema.join('.') ?? '?');
  return {
    cpuMs: (cpu.user + cpu.system) / 1000,
    wallMs,
    bytes: result.outputs.reduce((n, o) => n + o.size, 0),
    withoutStatistics,
  };
}

async function main(): Promise<void> {
  const count = flag('files', 200);
  const rounds = flag('rounds', 5);
  const source = new MemoryObjectStore();
  const files: InputFile[] = [];
  for (let i = 0; i < count; i++) {
    const key = `part-${String(i).padStart(6, '0')}.parquet`;
    const bytes = generateEventsBatch(mulberry32(1_000_003 * i + 1), { rows: 20_000, day: '2024-01-01' });
    await source.put(key, bytes);
    files.push({ key, size: bytes.length, etag: String(i) });
  }
  console.log(`writer settings: ${count} files × 20,000 rows (set B's shape), ${rounds} interleaved rounds`);
  await once(source, files.slice(0, 4), VARIANTS[0] as Variant); // warm-up: wasm compiled, caches filled
  const samples = VARIANTS.map(() => [] as Sample[]);
  for (let r = 0; r < rounds; r++) {
    // Rotate the order each round, so no variant always runs first (or after the same neighbour).
    for (let k = 0; k < VARIANTS.length; k++) {
      const v = (k + r) % VARIANTS.length;
      samples[v]?.push(await once(source, files, VARIANTS[v] as Variant));
    }
  }
  const base = samples[0] as Sample[];
  const pct = (a: number, b: number) => `${a >= b ? '+' : ''}${((100 * (a - b)) / b).toFixed(1)} %`;
  VARIANTS.forEach((variant, v) => {
    const s = samples[v] as Sample[];
    const cpu = median(s.map((x) => x.cpuMs));
    const wall = median(s.map((x) => x.wallMs));
    const bytes = median(s.map((x) => x.bytes));
    const vs =
      v === 0
        ? ''
        : ` | vs default: CPU ${pct(cpu, median(base.map((x) => x.cpuMs)))}, wall ${pct(wall, median(base.map((x) => x.wallMs)))}, bytes ${pct(bytes, median(base.map((x) => x.bytes)))}`;
    console.log(
      `  ${variant.label}: CPU ${(cpu / 1000).toFixed(2)} s (rounds ${s.map((x) => (x.cpuMs / 1000).toFixed(2)).join('/')}) | wall ${(wall / 1000).toFixed(2)} s | ${(bytes / 1e6).toFixed(2)} MB | no statistics on: ${s[0]?.withoutStatistics.join(', ') || '(none)'}${vs}`,
    );
  });
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
