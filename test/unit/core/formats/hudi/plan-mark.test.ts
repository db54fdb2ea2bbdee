// The durable mark lake-compactor writes into the plans it schedules (plan-mark.ts) and what it lets a later run do:
// the mark travels in the plan's own `extraMetadata` map, so Hudi's Avro schemas (the ones the fixtures' plans were
// written with) decode it as any other entry; Hudi's own plans in the fixtures carry none. A clustering plan of ours
// whose run is dead — heartbeat stale, no open group of its run in the journal — is rolled back as its run would
// have rolled it back; a live one, one the journal still holds, and a Hudi writer's plan are left byte for byte.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  ABANDONED_AFTER_MS,
  rollBackAbandonedClusterings,
} from '../../../../../functions/core/formats/hudi/abandoned-plans.js';
import type { HudiCoordination } from '../../../../../functions/core/formats/hudi/clustering-commit.js';
import { heartbeatKey, markerKeyOf } from '../../../../../functions/core/formats/hudi/pending-instant.js';
import {
  markedClusteringPlan,
  PLAN_MARK_KEYS,
  planMarkMetadata,
  planMarkOf,
} from '../../../../../functions/core/formats/hudi/plan-mark.js';
import { readHudiTable } from '../../../../../functions/core/formats/hudi/table-state.js';
import {
  baseFileName,
  buildClusteringPlan,
  buildCompactionPlan,
  COMPACTION_PLAN_SCHEMA,
  clusteringRequestedContent,
  compactionRequestedContent,
  decodeTimelineAvro,
  EMPTY_INFLIGHT_CONTENT,
  requestedReplaceSchemaFor,
} from '../../../../../functions/core/formats/hudi/timeline-writer/index.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { countingStore } from '../../../../support/counting-store.js';
import { appendHudiInsert, createHudiTable } from '../../../../support/hudi-appender.js';
import { hoodieFile } from './timeline-writer/support.js';

const T0 = Date.UTC(2026, 11, 7, 10);

function clusteringPlanOf(tableVersion: number, files: readonly { key: string; fileId: string }[]) {
  return buildClusteringPlan({
    tableVersion,
    basePath: 'file:/tmp/t',
    groups: [
      {
        slices: files.map((f) => ({
          partitionPath: '10',
          fileId: f.fileId,
          baseFileName: f.key.slice(f.key.lastIndexOf('/') + 1),
          baseFileSizeBytes: 100,
        })),
      },
    ],
  });
}

function firstRecord(bytes: Uint8Array, schema: object): { extraMetadata?: unknown } {
  return decodeTimelineAvro(bytes, schema).records[0] as { extraMetadata?: unknown };
}

