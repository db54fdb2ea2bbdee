// An in-process CLI io for tests: everything the command prints is captured line by line, the clock is
// manual and the environment is only what the test passes (never the developer's AWS settings).
import type { CliIo } from '../../functions/cli/index.js';
import { ManualClock } from '../../functions/ports/clock.js';

export type CapturedIo = CliIo & { readonly stdout: string[]; readonly stderr: string[] };

/** A CLI io at `now` (default 2024-02-01T00:00Z) with exactly `env` as its environment. */
export function captureIo(options: { now?: number; env?: Record<string, string> } = {}): CapturedIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    out: (t) => stdout.push(t),
    err: (t) => stderr.push(t),
    clock: new ManualClock(options.now ?? Date.UTC(2024, 1, 1)),
    env: options.env ?? {},
  };
}
