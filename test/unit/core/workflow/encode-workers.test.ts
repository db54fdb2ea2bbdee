// How many worker threads a group is encoded with: the table's `encodeWorkers` where set, capped by what the
// compact function holds, else the function's default; and the table setting travels from config to the run.
import { describe, expect, it } from 'vitest';
import { normalizeRunInput } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { encodeWorkersFor } from '../../../../functions/core/workflow/compact.js';

const table = { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] };

function runOf(extra: Record<string, unknown>) {
  const normalized = normalizeRunInput(
    { table: 'events', partition: 'date=2024-03-01' },
    parseTableConfigs([{ ...table, ...extra }]),
    { executionName: 'run-1', startedAt: 1_000 },
  );
  if (normalized.mode !== 'single') throw new Error('expected one partition');
  return normalized.run;
}

describe('encodeWorkersFor', () => {
  it('takes the function’s default when the table sets none, and one thread without a default', () => {
    // Prepare / Act / Assess
    expect(encodeWorkersFor(undefined, 2, 3)).toBe(2);
    expect(encodeWorkersFor(undefined, undefined, undefined)).toBe(1);
  });

  it('takes the table’s choice up to the function’s ceiling, down to one thread', () => {
    // Prepare / Act / Assess
    expect(encodeWorkersFor(1, 2, 3)).toBe(1);
    expect(encodeWorkersFor(3, 2, 3)).toBe(3);
    expect(encodeWorkersFor(8, 2, 3)).toBe(3);
    // Without a ceiling (the CLI), never more than the default.
    expect(encodeWorkersFor(4, 1, undefined)).toBe(1);
  });
});

describe('the table setting encodeWorkers', () => {
  it('reaches the run context when set, and is absent otherwise', () => {
    // Prepare / Act
    const set = runOf({ encodeWorkers: 1 });
    const unset = runOf({});

    // Assess
    expect(set.encodeWorkers).toBe(1);
    expect('encodeWorkers' in unset).toBe(false);
  });

  it('refuses zero, fractions and more than 16 workers', () => {
    // Prepare / Act / Assess
    for (const encodeWorkers of [0, 1.5, 17]) {
      expect(() => parseTableConfigs([{ ...table, encodeWorkers }])).toThrow(/encodeWorkers/);
    }
  });
});