describe('the mark in a plan we write', () => {
  for (const tableVersion of [6, 8] as const)
    it(`v${tableVersion} clustering: decodes under Hudi's HoodieRequestedReplaceMetadata schema as extraMetadata entries naming the tool, run and group`, () => {
      // Prepare
      const plan = clusteringPlanOf(tableVersion, [
        { key: '10/a_1-0-1_20260101000000000.parquet', fileId: 'a' },
      ]);

      // Act
      const bytes = clusteringRequestedContent(
        tableVersion,
        markedClusteringPlan(plan, { run: 'run-1', group: 'g0001' }),
      );
      const decoded = firstRecord(bytes, requestedReplaceSchemaFor(tableVersion));

      // Assess
      expect(decoded.extraMetadata).toEqual({
        [PLAN_MARK_KEYS.writer]: 'lake-compactor',
        [PLAN_MARK_KEYS.run]: 'run-1',
        [PLAN_MARK_KEYS.group]: 'g0001',
      });
      expect(planMarkOf(decoded.extraMetadata)).toEqual({ run: 'run-1', group: 'g0001' });
    });

  it("compaction: decodes under Hudi's HoodieCompactionPlan schema with the run, beside Hudi's own keys", () => {
    // Prepare
    const plan = buildCompactionPlan({
      extraMetadata: { '_hoodie.spark.sql.writes.prepped': 'true', ...planMarkMetadata({ run: 'cli-1' }) },
      operations: [
        {
          partitionPath: '',
          fileId: 'f',
          baseInstantTime: '20260101000000000',
          baseFileName: 'f_0-1-0_20260101000000000.parquet',
          logFileNames: ['.f_20260101000000000.log.1_0-1-0'],
          logFileSizesBytes: [10],
        },
      ],
    });

    // Act
    const decoded = firstRecord(compactionRequestedContent(plan), COMPACTION_PLAN_SCHEMA);

    // Assess
    expect(planMarkOf(decoded.extraMetadata)).toEqual({ run: 'cli-1' });
    expect((decoded.extraMetadata as Record<string, string>)['_hoodie.spark.sql.writes.prepped']).toBe(
      'true',
    );
  });

  it('is absent from every plan Hudi itself wrote in the fixtures, and from a map naming another writer or no run', () => {
    // Prepare
    const hudiPlans = [
      {
        table: 'mor_v8_trips_8i3u1d',
        file: 'timeline/20251220210129235.compaction.requested',
        schema: COMPACTION_PLAN_SCHEMA,
      },
      {
        table: 'mor_v9_txns_simple_nometa',
        file: 'timeline/20260307135839895.compaction.requested',
        schema: COMPACTION_PLAN_SCHEMA,
      },
      {
        table: 'mor_v9_txns_simple_nometa',
        file: 'timeline/20260307135840454.clustering.requested',
        schema: requestedReplaceSchemaFor(9),
      },
      {
        table: 'cow_v9_txns_simple_meta',
        file: 'timeline/20260307162454799.clustering.requested',
        schema: requestedReplaceSchemaFor(9),
      },
    ];

    // Act
    const marks = hudiPlans.map((p) =>
      planMarkOf(firstRecord(hoodieFile(p.table, p.file), p.schema).extraMetadata),
    );
    const others = [
      planMarkOf({ [PLAN_MARK_KEYS.writer]: 'someone-else', [PLAN_MARK_KEYS.run]: 'r' }),
      planMarkOf({ [PLAN_MARK_KEYS.writer]: 'lake-compactor' }),
      planMarkOf(null),
      planMarkOf(
        new Map([
          [PLAN_MARK_KEYS.writer, 'lake-compactor'],
          [PLAN_MARK_KEYS.run, 'r'],
        ]),
      ),
    ];

    // Assess
    expect(marks).toEqual([undefined, undefined, undefined, undefined]);
    expect(others).toEqual([undefined, undefined, undefined, { run: 'r' }]);
  });
});

/** A Copy-on-Write v8 table of three small base files and a pending clustering plan of them (ours or Hudi's). */
async function tableWithPendingPlan(marked: boolean) {
  let wall = T0;
  const store = new MemoryObjectStore({ now: () => new Date(wall) });
  const table = await createHudiTable(store, '', 8);
  const inputs = [];
  for (let b = 0; b < 3; b += 1) inputs.push(await appendHudiInsert(table, '10', 3 + b));
  const instant = '20261207100000000';
  const plan = clusteringPlanOf(8, inputs);
  const requested = `.hoodie/timeline/${instant}.clustering.requested`;
  const inflight = `.hoodie/timeline/${instant}.clustering.inflight`;
  const output = `10/${baseFileName('00000000-0000-0000-0000-000000000001-0', '0-0-0', instant)}`;
  await store.put(
    requested,
    clusteringRequestedContent(
      8,
      marked ? markedClusteringPlan(plan, { run: 'run-1', group: 'g0001' }) : plan,
    ),
  );
  await store.put(inflight, EMPTY_INFLIGHT_CONTENT);
  await store.put(heartbeatKey('', instant), new Uint8Array(0));
  await store.put(markerKeyOf('', instant, output), new Uint8Array(0));
  await store.put(output, new Uint8Array([1, 2, 3]));
  return {
    store,
    instant,
    inputs,
    keys: { requested, inflight, heartbeat: heartbeatKey('', instant), output },
    advance: (ms: number) => {
      wall += ms;
      return wall;
    },
  };
}

