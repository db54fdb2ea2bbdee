// The plan-time check of a Merge-on-Read slice (checkSliceMergeable): it refuses by name, before any plan is written,
// every slice the compact step's merge would refuse — and reads the base file's rows only when a refusal can depend on
// them. A refusal can depend on the base rows in two ways: the log's ordering value of a key the base holds may have
// no order with the base row's (a comparison only some semantics make), and a log row that cannot be written in the
// base schema refuses only if it survives the merge (the base row may win). So: without the base rows when neither can
// refuse, by the merge with them when one might, and never a refusal the merge would not make.
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { HudiCompactionUnsupportedError } from '../../../../../functions/core/formats/hudi/compaction-errors.js';
import { checkSliceMergeable } from '../../../../../functions/core/formats/hudi/compaction-merge.js';
import {
  HudiMergeUnsupportedError,
  type MergePolicy,
  mergePolicy,
} from '../../../../../functions/core/formats/hudi/log/index.js';
import {
  avroDataBlock,
  deleteBlock,
  logFileName,
} from '../../../../../functions/core/formats/hudi/log/writer.js';

const BASE = 'p/f1-0_0-1-1_20260101000000000.parquet';
const INSTANT = '20260102000000000';
const LOG = `p/${logFileName({ fileId: 'f1-0', instant: INSTANT, version: 1, writeToken: '0-2-1' })}`;
const EVENT_TIME = mergePolicy({ tableVersion: 8, mergeMode: 'EVENT_TIME_ORDERING', orderingFields: 'ts' });
const COMMIT_TIME = mergePolicy({ tableVersion: 8, mergeMode: 'COMMIT_TIME_ORDERING', orderingFields: 'ts' });
const committed = () => true;

/** A base file of `rows` records `k0…`, each with an INT64 `ts` of 100 and a name, large enough to span pages. */
function baseFile(rows: number): Uint8Array {
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        { name: '_hoodie_record_key', data: Array.from({ length: rows }, (_, i) => `k${i}`), type: 'STRING' },
        { name: 'ts', data: BigInt64Array.from({ length: rows }, () => 100n), type: 'INT64' },
        {
          name: 'name',
          data: Array.from({ length: rows }, (_, i) => `name of record ${i} ${(i * 7919) % 104729}`),
          type: 'STRING',
        },
      ],
    } as never),
  );
}

function schemaOf(tsType: 'long' | 'string', extra: readonly string[] = []): string {
  return JSON.stringify({
    type: 'record',
    name: 'r',
    fields: [
      { name: '_hoodie_record_key', type: 'string' },
      { name: 'ts', type: tsType },
      { name: 'name', type: 'string' },
      ...extra.map((name) => ({ name, type: 'string' })),
    ],
  });
}

const SCHEMA = schemaOf('long');

/** A log file of one Avro data block: records of `_hoodie_record_key`, `ts` (of Avro type `tsType`) and more fields. */
function logFile(
  records: readonly Record<string, unknown>[],
  tsType: 'long' | 'string',
  extra: readonly string[] = [],
): Uint8Array {
  return avroDataBlock(INSTANT, schemaOf(tsType, extra), records);
}

/** A store that records whole reads and the bytes of ranged reads, by key. */
class RecordingStore extends MemoryObjectStore {
  readonly wholeReads: string[] = [];
  readonly rangeBytes = new Map<string, number>();

  override async get(key: string): Promise<Uint8Array> {
    this.wholeReads.push(key);
    return super.get(key);
  }

  override async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    const bytes = await super.getRange(key, start, endInclusive);
    this.rangeBytes.set(key, (this.rangeBytes.get(key) ?? 0) + bytes.length);
    return bytes;
  }
}

async function slice(
  log: Uint8Array,
  rows = 40_000,
): Promise<{ store: RecordingStore; baseSize: number; check: (policy: MergePolicy) => Promise<void> }> {
  const store = new RecordingStore();
  const base = baseFile(rows);
  await store.put(BASE, base);
  await store.put(LOG, log);
  return {
    store,
    baseSize: base.length,
    check: (policy) =>
      checkSliceMergeable(store, { baseKey: BASE, baseSize: base.length, logKeys: [LOG] }, policy, committed),
  };
}

