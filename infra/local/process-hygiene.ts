// Last-resort cleanup for the harness: registered callbacks run synchronously when the process
// exits or gets SIGINT/SIGTERM/SIGHUP, so no Java child or temp folder outlives a crashed test run.
//
// Callbacks must be synchronous (kill by pid, rmSync): at 'exit' time the event loop is gone.

const callbacks = new Set<() => void>();
let installed = false;

const SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/** Registers `callback` for process exit and termination signals; returns the unregister function. */
export function onProcessExit(callback: () => void): () => void {
  install();
  callbacks.add(callback);
  return () => {
    callbacks.delete(callback);
  };
}

function runAll(): void {
  for (const callback of [...callbacks]) {
    callbacks.delete(callback);
    try {
      callback();
    } catch {
      // Best effort: the other callbacks must still run.
    }
  }
}

function install(): void {
  if (installed) return;
  installed = true;
  process.once('exit', runAll);
  for (const signal of SIGNALS) {
    const handler = (): void => {
      runAll();
      process.off(signal, handler);
      // Keep the default behaviour (terminate) unless someone else (a test runner) handles it.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, handler);
  }
}
