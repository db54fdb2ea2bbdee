// The run cost estimate against the requests real runs send: each run goes plan → compact → verify → commit →
// finalize through the workflow's own steps over an S3-like store, and every request is counted as S3 bills it.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { settingsOf } from '../../../../functions/adapters/parquet-wasm/settings.js';
import { LIST_PRICE_IN_HEADS } from '../../../../functions/core/formats/hive/commit.js';
import {
  memoryBudget,
  smallInputCacheBytes,
  withMemoryBudget,
} from '../../../../functions/core/memory-budget.js';
import { DEFAULT_STITCH_THRESHOLDS } from '../../../../functions/core/parquet/stitch.js';
import { buildRunContext } from '../../../../functions/core/run-input.js';
import {
  estimateCost,
  estimateRequests,
  estimateRequestsByStep,
  type RequestCounts,
  retireCopiesPerInput,
  S3_USD_PER_GET,
  S3_USD_PER_PUT,
} from '../../../../functions/core/workflow/cost.js';
import { runPartition, WORKFLOW_STEPS, type WorkflowSteps } from '../../../../functions/core/workflow/run.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import type { RetireMode } from '../../../../functions/ports/journal.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { countedWorkflowRun } from '../../../support/counted-workflow.js';
import { countingStore } from '../../../support/counting-store.js';
import { duckWorkspace } from '../../adapters/parquet-wasm/helpers.js';

const DAY = '2024-03-01';

interface Lake {
  readonly files: number;
  readonly rows: number;
  /** Groups the plan makes of them, and outputs it expects. */
  readonly groups: number;
  readonly outputs: number;
  readonly choices?: { readonly targetFileSizeMB: number; readonly maxGroupMB: number };
  /** Its files are no larger than a footer's first read: planned from the listing, their footers unread. */
  readonly tiny?: boolean;
}

/** Runs one partition of `lake` to the end on a store that is versioned exactly when the mode needs it. */
async function countedRun(lake: Lake, mode: RetireMode) {
  // Listed as S3's ListObjectsV2 lists (no version ids): a version id is learnt from a GET's or a HEAD's response.
  const inner = new MemoryObjectStore({ versioned: mode === 'delete-versioned', listsVersionIds: false });
  await writeSampleLake((key, bytes) => inner.put(key, bytes).then(() => undefined), {
    table: 'events',
    days: 1,
    batches: lake.files,
    startDate: DAY,
    minRows: lake.rows,
    maxRows: lake.rows,
    seed: 3,
  });
  const counting = countingStore(inner);
  const context = buildRunContext(
    { name: 'events', prefix: 'events', bucket: 'lake' },
    `date=${DAY}`,
    { force: true, quietMinutes: 0, ...lake.choices },
    {
      executionName: `cost-${mode}`,
      startedAt: 0,
      versionedBuckets: mode === 'delete-versioned' ? ['lake'] : [],
    },
  );
  // An unversioned bucket's bin-pack retires by delete-rebuild; trash (what sort and z-order runs use there) is
  // asked for directly, so every mode is counted on the same bin-pack run.
  const run = mode === 'trash' ? { ...context, retireMode: mode } : context;
  // Each workflow step's requests apart: the counter is read after every step.
  const bySteps: Record<string, RequestCounts> = {};
  const steps = Object.fromEntries(
    Object.entries(WORKFLOW_STEPS).map(([name, step]) => [
      name,
      async (...args: unknown[]) => {
        const before = counting.counts();
        const out = await (step as (...a: unknown[]) => Promise<unknown>)(...args);
        const after = counting.counts();
        const seen = bySteps[name] ?? { get: 0, put: 0, copy: 0, delete: 0 };
        bySteps[name] = {
          get: seen.get + after.get - before.get,
          put: seen.put + after.put - before.put,
          copy: seen.copy + after.copy - before.copy,
          delete: seen.delete + after.delete - before.delete,
        };
        return out;
      },
    ]),
  ) as unknown as WorkflowSteps;
  const result = await runPartition(
    {
      store: counting.store,
      journal: new MemoryJournal(),
      clock: new ManualClock(5_000),
      leases: new MemoryLeases(),
      engine: defaultParquetEngine,
      wait: async () => undefined,
    },
    run,
    { plan: { inlineGroupLimit: 40, compactMemoryMb: 1769 } },
    {},
    steps,
  );
  return { result, counted: counting.counts(), bySteps };
}

const LAKES: Record<string, Lake> = {
  'tiny files (planned from the listing, read once whole by the rewrite)': {
    files: 12,
    rows: 30,
    groups: 1,
    outputs: 1,
    tiny: true,
  },
  'files above the footer read (fetched again, plus the writer sample)': {
    files: 5,
    rows: 40_000,
    groups: 1,
    outputs: 1,
  },
  'one group written to several outputs': {
    files: 5,
    rows: 40_000,
    groups: 1,
    outputs: 2,
    choices: { targetFileSizeMB: 1, maxGroupMB: 16 },
  },
  'several groups of small files, several outputs each': {
    files: 14,
    rows: 30,
    groups: 2,
    outputs: 6,
    choices: { targetFileSizeMB: 0.004, maxGroupMB: 0.016 },
    tiny: true,
  },
};

