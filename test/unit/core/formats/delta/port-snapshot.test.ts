// The Delta table in the TableFormat port's shape: live files with footers read when asked (rows and the file's
// own schema fingerprint), damaged or missing live files marked unreadable with why, plan inputs that record the version.
import { describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { deltaPlanInputs, snapshotDeltaTable } from '../../../../../functions/core/formats/delta/index.js';
import { planInputSchema } from '../../../../../functions/core/planning.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';
import { memoryCopy } from './delta-test-kit.js';

const store = new LocalObjectStore(DELTA_FIXTURES);

describe('Delta snapshot in the port shape', () => {
  it('delta-2.2.0-partitioned-types: with footers read, rows equal the log stats and fingerprints are the files’ own', async () => {
    // Act
    const { snapshot, version, delta } = await snapshotDeltaTable(store, 'delta-2.2.0-partitioned-types', {
      now: 5,
      readFooters: true,
    });
    // Assess
    expect(version).toBe(0);
    const files = snapshot.partitions.flatMap((p) => p.files);
    const statsRows = new Map(delta.files.map((f) => [f.key, f.stats?.numRecords]));
    expect(files).toHaveLength(3);
    for (const file of files) {
      expect(file.rows).toBe(statsRows.get(file.key));
      expect(file.schemaFingerprint).not.toMatch(/^delta:/);
      expect(file.unreadable).toBeUndefined();
    }
  });

  it('a live file missing from storage is marked unreadable with why, not dropped', async () => {
    // Prepare
    const memory = await memoryCopy('delta-0.8.0-null-partition', 't/');
    const gone = 't/k=A/part-00000-b1f1dbbb-70bc-4970-893f-9bb772bf246e.c000.snappy.parquet';
    await memory.deleteMany([{ key: gone }]);
    // Act
    const { snapshot } = await snapshotDeltaTable(memory, 't', { now: 1, readFooters: true });
    // Assess
    const file = snapshot.partitions.flatMap((p) => p.files).find((f) => f.key === gone);
    expect(file?.unreadable).toBe(
      'live in the Delta log but missing from storage (the table is damaged; check it with a Delta client)',
    );
    expect(snapshot.partitions.map((p) => p.partition)).toEqual(['k=A', 'k=__HIVE_DEFAULT_PARTITION__']);
  });

  it('plan inputs record the Delta version they were read at and pass the plan schema', async () => {
    // Prepare
    const { snapshot, version } = await snapshotDeltaTable(store, 'simple_table', { now: 9 });
    // Act
    const inputs = deltaPlanInputs(snapshot, version, 'events');
    // Assess
    expect(inputs).toHaveLength(1);
    expect(inputs[0]?.snapshot).toEqual({ listedAt: 9, deltaVersion: 4 });
    expect(inputs[0]?.files).toHaveLength(5);
    for (const input of inputs) expect(() => planInputSchema.parse(input)).not.toThrow();
  });
});
