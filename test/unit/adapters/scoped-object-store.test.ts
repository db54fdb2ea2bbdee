// The in-process twin of the per-table session policy: every request naming a key outside the table's prefix and
// the work root is refused before it reaches the store (a batch delete refuses only those keys, as AccessDenied),
// while listings and versioning, which IAM grants per bucket, pass.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { ScopedObjectStore } from '../../../functions/adapters/scoped-object-store.js';
import { OutsideTableScopeError, tableScopeOf } from '../../../functions/core/access/table-scope.js';

const WORK_ROOT = '_lake-compactor/';
const OTHER = 'hr/payroll/salaries.parquet';
const OWN = 'events/date=2024-01-01/a.parquet';

async function setup(): Promise<{ inner: MemoryObjectStore; store: ScopedObjectStore }> {
  const inner = new MemoryObjectStore();
  await inner.put(OWN, 'own');
  await inner.put(OTHER, 'secret');
  await inner.put(`${WORK_ROOT}staging/r/g/out.parquet`, 'staged');
  const scope = tableScopeOf({ name: 'events', prefix: 'events' }, 'lake', WORK_ROOT);
  return { inner, store: new ScopedObjectStore(inner, scope) };
}

describe('ScopedObjectStore', () => {
  it("reads, writes and copies the table's keys and the work root's", async () => {
    // Prepare
    const { inner, store } = await setup();
    // Act
    await store.copy(`${WORK_ROOT}staging/r/g/out.parquet`, 'events/date=2024-01-01/out.parquet');
    await store.put('events/date=2024-01-01/b.parquet', 'b');
    // Assess
    expect(new TextDecoder().decode(await store.get(OWN))).toBe('own');
    expect(new TextDecoder().decode((await store.read?.(OWN))?.bytes)).toBe('own');
    expect(await inner.head('events/date=2024-01-01/out.parquet')).toBeDefined();
    expect((await store.head('events/date=2024-01-01/b.parquet'))?.size).toBe(1);
  });

  it("refuses every request naming another table's key, and sends none of them", async () => {
    // Prepare
    const { inner, store } = await setup();
    const before = { ...inner.requests };
    // Act
    const attempts = [
      () => store.head(OTHER),
      () => store.get(OTHER),
      () => store.getRange(OTHER, 0, 1),
      () => store.read?.(OTHER, { start: 0, endInclusive: 1 }) ?? Promise.resolve('no read'),
      () => store.put(OTHER, 'overwritten'),
      () => store.putStream(OTHER, (async function* () {})()),
      () => store.copy(OTHER, 'events/date=2024-01-01/stolen.parquet'),
      () => store.copy(OWN, 'hr/payroll/planted.parquet'),
      () => store.copy(OTHER, 'events/x.parquet', { sourceVersionId: 'v1' }),
    ];
    const errors = await Promise.all(attempts.map((attempt) => attempt().catch((err: unknown) => err)));
    // Assess
    for (const error of errors) expect(error).toBeInstanceOf(OutsideTableScopeError);
    expect((errors[7] as Error).message).toMatch(/^Refused S3 PutObject of hr\/payroll\/planted\.parquet/);
    expect((errors[8] as Error).message).toMatch(/^Refused S3 GetObjectVersion of hr\/payroll/);
    expect(inner.requests).toEqual(before);
    expect(new TextDecoder().decode(await inner.get(OTHER))).toBe('secret');
  });

  it('deletes the keys in scope of a batch and reports each other key as AccessDenied, leaving it', async () => {
    // Prepare
    const { inner, store } = await setup();
    // Act
    const result = await store.deleteMany([{ key: OWN }, { key: OTHER, versionId: 'v00000001' }]);
    // Assess
    expect(result.deleted.map((d) => d.key)).toEqual([OWN]);
    expect(result.errors).toEqual([
      {
        key: OTHER,
        code: 'AccessDenied',
        message: expect.stringMatching(/^Refused S3 DeleteObjectVersion of hr\/payroll\/salaries\.parquet/),
      },
    ]);
    expect(await inner.head(OTHER)).toBeDefined();
    expect(await inner.head(OWN)).toBeUndefined();
  });

  it('lists anywhere in the bucket and reads its versioning, which IAM grants per bucket', async () => {
    // Prepare
    const { store } = await setup();
    // Act
    const listed = await store.list('hr/');
    // Assess
    expect(listed.objects.map((o) => o.key)).toEqual([OTHER]);
    expect(await store.versioning?.()).toBeDefined();
  });
});