describe('estimateRequests', () => {
  it("models the engine's small-file cache with the engine's own bound, sized from the function's memory", () => {
    // Prepare / Act: the bound the engine applies in a process of 1,769 MB (the compact function's default).
    const engine = withMemoryBudget(memoryBudget(1769), () =>
      settingsOf({ groupId: 'g', files: [{ key: 'a', size: 1, etag: '' }] }, { outputKey: (i) => `${i}` }),
    );

    // Assess: inputs beyond it are fetched twice, so the model must use the same number; it grows with memory
    // between its bounds.
    expect(engine.smallFileCacheBytes).toBe(smallInputCacheBytes(1769));
    expect(smallInputCacheBytes(1769)).toBe(221 * 1024 * 1024);
    expect(smallInputCacheBytes(512)).toBe(64 * 1024 * 1024);
    expect(smallInputCacheBytes(10_240)).toBe(256 * 1024 * 1024);
  });

  it('prices a 128 MiB group of 257 KB inputs at one rewrite GET each at 1,769 MB, and half of them twice at 512 MB', () => {
    // Prepare: 500 inputs of 257 KB in one group, one output.
    const input = {
      groups: 1,
      inputFiles: 500,
      inputBytes: 500 * 257 * 1024,
      inputRows: 500 * 20_000,
      expectedOutputFiles: 1,
      retireMode: 'delete-versioned' as const,
    };

    // Act
    const large = estimateRequestsByStep({ ...input, compactMemoryMb: 1769 });
    const small = estimateRequestsByStep({ ...input, compactMemoryMb: 512 });

    // Assess: at 512 MB the 64 MiB cache holds 255 of them; the other 245 are read again by the rewrite.
    expect(small.rewrite.get - large.rewrite.get).toBe(245);
  });

  for (const [name, lake] of Object.entries(LAKES)) {
    for (const mode of ['delete-versioned', 'delete-rebuild', 'trash'] as const) {
      it(`counts the requests a run sends, per billing class: ${name}, ${mode}`, async () => {
        // Prepare / Act
        const { result, counted } = await countedRun(lake, mode);

        // Assess
        expect(result.summary.outcome).toBe('compacted');
        expect(result.plan?.retireMode).toBe(mode);
        expect(result.plan?.groupCount).toBe(lake.groups);
        expect(result.plan?.expectedOutputFiles).toBe(lake.outputs);
        expect(result.groups.every((g) => g.result.state === 'done')).toBe(true);
        const estimated = result.plan?.estimatedCost.requests;
        expect({
          getAndHead: estimated?.get,
          putClassWithCopyAndList: (estimated?.put ?? 0) + (estimated?.copy ?? 0),
          deleteRequests: estimated?.delete,
        }).toEqual({
          getAndHead: counted.get,
          putClassWithCopyAndList: counted.put + counted.copy,
          deleteRequests: counted.delete,
        });
        expect(estimated).toEqual(counted);
      }, 60_000);

      it(`splits a run's requests by the step that sends them: ${name}, ${mode}`, async () => {
        // Prepare / Act
        const { result, bySteps } = await countedRun(lake, mode);

        // Assess: the compact step is the engine's rewrite plus its staging LIST and fingerprint PUT; the verify
        // step the engine's verification plus a HEAD per output.
        const plan = result.plan;
        if (plan === undefined) throw new Error('the run was not planned');
        const model = estimateRequestsByStep({
          groups: plan.groupCount,
          inputFiles: plan.plannedFiles,
          inputBytes: plan.plannedBytes,
          expectedOutputFiles: plan.expectedOutputFiles,
          retireMode: plan.retireMode,
          compactMemoryMb: 1769,
          listedFiles: plan.inputFiles,
          inputRows: lake.files * lake.rows,
          deferredFiles: lake.tiny === true ? plan.plannedFiles : 0,
        });
        const none = { get: 0, put: 0, copy: 0, delete: 0 };
        expect(bySteps).toEqual({
          acquireLease: none,
          planRun: model.plan,
          compactGroup: { ...model.rewrite, put: model.rewrite.put + model.bookkeeping.put },
          verifyGroup: { ...model.verify, get: model.verify.get + model.bookkeeping.get },
          commitStep: model.commit,
          finalizeRun: model.finalize,
        });
      }, 60_000);
    }
  }

  it('sends one DeleteObjects per 1,000 inputs, not one DELETE per input', () => {
    // Prepare
    const base = {
      groups: 1,
      inputBytes: 2_000 * 8_000,
      expectedOutputFiles: 1,
      retireMode: 'delete-versioned' as const,
      compactMemoryMb: 1769,
    };

    // Act
    const small = estimateRequests({ ...base, inputFiles: 1_000 });
    const large = estimateRequests({ ...base, inputFiles: 1_001 });

    // Assess: the inputs' batch, the staging batch; one more batch past 1,000 inputs.
    expect(small.delete).toBe(2);
    expect(large.delete).toBe(3);
  });

  it('adds a LIST page per 1,000 listed files to each of the two listings', () => {
    // Prepare
    const base = {
      groups: 1,
      inputFiles: 10,
      inputBytes: 10 * 8_000,
      expectedOutputFiles: 1,
      retireMode: 'trash' as const,
      compactMemoryMb: 1769,
    };

    // Act
    const one = estimateRequests({ ...base, listedFiles: 1_000 });
    const two = estimateRequests({ ...base, listedFiles: 1_001 });

    // Assess: the plan's listing needs a second page; finalize's (1,001 − 10 + 1 keys) does not.
    expect(two.put - one.put).toBe(1);
    expect(two.get - one.get).toBe(1); // the extra file's footer
  });

  it("prices the delete-rebuild and delete commits' input check as LIST pages where those cost less than HEADs", () => {
    // Prepare
    const base = {
      groups: 1,
      inputBytes: 100 * 8_000,
      expectedOutputFiles: 1,
      compactMemoryMb: 1769,
      retireMode: 'delete-rebuild' as const,
    };

    // Act
    const many = estimateRequestsByStep({ ...base, inputFiles: 100 }).commit;
    const twelve = estimateRequestsByStep({ ...base, inputFiles: 12, inputBytes: 12 * 8_000 }).commit;
    const versioned = estimateRequestsByStep({
      ...base,
      inputFiles: 100,
      retireMode: 'delete-versioned',
    }).commit;
    const trash = estimateRequestsByStep({ ...base, inputFiles: 100, retireMode: 'trash' }).commit;

    // Assess: 100 inputs are one LIST page instead of 100 HEADs; 12 inputs' HEADs cost less than a page; delete
    // mode on a versioned bucket lists too (the version ids came with the rewrite's GETs), plus its
    // GetBucketVersioning; trash mode HEADs every input (it copies each anyway).
    expect(LIST_PRICE_IN_HEADS).toBe(S3_USD_PER_PUT / S3_USD_PER_GET);
    expect({ get: many.get, put: many.put }).toEqual({ get: 0, put: 1 + 1 });
    expect({ get: twelve.get, put: twelve.put }).toEqual({ get: 12, put: 1 });
    expect({ get: versioned.get, put: versioned.put }).toEqual({ get: 1, put: 1 + 1 });
    expect({ get: trash.get, put: trash.put }).toEqual({ get: 100, put: 1 });
  });

  it('takes the COPYs per input from the retire mode', () => {
    // Prepare
    const base = {
      groups: 2,
      inputFiles: 100,
      inputBytes: 100 * 257_000,
      expectedOutputFiles: 2,
      compactMemoryMb: 1769,
    };

    // Act
    const versioned = estimateCost({ ...base, retireMode: 'delete-versioned' });
    const trash = estimateCost({ ...base, retireMode: 'trash' });

    // Assess
    expect(retireCopiesPerInput('trash')).toBe(1);
    expect(retireCopiesPerInput('delete-versioned')).toBe(0);
    expect(trash.requests.copy - versioned.requests.copy).toBe(100);
    expect(trash.breakdownUsd.s3).toBeGreaterThan(versioned.breakdownUsd.s3 + 99 * S3_USD_PER_PUT);
  });
});

