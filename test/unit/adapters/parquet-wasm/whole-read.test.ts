// A small input (up to PREFLIGHT_WHOLE_READ_BYTES) is read whole by the rewrite's pre-flight while its cache has
// room, so the rewrite sends one GET per such input (set B's ~256 KB files: before, a ranged footer read and a
// second GET of the body): counted as S3 would bill it, with the rows kept and verify passing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import {
  FOOTER_FIRST_READ_BYTES,
  PREFLIGHT_WHOLE_READ_BYTES,
} from '../../../../functions/core/parquet/footer.js';
import { countingStore } from '../../../support/counting-store.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

const FILES = 12;

/** ~250 KB of hardly compressible rows per file: larger than the footer's first read, smaller than a whole read. */
async function inputs(): Promise<MemoryObjectStore> {
  const source = new MemoryObjectStore();
  for (let f = 0; f < FILES; f++) {
    const select = `SELECT (i + ${f * 10_000})::BIGINT AS id, md5((i * 31 + ${f})::VARCHAR) AS a FROM range(6000) t(i)`;
    await source.put(`in/part-${f}.parquet`, await duck.parquet(select, { compression: 'zstd' }));
  }
  return source;
}

describe('reading small inputs for a rewrite', () => {
  it('sends one GET per input between the footer read and a whole read, keeping every row', async () => {
    // Prepare
    const source = await inputs();
    const files = await Promise.all(
      Array.from({ length: FILES }, (_, f) => fileOf(source, `in/part-${f}.parquet`)),
    );
    const counted = countingStore(source);

    // Act
    const result = await rewriteGroup(
      { source: counted.store, target: source },
      { groupId: 'g', files, expectedOutputFiles: 1 },
      { outputKey: (i) => `out/part-${i}.parquet` },
    );

    // Assess: the inputs are of the sizes this is about; each was fetched once (no ranged footer read before it,
    // no sample read after it); the output holds the inputs' rows, which verify proves.
    for (const file of files) {
      expect(file.size).toBeGreaterThan(FOOTER_FIRST_READ_BYTES);
      expect(file.size).toBeLessThanOrEqual(PREFLIGHT_WHOLE_READ_BYTES);
    }
    const gets = counted.requests().filter((r) => r.op === 'get');
    expect(gets.map((r) => r.key).sort()).toEqual(files.map((f) => f.key).sort());
    const inputList = await duck.materialise(
      source,
      files.map((f) => f.key),
    );
    const outputList = await duck.materialise(
      source,
      result.outputs.map((o) => o.key),
    );
    expect(
      Number(
        await duck.db.scalar(
          `SELECT count(*) FROM ((SELECT * FROM read_parquet(${inputList}) EXCEPT ALL SELECT * FROM read_parquet(${outputList})) UNION ALL (SELECT * FROM read_parquet(${outputList}) EXCEPT ALL SELECT * FROM read_parquet(${inputList})))`,
        ),
      ),
    ).toBe(0);
    const report = await verifyOutputs(source, result.outputs, result.fingerprint);
    expect(report.rows).toBe(FILES * 6000);
  });
});
