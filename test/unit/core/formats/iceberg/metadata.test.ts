// Table metadata of format v1, v2 and v3 parses into one shape (v1's single schema and spec lifted into lists,
// refs, sort orders, logs, properties), and every 64-bit snapshot id survives exactly as the file spells it.
import { describe, expect, it } from 'vitest';
import { loadTable, parseJsonExact } from '../../../../../functions/core/formats/iceberg/index.js';
import { FIXTURE_TABLES, fileName, fixtureStore, metadataText } from './fixture-tables.js';

describe('table metadata', () => {
  it('lifts v1 metadata (spark_v1_hour_identity_partitioned) into lists: one schema, one spec with field ids 1000 and 1001, main from current-snapshot-id', async () => {
    // Act
    const { metadata } = await loadTable(fixtureStore(), 'spark_v1_hour_identity_partitioned');
    // Assess: the file's own values
    expect(metadata.formatVersion).toBe(1);
    expect(metadata.tableUuid).toBe('78e22bda-dd51-4c0d-bfa8-22d2f4fdf714');
    expect(metadata.location).toBe('/test-warehouse/iceberg_test/iceberg_partitioned');
    expect(metadata.lastSequenceNumber).toBe(0n);
    expect(
      metadata.schemas.map((s) => [s.schemaId, s.fields.map((f) => `${f.id}:${f.name}:${f.type}`)]),
    ).toEqual([[0, ['1:id:int', '2:user:string', '3:action:string', '4:event_time:timestamptz']]]);
    expect(metadata.currentSchemaId).toBe(0);
    expect(metadata.specs).toEqual([
      {
        specId: 0,
        fields: [
          { name: 'event_time_hour', sourceId: 4, fieldId: 1000, transform: { kind: 'hour' } },
          { name: 'action', sourceId: 3, fieldId: 1001, transform: { kind: 'identity' } },
        ],
      },
    ]);
    expect(metadata.defaultSpecId).toBe(0);
    expect(metadata.sortOrders).toEqual([]);
    expect(metadata.properties).toEqual({});
    expect(metadata.snapshots.map((s) => [s.snapshotId, s.sequenceNumber, s.operation])).toEqual([
      [8270633197658268308n, 0n, 'append'],
    ]);
    expect([...metadata.refs]).toEqual([
      [
        'main',
        {
          snapshotId: 8270633197658268308n,
          type: 'branch',
          maxRefAgeMs: undefined,
          maxSnapshotAgeMs: undefined,
          minSnapshotsToKeep: undefined,
        },
      ],
    ]);
    expect(metadata.snapshotLog).toEqual([{ timestampMs: 1598853488440, snapshotId: 8270633197658268308n }]);
    expect(metadata.metadataLog.map((e) => fileName(e.metadataFile))).toEqual(['v1.metadata.json']);
  });

  it('reads v2 metadata with six schemas (spark_v2_schema_evolution): current schema 5, the snapshot log in order', async () => {
    // Act
    const { metadata } = await loadTable(fixtureStore(), 'spark_v2_schema_evolution');
    // Assess
    expect(metadata.formatVersion).toBe(2);
    expect(metadata.schemas.map((s) => s.schemaId)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(metadata.currentSchemaId).toBe(5);
    expect(metadata.lastSequenceNumber).toBe(7n);
    expect(metadata.snapshots.map((s) => s.sequenceNumber)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n]);
    expect(metadata.snapshotLog.map((e) => e.snapshotId)).toEqual(
      metadata.snapshots.map((s) => s.snapshotId),
    );
    expect(metadata.metadataLog).toHaveLength(13);
    expect(metadata.refs.get('main')?.snapshotId).toBe(metadata.currentSnapshotId);
  });

  it('reads v3 metadata (spark_v3_deletion_vectors): next-row-id, refs, sort order, last partition id, properties', async () => {
    // Act
    const { metadata } = await loadTable(fixtureStore(), 'spark_v3_deletion_vectors');
    // Assess
    expect(metadata.formatVersion).toBe(3);
    expect(metadata.nextRowId).toBe(5n);
    expect(metadata.lastPartitionId).toBe(999);
    expect(metadata.sortOrders).toEqual([{ orderId: 0, fields: [] }]);
    expect(metadata.defaultSortOrderId).toBe(0);
    expect(metadata.properties['write.delete.mode']).toBe('merge-on-read');
    expect(metadata.refs.get('main')?.snapshotId).toBe(3685752423136077685n);
    expect(metadata.snapshots.map((s) => [s.parentSnapshotId, s.firstRowId, s.addedRows])).toEqual([
      [undefined, 0n, 5n],
      [2700858159721908397n, 5n, 0n],
    ]);
  });

  for (const name of FIXTURE_TABLES)
    it(`${name}: every snapshot id in the metadata file round-trips digit for digit`, async () => {
      // Prepare: the ids as the file spells them (a regex over the text, no JSON number parsing)
      const table = await loadTable(fixtureStore(), name);
      const text = metadataText(name, fileName(table.metadataKey));
      const spelled = new Set(
        [...text.matchAll(/"(?:current-|parent-)?snapshot-id"\s*:\s*(-?\d+)/g)].map((m) => m[1] as string),
      );
      spelled.delete('-1');
      // Act
      const { metadata } = table;
      const read = new Set(
        [
          metadata.currentSnapshotId,
          ...metadata.snapshots.flatMap((s) => [s.snapshotId, s.parentSnapshotId]),
          ...[...metadata.refs.values()].map((r) => r.snapshotId),
          ...metadata.snapshotLog.map((e) => e.snapshotId),
        ]
          .filter((id) => id !== undefined)
          .map(String),
      );
      // Assess
      expect(read).toEqual(spelled);
    });

  it('keeps ids JSON.parse would round: 8270633197658268308 stays exact', () => {
    // Prepare
    const text = '{"snapshot-id": 8270633197658268308}';
    // Act
    const exact = parseJsonExact(text) as { 'snapshot-id': string };
    const rounded = JSON.parse(text) as { 'snapshot-id': number };
    // Assess
    expect(exact['snapshot-id']).toBe('8270633197658268308');
    expect(String(BigInt(rounded['snapshot-id']))).not.toBe('8270633197658268308');
  });

  it('quotes only long integer literals outside strings: strings, decimals, exponents and short numbers are untouched', () => {
    // Prepare
    const text =
      '{"s":"12345678901234567890","esc":"a\\"99999999999999999","n":-9223372036854775808,"d":1.2345678901234567,"e":1e300,"small":1598853488440,"a":[1234567890123456,-1]}';
    // Act
    const parsed = parseJsonExact(text);
    // Assess
    expect(parsed).toEqual({
      s: '12345678901234567890',
      esc: 'a"99999999999999999',
      n: '-9223372036854775808',
      d: 1.2345678901234567,
      e: 1e300,
      small: 1598853488440,
      a: ['1234567890123456', -1],
    });
  });
});
