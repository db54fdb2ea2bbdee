// A footer read with the key-value entries a rewrite recomputes per output (`ownedKeys`) never decodes them: they
// are cut from the Thrift bytes before the parser sees them, their bytes counted for planning, and everything else
// the footer says — rows, row groups, schema, the other entries — is what the full read says. On base files Hudi
// itself wrote (their footers carry Hudi's bloom filter and min/max record keys).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HUDI_INDEX_FOOTER_KEYS } from '../../../../functions/core/formats/hudi/bloom/index.js';
import { parseFooterWithMetadata } from '../../../../functions/core/parquet/footer.js';
import { HUDI_FIXTURES } from '../../../support/fixtures.js';

const BASE_FILES = [
  'mor_v6_nonpartitioned_rollback/0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_0-13-23_20250126040823628.parquet',
  'mor_v9_txns_simple_nometa/region=apac/6c49c37a-faf6-4ab2-a4a7-d66e4ea05a2f-0_0-55-112_20260307135839205.parquet',
];

describe.each(BASE_FILES)('parseFooterWithMetadata with owned keys, on %s', (name) => {
  it('leaves the owned entries out undecoded, counts their bytes, and reads everything else as the full read does', async () => {
    // Prepare
    const bytes = new Uint8Array(await readFile(join(HUDI_FIXTURES, name)));
    const full = parseFooterWithMetadata(name, bytes.length, bytes);
    const owned = Object.entries(full.footer.keyValueMetadata).filter(([k]) =>
      HUDI_INDEX_FOOTER_KEYS.includes(k),
    );
    const expectedBytes = owned.reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);

    // Act
    const cut = parseFooterWithMetadata(name, bytes.length, bytes, HUDI_INDEX_FOOTER_KEYS);

    // Assess: the file carries an index worth cutting; none of it is in the cut read, the rest is identical
    expect(owned.length).toBeGreaterThan(0);
    expect(cut.footer.ownedEntryBytes).toBe(expectedBytes);
    expect(
      Object.keys(cut.footer.keyValueMetadata).filter((k) => HUDI_INDEX_FOOTER_KEYS.includes(k)),
    ).toEqual([]);
    expect(cut.footer.keyValueMetadata).toEqual(
      Object.fromEntries(
        Object.entries(full.footer.keyValueMetadata).filter(([k]) => !HUDI_INDEX_FOOTER_KEYS.includes(k)),
      ),
    );
    const { keyValueMetadata: _a, ownedEntryBytes: _b, schemaFingerprint: _c, ...rest } = cut.footer;
    const { keyValueMetadata: _d, ownedEntryBytes: _e, schemaFingerprint: _f, ...fullRest } = full.footer;
    expect(rest).toEqual(fullRest);
    expect(cut.metadata.schema).toEqual(full.metadata.schema);
    expect(cut.metadata.row_groups).toEqual(full.metadata.row_groups);
  });
});
