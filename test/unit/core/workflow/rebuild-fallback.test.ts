// Proves that a delete-rebuild group keeps its mode only when an undo could rebuild its inputs within the memory of
// the steps that run an undo: a group with an output above REBUILD_MAX_OUTPUT_BYTES retires to trash (a copy per
// input) instead of risking an undo that cannot finish, which would leave the group fenced for good.

import { describe, expect, it } from 'vitest';
import { REBUILD_MAX_OUTPUT_BYTES, rebuildFallback } from '../../../../functions/core/workflow/compact.js';

const inputs = [
  { key: 'events/date=2024-01-01/a.parquet', etag: '"a"', size: 1_000, rows: 10 },
  { key: 'events/date=2024-01-01/b.parquet', etag: '"b"', size: 1_000, rows: 10 },
];
const sources = [
  [
    { key: inputs[0]?.key ?? '', firstRow: 0, rows: 10 },
    { key: inputs[1]?.key ?? '', firstRow: 0, rows: 10 },
  ],
];
const output = (size: number) => [{ key: 'staging/out-0.parquet', size, etag: '"o"', rows: 20 }];

describe('delete-rebuild fallback', () => {
  it('keeps delete-rebuild when every output is small enough to rebuild from', () => {
    // Prepare / Act
    const decided = rebuildFallback(
      { retireMode: 'delete-rebuild', inputs },
      { sources, outputs: output(REBUILD_MAX_OUTPUT_BYTES) },
    );

    // Assess
    expect(decided).toEqual({});
  });

  it('retires to trash, saying why, when an output is larger than an undo can rebuild from', () => {
    // Prepare / Act
    const decided = rebuildFallback(
      { retireMode: 'delete-rebuild', inputs },
      { sources, outputs: output(REBUILD_MAX_OUTPUT_BYTES + 1) },
    );

    // Assess
    expect(decided.retireMode).toBe('trash');
    expect(decided.note).toContain(`an output of ${REBUILD_MAX_OUTPUT_BYTES + 1} bytes is larger than`);
  });

  it('leaves other retire modes alone, whatever the output size', () => {
    // Prepare / Act
    const decided = rebuildFallback(
      { retireMode: 'delete-versioned', inputs },
      { sources, outputs: output(10 * REBUILD_MAX_OUTPUT_BYTES) },
    );

    // Assess
    expect(decided).toEqual({});
  });
});
