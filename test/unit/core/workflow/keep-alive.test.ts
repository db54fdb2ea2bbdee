// whileAlive: a format's liveness signal renewed while a step runs, and never after it: a renewal in flight when the
// work ends is awaited (so a caller removing the signal next cannot be overtaken), and a failed renewal does not
// fail the work; a step taking over a group renews it before it starts.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { whileAlive } from '../../../../functions/core/workflow/keep-alive.js';

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
});

afterEach(() => {
  vi.useRealTimers();
});

describe('whileAlive', () => {
  it('renews every interval while the work runs, and not once it ended', async () => {
    // Prepare
    let renewals = 0;
    const keepAlive = {
      everyMs: 1_000,
      renew: async () => {
        renewals += 1;
      },
    };

    // Act: the work spans three intervals; then time goes on
    const result = await whileAlive(keepAlive, async () => {
      await vi.advanceTimersByTimeAsync(3_500);
      return 'rewritten';
    });
    const atEnd = renewals;
    await vi.advanceTimersByTimeAsync(10_000);

    // Assess
    expect(result).toBe('rewritten');
    expect(atEnd).toBe(3);
    expect(renewals).toBe(3);
  });

  it('waits for a renewal in flight before it returns, and drops a failed one', async () => {
    // Prepare: the first renewal fails, the second is still running when the work ends
    const events: string[] = [];
    let release: () => void = () => {};
    let calls = 0;
    const keepAlive = {
      everyMs: 1_000,
      renew: async () => {
        calls += 1;
        if (calls === 1) throw new Error('503 Slow Down');
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        events.push('renewed');
      },
    };

    // Act
    const done = whileAlive(keepAlive, async () => {
      await vi.advanceTimersByTimeAsync(2_000);
      events.push('work ended');
    }).then(() => events.push('returned'));
    await vi.waitFor(() => expect(calls).toBe(2));
    release();
    await done;

    // Assess
    expect(events).toEqual(['work ended', 'renewed', 'returned']);
  });

  it('renews once before the work starts when asked to (a step taking over a group another left), and a failed first renewal does not stop the work', async () => {
    // Prepare
    const events: string[] = [];
    let calls = 0;
    const keepAlive = {
      everyMs: 1_000,
      renew: async () => {
        calls += 1;
        events.push(`renewal ${calls}`);
        if (calls === 1) throw new Error('503 Slow Down');
      },
    };

    // Act: work shorter than one interval
    const result = await whileAlive(
      keepAlive,
      async () => {
        events.push('work');
        await vi.advanceTimersByTimeAsync(500);
        return 'verified';
      },
      { now: true },
    );

    // Assess
    expect(result).toBe('verified');
    expect(events).toEqual(['renewal 1', 'work']);
  });

  it('runs the work alone without a signal', async () => {
    // Act
    const result = await whileAlive(undefined, async () => 42);
    // Assess
    expect(result).toBe(42);
  });
});
