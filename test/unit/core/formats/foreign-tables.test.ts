// Recognising Delta Lake, Iceberg and Hudi tables by key and by cheap prefix listings: which keys are markers and
// whose table they belong to, the outermost table above a location, and the refusal's exact wording.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { UnsupportedTableFormatError } from '../../../../functions/core/errors.js';
import {
  directoriesDownTo,
  ForeignTableProbe,
  foreignFormatOfKey,
  foreignTablesAmong,
  markerCovers,
  refuseForeignAround,
} from '../../../../functions/core/formats/foreign-tables.js';

describe('foreignFormatOfKey', () => {
  it('recognises every Delta log key, at any depth, and names the folder holding _delta_log/ as the root', () => {
    // Prepare
    const keys = [
      '_delta_log/00000000000000000000.json',
      'sales/_delta_log/00000000000000000010.checkpoint.parquet',
      'lake/sales/_delta_log/.tmp/00000000000000000005.json',
      'lake/sales/_delta_log/_last_checkpoint',
      'lake/sales/_delta_log/',
    ];

    // Act
    const found = keys.map(foreignFormatOfKey);

    // Assess
    expect(found).toEqual([
      { format: 'delta', root: '' },
      { format: 'delta', root: 'sales/' },
      { format: 'delta', root: 'lake/sales/' },
      { format: 'delta', root: 'lake/sales/' },
      { format: 'delta', root: 'lake/sales/' },
    ]);
  });

  it('recognises Iceberg metadata files and version hints directly in metadata/, not manifests or data', () => {
    // Prepare
    const markers = [
      'orders/metadata/v2.metadata.json',
      'orders/metadata/00009-5c29aedb-463b-4b80-b0d5-c1d7fc957770.metadata.json',
      'orders/metadata/00001-aa.gz.metadata.json',
      'orders/metadata/v1.metadata.json.gz',
      'orders/metadata/version-hint.text',
      'metadata/version-hint.text',
    ];
    const others = [
      'orders/metadata/snap-93996984692289973-1-9b8c72ab.avro',
      'orders/metadata/9b8c72ab-43b9-42fb-a5e9-1dcfa1801a21-m0.avro',
      'orders/data/00000-8-55662b67-00001.parquet',
      'orders/metadata/archive/v1.metadata.json',
      'orders/v1.metadata.json',
      'events/date=2024-01-01/_delta_log',
      'events/date=2024-01-01/part-0.parquet',
      'events/_SUCCESS',
    ];

    // Act
    const found = markers.map(foreignFormatOfKey);
    const notFound = others.map(foreignFormatOfKey);

    // Assess
    expect(found).toEqual([
      { format: 'iceberg', root: 'orders/' },
      { format: 'iceberg', root: 'orders/' },
      { format: 'iceberg', root: 'orders/' },
      { format: 'iceberg', root: 'orders/' },
      { format: 'iceberg', root: 'orders/' },
      { format: 'iceberg', root: '' },
    ]);
    expect(notFound).toEqual(others.map(() => undefined));
  });

  it('recognises every Hudi metadata key of both timeline layouts, the outermost .hoodie/ naming the root', () => {
    // Prepare: names from real tables (hudi-rs test data): layout 1 (table version 6) keeps instants directly in
    // .hoodie/, layout 2 (versions 8, 9) in .hoodie/timeline/; the metadata table has a .hoodie/ of its own
    const markers = [
      'trips/.hoodie/hoodie.properties',
      'trips/.hoodie/20240418173213674.commit',
      'trips/.hoodie/.aux/.bootstrap/.partitions/',
      'lake/trips/.hoodie/timeline/20250713011316909_20250713011317225.commit',
      'lake/trips/.hoodie/timeline/history/_version_',
      'lake/trips/.hoodie/metadata/.hoodie/hoodie.properties',
      'lake/trips/.hoodie/metadata/files/.files-0000-0_00000000000000010.log.1_0-0-0',
      '.hoodie/hoodie.properties',
    ];
    const others = [
      'trips/city=chennai/.hoodie_partition_metadata',
      'trips/city=chennai/6e1d5cc4-c487-487d-abbe-fe9b30b1c0cc-0_0-1112-3190_20251220210129235.parquet',
      'trips/.hoodie',
      'trips/hoodie.properties',
    ];

    // Act
    const found = markers.map(foreignFormatOfKey);
    const notFound = others.map(foreignFormatOfKey);

    // Assess
    expect(found).toEqual([
      { format: 'hudi', root: 'trips/' },
      { format: 'hudi', root: 'trips/' },
      { format: 'hudi', root: 'trips/' },
      { format: 'hudi', root: 'lake/trips/' },
      { format: 'hudi', root: 'lake/trips/' },
      { format: 'hudi', root: 'lake/trips/' },
      { format: 'hudi', root: 'lake/trips/' },
      { format: 'hudi', root: '' },
    ]);
    expect(notFound).toEqual(others.map(() => undefined));
  });

  it("names a Hudi table's hoodie.properties as its evidence even when its timeline sorts first", () => {
    // Prepare: a listing in key order: .aux/ and the instants come before hoodie.properties
    const keys = [
      'lake/t/.hoodie/.aux/ckp_meta/',
      'lake/t/.hoodie/20240426205419518.commit',
      'lake/t/.hoodie/hoodie.properties',
      'lake/t/.hoodie/metadata/.hoodie/hoodie.properties',
      'lake/t/byteField=10/1ebfc908-fcc7-4229-b368-664440f7663c-0_0-35-78_20240426205419518.parquet',
      'lake/u/.hoodie/20240426205419518.commit',
    ];

    // Act
    const found = foreignTablesAmong(keys);

    // Assess: a table without hoodie.properties listed keeps its first marker
    expect(found).toEqual([
      { format: 'hudi', root: 'lake/t/', evidenceKey: 'lake/t/.hoodie/hoodie.properties' },
      { format: 'hudi', root: 'lake/u/', evidenceKey: 'lake/u/.hoodie/20240426205419518.commit' },
    ]);
  });

  it('lists each foreign table of a listing once, with the first marker seen as evidence', () => {
    // Prepare
    const keys = [
      'lake/a/_delta_log/0.json',
      'lake/a/_delta_log/1.json',
      'lake/a/part-0.parquet',
      'lake/b/metadata/v1.metadata.json',
      'lake/c/date=1/part-0.parquet',
    ];

    // Act
    const found = foreignTablesAmong(keys);

    // Assess
    expect(found).toEqual([
      { format: 'delta', root: 'lake/a/', evidenceKey: 'lake/a/_delta_log/0.json' },
      { format: 'iceberg', root: 'lake/b/', evidenceKey: 'lake/b/metadata/v1.metadata.json' },
    ]);
  });
});

