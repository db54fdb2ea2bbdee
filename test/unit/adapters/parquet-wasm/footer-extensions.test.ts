// Proves a valid file whose footer carries what the footer reader has no use for — key-value metadata on its
// column chunks (ColumnMetaData field 8) and Thrift fields newer than any parquet.thrift we know — is read
// (footer, rows, a rewrite with the same values), not skipped as unreadable.

import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { parquetWasmEngine } from '../../../../functions/adapters/parquet-wasm/engine.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { withColumnMetadataAndUnknownFields } from '../../../support/legacy-parquet.js';

const arrayBuffer = (b: Uint8Array) =>
  b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

function plainFile(seed: number): Uint8Array {
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        { name: 'id', data: Int32Array.from({ length: 5 }, (_, i) => i + seed), type: 'INT32' },
        { name: 'name', data: Array.from({ length: 5 }, (_, i) => `n${i + seed}`), type: 'STRING' },
      ],
    }),
  );
}

describe('footer extensions', () => {
  it('reads a footer with column-chunk key-value metadata and unknown Thrift fields, and rewrites its rows', async () => {
    // Prepare
    const files = [plainFile(0), plainFile(10)].map(withColumnMetadataAndUnknownFields);
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const inputs = await Promise.all(
      files.map(async (bytes, i) => ({
        key: `in/${i}.parquet`,
        size: bytes.length,
        ...(await source.put(`in/${i}.parquet`, bytes)),
      })),
    );

    // Act
    const footer = await parquetWasmEngine.readFooter(source, 'in/0.parquet');
    const result = await parquetWasmEngine.rewriteGroup(
      { source, target },
      { groupId: 'ext', files: inputs },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'snappy' },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: the inputs do carry column-chunk metadata, and were read all the same.
    const chunk = parquetMetadata(arrayBuffer(files[0] as Uint8Array)).row_groups[0]?.columns[0];
    expect(chunk?.meta_data?.key_value_metadata).toEqual([{ key: 'origin', value: 'legacy-writer' }]);
    expect(footer.rows).toBe(5);
    expect(footer.columns.map((c) => c.path.join('.'))).toEqual(['id', 'name']);
    const read = async (bytes: Uint8Array) => parquetReadObjects({ file: arrayBuffer(bytes) });
    const before = [...(await read(files[0] as Uint8Array)), ...(await read(files[1] as Uint8Array))];
    const after = (await Promise.all(result.outputs.map(async (o) => read(await target.get(o.key))))).flat();
    expect(after).toEqual(before);
    expect(before).toHaveLength(10);
  });
});
