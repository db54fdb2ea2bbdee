// The synthesized state machine compacting a Hudi Merge-on-Read table on the local cloud (a table Hudi 1.x wrote,
// vendored as test/fixtures/hudi/mor_v8_trips_8i3u1d, copied into the local S3 without its metadata table): the plan
// Lambda schedules the compaction under Hudi's storage lock once the declared trigger is met, the Map's compact,
// verify and commit steps merge and publish each file slice, and finalize completes one compaction `commit` for all
// of them. The rows Hudi's snapshot view reads (latest slices: base files by DuckDB, log records merged by the
// project's log reader) are identical before and after; the new base files carry the names the stored plan fixed.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { mergeFileSlice } from '../../functions/core/formats/hudi/compaction-merge.js';
import { compactionPolicy } from '../../functions/core/formats/hudi/compaction-run.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../functions/core/formats/hudi/timeline.js';
import { partitionPlanSchema } from '../../functions/core/planning.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';
import { keysUnder, run, startWorkflowHarness, type WorkflowHarness } from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET, WORKFLOW_TABLES } from '../support/workflow-stack.js';

const ROOT = 'trips';
const PARTITION = 'city=sao_paulo';
const FIXTURE = 'mor_v8_trips_8i3u1d';
const COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

const TABLES = [
  ...WORKFLOW_TABLES,
  {
    name: 'trips',
    bucket: WORKFLOW_BUCKET,
    prefix: `${ROOT}/`,
    format: 'hudi',
    partitionColumns: ['city'],
    hudiLock: { provider: 'storage' },
    hudiIndexType: 'BLOOM',
    hudiTimezone: 'UTC',
    hudiCompactionDeltaCommits: 1,
  },
];

/** Every file of a folder, relative paths. */
async function filesOf(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile())
    .map((d) => relative(dir, join(d.parentPath, d.name)));
}

describe('compaction workflow on a Hudi Merge-on-Read table, on the local cloud', () => {
  let h: WorkflowHarness;
  let db: DuckDb;

  beforeAll(async () => {
    h = await startWorkflowHarness({
      tablesJson: JSON.stringify(TABLES),
      tables: TABLES.map((t) => ({ bucketName: t.bucket, prefix: t.prefix })),
    });
    db = await openDuckDb();
  });

  afterAll(async () => {
    db?.close();
    await h?.stop();
  });

  /** The fixture in the local S3 under `trips/`, as if written with hoodie.metadata.enable=false. */
  async function uploadFixture(): Promise<void> {
    const dir = join(HUDI_FIXTURES, FIXTURE);
    for (const file of await filesOf(dir)) {
      if (file.startsWith('.hoodie/metadata/') || file.startsWith('.hoodie/.index_defs/')) continue;
      let bytes: Uint8Array = await readFile(join(dir, file));
      if (file === '.hoodie/hoodie.properties')
        bytes = new TextEncoder().encode(
          new TextDecoder()
            .decode(bytes)
            .split('\n')
            .filter(
              (l) =>
                !l.startsWith('hoodie.table.metadata.partitions') &&
                !l.startsWith('hoodie.table.index.defs.path'),
            )
            .join('\n'),
        );
      await h.store.put(`${ROOT}/${file}`, bytes);
    }
  }

  /** The table as it is in S3, downloaded to a local folder (for DuckDB and the log reader). */
  async function download(): Promise<string> {
    const dir = await mkdtemp(join(h.scratch, 'hudi-'));
    for (const key of await keysUnder(h.store, `${ROOT}/`)) {
      const file = join(dir, key);
      await mkdir(join(file, '..'), { recursive: true });
      await writeFile(file, await h.store.get(key));
    }
    return dir;
  }

  /** Hudi's snapshot view of the table: per latest slice, base rows less the merge's drops plus its log rows. */
  async function hudiView(): Promise<string[]> {
    const dir = await download();
    try {
      const store = new LocalObjectStore(dir);
      const state = await readHudiTable(store, ROOT);
      const rows: Record<string, unknown>[] = [];
      for (const slice of state.partitions.flatMap((p) => p.liveSlices)) {
        const key = slice.baseFile?.key ?? '';
        const base = await db.rows(
          `SELECT ${COLUMNS.join(', ')} FROM read_parquet(${sqlString(join(dir, key))}, file_row_number = true) ORDER BY file_row_number`,
        );
        if (slice.logFiles.length === 0) {
          rows.push(...base);
          continue;
        }
        const merged = await mergeFileSlice(
          store,
          { baseKey: key, logKeys: slice.logFiles.map((l) => l.key) },
          compactionPolicy(state),
          (i) => isCommitted(state.timeline, i),
          '99999999999999999',
        );
        const dropped = new Set(merged.merge.dropPositions);
        rows.push(...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append);
      }
      const plain = (v: unknown) =>
        typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v)) ? String(v) : v;
      return rows.map((r) => JSON.stringify(COLUMNS.map((c) => plain(r[c])))).sort();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  it('schedules, merges and completes one compaction of the partition, the Hudi view unchanged', async () => {
    // Prepare
    await uploadFixture();
    const before = await hudiView();
    const timelineBefore = await keysUnder(h.store, `${ROOT}/.hoodie/timeline/`);

    // Act
    const execution = await run(h, { table: 'trips', partition: PARTITION, quietMinutes: 0 }, 'hudi-mor-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number; planKey: string };
    expect(output.groups, JSON.stringify(execution.output)).toBeGreaterThan(0);
    expect(output.groupsDone).toBe(output.groups);
    const plan = partitionPlanSchema.parse(
      JSON.parse(new TextDecoder().decode(await h.store.get(output.planKey))),
    );
    const instant = String(plan.formatState?.hudiInstant);
    expect(plan.formatState?.hudiService).toBe('compaction');
    // One completed compaction commit on the timeline, besides its plan and inflight.
    const added = (await keysUnder(h.store, `${ROOT}/.hoodie/timeline/`))
      .filter((k) => !timelineBefore.includes(k))
      .map((k) => k.slice(k.lastIndexOf('/') + 1))
      .filter((n) => /^\d/.test(n))
      .sort();
    expect(added.filter((n) => n.endsWith('.commit'))).toHaveLength(1);
    expect(added.every((n) => n.startsWith(instant))).toBe(true);
    // The new base files are the names the plan fixed, now the latest slices.
    const dir = await download();
    const state = await readHudiTable(new LocalObjectStore(dir), ROOT);
    await rm(dir, { recursive: true, force: true });
    expect(state.timeline.pendingPlans).toEqual([]);
    const compacted = state.timeline.completedWrites.filter((w) => w.instant.time === instant);
    expect(compacted.map((w) => `${w.instant.action} ${w.metadata.compacted}`)).toEqual(['commit true']);
    const latest = state.partitions
      .flatMap((p) => p.liveSlices)
      .filter((s) => s.baseInstantTime === instant)
      .map((s) => s.baseFile?.key.slice(s.baseFile.key.lastIndexOf('/') + 1))
      .sort();
    expect(latest).toEqual(plan.groups.map((g) => String(g.formatState?.hudiOutput)).sort());
    expect(await hudiView()).toEqual(before);
    // Nothing of the run is left under the table's temp folder or in staging.
    expect(await keysUnder(h.store, `${ROOT}/.hoodie/.temp/`)).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
  });
});