describe('ForeignTableProbe', () => {
  it('finds the Delta table above a partition with one-key listings of each folder from the store root down', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('lake/sales/_delta_log/00000000000000000000.json', '{}');
    await store.put('lake/sales/year=2021/part-0.parquet', 'PAR1');
    const listed: string[] = [];
    const probe = new ForeignTableProbe(
      new Proxy(store, {
        get: (target, name) =>
          name === 'list'
            ? (prefix: string, options: unknown) => {
                listed.push(prefix);
                return target.list(prefix, options as never);
              }
            : Reflect.get(target, name),
      }),
    );

    // Act
    const found = await probe.around('lake/sales/year=2021/', { includeLocation: false });
    const again = await probe.around('lake/sales/year=2021/', { includeLocation: false });

    // Assess
    expect(found).toEqual({
      format: 'delta',
      root: 'lake/sales/',
      evidenceKey: 'lake/sales/_delta_log/00000000000000000000.json',
    });
    expect(again).toEqual(found);
    expect(listed).toEqual([
      '_delta_log/',
      'metadata/',
      '.hoodie/',
      'lake/_delta_log/',
      'lake/metadata/',
      'lake/.hoodie/',
      'lake/sales/_delta_log/',
    ]);
  });

  it('finds a Hudi table above a partition and names its hoodie.properties, however long its timeline', async () => {
    // Prepare: 1,200 instants sort before hoodie.properties
    const store = new MemoryObjectStore();
    for (let i = 0; i < 1200; i++)
      await store.put(`lake/trips/.hoodie/2024042620${String(i).padStart(7, '0')}.commit`, '{}');
    await store.put('lake/trips/.hoodie/hoodie.properties', 'hoodie.table.version=6');
    await store.put('lake/trips/city=chennai/a-0_0-1-1_20240426205419518.parquet', 'PAR1');

    // Act
    const found = await new ForeignTableProbe(store).around('lake/trips/city=chennai/', {
      includeLocation: true,
    });

    // Assess
    expect(found).toEqual({
      format: 'hudi',
      root: 'lake/trips/',
      evidenceKey: 'lake/trips/.hoodie/hoodie.properties',
    });
  });

  it('finds an Iceberg table whose metadata file lies beyond the first page of its metadata/ folder', async () => {
    // Prepare: 1,500 manifests sort before v1.metadata.json, and there is no version hint
    const store = new MemoryObjectStore();
    for (let i = 0; i < 1500; i++)
      await store.put(`orders/metadata/snap-${String(i).padStart(5, '0')}.avro`, 'x');
    await store.put('orders/metadata/v1.metadata.json', '{}');
    await store.put('orders/data/00000-0.parquet', 'PAR1');

    // Act
    const found = await new ForeignTableProbe(store).around('orders/data/', { includeLocation: true });

    // Assess
    expect(found).toEqual({
      format: 'iceberg',
      root: 'orders/',
      evidenceKey: 'orders/metadata/v1.metadata.json',
    });
  });

  it('finds nothing around a Hive-style table, even one with a metadata/ folder of its own', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('events/date=2024-01-01/part-0.parquet', 'PAR1');
    await store.put('events/metadata/schema.json', '{}');

    // Act
    const found = await new ForeignTableProbe(store).around('events/date=2024-01-01/', {
      includeLocation: true,
    });

    // Assess
    expect(found).toBeUndefined();
  });

  it('names the outermost table when a folder inside a Delta table holds its own metadata', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('sales/_delta_log/0.json', '{}');
    await store.put('sales/inner/metadata/v1.metadata.json', '{}');

    // Act
    const refusal = refuseForeignAround(store, 'sales/inner/x/', { includeLocation: true });

    // Assess
    await expect(refusal).rejects.toMatchObject({
      name: 'UnsupportedTableFormatError',
      format: 'delta',
      root: 'memory://sales/',
      evidenceKey: 'memory://sales/_delta_log/0.json',
      location: 'memory://sales/inner/x/',
      retryable: false,
    });
  });
});

