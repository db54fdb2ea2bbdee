// Setting footer key-value entries after a Parquet file's data is written (`withFooterEntries`): on a real Hudi
// base file, the entries are replaced and added, every byte before the footer is unchanged, and an independent
// reader (hyparquet) reads the same rows and the new entries; a tail that does not hold the whole footer is refused.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { describe, expect, it } from 'vitest';
import {
  FooterNotInTailError,
  withFooterEntries,
} from '../../../../functions/core/parquet/footer-entries.js';
import { keyValueRecord } from '../../../../functions/core/parquet/key-value.js';
import { HUDI_FIXTURES } from '../../../support/fixtures.js';

const FILE = join(
  HUDI_FIXTURES,
  'cow_v6_simplekeygen_nonhivestyle/10/97de74b1-2a8e-4bb7-874c-0a74e1f42a77-0_0-119-166_20240418172804498.parquet',
);

function arrayBuffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
}

describe('withFooterEntries', () => {
  it('replaces, drops and adds entries, leaving the data bytes and the rows as they were', async () => {
    // Prepare
    const original = new Uint8Array(readFileSync(FILE));
    const before = parquetMetadata(arrayBuffer(original));
    const footerStart = original.length - 8 - before.metadata_length;
    // Act
    const changed = withFooterEntries(original, { hoodie_min_record_key: 'new-min', 'extra.key': 'x' }, [
      'hoodie_max_record_key',
    ]);
    // Assess
    const after = parquetMetadata(arrayBuffer(changed));
    const kv = keyValueRecord(after.key_value_metadata ?? []);
    expect(kv.hoodie_min_record_key).toBe('new-min');
    expect(kv['extra.key']).toBe('x');
    expect(kv.hoodie_max_record_key).toBeUndefined();
    expect(kv['parquet.avro.schema']).toBe(
      keyValueRecord(before.key_value_metadata ?? [])['parquet.avro.schema'],
    );
    expect(
      Buffer.from(changed.subarray(0, footerStart)).equals(Buffer.from(original.subarray(0, footerStart))),
    ).toBe(true);
    const rows = async (bytes: Uint8Array) => parquetReadObjects({ file: arrayBuffer(bytes), compressors });
    expect(JSON.stringify(await rows(changed), (_, v) => (typeof v === 'bigint' ? String(v) : v))).toBe(
      JSON.stringify(await rows(original), (_, v) => (typeof v === 'bigint' ? String(v) : v)),
    );
  });

  it('refuses a tail that does not hold the whole footer', () => {
    // Prepare: the last 100 bytes of a file whose footer is several kilobytes.
    const original = new Uint8Array(readFileSync(FILE));
    // Act / Assess
    expect(() => withFooterEntries(original.subarray(original.length - 100), { a: 'b' })).toThrow(
      FooterNotInTailError,
    );
    expect(() => withFooterEntries(new Uint8Array(16), { a: 'b' })).toThrow(FooterNotInTailError);
  });
});