describe('estimateRequests, stitched groups (inputs copied row group by row group)', () => {
  /** Inputs of one large ZSTD row group each (DuckDB's: no encoding statistics), which the engine copies. */
  async function largeRowGroupFiles(count: number): Promise<Uint8Array[]> {
    const duck = await duckWorkspace();
    try {
      const files: Uint8Array[] = [];
      for (let i = 0; i < count; i++) {
        files.push(
          await duck.parquet(
            `SELECT i::BIGINT AS id, md5(i::VARCHAR || '-${i}') AS a FROM range(${DEFAULT_STITCH_THRESHOLDS.minRowGroupRows + 20_000}) t(i)`,
            { compression: 'zstd', rowGroupSize: 1_000_000 },
          ),
        );
      }
      return files;
    } finally {
      await duck.close();
    }
  }

  for (const mode of ['delete-versioned', 'delete-rebuild'] as const) {
    it(`counts what a stitched group sends, the proof's reads included, per step: ${mode}`, async () => {
      // Prepare
      const files = await largeRowGroupFiles(6);

      // Act
      const { result, counted, bySteps, logBySteps } = await countedWorkflowRun(
        async (put) => {
          for (const [i, bytes] of files.entries()) await put(`events/date=${DAY}/part-${i}.parquet`, bytes);
        },
        { table: 'events', partition: `date=${DAY}`, mode },
      );

      // Assess: the group was copied, not re-encoded (verify read every source: a HEAD before and after the proof).
      expect(result.summary.outcome).toBe('compacted');
      expect(result.groups.map((g) => g.result.state)).toEqual(['done']);
      const verifyHeads = (logBySteps.verifyGroup ?? []).filter(
        (r) => r.op === 'head' && r.key.startsWith(`events/date=${DAY}/`),
      );
      expect(verifyHeads).toHaveLength(2 * files.length);
      const plan = result.plan;
      if (plan === undefined) throw new Error('the run was not planned');
      expect(plan.estimatedCost.requests).toEqual(counted);
      // Each input: 1 row group of 2 column chunks, each compared in one read per side; a page header read each.
      const model = estimateRequestsByStep({
        groups: plan.groupCount,
        inputFiles: plan.plannedFiles,
        inputBytes: plan.plannedBytes,
        expectedOutputFiles: plan.expectedOutputFiles,
        retireMode: plan.retireMode,
        compactMemoryMb: 1769,
        listedFiles: plan.inputFiles,
        inputRows: files.length * 120_000,
        stitched: {
          files: files.length,
          bytes: plan.plannedBytes,
          rows: files.length * 120_000,
          rowGroups: files.length,
          outputs: 1,
          proofReadsPerSide: 2 * files.length,
          pageHeaderReads: files.length,
        },
      });
      expect(bySteps.compactGroup).toEqual({
        ...model.rewrite,
        put: model.rewrite.put + model.bookkeeping.put,
      });
      expect(bySteps.verifyGroup).toEqual({ ...model.verify, get: model.verify.get + model.bookkeeping.get });
      expect(bySteps.commitStep).toEqual(model.commit);
    }, 120_000);
  }

  it('counts a run with a stitched group and a re-encoded group, each priced on its own path', async () => {
    // Prepare: six large-row-group inputs beside twelve tiny files of another schema (two groups).
    const files = await largeRowGroupFiles(6);

    // Act
    const { result, counted } = await countedWorkflowRun(
      async (put) => {
        for (const [i, bytes] of files.entries()) await put(`events/date=${DAY}/large-${i}.parquet`, bytes);
        await writeSampleLake(put, {
          table: 'events',
          days: 1,
          batches: 12,
          startDate: DAY,
          minRows: 30,
          maxRows: 30,
          seed: 3,
        });
      },
      { table: 'events', partition: `date=${DAY}`, mode: 'delete-versioned' },
    );

    // Assess
    expect(result.summary.outcome).toBe('compacted');
    expect(result.groups.map((g) => g.result.state)).toEqual(['done', 'done']);
    expect(result.plan?.estimatedCost.requests).toEqual(counted);
  }, 120_000);

  it('prices a stitched group below the re-encoding the estimate assumed before, once the proof is counted apart', () => {
    // Prepare: six 24 MB inputs of one row group each, copied into two outputs, composed in the store (S3).
    const base = {
      groups: 1,
      inputFiles: 6,
      inputBytes: 6 * 24_000_000,
      inputRows: 6 * 690_000,
      expectedOutputFiles: 2,
      retireMode: 'delete-versioned' as const,
      compactMemoryMb: 1769,
    };
    const stitched = {
      files: 6,
      bytes: base.inputBytes,
      rows: base.inputRows,
      rowGroups: 6,
      outputs: 2,
      proofReadsPerSide: 6 * 6 * 2,
      pageHeaderReads: 0,
    };

    // Act
    const reencoded = estimateRequestsByStep(base);
    const composed = estimateRequestsByStep({ ...base, stitched, composes: true });
    const downloaded = estimateRequestsByStep({ ...base, stitched, composes: false });

    // Assess: composed, no input is downloaded and no writer sample is read — the footer again, one read of the
    // page indexes and footer, and a range read into the parts S3 cannot copy; downloaded, each input once.
    expect(reencoded.rewrite.get).toBe(6 + 6 + 1);
    expect(downloaded.rewrite.get).toBe(6 + 6 + 6);
    expect(composed.rewrite.get).toBeLessThan(6 + 6 + 6 + 6);
    expect(composed.rewrite.get).toBeGreaterThanOrEqual(6 + 6 + 6);
    // Verify: per output its footer and row groups; per source two HEADs and its footer; the proof's reads, both sides.
    expect(composed.verify.get).toBe(2 * (1 + 3) + 6 * 3 + 2 * 72);
    expect(composed.verify.get).toBeGreaterThan(reencoded.verify.get);
  });
});
