// The Quarantine port's contract, run against every adapter (memory, object store, DynamoDB Local): records
// replace by key, lists are per partition and sorted, a table lists across partitions, clear removes exactly.
import { describe, expect, it } from 'vitest';
import type { QuarantinedFile } from '../../functions/core/quarantine.js';
import type { Quarantine } from '../../functions/ports/quarantine.js';

/** A record of `key` in `partition` of table `table`. */
export function quarantined(
  partition: string,
  key: string,
  extra: Partial<QuarantinedFile> = {},
): QuarantinedFile {
  return {
    table: 'events',
    partition,
    key,
    etag: `etag-of-${key}`,
    reason: 'the decoder failed (unreachable)',
    errorName: 'CorruptInputError',
    runId: 'run-1',
    since: Date.UTC(2024, 1, 1),
    ...extra,
  };
}

/**
 * Registers the contract's tests. `open` gives a fresh, empty quarantine per test (or one whose table names
 * are unique to the test, for adapters on a shared store).
 */
export function quarantineContract(
  name: string,
  open: () => Promise<{ quarantine: Quarantine; table: string }>,
) {
  describe(`Quarantine contract: ${name}`, () => {
    it('lists a partition’s records sorted by key, never another partition’s or table’s (even one sharing a prefix)', async () => {
      // Prepare
      const { quarantine: q, table } = await open();
      const a = quarantined('date=1', 'events/date=1/part-b.parquet', { table });
      const b = quarantined('date=1', 'events/date=1/part-a.parquet', { table });
      await q.record(a);
      await q.record(b);
      await q.record(quarantined('date=10', 'events/date=10/part-a.parquet', { table }));
      await q.record(quarantined('date=1', 'other/date=1/part-a.parquet', { table: `${table}-other` }));

      // Act
      const listed = await q.list({ table, partition: 'date=1' });
      const all = await q.listTable(table);

      // Assess
      expect(listed).toEqual([b, a]);
      expect(all.map((r) => [r.partition, r.key])).toEqual([
        ['date=1', 'events/date=1/part-a.parquet'],
        ['date=1', 'events/date=1/part-b.parquet'],
        ['date=10', 'events/date=10/part-a.parquet'],
      ]);
    });

    it('keeps the settings an engine refusal was made under, so a run whose settings lift it can release it', async () => {
      // Prepare
      const { quarantine: q, table } = await open();
      const refused = quarantined('date=1', 'events/date=1/int96.parquet', {
        table,
        errorName: 'UnsupportedInputError',
        reason: 'columns ts are INT96 timestamps',
        refusedUnder: { liftedBy: 'schemaFidelity', schemaFidelity: 'exact', memoryMb: 1769 },
      });

      // Act
      await q.record(refused);

      // Assess
      expect(await q.list({ table, partition: 'date=1' })).toEqual([refused]);
      expect(await q.listTable(table)).toEqual([refused]);
    });

    it('replaces the record of a key instead of adding a second one (a retried step, a new object failing again)', async () => {
      // Prepare
      const { quarantine: q, table } = await open();
      const first = quarantined('date=1', 'events/date=1/x.parquet', { table });
      const again = { ...first, etag: 'etag-of-the-new-object', runId: 'run-2', since: first.since + 1 };

      // Act
      await q.record(first);
      await q.record(first);
      await q.record(again);

      // Assess
      expect(await q.list({ table, partition: 'date=1' })).toEqual([again]);
    });

    it('clears one key or the whole partition, returning what it removed', async () => {
      // Prepare
      const { quarantine: q, table } = await open();
      const keys = ['a', 'b', 'c'].map((k) => `events/date=1/${k}.parquet`);
      for (const key of keys) await q.record(quarantined('date=1', key, { table }));
      const neighbour = quarantined('date=2', 'events/date=2/a.parquet', { table });
      await q.record(neighbour);

      // Act
      const one = await q.clear({ table, partition: 'date=1' }, keys[1]);
      const unknown = await q.clear({ table, partition: 'date=1' }, 'events/date=1/none.parquet');
      const rest = await q.clear({ table, partition: 'date=1' });

      // Assess
      expect(one.map((r) => r.key)).toEqual([keys[1]]);
      expect(unknown).toEqual([]);
      expect(rest.map((r) => r.key)).toEqual([keys[0], keys[2]]);
      expect(await q.list({ table, partition: 'date=1' })).toEqual([]);
      expect(await q.listTable(table)).toEqual([neighbour]);
    });

    it('keeps keys and partitions that break naive encodings apart, and the unpartitioned partition', async () => {
      // Prepare
      const { quarantine: q, table } = await open();
      const records = [
        quarantined('', 'part with space+plus.parquet', { table }),
        quarantined('', 'q?x=1#frag&y%2F.parquet', { table }),
        quarantined('k=a b/c=d%3D', 'events/k=a b/c=d%3D/ünïcödé-😀.parquet', { table }),
      ];
      for (const r of records) await q.record(r);

      // Act
      const root = await q.list({ table, partition: '' });
      const nested = await q.list({ table, partition: 'k=a b/c=d%3D' });

      // Assess
      expect(root).toEqual([records[0], records[1]]);
      expect(nested).toEqual([records[2]]);
    });
  });
}
