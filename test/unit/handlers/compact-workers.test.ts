// How many encoding threads the compact Lambda uses: Lambda's vCPUs follow memory (one per 1,769 MB), and
// the threads never exceed the cores the runtime reports nor drop below one.
import { describe, expect, it } from 'vitest';
import { compactWorkers } from '../../../functions/handlers/compact.js';

describe('compactWorkers', () => {
  it('gives the default 3,008 MB function two threads and a small one a single thread', () => {
    // Prepare / Act / Assess
    expect(compactWorkers(3008, 2)).toBe(2);
    expect(compactWorkers(1024, 2)).toBe(1);
    expect(compactWorkers(128, 2)).toBe(1);
  });

  it('follows memory up to the cores the runtime reports, never beyond', () => {
    // Prepare / Act / Assess
    expect(compactWorkers(10_240, 6)).toBe(6);
    expect(compactWorkers(10_240, 4)).toBe(4);
    expect(compactWorkers(7_076, 6)).toBe(4);
  });
});
