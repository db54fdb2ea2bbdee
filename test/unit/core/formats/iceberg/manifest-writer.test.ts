// Manifests and manifest lists we write read back exactly as the writers' own did, carry a field id on every
// field of the header schema (laid out as Iceberg 1.10 lays out v3), and say in their header what they hold.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  decodeAvroContainer,
  type LoadedTable,
  loadTable,
  type ManifestFile,
  manifestEntrySchema,
  manifestListSchema,
  readManifest,
  readManifestList,
  specById,
  writeManifest,
  writeManifestList,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { fixtureStore } from './fixture-tables.js';

/** A schema's fields as (name, field id) pairs, nested records, arrays and unions followed. */
function layout(schema: unknown): unknown {
  const walk = (type: unknown): unknown => {
    if (Array.isArray(type)) return type.map(walk).filter((t) => t !== null);
    if (typeof type !== 'object' || type === null) return null;
    const t = type as { type?: unknown; fields?: unknown[]; items?: unknown };
    if (t.type === 'record')
      return (t.fields as { name: string; type: unknown; 'field-id'?: number }[]).map((f) => [
        f.name,
        f['field-id'],
        walk(f.type),
      ]);
    if (t.type === 'array') return walk(t.items);
    return null;
  };
  return walk(schema);
}

async function headerOf(store: MemoryObjectStore | ReturnType<typeof fixtureStore>, key: string) {
  return (await decodeAvroContainer(await store.get(key))).metadata;
}

const ctxOf = (store: MemoryObjectStore | ReturnType<typeof fixtureStore>, table: LoadedTable) => ({
  store,
  table: table.name,
  paths: table.paths,
  formatVersion: table.metadata.formatVersion,
});

describe('the manifest writer', () => {
  it('lays out v3 manifests and manifest lists field for field, id for id, as Iceberg 1.10 does', async () => {
    // Prepare: the v3 fixture's manifest and manifest list headers (an unpartitioned table)
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_row_lineage_rewrite');
    const snapshot = table.metadata.snapshots.at(-1);
    if (snapshot === undefined) throw new Error('no snapshot');
    const manifests = await readManifestList(ctxOf(store, table), snapshot.manifestList);
    const listHeader = await headerOf(store, table.paths.key(snapshot.manifestList));
    const manifestHeader = await headerOf(store, (manifests[0] as ManifestFile).key);
    const spec = specById(table.metadata, 0);
    if (spec === undefined) throw new Error('no spec');
    // Act
    const entry = manifestEntrySchema(3, spec, []);
    const list = manifestListSchema(3);
    // Assess
    expect(layout(entry)).toEqual(layout(JSON.parse(manifestHeader.get('avro.schema') ?? '')));
    expect(layout(list)).toEqual(layout(JSON.parse(listHeader.get('avro.schema') ?? '')));
  });

  for (const name of ['spark_v1_hour_identity_partitioned', 'spark_v2_position_deletes'] as const)
    it(`${name}: every manifest and the manifest list, written again, read back entry for entry, with field ids and header keys`, async () => {
      // Prepare: the writer's own manifests of the current snapshot, as read
      const source = fixtureStore();
      const table = await loadTable(source, name);
      const snapshot = table.metadata.snapshots.at(-1);
      if (snapshot === undefined) throw new Error('no snapshot');
      const manifests = await readManifestList(ctxOf(source, table), snapshot.manifestList);
      const target = new MemoryObjectStore();
      const schema = table.metadata.schemas.at(-1);
      if (schema === undefined) throw new Error('no schema');
      const rewritten: ManifestFile[] = [];
      for (const m of manifests) {
        const entries = await readManifest(ctxOf(source, table), m);
        const spec = specById(table.metadata, m.specId);
        if (spec === undefined) throw new Error('no spec');
        // Act: the same entries, sequence numbers explicit, written by us
        const { bytes, stats } = writeManifest({
          metadata: table.metadata,
          schema,
          spec,
          content: m.content,
          entries: entries.map((e) => {
            const { key: _key, ...file } = e.file;
            return {
              status: e.status,
              snapshotId: e.snapshotId,
              dataSequenceNumber: e.dataSequenceNumber,
              fileSequenceNumber: e.fileSequenceNumber,
              file,
            };
          }),
        });
        await target.put(m.key, bytes);
        // Assess: entries as read from the writer's file; the list's counts and partition bounds too
        expect(await readManifest(ctxOf(target, table), { ...m, length: BigInt(bytes.length) })).toEqual(
          entries,
        );
        expect(stats.addedFilesCount + stats.existingFilesCount + stats.deletedFilesCount).toBe(
          entries.length,
        );
        if (m.partitions !== undefined && m.partitions.length > 0)
          expect(stats.partitions).toEqual(m.partitions);
        const header = await headerOf(target, m.key);
        expect(header.get('format-version')).toBe(String(table.metadata.formatVersion));
        expect(header.get('partition-spec-id')).toBe(String(m.specId));
        expect(JSON.parse(header.get('partition-spec') ?? '')).toEqual(
          spec.fields.map((f) =>
            expect.objectContaining({ name: f.name, 'field-id': f.fieldId, 'source-id': f.sourceId }),
          ),
        );
        expect(JSON.parse(header.get('schema') ?? '').fields).toEqual(schema.fields);
        expect(header.get('schema-id')).toBe(String(schema.schemaId));
        if (table.metadata.formatVersion >= 2) expect(header.get('content')).toBe(m.content);
        expect(everyFieldHasAnId(JSON.parse(header.get('avro.schema') ?? ''))).toBe(true);
        rewritten.push({ ...m, length: BigInt(bytes.length) });
      }
      const listBytes = writeManifestList({
        formatVersion: table.metadata.formatVersion,
        snapshotId: snapshot.snapshotId,
        parentSnapshotId: snapshot.parentSnapshotId,
        sequenceNumber: snapshot.sequenceNumber,
        manifests: rewritten.map(({ key: _key, ...m }) => m),
      });
      const listKey = table.paths.key(snapshot.manifestList);
      await target.put(listKey, listBytes);
      expect(await readManifestList(ctxOf(target, table), snapshot.manifestList)).toEqual(rewritten);
      const listHeader = await headerOf(target, listKey);
      expect(listHeader.get('snapshot-id')).toBe(String(snapshot.snapshotId));
      expect(everyFieldHasAnId(JSON.parse(listHeader.get('avro.schema') ?? ''))).toBe(true);
    });
});

/** Whether every record field in an Avro schema carries a `field-id` (arrays and unions followed). */
function everyFieldHasAnId(type: unknown): boolean {
  if (Array.isArray(type)) return type.every(everyFieldHasAnId);
  if (typeof type !== 'object' || type === null) return true;
  const t = type as { type?: unknown; fields?: { type: unknown; 'field-id'?: unknown }[]; items?: unknown };
  if (t.type === 'record')
    return (t.fields ?? []).every((f) => Number.isInteger(f['field-id']) && everyFieldHasAnId(f.type));
  if (t.type === 'array') return everyFieldHasAnId(t.items);
  return true;
}
