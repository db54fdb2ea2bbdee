// CLI start-up benchmark: how long `lake-compactor` takes to answer --version, --help, `compact --help` and a
// `plan` of a tiny local folder, as the median of N runs in ms, beside `node -e 0` (Node's own start-up) run in the
// same loop, so the ratio stays meaningful on a loaded machine where absolute times are not.
//
// It runs the compiled CLI (dist/functions/cli/main.js, what an installed package runs) when `npm run build` has
// made it, else the repository's bin through tsx (and says which).
//
// `npm run bench -- cli-startup [--runs 9]`
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parquetWriteBuffer } from 'hyparquet-writer';

const repo = fileURLToPath(new URL('../..', import.meta.url));

function flag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  return Number.isFinite(value) && value > 0 ? value : fallback;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** One run's wall time in ms; a run that fails is reported, not timed. */
function timed(argv: readonly string[], expectedStatus: number): number {
  const started = process.hrtime.bigint();
  const child = spawnSync(process.execPath, argv, { cwd: repo, encoding: 'utf8' });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (child.status !== expectedStatus)
    throw new Error(`${argv.join(' ')} exited ${child.status}, expected ${expectedStatus}: ${child.stderr}`);
  return ms;
}

export async function run(flags: readonly string[]): Promise<void> {
  const runs = flag(flags, 'runs', 9);
  const compiled = join(repo, 'dist', 'functions', 'cli', 'main.js');
  const entry = existsSync(compiled) ? [compiled] : [join(repo, 'bin', 'lake-compactor.js')];
  console.log(
    `CLI: ${existsSync(compiled) ? 'compiled (dist/)' : 'bin/lake-compactor.js through tsx (run npm run build for the compiled CLI)'}; median of ${runs} runs`,
  );

  // A tiny table: two partitions of two small Parquet files each.
  const root = await mkdtemp(join(tmpdir(), 'lc-bench-cli-'));
  const table = join(root, 'events');
  for (const day of ['2024-01-01', '2024-01-02']) {
    await mkdir(join(table, `date=${day}`), { recursive: true });
    for (const n of [0, 1]) {
      const bytes = parquetWriteBuffer({
        columnData: [
          { name: 'id', data: Int32Array.from({ length: 100 }, (_, i) => i + n * 100), type: 'INT32' },
        ],
      });
      await writeFile(join(table, `date=${day}`, `part-${n}.parquet`), new Uint8Array(bytes));
    }
  }

  const cases: { name: string; argv: string[]; status: number }[] = [
    { name: 'node -e 0', argv: ['-e', '0'], status: 0 },
    { name: '--version', argv: [...entry, '--version'], status: 0 },
    { name: '--help', argv: [...entry, '--help'], status: 0 },
    { name: 'compact --help', argv: [...entry, 'compact', '--help'], status: 0 },
    { name: 'plan <tiny folder>', argv: [...entry, 'plan', table], status: 0 },
  ];
  try {
    // Interleaved, so a burst of load elsewhere falls on every case alike.
    const samples = new Map(cases.map((c) => [c.name, [] as number[]]));
    for (let i = 0; i < runs; i++) for (const c of cases) samples.get(c.name)?.push(timed(c.argv, c.status));
    const baseline = median(samples.get('node -e 0') ?? []);
    console.log(`${'case'.padEnd(22)}${'median ms'.padStart(10)}${'× node -e 0'.padStart(13)}`);
    for (const c of cases) {
      const ms = median(samples.get(c.name) ?? []);
      console.log(
        `${c.name.padEnd(22)}${ms.toFixed(0).padStart(10)}${(ms / baseline).toFixed(1).padStart(13)}`,
      );
    }
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}
