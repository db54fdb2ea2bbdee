// The log rows a Merge-on-Read compaction writes as its rewrite's second input (logRowsParquet): a Parquet file in the
// base file's schema and key-value metadata, less Hudi's index entries. A base file whose only footer entries are
// those index keys leaves no entry at all, and the file must still be one the engine's reader (parquet-wasm) reads:
// an empty key-value list is written with no element type, which it refuses.
import { tableFromIPC } from 'apache-arrow';
import { parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import * as pw from 'parquet-wasm';
import { describe, expect, it } from 'vitest';
import { HUDI_INDEX_FOOTER_KEYS } from '../../../../../functions/core/formats/hudi/bloom/index.js';
import { logRowsParquet } from '../../../../../functions/core/formats/hudi/compaction-merge.js';

describe('logRowsParquet', () => {
  it('writes a file the engine reads when the base file carried only Hudi index entries in its footer', () => {
    // Prepare: a base file whose footer holds Hudi's min/max record keys and nothing else
    const base = parquetWriteBuffer({
      columnData: [
        { name: '_hoodie_record_key', data: ['k1', 'k2'], type: 'STRING' },
        { name: 'fare', data: [1.5, 2.5], type: 'DOUBLE' },
      ],
      kvMetadata: HUDI_INDEX_FOOTER_KEYS.slice(2).map((key) => ({ key, value: 'k1' })),
    });
    const baseMetadata = parquetMetadata(base);
    const merged = {
      merge: { dropPositions: [1], append: [{ _hoodie_record_key: 'k2', fare: 9.75 }] },
      counts: {
        baseRows: 2,
        logRecords: 1,
        logBlocks: 1,
        corruptBlocks: 0,
        rollbackBlocks: 0,
        keysTouched: 1,
      },
      baseMetadata,
    } as unknown as Parameters<typeof logRowsParquet>[0];

    // Act
    const written = logRowsParquet(merged, 'slice f1 of partition p');
    const table = tableFromIPC(pw.readParquet(written.bytes).intoIPCStream());

    // Assess
    expect(written.rows).toBe(1);
    expect(table.numRows).toBe(1);
    expect(table.getChild('fare')?.get(0)).toBe(9.75);
    expect(parquetMetadata(written.bytes.buffer.slice(0) as ArrayBuffer).key_value_metadata ?? []).toEqual(
      [],
    );
  });
});
