// A partition rewrite started through the console, its commit Lambda dying after each of its S3 requests in turn
// (the real handler over the local S3; Step Functions then catches the crash and rolls the group back or forward):
// the partition is always all old — the inputs, byte for byte — or all new — the outputs, whose rows are DuckDB's
// cast of the inputs — never a mix, and no staging is left.
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCommitHandler } from '../../functions/handlers/commit.js';
import { createWorkflowRuntime } from '../../functions/shared/workflow-runtime.js';
import { observedStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import {
  keysUnder,
  listPartition,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
} from '../support/workflow-harness.js';

const CAST = { steps: [{ op: 'cast', column: 'user_id', to: 'int64' }] };

/** The crash of the current execution: the commit Lambda dies once its `after`-th S3 request completed. */
interface Fault {
  readonly after: number;
  seen: number;
  fired: boolean;
}

describe('partition rewrite through the workflow, its commit crashed after every S3 request', () => {
  let h: WorkflowHarness;
  let db: DuckDb;
  let fault: Fault | undefined;
  let commit: ((input: unknown) => Promise<unknown>) | undefined;

  beforeAll(async () => {
    h = await startWorkflowHarness(
      {},
      {
        taskOverrides: {
          'Commit group': async (input) => {
            if (commit === undefined) {
              const env = h.cloud.functionEnv(h.stack.workflow.functions.commit as never);
              const runtime = createWorkflowRuntime({
                env,
                s3: h.cloud.s3,
                dynamodb: h.cloud.dynamodb,
                wrapStore: (store) =>
                  observedStore(store, {
                    after: () => {
                      if (fault === undefined || fault.fired) return;
                      fault.seen += 1;
                      if (fault.seen === fault.after) {
                        fault.fired = true;
                        throw new Error(`injected: the commit Lambda died after S3 request ${fault.after}`);
                      }
                    },
                  }),
              });
              commit = createCommitHandler(runtime);
            }
            return commit(input);
          },
        },
      },
    );
    db = await openDuckDb();
  });

  afterAll(async () => {
    db?.close();
    await h?.stop();
  });

  /** Three files of (user_id VARCHAR of digits, name) in `events/date=<day>/`; their local copies. */
  async function writeDay(day: string): Promise<string[]> {
    const local: string[] = [];
    for (let i = 0; i < 3; i++) {
      const file = path.join(h.scratch, `${day}-in-${i}.parquet`);
      await db.writeParquet(
        `SELECT (range * 7 + ${i * 100})::VARCHAR AS user_id, 'User-' || range || '-' || ${i} AS name FROM range(5)`,
        file,
      );
      await h.store.put(`events/date=${day}/part-${i}.parquet`, readFileSync(file));
      local.push(file);
    }
    return local;
  }

  /** Every row of `files` (local paths) as DuckDB reads `columns`, one JSON text each, sorted. */
  async function rowsOf(files: readonly string[], columns: string): Promise<string[]> {
    const rows = await db.rows(
      `SELECT ${columns} FROM read_parquet([${files.map(sqlString).join(', ')}], hive_partitioning = false)`,
    );
    return rows.map((r) => JSON.stringify(r)).sort();
  }

  /** The partition's files now, downloaded; and their keys and ETags. */
  async function partitionNow(day: string): Promise<{ files: string[]; state: string[] }> {
    const listed = await listPartition(h.store, day);
    const files: string[] = [];
    for (const [i, o] of listed.entries()) {
      const file = path.join(h.scratch, `${day}-now-${i}-${files.length}-${Date.now()}.parquet`);
      await writeFile(file, await h.store.get(o.key));
      files.push(file);
    }
    return { files, state: listed.map((o) => `${o.key} ${o.etag}`) };
  }

  it('leaves the old partition or the new one, never a mix, whichever request the commit dies after', async () => {
    // Prepare
    const outcomes: string[] = [];
    let after = 0;

    // Act: one execution per request the commit makes, until a run makes fewer requests than the crash waits for
    for (;;) {
      after += 1;
      const day = `2025-05-${String(after).padStart(2, '0')}`;
      const inputs = await writeDay(day);
      const old = await partitionNow(day);
      const expected = await rowsOf(inputs, 'user_id::BIGINT AS user_id, name');
      fault = { after, seen: 0, fired: false };
      const name = `rewrite-crash-${after}`;
      // A target of half the partition's bytes: the three inputs are packed into two outputs.
      const bytes = (await listPartition(h.store, day)).reduce((n, o) => n + o.size, 0);
      const targetFileSizeMB = Math.ceil(bytes / 2) / (1024 * 1024);
      const execution = await run(
        h,
        { table: 'events', partition: `date=${day}`, transform: CAST, quietMinutes: 0, targetFileSizeMB },
        name,
      );
      const fired = fault.fired;
      fault = undefined;

      // Assess
      const label = `crash after commit request ${after}`;
      const now = await partitionNow(day);
      expect(await keysUnder(h.store, `_lake-compactor/staging/${name}/`), `${label}: staging left`).toEqual(
        [],
      );
      if (now.state.join() === old.state.join()) outcomes.push('old');
      else {
        // All new: the two outputs, none of the inputs, the rows the cast of the inputs.
        expect(
          now.state.filter((s) => old.state.includes(s)),
          `${label}: a mix`,
        ).toEqual([]);
        expect(now.files, label).toHaveLength(2);
        expect(await rowsOf(now.files, 'user_id, name'), label).toEqual(expected);
        outcomes.push('new');
      }
      if (!fired) {
        expect(execution.status, label).toBe('SUCCEEDED');
        break;
      }
      expect(after, 'the commit makes a bounded number of requests').toBeLessThan(60);
    }

    // Assess: crashes early left the old partition, late ones the new, and the last run (no crash) rewrote it
    expect(outcomes.at(-1)).toBe('new');
    expect(outcomes).toContain('old');
    expect(outcomes.length).toBeGreaterThan(3);
  }, 600_000); // dozens of executions: generous on a shared 2-core machine; nothing is timed
});
