// The Iceberg bench's concurrent writer, run as a child process (so the compaction cannot starve its timer): appends
// one micro-batch to the path-catalog table in a local folder every second until SIGTERM, then prints its tally.
//
// `node --import tsx test/bench/iceberg-appender.ts <table dir> <day> <rows per batch> <seed>`
// stdout: one `commit <n>` line per committed append, then one JSON line `{"won":…,"attempts":…}` on exit: appends
// committed and commit attempts (attempts - won lost to another writer, the compaction, and were retried).
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { appendIcebergEvents } from '../../functions/tools/sample-iceberg.js';
import { countingCommitAttempts } from './iceberg.js';

async function main(argv: readonly string[]): Promise<void> {
  const [dir, day, rowsText, seedText] = argv;
  if (dir === undefined || day === undefined)
    throw new Error('usage: iceberg-appender <dir> <day> <rows> <seed>');
  const rows = Number(rowsText ?? 1000);
  const seed = Number(seedText ?? 7_000_001);
  const counter = { attempts: 0 };
  const store = countingCommitAttempts(new LocalObjectStore(dir), counter);
  let stopped = false;
  let wake: (() => void) | undefined;
  process.on('SIGTERM', () => {
    stopped = true;
    wake?.();
  });
  let won = 0;
  for (let i = 0; !stopped; i++) {
    await appendIcebergEvents(store, '', { day, rows, seed: seed + i, now: Date.now() });
    won += 1;
    process.stdout.write(`commit ${won}\n`);
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, 1000);
    });
  }
  process.stdout.write(`${JSON.stringify({ won, attempts: counter.attempts })}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
