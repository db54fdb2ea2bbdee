// The per-table `catalog` setting of Iceberg tables: the table config accepts the path, Glue and REST catalogs on
// Iceberg tables and refuses a catalog on any other format (it would be silently ignored there) or a malformed
// one with what to write; `icebergForCatalog` keeps the registered format for the path catalog, binds the catalog
// client the composition root builds for a metastore catalog, and refuses — rather than committing through the
// path catalog — when no client can be built.
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../../functions/core/errors.js';
import { PathCatalog } from '../../../../../functions/core/formats/iceberg/catalog.js';
import type { MetastoreCatalogSetting } from '../../../../../functions/core/formats/iceberg/catalogs.js';
import { icebergForCatalog, icebergTable } from '../../../../../functions/core/formats/iceberg/format.js';
import { tableConfigSchema } from '../../../../../functions/core/table-config.js';
import { fixtureStore } from './fixture-tables.js';

const GLUE = { type: 'glue', database: 'lake', table: 'events' } as const;
const REST = {
  type: 'rest',
  uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
  warehouse: 'arn:aws:s3tables:eu-west-1:111122223333:bucket/lake',
  namespace: 'web',
  table: 'events',
  auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
} as const;

function table(extra: Record<string, unknown>) {
  return tableConfigSchema.safeParse({ name: 'events', prefix: 'events/', ...extra });
}

function messages(result: ReturnType<typeof table>): string {
  return result.success ? '' : result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('\n');
}

describe('the catalog table setting', () => {
  it('accepts the path, Glue and REST catalogs on an Iceberg table', () => {
    // Act / Assess
    for (const catalog of [
      { type: 'path' },
      { type: 'path', metadataNaming: 'hadoop' },
      { type: 'path', metadataNaming: 'uuid' },
      GLUE,
      { ...GLUE, catalogId: '111122223333', region: 'us-east-1' },
      REST,
    ]) {
      const parsed = table({ format: 'iceberg', catalog });
      expect(parsed.success, messages(parsed)).toBe(true);
      expect(parsed.data?.catalog).toEqual(catalog);
    }
  });

  it('refuses a catalog on a table of another format, naming the format it belongs to', () => {
    // Act
    const parquet = table({ catalog: GLUE });
    const delta = table({ format: 'delta', catalog: GLUE });
    // Assess
    expect(messages(parquet)).toMatch(
      /^catalog: catalog is a setting of Apache Iceberg tables .*format is "parquet"/,
    );
    expect(messages(delta)).toMatch(/^catalog: .*format is "delta"/);
  });

  it('refuses a malformed catalog with what to write', () => {
    // Act / Assess
    expect(messages(table({ format: 'iceberg', catalog: { type: 'hive' } }))).toMatch(
      /must be "path" \(the default\), "glue" or "rest", not "hive"/,
    );
    expect(messages(table({ format: 'iceberg', catalog: { type: 'glue', database: 'lake' } }))).toMatch(
      /catalog\.table/,
    );
    expect(messages(table({ format: 'iceberg', catalog: { ...REST, uri: 'ftp://x' } }))).toMatch(
      /catalog\.uri: must be an https URL/,
    );
    expect(
      messages(
        table({ format: 'iceberg', catalog: { ...REST, auth: { type: 'sigv4', signingName: 's3tables' } } }),
      ),
    ).toMatch(/catalog\.auth\.region/);
  });
});

describe('icebergForCatalog', () => {
  it('is the registered format for the path catalog or none', () => {
    // Act / Assess
    expect(icebergForCatalog(undefined, {})).toBe(icebergTable);
    expect(icebergForCatalog({ type: 'path' }, {})).toBe(icebergTable);
    expect(icebergForCatalog({ type: 'path', metadataNaming: 'hadoop' }, {})).toBe(icebergTable);
  });

  it('reads through a path catalog accepting 000NN-<uuid> names when metadataNaming is "uuid", and refuses another naming', async () => {
    // Prepare: a fixture whose metadata files are named 000NN-<uuid>
    const store = fixtureStore();
    // Act
    const told = await icebergForCatalog({ type: 'path', metadataNaming: 'uuid' }, {}).snapshot(
      store,
      'spark_v2_position_deletes',
      { now: 0 },
    );
    const plain = await icebergTable.snapshot(store, 'spark_v2_position_deletes', { now: 0 }).catch((e) => e);
    // Assess
    expect(told.partitions.length).toBeGreaterThan(0);
    expect((plain as Error).name).toBe('IcebergCatalogMismatchError');
    expect(messages(table({ format: 'iceberg', catalog: { type: 'path', metadataNaming: 'any' } }))).toMatch(
      /catalog\.metadataNaming: must be "hadoop" .* or "uuid" .*not "any"/,
    );
  });

  it('refuses a metastore catalog when the entry point cannot build its client, naming the catalog', () => {
    // Act / Assess
    expect(() => icebergForCatalog(GLUE, {})).toThrow(InvalidInputError);
    expect(() => icebergForCatalog(GLUE, {})).toThrow(
      /Glue table lake\.events.*without Iceberg catalog clients; nothing was committed/,
    );
  });

  it('reads the snapshot through the client built for the setting', async () => {
    // Prepare: a factory recording what it was asked for, whose catalog fails loudly on load.
    const asked: MetastoreCatalogSetting[] = [];
    const format = icebergForCatalog(REST, {
      icebergCatalog: (setting, store) => {
        asked.push(setting);
        const path = new PathCatalog(store);
        return {
          load: async () => Promise.reject(new Error('loaded through the REST client')),
          commit: path.commit.bind(path),
        };
      },
    });
    // Act
    const read = format.snapshot({ description: 'mem' } as never, 'events', { now: 0 });
    // Assess
    await expect(read).rejects.toThrow('loaded through the REST client');
    expect(asked).toEqual([REST]);
    expect(format).not.toBe(icebergTable);
  });
});