describe('directoriesDownTo and markerCovers', () => {
  it('walks from the store root down to a location, with or without the location itself', () => {
    // Prepare / Act / Assess
    expect(directoriesDownTo('a/b/', true)).toEqual(['', 'a/', 'a/b/']);
    expect(directoriesDownTo('a/b', false)).toEqual(['', 'a/']);
    expect(directoriesDownTo('', true)).toEqual(['']);
    expect(directoriesDownTo('', false)).toEqual([]);
  });

  it('covers every partition for a marker at the table root, else only partitions under its root', () => {
    // Prepare
    const whole = { root: '' };
    const nested = { root: 'region=eu/' };

    // Act / Assess
    expect(markerCovers(whole, '')).toBe(true);
    expect(markerCovers(whole, 'region=us/date=1')).toBe(true);
    expect(markerCovers(nested, 'region=eu')).toBe(true);
    expect(markerCovers(nested, 'region=eu/date=1')).toBe(true);
    expect(markerCovers(nested, 'region=eu2/date=1')).toBe(false);
    expect(markerCovers(nested, '')).toBe(false);
  });
});

describe('UnsupportedTableFormatError', () => {
  it('names a Hudi table, why its listing lies, and to configure it as a Hudi table', () => {
    // Prepare / Act
    const inside = new UnsupportedTableFormatError(
      'hudi',
      's3://lake/trips/',
      's3://lake/trips/.hoodie/hoodie.properties',
      's3://lake/trips/city=chennai/',
    );

    // Assess
    expect(inside.message).toBe(
      `s3://lake/trips/city=chennai is inside an Apache Hudi table (found s3://lake/trips/.hoodie/hoodie.properties): its timeline, not the file listing, defines which file slices are live, and older slices and replaced file groups stay on storage until Hudi's cleaner removes them, so treating it as plain Parquet would duplicate rows and bring back deleted or replaced ones; to cluster it through its timeline, configure s3://lake/trips as a table with format: "hudi" (on the CLI: point at s3://lake/trips and pass --format hudi with --hudi-lock and --hudi-index-type). Nothing was changed.`,
    );
    expect(inside.retryable).toBe(false);
  });

  it('says whether the location is the table, lies inside it or contains it, and what to do', () => {
    // Prepare / Act
    const is = new UnsupportedTableFormatError(
      'delta',
      's3://lake/sales/',
      's3://lake/sales/_delta_log/0.json',
      's3://lake/sales/',
    );
    const inside = new UnsupportedTableFormatError(
      'iceberg',
      's3://lake/orders/',
      's3://lake/orders/metadata/v2.metadata.json',
      's3://lake/orders/data/',
    );
    const contains = new UnsupportedTableFormatError(
      'delta',
      's3://lake/sales/',
      's3://lake/sales/_delta_log/0.json',
      's3://lake',
    );

    // Assess
    expect(is.name).toBe('UnsupportedTableFormatError');
    expect(is.message).toBe(
      's3://lake/sales is a Delta Lake table (found s3://lake/sales/_delta_log/): its transaction log, not the file listing, defines which files are live, so treating it as plain Parquet would break the table and could resurrect deleted rows; to compact or vacuum it through its log, configure the table with format: "delta" (on the CLI: pass --format delta). Nothing was changed.',
    );
    expect(inside.message).toBe(
      `s3://lake/orders/data is inside an Apache Iceberg table (found s3://lake/orders/metadata/v2.metadata.json): its table metadata and snapshots, not the file listing, define which files are live and which rows are deleted, so treating it as plain Parquet would break the table and could resurrect deleted rows; to compact and maintain it through its metadata, configure s3://lake/orders as a table with format: "iceberg" and the catalog its writers use (on the CLI: point at s3://lake/orders and pass --format iceberg, with --catalog glue|rest when a catalog manages it; Amazon S3 Tables is rest). Nothing was changed.`,
    );
    expect(contains.message).toMatch(
      /^s3:\/\/lake contains a Delta Lake table \(found s3:\/\/lake\/sales\/_delta_log\/\)/,
    );
    // A folder above the Delta table: the advice names the table's own root, where format "delta" applies.
    expect(contains.message).toContain(
      'configure s3://lake/sales as a table with format: "delta" (on the CLI: point at s3://lake/sales and pass --format delta). Nothing was changed.',
    );
  });
});
