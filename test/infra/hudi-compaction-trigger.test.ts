// `hudiCompactionDeltaCommits`, declared on a construct's Hudi table, reaches the plan function: the table config the
// construct writes for its functions carries it, and the format the functions bind from that config (as the plan
// step's runtime does) schedules a Merge-on-Read compaction only once that many delta commits wrote to the partition.
import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryJournal } from '../../functions/adapters/memory-journal.js';
import { formatForTable } from '../../functions/core/formats/index.js';
import { DEFAULT_PLAN_OPTIONS, type PartitionPlan } from '../../functions/core/planning.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorTable } from '../../infra/lake-compactor-props.js';
import { copyHudiFixture } from '../support/hudi-mor-view.js';

const NOW = Date.UTC(2026, 11, 1);
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

function table(deltaCommits: number): LakeCompactorTable {
  return {
    name: 'trips',
    bucketName: 'lake',
    prefix: 'trips/',
    format: 'hudi',
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: deltaCommits,
  };
}

/** The plan step's call of the format's table service, over the v6 fixture's partition with two delta commits. */
async function planWith(deltaCommits: number) {
  const dir = await copyHudiFixture('mor_v6_trips_8i1u', 'trips', dirs);
  const tables = parseTableConfigs(tablesJsonOf([table(deltaCommits)], 'owned'));
  const format = formatForTable(tables, 'trips', {});
  const recorded: PartitionPlan[] = [];
  const plan = await format.planService?.(
    { store: new LocalObjectStore(dir), journal: new MemoryJournal(), clock: new ManualClock(NOW) },
    {
      location: {
        tableRoot: 'trips',
        partition: 'city=san_francisco',
        partitionDir: 'trips/city=san_francisco/',
      },
      table: 'trips',
      runId: 'run-1',
      now: NOW,
      binpack: DEFAULT_PLAN_OPTIONS,
      record: async (p) => {
        recorded.push(p);
      },
    },
  );
  return { tables, plan, recorded, timeline: (await readdir(join(dir, 'trips', '.hoodie'))).sort() };
}

describe('hudiCompactionDeltaCommits from the construct to the plan function', () => {
  it('is in the table config the functions parse', async () => {
    // Act
    const { tables } = await planWith(3);

    // Assess
    expect(
      tables.map((t) => [t.name, (t as { hudiCompactionDeltaCommits?: number }).hudiCompactionDeltaCommits]),
    ).toEqual([['trips', 3]]);
  });

  it('schedules nothing below the declared count, and a compaction once it is reached', async () => {
    // Act
    const below = await planWith(3);
    const reached = await planWith(2);

    // Assess
    expect(below.plan).toBeUndefined();
    expect(below.recorded).toEqual([]);
    expect(below.timeline.filter((n) => n.includes('compaction'))).toEqual([]);
    expect(reached.plan?.formatState?.hudiService).toBe('compaction');
    expect(reached.recorded).toEqual([reached.plan]);
    const instant = String(reached.plan?.formatState?.hudiInstant);
    expect(reached.timeline.filter((n) => n.includes('compaction'))).toEqual([
      `${instant}.compaction.inflight`,
      `${instant}.compaction.requested`,
    ]);
  });
});
