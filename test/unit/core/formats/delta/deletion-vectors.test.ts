// Proves Delta deletion vectors are read as the protocol defines them: on disk (`u`, the UUID file name from
// Z85) and inline (`i`), checked (CRC-32, cardinality, magic), absolute paths (`p`) read only under the table —
// compared with the rows DuckDB reads from the fixture's data file.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import type { DeletionVector } from '../../../../../functions/core/formats/delta/actions.js';
import {
  deletionVectorFileKey,
  readDeletionVector,
  z85Decode,
} from '../../../../../functions/core/formats/delta/deletion-vectors.js';
import { DeltaLogError, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/index.js';
import { inlineDeletionVector, z85Encode } from '../../../../support/delta-dv.js';
import { openDuckDb, sqlString } from '../../../../support/duckdb.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import { settled } from '../../../../support/settled.js';

const store = new LocalObjectStore(DELTA_FIXTURES);
const TABLE = 'table-with-dv-small';
const DATA = 'part-00000-fae5310a-a37d-4e51-827b-c3d5516560ca-c000.snappy.parquet';
const DV_FILE = 'deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin';

async function fixtureDv(): Promise<DeletionVector> {
  const snapshot = await readDeltaSnapshot(store, TABLE);
  const dv = snapshot.files[0]?.deletionVector;
  if (dv === undefined) throw new Error('the fixture has no DV');
  return dv;
}

/** The values DuckDB reads from the fixture's data file at rows other than `positions`. */
async function valuesKept(positions: readonly number[]): Promise<number[]> {
  const db = await openDuckDb();
  try {
    const rows = await db.rows(
      `SELECT value FROM read_parquet(${sqlString(join(DELTA_FIXTURES, TABLE, DATA))}, file_row_number = true)
       WHERE file_row_number NOT IN (${positions.join(',')}) ORDER BY file_row_number`,
    );
    return rows.map((r) => Number(r.value));
  } finally {
    db.close();
  }
}

function positionsOf(ranges: Uint32Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < ranges.length; i += 2)
    for (let p = ranges[i] as number; p < (ranges[i + 1] as number); p++) out.push(p);
  return out;
}

describe('Delta deletion vectors', () => {
  it('reads the fixture’s on-disk DV: rows 0 and 9, the rows its DELETE of values 0 and 9 hit, leaving 8', async () => {
    // Prepare
    const dv = await fixtureDv();
    // Act
    const deleted = await readDeletionVector(store, TABLE, DATA, dv);
    // Assess
    const positions = positionsOf(deleted.ranges);
    expect(positions).toEqual([0, 9]);
    expect(await valuesKept(positions)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
  });

  it('finds the DV file from the Z85-encoded UUID, under the random prefix when there is one', () => {
    // Act / Assess
    expect(deletionVectorFileKey('t', { pathOrInlineDv: 'vBn[lx{q8@P<9BNH/isA' })).toBe(`t/${DV_FILE}`);
    expect(deletionVectorFileKey('t/', { pathOrInlineDv: 'abvBn[lx{q8@P<9BNH/isA' })).toBe(`t/ab/${DV_FILE}`);
  });

  it('reads the same bitmap stored inline (Z85 in the log) to the same rows', async () => {
    // Prepare: the bitmap bytes of the fixture's DV file (after the version byte and the size), Z85-encoded
    const file = new Uint8Array(await readFile(join(DELTA_FIXTURES, TABLE, DV_FILE)));
    const bitmap = file.subarray(5, 5 + 36);
    const inline: DeletionVector = {
      storageType: 'i',
      pathOrInlineDv: z85Encode(bitmap),
      offset: undefined,
      sizeInBytes: 36,
      cardinality: 2,
    };
    // Act
    const deleted = await readDeletionVector(new MemoryObjectStore(), TABLE, DATA, inline);
    // Assess
    expect(z85Decode(inline.pathOrInlineDv).subarray(0, 36)).toEqual(bitmap);
    expect(positionsOf(deleted.ranges)).toEqual([0, 9]);
  });

  it('reads an inline DV of many positions over several Roaring containers to exactly those positions', async () => {
    // Prepare: positions across three 65,536-value containers, encoded by the test's reference encoder
    const positions = [0, 1, 2, 65_535, 65_536, 70_000, 200_000, 200_001];
    const dv = { ...inlineDeletionVector(positions), offset: undefined };
    // Act
    const deleted = await readDeletionVector(new MemoryObjectStore(), TABLE, DATA, dv);
    // Assess
    expect(positionsOf(deleted.ranges)).toEqual(positions);
    expect([...deleted.ranges]).toEqual([0, 3, 65_535, 65_537, 70_000, 70_001, 200_000, 200_002]);
  });

  it('refuses a DV whose bytes fail their CRC-32 or whose positions disagree with its cardinality', async () => {
    // Prepare
    const dv = await fixtureDv();
    const file = new Uint8Array(await readFile(join(DELTA_FIXTURES, TABLE, DV_FILE)));
    const damaged = new MemoryObjectStore();
    const flipped = Uint8Array.from(file);
    flipped[30] = (flipped[30] as number) ^ 1;
    await damaged.put(`${TABLE}/${DV_FILE}`, flipped);
    // Act
    const crc = readDeletionVector(damaged, TABLE, DATA, dv);
    const count = readDeletionVector(store, TABLE, DATA, { ...dv, cardinality: 3 });
    await settled(crc, count);
    // Assess
    await expect(crc).rejects.toThrow(DeltaLogError);
    await expect(crc).rejects.toThrow(/fails its CRC-32 check/);
    await expect(count).rejects.toThrow(/holds 2 positions, its descriptor says 3/);
  });

  it('reads a DV at an absolute path only when it lies under the table’s URI', async () => {
    // Prepare
    const dv = await fixtureDv();
    const absolute: DeletionVector = {
      ...dv,
      storageType: 'p',
      pathOrInlineDv: `s3://bucket/${TABLE}/${DV_FILE}`,
    };
    // Act
    const unknownRoot = readDeletionVector(store, TABLE, DATA, absolute).catch((err: unknown) => err);
    const outside = readDeletionVector(store, TABLE, DATA, absolute, { tableUri: 's3://other/' }).catch(
      (err: unknown) => err,
    );
    const under = await readDeletionVector(store, TABLE, DATA, absolute, {
      tableUri: `s3://bucket/${TABLE}`,
    });
    // Assess
    expect(String(await unknownRoot)).toMatch(/only deletion vectors under the table are read/);
    expect(String(await outside)).toMatch(/outside the table \(s3:\/\/other\/\)/);
    expect(positionsOf(under.ranges)).toEqual([0, 9]);
  });
});
