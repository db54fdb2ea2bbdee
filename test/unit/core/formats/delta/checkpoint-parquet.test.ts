// The checkpoint Parquet reader turns 64-bit values into safe numbers, or into their exact decimal text when
// beyond 2^53 (a long column's stats), so one extreme statistic never makes a whole checkpoint unreadable.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readParquetRecords } from '../../../../../functions/core/formats/delta/checkpoint-parquet.js';
import { openDuckDb } from '../../../../support/duckdb.js';

describe('checkpoint Parquet records', () => {
  it('keeps safe 64-bit integers as numbers and gives larger ones as exact decimal text, inside structs too', async () => {
    // Prepare
    const duck = await openDuckDb();
    const dir = mkdtempSync(join(tmpdir(), 'delta-parquet-'));
    const path = join(dir, 'x.parquet');
    try {
      await duck.writeParquet(
        "SELECT 1661662807080::BIGINT AS ts, {'numRecords': 3::BIGINT, 'max': 9223372036854775807::BIGINT} AS stats",
        path,
      );
      // Act
      const rows = await readParquetRecords(readFileSync(path));
      // Assess
      expect(rows).toEqual([{ ts: 1661662807080, stats: { numRecords: 3, max: '9223372036854775807' } }]);
    } finally {
      duck.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
