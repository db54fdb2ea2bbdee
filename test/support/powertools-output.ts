// Captures what Powertools writes while each test of the calling file runs: every JSON line (EMF metrics and
// structured logs) on stdout and stderr, parsed; the streams are restored after each test.
import { afterEach, beforeEach, vi } from 'vitest';

/** The JSON lines written during the current test; `lines` is replaced before each test. */
export interface PowertoolsOutput {
  lines: Record<string, unknown>[];
}

/**
 * Registers the capture in the calling file's `beforeEach`/`afterEach`. Powertools reads its environment when an
 * instance is created, so metrics and INFO logs are switched on here, before the test builds its handler.
 */
export function capturePowertoolsOutput(): PowertoolsOutput {
  const output: PowertoolsOutput = { lines: [] };
  beforeEach(() => {
    delete process.env.POWERTOOLS_DEV;
    delete process.env.POWERTOOLS_METRICS_DISABLED;
    process.env.POWERTOOLS_LOG_LEVEL = 'INFO';
    output.lines = [];
    const capture = (chunk: string | Uint8Array) => {
      for (const line of String(chunk).split('\n')) {
        if (line.trim().startsWith('{')) output.lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      return true;
    };
    // EMF and info logs go to stdout; the logger writes warnings and errors to stderr.
    vi.spyOn(process.stdout, 'write').mockImplementation(capture);
    vi.spyOn(process.stderr, 'write').mockImplementation(capture);
  });
  afterEach(() => {
    vi.restoreAllMocks();
  });
  return output;
}
