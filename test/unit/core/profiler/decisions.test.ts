// Unit tests of the trigger's pure rules: deterministic execution names, when the same verdict is not written
// again, and how often a decision item is kept.
import { describe, expect, it } from 'vitest';
import {
  decisionSignature,
  executionName,
  isUnchanged,
  shouldStoreDecision,
} from '../../../../functions/core/profiler/decisions.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);

describe('execution names', () => {
  it('builds deterministic names of at most 80 allowed characters that change with the generation', () => {
    // Prepare
    const ref = { table: `very.long-table_${'x'.repeat(90)}`, partition: 'date=2026-11-29/région=eu west' };

    // Act
    const a = executionName(ref, 1);
    const again = executionName(ref, 1);
    const b = executionName(ref, 2);

    // Assess
    expect(a).toBe(again);
    expect(a).not.toBe(b);
    expect(a.length).toBeLessThanOrEqual(80);
    expect(a).toMatch(/^[A-Za-z0-9_-]+-[0-9a-f]{12}-g1$/);
    expect(executionName({ table: 'events', partition: 'a' }, 1)).not.toBe(
      executionName({ table: 'events', partition: 'b' }, 1),
    );
  });
});

describe('isUnchanged', () => {
  it('skips re-recording the same verdict in the same due slot within the heartbeat, and nothing else', () => {
    // Prepare
    const previous = { at: NOW, compact: false, reasons: ['a'], eligibleAt: NOW + 60_000, action: 'waiting' };
    const snapshot = { partition: 'p', lastDecision: previous, dueAt: NOW + 60_000 };
    const next = { ...previous, at: NOW + 30_000, reasons: ['b'], eligibleAt: NOW + 90_000 };

    // Act / Assess
    expect(isUnchanged(snapshot, next, NOW + 90_000)).toBe(true);
    expect(isUnchanged(snapshot, next, NOW + 6 * 60_000)).toBe(false);
    expect(isUnchanged(snapshot, { ...next, action: 'blocked' }, undefined)).toBe(false);
    expect(isUnchanged(snapshot, { ...next, at: NOW + 3_600_000 }, NOW + 90_000)).toBe(false);
    expect(isUnchanged({ partition: 'p' }, next, NOW + 90_000)).toBe(false);
  });
});

describe('shouldStoreDecision', () => {
  it('stores a decision item when the verdict changes or an hour passed, not for every batch', () => {
    // Prepare
    const waiting = { at: NOW, compact: false, reasons: [], eligibleAt: NOW + 1, action: 'waiting' };

    // Act / Assess
    expect(shouldStoreDecision(undefined, { compact: false }, NOW)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: false, eligibleAt: NOW + 5 }, NOW + 60_000)).toBe(false);
    expect(shouldStoreDecision(waiting, { compact: false }, NOW + 60_000)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: false, eligibleAt: NOW + 5 }, NOW + 3_600_000)).toBe(true);
    expect(shouldStoreDecision(waiting, { compact: true }, NOW + 1)).toBe(true);
    expect(shouldStoreDecision({ ...waiting, compact: true }, { compact: true }, NOW + 60_000)).toBe(false);
    expect(decisionSignature({ compact: false, eligibleAt: 1 })).toBe('waiting');
  });
});
