import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ARCHIVE_STORAGE_CLASSES,
  minWellSizedBytes,
  type PartitionPlan,
  type PlanInput,
  type PlanInputFile,
  type PlanOptions,
  planOptionsSchema,
  planPartition,
} from '../../../functions/core/planning.js';

const RUNS = { numRuns: 150 };

/** Options across the valid space, with a small T so sizes stay readable. */
const optionsArb: fc.Arbitrary<PlanOptions> = fc
  .record({
    targetFileSizeBytes: fc.integer({ min: 100, max: 5_000 }),
    minInputFiles: fc.integer({ min: 2, max: 8 }),
    groupFactor: fc.double({ min: 2, max: 6, noNaN: true }),
    smallFileRatio: fc.constantFrom(0.5, 0.75, 0.9, 1),
    largeFileRatio: fc.constantFrom(1.2, 1.8, 3),
  })
  .map(({ groupFactor, ...o }) =>
    planOptionsSchema.parse({ ...o, maxGroupBytes: Math.ceil(groupFactor * o.targetFileSizeBytes) }),
  );

/** Mostly small files (so groups form), some well-sized, large, archived, unreadable or fingerprint-less. */
function filesArb(target: number): fc.Arbitrary<PlanInputFile[]> {
  const file = fc.record({
    key: fc.integer({ min: 0, max: 99_999 }).map((n) => `t/d=1/part-${n}`),
    size: fc.oneof(
      { weight: 8, arbitrary: fc.integer({ min: 1, max: target }) },
      { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 * target }) },
    ),
    etag: fc.constant('e'),
    rows: fc.option(fc.nat({ max: 1000 }), { nil: undefined, freq: 10 }),
    schemaFingerprint: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: undefined, freq: 20 }),
    storageClass: fc.option(fc.constantFrom('STANDARD', 'GLACIER', 'GLACIER_IR', 'STANDARD_IA'), {
      nil: undefined,
      freq: 2,
    }),
    unreadable: fc.oneof(
      { weight: 19, arbitrary: fc.constant(undefined) },
      { weight: 1, arbitrary: fc.constant('bad footer') },
    ),
  });
  return fc
    .uniqueArray(file, { selector: (f) => f.key, maxLength: 60, size: 'medium' })
    .map((files) =>
      files.map((f) => Object.fromEntries(Object.entries(f).filter(([, v]) => v !== undefined))),
    )
    .map((files) => files as unknown as PlanInputFile[]);
}

const scenarioArb = optionsArb.chain((options) =>
  filesArb(options.targetFileSizeBytes).map((files) => ({ options, files })),
);

function toInput(files: readonly PlanInputFile[]): PlanInput {
  return { table: 't', partition: 'd=1', files: [...files], snapshot: { listedAt: 0 } };
}

/** The files the planner may group: small, readable, not archived, with a fingerprint. */
function plannable(file: PlanInputFile, options: PlanOptions): boolean {
  return (
    file.size < minWellSizedBytes(options) &&
    file.unreadable === undefined &&
    file.rows !== 0 &&
    file.schemaFingerprint !== undefined &&
    !ARCHIVE_STORAGE_CLASSES.includes((file.storageClass ?? 'STANDARD').toUpperCase())
  );
}

/** The layout after the plan ran: skipped inputs stay, each group becomes expectedOutputFiles near-equal files. */
function layoutAfter(plan: PartitionPlan, inputs: readonly PlanInputFile[]): PlanInputFile[] {
  const planned = new Set(plan.groups.flatMap((g) => g.files.map((f) => f.key)));
  const kept = inputs.filter((f) => !planned.has(f.key));
  const outputs = plan.groups.flatMap((group) => {
    const n = group.expectedOutputFiles;
    const base = Math.floor(group.bytes / n);
    const extra = group.bytes - base * n;
    return Array.from({ length: n }, (_, i) => ({
      key: `t/d=1/out-${group.groupId}-${i}`,
      size: base + (i < extra ? 1 : 0),
      etag: 'o',
      schemaFingerprint: group.schemaFingerprint,
    }));
  });
  return [...kept, ...outputs];
}

describe('planPartition properties', () => {
  it('puts every input file in exactly one group or one skip entry', () => {
    fc.assert(
      fc.property(scenarioArb, ({ options, files }) => {
        // Prepare
        const inputKeys = files.map((f) => f.key).sort();
        // Act
        const plan = planPartition(toInput(files), options);
        // Assess
        const outKeys = [
          ...plan.groups.flatMap((g) => g.files.map((f) => f.key)),
          ...plan.skipped.map((s) => s.key),
        ];
        expect(outKeys.sort()).toEqual(inputKeys);
        expect(plan.summary.inputFiles).toBe(files.length);
      }),
      RUNS,
    );
  });

  it('keeps every group within maxGroupBytes, of one fingerprint, and of plannable files only', () => {
    fc.assert(
      fc.property(scenarioArb, ({ options, files }) => {
        // Prepare
        const layout = toInput(files);
        // Act
        const plan = planPartition(layout, options);
        // Assess
        for (const group of plan.groups) {
          expect(group.bytes).toBeLessThanOrEqual(options.maxGroupBytes);
          expect(group.bytes).toBe(group.files.reduce((s, f) => s + f.size, 0));
          expect(group.files.every((f) => f.schemaFingerprint === group.schemaFingerprint)).toBe(true);
          expect(group.files.every((f) => plannable(f, options))).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it('plans a group of fewer than minInputFiles only when it holds every small file of its fingerprint the other groups leave', () => {
    fc.assert(
      fc.property(scenarioArb, ({ options, files }) => {
        // Prepare
        const layout = toInput(files);
        // Act
        const plan = planPartition(layout, options);
        // Assess
        for (const group of plan.groups.filter((g) => g.files.length < options.minInputFiles)) {
          const inOtherGroups = new Set(
            plan.groups.filter((g) => g !== group).flatMap((g) => g.files.map((f) => f.key)),
          );
          const sameSchemaSmall = files.filter(
            (f) => plannable(f, options) && f.schemaFingerprint === group.schemaFingerprint,
          );
          const rest = sameSchemaSmall.filter((f) => !inOtherGroups.has(f.key)).map((f) => f.key);
          expect(group.files.map((f) => f.key).sort()).toEqual(rest.sort());
          expect(group.files.length).toBeGreaterThanOrEqual(2);
        }
      }),
      RUNS,
    );
  });

  it('produces an identical plan for any order of the same files', () => {
    fc.assert(
      fc.property(
        scenarioArb.chain(({ options, files }) =>
          fc
            .shuffledSubarray(files, { minLength: files.length, maxLength: files.length })
            .map((shuffled) => ({ options, files, shuffled })),
        ),
        ({ options, files, shuffled }) => {
          // Prepare
          const original = toInput(files);
          // Act
          const a = planPartition(original, options);
          const b = planPartition(toInput(shuffled), options);
          // Assess
          expect(JSON.stringify(b)).toBe(JSON.stringify(a));
        },
      ),
      RUNS,
    );
  });

  it('converges: planning the layout its own output produces plans nothing', () => {
    fc.assert(
      fc.property(scenarioArb, ({ options, files }) => {
        // Prepare
        const first = planPartition(toInput(files), options);
        const after = layoutAfter(first, files);
        // Act
        const second = planPartition(toInput(after), options);
        // Assess
        expect(second.groups).toEqual([]);
      }),
      RUNS,
    );
  });
});
