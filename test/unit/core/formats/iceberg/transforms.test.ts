// Partition transforms compute what the spec defines: bucket hashes match the spec's Appendix B test values,
// truncate and the time transforms floor as specified, and applied to a fixture's column bounds they give the
// partition values its writer recorded.
import { describe, expect, it } from 'vitest';
import {
  applyTransform,
  decodeSingleValue,
  humanPartitionValue,
  IcebergUnsupportedError,
  icebergHash,
  loadTable,
  parseTransform,
  readSnapshotFiles,
  type Transform,
  transformToString,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { fixtureStore } from './fixture-tables.js';

const hex = (s: string): Uint8Array => Uint8Array.from(Buffer.from(s.replaceAll(/[^0-9a-f]/gi, ''), 'hex'));
const T = (text: string): Transform => parseTransform(text, 't', 'test');

describe('partition transforms', () => {
  it('hashes the spec Appendix B values exactly (Murmur3 x86 32 over the spec byte encodings)', () => {
    // Act + Assess
    expect(icebergHash('int', 34)).toBe(2017239379);
    expect(icebergHash('long', 34n)).toBe(2017239379);
    expect(icebergHash('decimal(9,2)', 1420n)).toBe(-500754589); // 14.20
    expect(icebergHash('date', 17486)).toBe(-653330422); // 2017-11-16
    expect(icebergHash('time', 81068000000n)).toBe(-662762989); // 22:31:08
    expect(icebergHash('timestamp', 1510871468000000n)).toBe(-2047944441); // 2017-11-16T22:31:08
    expect(icebergHash('timestamptz', 1510871468000000n)).toBe(-2047944441);
    expect(icebergHash('string', 'iceberg')).toBe(1210000089);
    expect(icebergHash('uuid', hex('f79c3e09-677c-4bbd-a479-3f349cb785e7'))).toBe(1488055340);
    expect(icebergHash('fixed[4]', hex('00010203'))).toBe(-188683207);
    expect(icebergHash('binary', hex('00010203'))).toBe(-188683207);
    // nanosecond timestamps hash at microsecond precision
    expect(icebergHash('timestamp_ns', 1510871468000001001n)).toBe(
      icebergHash('timestamp', 1510871468000001n),
    );
  });

  it('buckets by (hash & Integer.MAX_VALUE) % N', () => {
    // Act + Assess: 2017239379 % 16 = 3
    expect(applyTransform(T('bucket[16]'), 'int', 34)).toBe(3);
    expect(applyTransform(T('bucket[16]'), 'long', 34n)).toBe(3);
    expect(applyTransform(T('bucket[4]'), 'string', null)).toBeNull();
  });

  it('truncates as the spec examples show, flooring negatives', () => {
    // Act + Assess
    expect(applyTransform(T('truncate[10]'), 'int', 1)).toBe(0);
    expect(applyTransform(T('truncate[10]'), 'int', -1)).toBe(-10);
    expect(applyTransform(T('truncate[10]'), 'long', -1n)).toBe(-10n);
    expect(applyTransform(T('truncate[50]'), 'decimal(9,2)', 1065n)).toBe(1050n); // 10.65 → 10.50
    expect(applyTransform(T('truncate[3]'), 'string', 'iceberg')).toBe('ice');
    expect(applyTransform(T('truncate[2]'), 'string', '😀😀😀')).toBe('😀😀'); // code points, not UTF-16 units
    expect(applyTransform(T('truncate[3]'), 'binary', hex('00010203'))).toEqual(hex('000102'));
  });

  it('maps dates and timestamps to years, months, days and hours since the epoch, flooring before 1970', () => {
    // Prepare: 2017-11-16T22:31:08 and one microsecond before the epoch
    const ts = 1510871468000000n;
    // Act + Assess
    expect(['year', 'month', 'day', 'hour'].map((t) => applyTransform(T(t), 'timestamptz', ts))).toEqual([
      47, 574, 17486, 419686,
    ]);
    expect(['year', 'month', 'day'].map((t) => applyTransform(T(t), 'date', 17486))).toEqual([
      47, 574, 17486,
    ]);
    expect(['year', 'month', 'day', 'hour'].map((t) => applyTransform(T(t), 'timestamp', -1n))).toEqual([
      -1, -1, -1, -1,
    ]);
    expect(applyTransform(T('void'), 'string', 'x')).toBeNull();
    expect(applyTransform(T('identity'), 'string', 'x')).toBe('x');
  });

  it('renders partition values as Iceberg writers name partition directories', () => {
    // Act + Assess
    expect(humanPartitionValue(T('hour'), 'timestamptz', 438296)).toBe('2020-01-01-08');
    expect(humanPartitionValue(T('day'), 'date', 17486)).toBe('2017-11-16');
    expect(humanPartitionValue(T('month'), 'date', 574)).toBe('2017-11');
    expect(humanPartitionValue(T('month'), 'date', -1)).toBe('1969-12');
    expect(humanPartitionValue(T('year'), 'date', 47)).toBe('2017');
    expect(humanPartitionValue(T('bucket[16]'), 'long', 3)).toBe('3');
    expect(humanPartitionValue(T('identity'), 'date', 17486)).toBe('2017-11-16');
    expect(humanPartitionValue(T('identity'), 'string', null)).toBeNull();
    expect(humanPartitionValue(T('identity'), 'decimal(9,2)', hex('058c'))).toBe('14.20'); // Avro bytes, unscaled 1420
    expect(humanPartitionValue(T('truncate[50]'), 'decimal(9,2)', -5n)).toBe('-0.05');
    expect(humanPartitionValue(T('identity'), 'uuid', hex('f79c3e09677c4bbda4793f349cb785e7'))).toBe(
      'f79c3e09-677c-4bbd-a479-3f349cb785e7',
    );
  });

  it('spark_v1_hour_identity_partitioned: hour(event_time) and identity(action) of each file bounds are its recorded partition values', async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v1_hour_identity_partitioned');
    const [hour, action] = table.metadata.specs[0]?.fields ?? [];
    if (hour === undefined || action === undefined) throw new Error('spec');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess: the writer's bounds (one row per file, so lower = the row's value) map onto its partition tuple
    expect(files.dataFiles).toHaveLength(20);
    for (const f of files.dataFiles) {
      const file = f.entry.file;
      const time = decodeSingleValue('timestamptz', file.lowerBounds.get(hour.sourceId) ?? new Uint8Array());
      const name = decodeSingleValue('string', file.lowerBounds.get(action.sourceId) ?? new Uint8Array());
      expect(file.partition.values).toEqual([
        { fieldId: 1000, value: applyTransform(hour.transform, 'timestamptz', time) },
        { fieldId: 1001, value: applyTransform(action.transform, 'string', name) },
      ]);
    }
  });

  it('parses the eight transforms and spells them back', () => {
    // Act + Assess
    for (const t of ['identity', 'bucket[16]', 'truncate[4]', 'year', 'month', 'day', 'hour', 'void'])
      expect(transformToString(T(t))).toBe(t);
  });

  for (const unknown of ['zorder', 'bucket[0]', 'truncate[x]', 'bucket'])
    it(`refuses the unknown transform "${unknown}", naming it`, () => {
      // Act
      const parse = () => parseTransform(unknown, 's3://lake/t', 'partition field x');
      // Assess
      expect(parse).toThrow(IcebergUnsupportedError);
      expect(parse).toThrow(
        `Iceberg table s3://lake/t uses the partition transform "${unknown}" (partition field x), which lake-compactor does not support: nothing of it was read or changed. Leave this table to an Iceberg engine (Spark's rewrite_data_files), or remove it from the configuration`,
      );
    });
});
