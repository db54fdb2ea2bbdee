// The concurrent writer of the Delta benchmark (delta.ts), in its own process: one micro-batch appended and committed
// about every second through the sample appender, until told to stop. A separate process, so its Parquet encoding
// and log reads do not share the compaction's event loop and CPU time: the optimize is timed as it would run beside
// a real streaming writer, and its ratio to the Hive rewrite (which has no writer) stays fair.
//
// `node --import tsx test/bench/delta-appender.ts <table folder> <rows per batch> <day>`: prints `ready` once it
// runs, then appends; on `stop` (or end of stdin) it finishes the commit in flight and prints `{"appended": n}`.
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { appendDeltaEvents } from '../../functions/tools/sample-delta.js';

const CADENCE_MS = 1000;

async function main(): Promise<void> {
  const [dir, rowsArg, day] = process.argv.slice(2);
  const rows = Number(rowsArg);
  if (dir === undefined || day === undefined || !Number.isSafeInteger(rows) || rows < 1) {
    throw new Error('usage: delta-appender.ts <table folder> <rows per batch> <day>');
  }
  let stopped = false;
  let wake: () => void = () => undefined;
  const stop = () => {
    stopped = true;
    wake();
  };
  process.stdin.setEncoding('utf8');
  process.stdin.on('data', (chunk: string) => {
    if (chunk.includes('stop')) stop();
  });
  process.stdin.on('end', stop);

  const store = new LocalObjectStore(dir);
  let appended = 0;
  process.stdout.write('ready\n');
  for (let i = 0; !stopped; i += 1) {
    const started = Date.now();
    await appendDeltaEvents(store, '', { day, rows, seed: 7_000_001 + i, now: started });
    appended += 1;
    // The next commit one second after this one started (or at once when this one took longer), unless stopped.
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, CADENCE_MS - (Date.now() - started)));
      wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }
  process.stdout.write(`${JSON.stringify({ appended })}\n`);
  process.stdin.destroy();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
