// The compact step reads its inputs through a recorder (which object each GET returned, see input-reads.ts), and the
// engine composes stitched outputs in the store (S3's UploadPartCopy) only when it reads and writes through one store:
// a group of large row groups is still composed by the store, and its inputs' versions are still journaled.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { DEFAULT_STITCH_THRESHOLDS } from '../../../../functions/core/parquet/stitch.js';
import { buildRunContext } from '../../../../functions/core/run-input.js';
import { runPartition } from '../../../../functions/core/workflow/run.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { ComposedPiece, ObjectStore } from '../../../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { duckWorkspace } from '../../adapters/parquet-wasm/helpers.js';

const DAY = '2024-03-01';
const PARTITION = `events/date=${DAY}/`;

/**
 * A versioned in-memory bucket that composes objects as S3 does (each range only while its object has the piece's
 * ETag), recording which keys it composed.
 */
function composingStore(): { store: ObjectStore & MemoryObjectStore; composed: string[] } {
  const inner = new MemoryObjectStore({ versioned: true, listsVersionIds: false });
  const composed: string[] = [];
  const putComposed = async (key: string, pieces: readonly ComposedPiece[]) => {
    composed.push(key);
    const parts: Uint8Array[] = [];
    for (const piece of pieces) {
      if (piece.kind === 'bytes') parts.push(piece.bytes);
      else {
        expect((await inner.head(piece.key))?.etag).toBe(piece.etag);
        parts.push(await inner.getRange(piece.key, piece.start, piece.endInclusive));
      }
    }
    return inner.putStream(
      key,
      (async function* () {
        yield* parts;
      })(),
    );
  };
  return { store: Object.assign(inner, { putComposed }), composed };
}

describe('the compact step on a stitched group', () => {
  it('has the store compose the output from the inputs, and journals the versions its reads returned', async () => {
    // Prepare: inputs of one large ZSTD row group each (DuckDB's), which planning marks for stitching.
    const { store, composed } = composingStore();
    const duck = await duckWorkspace();
    const versions = new Map<string, string>();
    try {
      for (let i = 0; i < 6; i++) {
        const key = `${PARTITION}part-${i}.parquet`;
        await store.put(
          key,
          await duck.parquet(
            `SELECT i::BIGINT AS id, md5(i::VARCHAR || '-${i}') AS a FROM range(${DEFAULT_STITCH_THRESHOLDS.minRowGroupRows + 20_000}) t(i)`,
            { compression: 'zstd', rowGroupSize: 1_000_000 },
          ),
        );
        versions.set(key, (await store.head(key))?.versionId ?? '');
      }
    } finally {
      await duck.close();
    }
    const journal = new MemoryJournal();
    const run = buildRunContext(
      { name: 'events', prefix: 'events', bucket: 'lake' },
      `date=${DAY}`,
      { force: true, quietMinutes: 0 },
      { executionName: 'composes', startedAt: 0, versionedBuckets: ['lake'] },
    );
    // Act
    const result = await runPartition(
      {
        store,
        journal,
        clock: new ManualClock(5_000),
        leases: new MemoryLeases(),
        engine: defaultParquetEngine,
        wait: async () => undefined,
      },
      run,
      { plan: { inlineGroupLimit: 40, compactMemoryMb: 1769 } },
    );
    const entry = await journal.get(run.runId, result.groups[0]?.item.groupId ?? '');
    const journaled = new Map(entry?.inputs.map((i) => [i.key, i.versionId]));

    // Assess: compacted, the output composed by the store, every input retired in delete mode with its version.
    expect(result.summary.outcome).toBe('compacted');
    expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
    expect(composed).toHaveLength(1);
    expect(entry?.retireMode).toBe('delete-versioned');
    expect(journaled).toEqual(versions);
  }, 120_000);
});