const noLock: HudiCoordination = { lockFor: () => undefined, quietWindowMinutes: 0 };

async function everyObject(store: MemoryObjectStore): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for await (const o of store.listAll('')) out[o.key] = Buffer.from(await store.get(o.key)).toString('hex');
  return out;
}

describe('a pending clustering plan left on the table', () => {
  it("the timeline reader names our mark on our plan and none on Hudi's", async () => {
    // Prepare
    const ours = await tableWithPendingPlan(true);
    const hudis = await tableWithPendingPlan(false);

    // Act
    const [a, b] = await Promise.all([readHudiTable(ours.store, ''), readHudiTable(hudis.store, '')]);

    // Assess
    expect(a.timeline.pendingPlans.map((p) => p.mark)).toEqual([{ run: 'run-1', group: 'g0001' }]);
    expect(b.timeline.pendingPlans.map((p) => p.mark)).toEqual([undefined]);
  });

  it('ours, its run dead (heartbeat stale, no open group in the journal): rolled back whole — output, marker, inflight, requested, heartbeat — its inputs untouched; the store clock read once for both judgements', async () => {
    // Prepare
    const t = await tableWithPendingPlan(true);
    const inputsBefore = await Promise.all(t.inputs.map((i) => t.store.get(i.key)));
    const now = t.advance(ABANDONED_AFTER_MS + 1);
    const counting = countingStore(t.store);

    // Act
    const rolled = await rollBackAbandonedClusterings(
      {
        store: counting.store,
        clock: new ManualClock(now),
        coordination: noLock,
        holdsInstant: async () => false,
      },
      '',
      '10',
    );

    // Assess: judged before and again under the lock, by one probe of the store's clock
    const probes = counting
      .requests()
      .filter((r) => r.op === 'put' && r.key.includes('lake-compactor-clock/'));
    expect(probes).toHaveLength(1);
    expect(rolled).toEqual([t.instant]);
    for (const key of Object.values(t.keys)) expect(await t.store.head(key), key).toBeUndefined();
    expect(await t.store.head(markerKeyOf('', t.instant, t.keys.output))).toBeUndefined();
    expect(await Promise.all(t.inputs.map((i) => t.store.get(i.key)))).toEqual(inputsBefore);
    expect((await readHudiTable(t.store, '')).timeline.pendingPlans).toEqual([]);
  });

  const LEFT = [
    {
      name: 'ours, heartbeat still fresh (its run may be working on it)',
      marked: true,
      age: ABANDONED_AFTER_MS - 1_000,
      held: false,
    },
    {
      name: 'ours, its run still holding an open group of it in the journal (the sweep settles it)',
      marked: true,
      age: ABANDONED_AFTER_MS + 1,
      held: true,
    },
    {
      name: "a Hudi writer's (no mark), however stale",
      marked: false,
      age: 100 * ABANDONED_AFTER_MS,
      held: false,
    },
  ];
  for (const c of LEFT)
    it(`${c.name}: left byte for byte`, async () => {
      // Prepare
      const t = await tableWithPendingPlan(c.marked);
      const before = await everyObject(t.store);
      const now = t.advance(c.age);

      // Act
      const rolled = await rollBackAbandonedClusterings(
        {
          store: t.store,
          clock: new ManualClock(now),
          coordination: noLock,
          holdsInstant: async () => c.held,
        },
        '',
      );

      // Assess
      expect(rolled).toEqual([]);
      expect(await everyObject(t.store)).toEqual(before);
    });

  it('ours in another partition than the run works on: left to a run of that partition', async () => {
    // Prepare
    const t = await tableWithPendingPlan(true);
    const before = await everyObject(t.store);
    const now = t.advance(ABANDONED_AFTER_MS + 1);

    // Act
    const rolled = await rollBackAbandonedClusterings(
      { store: t.store, clock: new ManualClock(now), coordination: noLock },
      '',
      '20',
    );

    // Assess
    expect(rolled).toEqual([]);
    expect(await everyObject(t.store)).toEqual(before);
  });
});
