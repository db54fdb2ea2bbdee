// Deletion vectors decode to the row positions they delete: the fixture's DVs leave exactly the README's live rows
// (checked against the data files read with DuckDB), and every Roaring container kind decodes (synthetic bitmaps).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  decodePortableRoaring64,
  IcebergMetadataError,
  loadTable,
  readDeletionVector,
  readSnapshotFiles,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { fixturePath, fixtureStore } from './fixture-tables.js';

let duckdb: DuckDb;
beforeAll(async () => {
  duckdb = await openDuckDb();
});
afterAll(() => duckdb.close());

/** Little-endian bytes of unsigned ints of the given widths. */
function le(...parts: [number | bigint, 2 | 4 | 8][]): number[] {
  const out: number[] = [];
  for (const [v, width] of parts) {
    const big = BigInt(v);
    for (let i = 0; i < width; i++) out.push(Number((big >> BigInt(8 * i)) & 0xffn));
  }
  return out;
}

describe('deletion vectors', () => {
  it('spark_v3_deletion_vectors: applying each DV to its data file leaves the live rows i = 1, 3, 5', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_deletion_vectors');
    const files = await readSnapshotFiles(store, table);
    // Act: the deleted positions of every DV, by data file path
    const deleted = new Map<string, bigint[]>();
    for (const d of files.deleteFiles)
      deleted.set(
        d.entry.file.referencedDataFile ?? '',
        await readDeletionVector(store, table.name, d.entry.file),
      );
    // Assess: rows read with DuckDB (with their row numbers), minus the DV positions
    const live: number[] = [];
    for (const f of files.dataFiles) {
      const rows = await duckdb.rows(
        `SELECT i, file_row_number FROM read_parquet(${sqlString(fixturePath(f.entry.file.key))}, file_row_number = true)`,
      );
      const gone = new Set((deleted.get(f.entry.file.path) ?? []).map(String));
      for (const r of rows) if (!gone.has(String(r.file_row_number))) live.push(r.i as number);
    }
    expect([...deleted.values()]).toEqual([[0n], [0n]]);
    expect(live.sort()).toEqual([1, 3, 5]);
  });

  it('refuses a DV whose blob fails its CRC, naming where it is', async () => {
    // Prepare: the fixture's Puffin file with one bit of the first blob's bitmap flipped
    const source = fixtureStore();
    const table = await loadTable(source, 'spark_v3_deletion_vectors');
    const files = await readSnapshotFiles(source, table);
    const dv = files.deleteFiles[0]?.entry.file;
    if (dv === undefined) throw new Error('no DV');
    const bytes = Uint8Array.from(await source.get(dv.key));
    bytes[Number(dv.contentOffset) + 20] = (bytes[Number(dv.contentOffset) + 20] as number) ^ 1;
    const store = new MemoryObjectStore();
    await store.put(dv.key, bytes);
    // Act
    const attempt = readDeletionVector(store, 'memory://t', dv);
    // Assess
    await expect(attempt).rejects.toThrow(IcebergMetadataError);
    await expect(attempt).rejects.toThrow(
      `Iceberg table memory://t has unreadable metadata: the deletion vector at ${dv.path}@4 fails its CRC-32 check.`,
    );
  });

  it('decodes run and array containers under two high keys of a 64-bit bitmap', () => {
    // Prepare: key 0 → one run container 5..7; key 1 → one array container {1}
    const bytes = Uint8Array.from([
      ...le([2, 8]),
      ...le([0, 4], [12347, 4]),
      0x01,
      ...le([0, 2], [2, 2], [1, 2], [5, 2], [2, 2]),
      ...le([1, 4], [12346, 4], [1, 4], [0, 2], [0, 2], [16, 4], [1, 2]),
    ]);
    // Act
    const positions = decodePortableRoaring64(bytes, 't', 'test');
    // Assess
    expect(positions).toEqual([5n, 6n, 7n, (1n << 32n) + 1n]);
  });

  it('decodes a bitset container (more than 4096 values)', () => {
    // Prepare: one container with 0..4096 set (4097 values)
    const bitset = new Uint8Array(8192);
    for (let v = 0; v <= 4096; v++) bitset[v >> 3] = (bitset[v >> 3] as number) | (1 << (v & 7));
    const bytes = Uint8Array.from([
      ...le([1, 8], [0, 4], [12346, 4], [1, 4], [0, 2], [4096, 2], [16, 4]),
      ...bitset,
    ]);
    // Act
    const positions = decodePortableRoaring64(bytes, 't', 'test');
    // Assess
    expect(positions).toHaveLength(4097);
    expect(positions[0]).toBe(0n);
    expect(positions.at(-1)).toBe(4096n);
  });
});
