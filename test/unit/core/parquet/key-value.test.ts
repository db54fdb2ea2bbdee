// Which footer key-value entries keep files of one schema apart (pure, no I/O): Spark's calendar rebase, as Spark
// decides it from the footer, and entries that describe the file's own contents; never writer stamps.
import { describe, expect, it } from 'vitest';
import {
  keyValueGroupingOf,
  sparkRebaseOf,
  thriftKeyValues,
} from '../../../../functions/core/parquet/key-value.js';
import {
  decodeStruct,
  encodeStruct,
  T,
  type ThriftField,
  type ThriftStruct,
} from '../../../../functions/core/parquet/thrift-compact.js';

const SPARK = 'org.apache.spark.version';

describe('key-value grouping', () => {
  it.each([
    ['no Spark version (any other writer)', {}, '', ''],
    ['Spark 3.5 in the default (CORRECTED) mode', { [SPARK]: '3.5.0' }, '', ''],
    ['Spark 2.4', { [SPARK]: '2.4.8', 'org.apache.spark.timeZone': 'UTC' }, 'LEGACY UTC', 'LEGACY UTC'],
    ['Spark 3.0 (INT96 rebased until 3.1)', { [SPARK]: '3.0.3' }, '', 'LEGACY '],
    [
      'Spark 3.5 in LEGACY datetime mode',
      { [SPARK]: '3.5.0', 'org.apache.spark.legacyDateTime': '' },
      'LEGACY ',
      '',
    ],
    [
      'Spark 3.5 in LEGACY INT96 mode',
      { [SPARK]: '3.5.0', 'org.apache.spark.legacyINT96': '' },
      '',
      'LEGACY ',
    ],
  ])('reads the calendar of a file written by %s as Spark does', (_, kv, datetime, int96) => {
    // Act
    const rebase = sparkRebaseOf(kv);

    // Assess
    expect(rebase).toEqual({ datetime, int96 });
  });

  it('ignores writer stamps, schemas and versions that do not change the calendar', () => {
    // Prepare
    const a = { [SPARK]: '3.5.0', 'com.databricks.spark.writeTimestamp': '1', 'parquet.avro.schema': '{}' };
    const b = {
      [SPARK]: '3.4.1',
      'com.databricks.spark.writeTimestamp': '2',
      pandas: '{"index_columns":[]}',
    };

    // Act / Assess
    expect(keyValueGroupingOf(a)).toBe('');
    expect(keyValueGroupingOf(b)).toBe('');
    expect(keyValueGroupingOf({})).toBe('');
  });

  it('keeps apart files of another calendar, time zone or content entry', () => {
    // Prepare
    const legacy = (tz: string) => ({
      [SPARK]: '3.5.0',
      'org.apache.spark.legacyDateTime': '',
      'org.apache.spark.timeZone': tz,
    });
    const bloom = (min: string) => ({ hoodie_min_record_key: min, 'org.apache.hudi.bloomfilter': 'AAAA' });

    // Act
    const keys = [
      keyValueGroupingOf({ [SPARK]: '3.5.0' }),
      keyValueGroupingOf(legacy('UTC')),
      keyValueGroupingOf(legacy('Europe/Paris')),
      keyValueGroupingOf(bloom('a')),
      keyValueGroupingOf(bloom('b')),
      keyValueGroupingOf({ geo: '{"columns":{}}' }),
    ];

    // Assess: all different; equal entries give equal keys
    expect(new Set(keys).size).toBe(keys.length);
    expect(keyValueGroupingOf({ ...legacy('UTC'), 'com.databricks.spark.writeTimestamp': '9' })).toBe(
      keys[1],
    );
  });

  it('reads key-value metadata from a Thrift-encoded FileMetaData, skipping malformed entries', () => {
    // Prepare: field 5 is a list of KeyValue structs; one has no value, one no key; encoded and decoded back
    const text = new TextEncoder();
    const binary = (id: number, value: string): ThriftField => ({
      id,
      type: T.BINARY,
      value: text.encode(value),
    });
    const entries: ThriftStruct[] = [
      { fields: [binary(1, 'org.apache.spark.version'), binary(2, '3.5.0')] },
      { fields: [binary(1, 'org.apache.spark.legacyDateTime')] },
      { fields: [binary(2, 'orphan')] },
    ];
    const encoded = encodeStruct({
      fields: [{ id: 5, type: T.LIST, value: { elementType: T.STRUCT, items: entries } }],
    });

    // Act
    const record = thriftKeyValues(decodeStruct(encoded).struct);

    // Assess
    expect(record).toEqual({ 'org.apache.spark.version': '3.5.0', 'org.apache.spark.legacyDateTime': '' });
  });
});
