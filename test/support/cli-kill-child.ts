// The child process of test/fault/cli-kill.test.ts: runs `lake-compactor compact` on a folder and kills
// itself with SIGKILL right after its k-th store request (or as a streamed write sends a chunk).
//
// Usage: node --import tsx cli-kill-child.ts <folder> [k] (the test runs an esbuild bundle of it). Without k it runs to the end and prints, as its
// last stdout line, every request with the journal state it happened in (the phases a kill can land in).
// It prints `started` once the CLI's modules are loaded, so a parent can also kill it by wall clock.
// `cli-kill-child.ts --rerun <folder>...` runs compact to the end on each folder in turn (the re-runs of
// killed runs, one process for many: a process start costs more than a re-run) and prints one JSON line each.
import { runCompact } from '../../functions/cli/compact.js';
import { systemClock } from '../../functions/ports/clock.js';
import { observedStore, type StoreCall } from './crash-store.js';

/** One request of the run: what it was and the state the group's journal entry was in. */
export interface ChildTick {
  readonly method: StoreCall['method'];
  readonly key: string;
  readonly phase: string;
}

/** The outcome of one re-run (`--rerun`). */
export interface RerunResult {
  readonly folder: string;
  readonly error?: string;
}

const io = { out: () => {}, clock: systemClock, env: process.env };
const [folder, killArg, ...more] = process.argv.slice(2);
if (folder === undefined) throw new Error('usage: cli-kill-child.ts <folder> [k] | --rerun <folder>...');
if (folder === '--rerun') {
  for (const target of [killArg, ...more]) {
    if (target === undefined) continue;
    const result: RerunResult = await runCompact(target, {}, io).then(
      () => ({ folder: target }),
      (err: unknown) => ({
        folder: target,
        error: err instanceof Error ? (err.stack ?? err.message) : String(err),
      }),
    );
    process.stdout.write(`${JSON.stringify(result)}\n`);
  }
  process.exit(0);
}
const killAfter = killArg === undefined ? undefined : Number(killArg);
const ticks: ChildTick[] = [];
let count = 0;
/** The last journal state written (`plan` until the first entry, and between partitions after `done`). */
let phase = 'plan';

function tick(call: StoreCall): void {
  count += 1;
  if (killAfter === undefined) ticks.push({ method: call.method, key: call.key, phase });
  else if (count === killAfter) process.kill(process.pid, 'SIGKILL');
}

const started = Date.now();
process.stdout.write('started\n');
await runCompact(folder, {}, io, {
  wrapStore: (store) =>
    observedStore(store, {
      // A chunk is counted as it is about to be written: a kill there leaves a half-written temp file.
      before: (call) => {
        if (call.method === 'chunk') tick(call);
      },
      after: (call) => {
        if (call.method === 'put' && call.key.startsWith('_lake-compactor/journal/runs/')) {
          const body = typeof call.body === 'string' ? call.body : new TextDecoder().decode(call.body);
          const state = (JSON.parse(body) as { state: string }).state;
          phase = state === 'done' || state === 'aborted' ? 'plan' : state;
        }
        if (call.method !== 'chunk') tick(call);
      },
    }),
});
if (killAfter === undefined) process.stdout.write(`${JSON.stringify({ ms: Date.now() - started, ticks })}\n`);
