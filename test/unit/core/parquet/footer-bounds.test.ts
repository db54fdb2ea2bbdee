// A footer's counts are the writer's word: a row count no column chunk could hold (2^53 − 1 rows in a few hundred
// bytes) and a footer longer than the memory budget allows are unreadable footers of that file, named, and a real
// file's counts pass.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { CorruptInputError } from '../../../../functions/core/errors.js';
import { memoryBudget, withMemoryBudget } from '../../../../functions/core/memory-budget.js';
import { parseFooter, readFooter } from '../../../../functions/core/parquet/footer.js';
import { withClaimedRows } from '../../../support/crafted-metadata.js';
import { type DuckWorkspace, duckWorkspace } from '../../adapters/parquet-wasm/helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

function failure(fn: () => unknown): Promise<Error> {
  return Promise.resolve()
    .then(fn)
    .then(
      () => {
        throw new Error('expected a failure');
      },
      (err: unknown) => err as Error,
    );
}

describe('footer counts and sizes are checked before they are trusted', () => {
  it('a footer claiming 2^53 − 1 rows in its file and row group is an unreadable footer naming the file', async () => {
    // Prepare
    const real = await duck.parquet('SELECT i::BIGINT AS id FROM range(3) t(i)');
    const crafted = withClaimedRows(real);

    // Act
    const err = await failure(() => parseFooter('t/bomb.parquet', crafted.length, crafted));
    const footer = parseFooter('t/real.parquet', real.length, real);

    // Assess
    expect(err).toBeInstanceOf(CorruptInputError);
    expect((err as CorruptInputError).key).toBe('t/bomb.parquet');
    expect((err as CorruptInputError).reason).toMatch(
      /^row group 0 claims 9007199254740991 rows, more than its \d+-byte column chunk can hold \(\d+ at most\), so the footer's row count is not plausible$/,
    );
    expect(footer.rows).toBe(3);
  });

  it('a footer longer than the budget allows is refused from its length, before it is read', async () => {
    // Prepare: a file whose footer length field claims 100 MiB, in a 200 MiB object (64 MB budget: 1 MiB footers)
    const store = new MemoryObjectStore();
    const size = 200 * 1024 * 1024;
    const bytes = new Uint8Array(size);
    bytes.set([0x50, 0x41, 0x52, 0x31], 0);
    new DataView(bytes.buffer).setUint32(size - 8, 100 * 1024 * 1024, true);
    bytes.set([0x50, 0x41, 0x52, 0x31], size - 4);
    await store.put('t/wide.parquet', bytes);

    // Act
    const err = await failure(() =>
      withMemoryBudget(memoryBudget(64, 'raise the memory (now 64 MB)'), () =>
        readFooter(store, 't/wide.parquet'),
      ),
    );

    // Assess
    expect(err).toBeInstanceOf(CorruptInputError);
    expect((err as CorruptInputError).reason).toBe(
      "its footer claims 100 MiB, more than the 1.0 MiB one footer may have in this process's memory (raise the memory (now 64 MB))",
    );
    expect(store.requests.getRange).toBe(1);
  });
});
