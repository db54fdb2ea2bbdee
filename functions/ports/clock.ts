// The Clock port: core code never reads the wall clock itself, so tests can move time and
// decisions stay reproducible.

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
}

/** The real clock, for handlers and the CLI. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to, for tests. */
export class ManualClock implements Clock {
  constructor(private current: number) {}
  now(): number {
    return this.current;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  set(ms: number): void {
    this.current = ms;
  }
}
