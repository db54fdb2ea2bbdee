// The Hudi bench's concurrent writer, run as a child process (so the clustering cannot starve its timer nor count
// its CPU time): one insert commit — a new file group of `rows` new record keys — into the Copy-on-Write table in a
// local folder every second until SIGTERM, each made as a Hudi writer configured with the storage lock makes it
// (under `.hoodie/.locks/table_lock.json`, its instant minted from the clock after every instant on the timeline:
// functions/tools/sample-hudi.ts), then prints its tally.
//
// `node --import tsx test/bench/hudi-appender.ts <table dir> <table version> <partition> <rows per commit> <keys
// written> <last instant>`: record keys continue after `keys written`, instants after `last instant` (what the
// table's generation left). stdout: one `commit <n>` line per commit won, then on exit one JSON line
// `{"won":…,"failed":…}`: commits completed, and later commits that threw (lock not acquired, a write refused) —
// each on stderr. A first commit that fails ends the child (the bench waits for it).
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { StorageBasedHudiLock } from '../../functions/core/formats/hudi/lock/index.js';
import { systemClock } from '../../functions/ports/clock.js';
import { type AppenderTable, appendHudiInsert } from '../../functions/tools/sample-hudi.js';

const CADENCE_MS = 1000;

async function main(argv: readonly string[]): Promise<void> {
  const [dir, versionText, partition, rowsText, writtenText, last] = argv;
  const version = Number(versionText);
  const rows = Number(rowsText);
  const written = Number(writtenText);
  if (
    dir === undefined ||
    partition === undefined ||
    last === undefined ||
    (version !== 6 && version !== 8) ||
    !Number.isSafeInteger(rows) ||
    rows < 1 ||
    !Number.isSafeInteger(written)
  ) {
    throw new Error(
      'usage: hudi-appender.ts <dir> <6|8> <partition> <rows per commit> <keys written> <last instant>',
    );
  }
  const store = new LocalObjectStore(dir);
  // The table as its generation left it: sample-hudi's createHudiTable would rewrite hoodie.properties and start
  // the keys at 1 again, so the appender's state is rebuilt from what the bench passed.
  const table: AppenderTable = { store, root: '', version, last, written };
  const lock = new StorageBasedHudiLock({ store, tableRoot: '', clock: systemClock });
  let stopped = false;
  let wake: (() => void) | undefined;
  process.on('SIGTERM', () => {
    stopped = true;
    wake?.();
  });
  let won = 0;
  let failed = 0;
  while (!stopped) {
    const started = Date.now();
    try {
      await appendHudiInsert(table, partition, rows, { clock: () => Date.now(), lock });
      won += 1;
      process.stdout.write(`commit ${won}\n`);
    } catch (err) {
      // The bench waits for the first commit: one that fails means the appender cannot run here at all.
      if (won === 0) throw err;
      failed += 1;
      // Fresh keys for the next commit whatever the failed one left: no key may be written twice.
      table.written += rows;
      process.stderr.write(
        `hudi appender: commit failed: ${err instanceof Error ? err.message : String(err)}\n`,
      );
    }
    // The next commit one second after this one started (or at once when this one took longer), unless stopped.
    await new Promise<void>((resolve) => {
      wake = resolve;
      setTimeout(resolve, Math.max(0, CADENCE_MS - (Date.now() - started)));
    });
  }
  process.stdout.write(`${JSON.stringify({ won, failed })}\n`);
}

main(process.argv.slice(2)).catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
