// A child process for memory tests: runs the CLI on the given arguments in this process and, when it is done,
// writes `{ exitCode, maxRssBytes }` as JSON to the report file: the exit code the CLI would exit with and the peak
// resident set size of the whole process (every thread: the Parquet engine's workers too), from /proc's VmHWM.
// Why not getrusage's ru_maxrss: Linux keeps it across execve, so a child spawned by a large test worker reports
// the worker's high-water mark, not its own; VmHWM belongs to the address space exec made.
//
// Usage: node --import tsx peak-rss-child.ts <report.json> <cli arguments...> (metadata-bombs.test.ts runs an esbuild
// bundle of it: test/support/node-bundle.ts)
import { readFileSync, writeFileSync } from 'node:fs';
import { run } from '../../functions/cli/index.js';

/** What the child reports. */
export interface PeakRssReport {
  readonly exitCode: number;
  /** The peak resident set size of this process (VmHWM), in bytes. */
  readonly maxRssBytes: number;
}

const [report, ...argv] = process.argv.slice(2);
if (report === undefined) throw new Error('usage: peak-rss-child.ts <report.json> <cli arguments...>');
const exitCode = await run(argv);
const hwm = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync('/proc/self/status', 'utf8'));
if (hwm === null) throw new Error('no VmHWM in /proc/self/status: this test needs Linux');
const result: PeakRssReport = { exitCode, maxRssBytes: Number(hwm[1]) * 1024 };
writeFileSync(report, JSON.stringify(result));
process.exitCode = exitCode;
