// hoodie.properties: Java .properties syntax and the typed table config, on every vendored table and crafted text.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  HudiBaseFileFormatError,
  HudiBootstrapError,
  HudiTableVersionError,
  HudiTimelineError,
  HudiVirtualKeysError,
} from '../../../../../functions/core/formats/hudi/errors.js';
import {
  checkTableConfig,
  parseJavaProperties,
  parseTableConfig,
} from '../../../../../functions/core/formats/hudi/properties.js';
import { HUDI_FIXTURES, HUDI_TABLES } from '../../../../support/fixtures.js';

const propertiesOf = (table: string) =>
  readFileSync(join(HUDI_FIXTURES, table, '.hoodie/hoodie.properties'), 'utf8');

describe('Java .properties', () => {
  it('reads comments, separators, escapes and continuation lines as java.util.Properties does', () => {
    // Prepare
    const text = [
      '#Updated at 2024-04-18',
      '! another comment',
      'a=1',
      '  b : two words ',
      'c\\:d=e\\=f',
      'schema={"type"\\:"record"}',
      'unicode=caf\\u00e9\\ttab',
      'long=first\\',
      '    second',
      'empty=',
      'spaced key',
    ].join('\n');

    // Act
    const p = parseJavaProperties(text);

    // Assess
    expect(Object.fromEntries(p)).toEqual({
      a: '1',
      b: 'two words ',
      'c:d': 'e=f',
      schema: '{"type":"record"}',
      unicode: 'café\ttab',
      long: 'firstsecond',
      empty: '',
      spaced: 'key',
    });
  });
});

describe('hoodie.properties as a typed table config', () => {
  it('reads the v6 simple-key non-Hive-style table as Hudi wrote it', () => {
    // Act
    const config = parseTableConfig('t', propertiesOf('cow_v6_simplekeygen_nonhivestyle'));

    // Assess
    expect(config).toMatchObject({
      name: 'v6_simplekeygen_nonhivestyle',
      version: 6,
      type: 'COPY_ON_WRITE',
      layoutVersion: 1,
      timelinePath: '.hoodie/',
      recordKeyFields: ['id'],
      partitionFields: ['byteField'],
      keyGenerator: 'org.apache.hudi.keygen.SimpleKeyGenerator',
      hiveStylePartitioning: false,
      urlEncodePartitioning: false,
      dropPartitionColumns: false,
      orderingFields: ['longField'],
      populateMetaFields: true,
      baseFileFormat: 'PARQUET',
      metadataPartitions: [],
      cdcEnabled: false,
      timelineTimezone: 'LOCAL',
    });
    expect(config.properties.get('hoodie.table.create.schema')).toMatch(/^\{"type":"record"/);
  });

  it('reads the v9 table: layout 2 under .hoodie/timeline/, ordering fields, merge mode and metadata partitions', () => {
    // Act
    const config = parseTableConfig('t', propertiesOf('cow_v9_txns_simple_meta'));

    // Assess
    expect(config).toMatchObject({
      version: 9,
      layoutVersion: 2,
      timelinePath: '.hoodie/timeline/',
      recordKeyFields: ['txn_id'],
      partitionFields: ['region'],
      keyGenerator: 'SIMPLE',
      hiveStylePartitioning: true,
      orderingFields: ['txn_ts'],
      mergeMode: 'EVENT_TIME_ORDERING',
      metadataPartitions: [
        'column_stats',
        'files',
        'partition_stats',
        'record_index',
        'secondary_index_merchant_idx',
        'secondary_index_txn_date_idx',
      ],
      metadataPartitionsInflight: [],
    });
  });

  it.each(HUDI_TABLES)('parses %s and accepts or refuses it by name from its properties alone', (table) => {
    // Act
    const config = parseTableConfig(table, propertiesOf(table));
    const check = () => checkTableConfig(table, config);

    // Assess
    expect([6, 8, 9]).toContain(config.version);
    if (table === 'cow_v6_simplekeygen_hivestyle_no_metafields') expect(check).toThrow(HudiVirtualKeysError);
    else expect(check).not.toThrow();
  });

  it('refuses each unsupported setting by name, saying which setting to change', () => {
    // Prepare
    const base = 'hoodie.table.version=6\nhoodie.table.type=COPY_ON_WRITE\n';
    const cases: [string, new (...args: never[]) => Error, RegExp][] = [
      ['hoodie.table.version=7\nhoodie.table.type=COPY_ON_WRITE\n', HudiTableVersionError, /table version 7/],
      ['hoodie.table.version=5\n', HudiTableVersionError, /table version 5/],
      [
        'hoodie.table.version=8\nhoodie.timeline.layout.version=1\n',
        HudiTableVersionError,
        /8 with timeline layout 1/,
      ],
      [`${base}hoodie.table.base.file.format=ORC\n`, HudiBaseFileFormatError, /ORC/],
      [`${base}hoodie.table.multiple.base.file.formats.enable=true\n`, HudiBaseFileFormatError, /several/],
      [
        `${base}hoodie.populate.meta.fields=false\n`,
        HudiVirtualKeysError,
        /hoodie\.populate\.meta\.fields=true/,
      ],
      [`${base}hoodie.bootstrap.base.path=s3://src/t\n`, HudiBootstrapError, /bootstrap/],
    ];

    for (const [text, type, message] of cases) {
      // Act
      const check = () => checkTableConfig('t', parseTableConfig('t', text));

      // Assess
      expect(check).toThrow(type);
      expect(check).toThrow(message);
      expect(check).toThrow(/Nothing of the table was changed/);
    }
  });

  it('says the properties are unreadable when the version or table type is not what Hudi writes', () => {
    // Assess
    expect(() => parseTableConfig('t', 'hoodie.table.type=COPY_ON_WRITE')).toThrow(HudiTimelineError);
    expect(() => parseTableConfig('t', 'hoodie.table.version=six')).toThrow(/no valid hoodie.table.version/);
    expect(() => parseTableConfig('t', 'hoodie.table.version=6\nhoodie.table.type=MERGE')).toThrow(
      HudiTimelineError,
    );
    expect(() => parseTableConfig('t', 'hoodie.table.version=9\nhoodie.timeline.path=../x')).toThrow(
      HudiTimelineError,
    );
    expect(() => parseTableConfig('t', 'hoodie.table.version=6\nx=\\u12')).toThrow(/uxxxx/);
  });
});
