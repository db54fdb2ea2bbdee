// `npm run demo` (interim): generates the fragmented sample lake into a temporary folder and runs
// the operator CLI's `profile` and `plan` on it. The local-cloud demo replaces this (demo issue).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { run } from '../cli.js';
import { localFolderSink } from './generate.js';
import { writeSampleLake } from './sample-lake.js';

const options = new Command('demo')
  .option('--days <n>', 'days (partitions) to generate', (v) => Number.parseInt(v, 10), 30)
  .option('--batches <n>', 'micro-batch files per day', (v) => Number.parseInt(v, 10), 20)
  .option('--keep', 'keep the generated lake')
  .parse()
  .opts<{ days: number; batches: number; keep?: boolean }>();

const root = await mkdtemp(join(tmpdir(), 'lake-compactor-demo-'));
try {
  const started = performance.now();
  const summary = await writeSampleLake(localFolderSink(root), {
    days: options.days,
    batches: options.batches,
  });
  process.stdout.write(
    `Generated ${summary.files} files (${summary.rows} rows) in ${summary.partitions ? Object.keys(summary.partitions).length : 0} partitions in ${((performance.now() - started) / 1000).toFixed(1)} s → ${root}\n\n`,
  );
  process.stdout.write('$ lake-compactor profile events\n');
  let code = await run(['profile', join(root, 'events')]);
  if (code === 0) {
    process.stdout.write('\n$ lake-compactor plan events\n');
    code = await run(['plan', join(root, 'events')]);
  }
  process.exitCode = code;
} finally {
  if (options.keep) process.stdout.write(`\nKept ${root}\n`);
  else await rm(root, { recursive: true, force: true });
}