describe('the plan-time check of a slice no base row can make refused', () => {
  it.each([
    ['EVENT_TIME_ORDERING, numeric ordering values on both sides', EVENT_TIME],
    ['COMMIT_TIME_ORDERING, which never compares with the base', COMMIT_TIME],
  ])('reads the base file’s footer only, never its pages (%s)', async (_what, policy) => {
    // Prepare: updates of base keys and an insert, all writable in the base schema
    const { store, baseSize, check } = await slice(
      logFile(
        [
          { _hoodie_record_key: 'k1', ts: 200n, name: 'updated' },
          { _hoodie_record_key: 'k2', ts: 50n, name: 'older than the base' },
          { _hoodie_record_key: 'new', ts: 300n, name: 'inserted' },
        ],
        'long',
      ),
    );

    // Act
    await check(policy);

    // Assess: no whole read of the base file; its ranged reads are its footer's end, a part of the file
    expect(store.wholeReads).not.toContain(BASE);
    expect(store.rangeBytes.get(BASE) ?? 0).toBeGreaterThan(0);
    expect(store.rangeBytes.get(BASE) ?? 0).toBeLessThan(baseSize / 2);
  });
});

describe('the plan-time check of a slice a base row may make refused', () => {
  it('refuses by name an ordering value of a type with no order with the base row’s, for a key the base holds', async () => {
    // Prepare: EVENT_TIME_ORDERING compares the log's `ts` (here a string) with the base row's (INT64)
    const { check } = await slice(logFile([{ _hoodie_record_key: 'k1', ts: 'late', name: 'x' }], 'string'));

    // Act
    const attempt = check(EVENT_TIME);

    // Assess
    await expect(attempt).rejects.toThrow(HudiMergeUnsupportedError);
    await expect(attempt).rejects.toThrow(/ordering values of types bigint and string/);
  });

  it('passes such a value for a key the base does not hold (nothing is compared with it)', async () => {
    // Prepare: a delete with a string ordering value (a typed delete: EVENT_TIME_ORDERING compares it with the base
    // row of its key, when there is one) of a key the base does not hold
    const { store, check } = await slice(
      deleteBlock(INSTANT, SCHEMA, [{ recordKey: 'absent', partitionPath: 'p', orderingValue: 'late' }]),
    );

    // Act
    const attempt = check(EVENT_TIME);

    // Assess: the merge with the base rows decided (the file was read whole), and found nothing to refuse
    await expect(attempt).resolves.toBeUndefined();
    expect(store.wholeReads).toContain(BASE);
  });

  it('refuses such a value of a delete for a key the base holds', async () => {
    // Prepare
    const { check } = await slice(
      deleteBlock(INSTANT, SCHEMA, [{ recordKey: 'k1', partitionPath: 'p', orderingValue: 'late' }]),
    );

    // Act
    const attempt = check(EVENT_TIME);

    // Assess
    await expect(attempt).rejects.toThrow(HudiMergeUnsupportedError);
    await expect(attempt).rejects.toThrow(/ordering values of types bigint and string/);
  });

  it.each([
    ['survives (its ordering value is greater than the base row’s)', 200n, true],
    ['loses to the base row (the base’s ordering value is greater), so is never written', 50n, false],
  ])('refuses a log row with a column the base lacks only when it %s', async (_what, ts, refused) => {
    // Prepare
    const { check } = await slice(
      logFile([{ _hoodie_record_key: 'k1', ts, name: 'x', added: 'a new column' }], 'long', ['added']),
    );

    // Act
    const attempt = check(EVENT_TIME);

    // Assess
    if (refused) {
      await expect(attempt).rejects.toThrow(HudiCompactionUnsupportedError);
      await expect(attempt).rejects.toThrow(/log column added, which the base file does not have/);
    } else await expect(attempt).resolves.toBeUndefined();
  });
});
