// The compaction workflow end to end on the local cloud, running the synthesized state machine with the
// real handlers: rows preserved (DuckDB oracle), leases, concurrent writers, corrupt input, Distributed Map.

import { writeFile } from 'node:fs/promises';
import * as path from 'node:path';
import { QueryCommand } from '@aws-sdk/client-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { parquetMetadata } from 'hyparquet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { run as cli } from '../../functions/cli/index.js';
import { LeaseHeldError } from '../../functions/core/errors.js';
import { resolveEvent } from '../../functions/core/profiler/events.js';
import type { ObjectEvent, ResolvedEvent } from '../../functions/core/profiler/model.js';
import { parseTableConfigs, resolveTablePolicy } from '../../functions/core/table-config.js';
import { captureIo } from '../support/cli-io.js';
import { openDuckDb, sqlString } from '../support/duckdb.js';
import {
  historyItems,
  keysUnder,
  listPartition,
  parkIn,
  partitionItem,
  rowMultiset,
  run,
  startWorkflowHarness,
  type WorkflowHarness,
  writePartition,
} from '../support/workflow-harness.js';
import { WORKFLOW_BUCKET, WORKFLOW_TABLES } from '../support/workflow-stack.js';

describe('compaction workflow on the local cloud', () => {
  let h: WorkflowHarness;

  beforeAll(async () => {
    // Inline limit 1: any plan of two or more groups takes the Distributed Map path.
    h = await startWorkflowHarness({ inlineGroupLimit: 1 });
  });

  afterAll(async () => {
    await h?.stop();
  });

  afterEach(() => {
    h.hooks.clear();
  });

  const input = (day: string, extra: Record<string, unknown> = {}) => ({
    table: 'events',
    partition: `date=${day}`,
    strategy: 'binpack',
    quietMinutes: 0,
    ...extra,
  });

  /** Keys of the run's outputs in the partition. */
  const outputsOf = async (day: string, runId: string) =>
    (await listPartition(h.store, day)).filter((o) => o.key.includes(`/part-${runId}-`)).map((o) => o.key);

  it('compacts a partition of 20 small files into 1 file holding exactly the same rows', async () => {
    // Prepare
    const day = '2024-01-01';
    const written = await writePartition(h.store, day, 20);
    const before = await rowMultiset(h.store, written.keys, h.scratch);

    // Act
    const execution = await run(
      h,
      { table: 'events', partition: `date=${day}`, strategy: 'binpack', quietMinutes: 0 },
      'single-1',
    );

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const after = await listPartition(h.store, day);
    expect(after.map((o) => o.key)).toEqual([`events/date=${day}/part-single-1-0001-00000.zstd.parquet`]);
    expect(
      await rowMultiset(
        h.store,
        after.map((o) => o.key),
        h.scratch,
      ),
    ).toEqual(before);
    expect(before).toHaveLength(written.rows);
    expect(await keysUnder(h.store, '_lake-compactor/staging/')).toEqual([]);
    const output = execution.output as Record<string, unknown>;
    expect(output).toMatchObject({
      status: 'SUCCEEDED',
      filesBefore: 20,
      filesAfter: 1,
      filesRetired: 20,
      rows: written.rows,
    });
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
    expect((await partitionItem(h, day))?.lastCompactedAt).toBeTypeOf('number');
    expect(await historyItems(h, day)).toEqual([
      expect.objectContaining({ runId: 'single-1', outcome: 'compacted' }),
    ]);
    expect(h.cloud.events.some((e) => (e.detail as { runId?: string }).runId === 'single-1')).toBe(true);
    expect(h.cloud.notifications.some((n) => n.message.includes('"runId":"single-1"'))).toBe(true);
  });

  it('keeps every file a writer appends while the run is in progress, and counts them after', async () => {
    // Prepare
    const day = '2024-01-02';
    const written = await writePartition(h.store, day, 8, 11);
    let appended: { keys: string[]; rows: number } = { keys: [], rows: 0 };
    h.hooks.set('Commit group', async () => {
      appended = await writePartition(h.store, '2024-01-02', 3, 99);
    });
    const etagsOfAppended = async () =>
      (await listPartition(h.store, day)).filter((o) => appended.keys.includes(o.key)).map((o) => o.etag);

    // Act
    const execution = await run(h, input(day), 'append-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(appended.keys).toHaveLength(3);
    expect(await etagsOfAppended()).toHaveLength(3);
    const after = (await listPartition(h.store, day)).map((o) => o.key);
    expect(after.sort()).toEqual([...appended.keys, ...(await outputsOf(day, 'append-1'))].sort());
    expect(await rowMultiset(h.store, after, h.scratch)).toHaveLength(written.rows + appended.rows);
    expect(execution.output).toMatchObject({
      filesBefore: 8,
      filesRetired: 8,
      filesPublished: 1,
      filesAfter: 4,
    });
  });

  it('leaves a group alone when an input is overwritten during the run: nothing retired, new content kept', async () => {
    // Prepare
    const day = '2024-01-03';
    const written = await writePartition(h.store, day, 6, 12);
    const victim = written.keys[2] as string;
    const replacement = await h.store.get(
      (await writePartition(h.store, '2023-12-01', 1, 5)).keys[0] as string,
    );
    h.hooks.set('Commit group', async () => {
      await h.store.put(victim, replacement);
    });

    // Act
    const execution = await run(h, input(day), 'overwrite-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      groupsDone: 0,
      groupsAborted: 1,
      failedGroups: 0,
      filesRetired: 0,
    });
    expect((await listPartition(h.store, day)).map((o) => o.key)).toEqual([...written.keys].sort());
    expect(Buffer.from(await h.store.get(victim)).equals(Buffer.from(replacement))).toBe(true);
    expect(await keysUnder(h.store, '_lake-compactor/staging/overwrite-1/')).toEqual([]);
    expect(await keysUnder(h.store, '_lake-compactor/trash/overwrite-1/')).toEqual([]);
  });

  it('refuses a second execution for a partition whose lease another run holds, naming the holder', async () => {
    // Prepare
    const day = '2024-01-04';
    await writePartition(h.store, day, 6, 13);
    const { reached: inPlan, release } = parkIn(h, 'Plan partition');
    const first = h.cloud.startExecution(h.stack.workflow.stateMachine, input(day), 'lease-first');
    await inPlan;

    // Act
    const second = await run(h, input(day, { force: true }), 'lease-second');
    release();
    const firstEnded = await first.done;

    // Assess
    expect(second.status).toBe('FAILED');
    expect(second.error).toBe('LeaseHeldError');
    expect(second.cause).toContain('lease-first');
    expect(firstEnded.status, `${firstEnded.error}: ${firstEnded.cause}`).toBe('SUCCEEDED');
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('fails a group with CorruptInputError naming an input with a corrupt page, leaves the file in place and records the run', async () => {
    // Prepare: the first column chunk of one input overwritten with garbage before the run (its footer,
    // which planning reads, stays intact), as a bad disk or a buggy writer leaves it
    const day = '2024-01-05';
    const written = await writePartition(h.store, day, 6, 14);
    const victim = written.keys[1] as string;
    const bytes = await h.store.get(victim);
    const meta = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    );
    const chunk = meta.row_groups[0]?.columns[0]?.meta_data;
    const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
    bytes.fill(0xff, start, start + Number(chunk?.total_compressed_size));
    await h.store.put(victim, bytes);

    // Act
    const execution = await run(h, input(day), 'corrupt-1');

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('CorruptInputError');
    expect(execution.cause).toContain(victim);
    expect((await listPartition(h.store, day)).map((o) => o.key)).toEqual([...written.keys].sort());
    expect(await keysUnder(h.store, '_lake-compactor/staging/corrupt-1/')).toEqual([]);
    expect(await historyItems(h, day)).toEqual([
      expect.objectContaining({
        runId: 'corrupt-1',
        status: 'FAILED',
        failedGroups: 1,
        firstError: expect.objectContaining({ error: 'CorruptInputError' }),
      }),
    ]);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('quarantines an input with a corrupt page: the next run compacts its neighbours, a replaced file is taken back', async () => {
    // Prepare: one of six inputs gets a corrupt page (its footer, which planning reads, stays intact)
    const day = '2024-02-20';
    const written = await writePartition(h.store, day, 6, 41);
    const victim = written.keys[1] as string;
    const good = await h.store.get(victim);
    const neighbours = written.keys.filter((k) => k !== victim);
    const neighbourRows = await rowMultiset(h.store, neighbours, h.scratch);
    const victimRows = await rowMultiset(h.store, [victim], h.scratch);
    const corrupt = new Uint8Array(good);
    const meta = parquetMetadata(corrupt.buffer.slice(0) as ArrayBuffer);
    const chunk = meta.row_groups[0]?.columns[0]?.meta_data;
    const start = Number(chunk?.dictionary_page_offset ?? chunk?.data_page_offset);
    corrupt.fill(0xff, start, start + Number(chunk?.total_compressed_size));
    await h.store.put(victim, corrupt);
    const corruptEtag = (await h.store.head(victim))?.etag;
    const stateTable = h.cloud.tableName(h.stack.table);
    const quarantineItems = async () =>
      (
        await h.cloud.dynamodb.send(
          new QueryCommand({
            TableName: stateTable,
            KeyConditionExpression: 'pk = :pk AND begins_with(sk, :q)',
            ExpressionAttributeValues: {
              ':pk': { S: `PART#events#date=${day}` },
              ':q': { S: 'QUARANTINE#' },
            },
            ConsistentRead: true,
          }),
        )
      ).Items?.map((i) => unmarshall(i)) ?? [];

    // Act 1: the run meets the corrupt page
    const first = await run(h, input(day), 'quarantine-1');

    // Assess 1: it fails naming the file, which is quarantined (alone) as the object it failed on
    expect(first.status).toBe('FAILED');
    expect(first.error).toBe('CorruptInputError');
    expect(first.cause).toContain(victim);
    expect(first.cause).toContain('quarantined');
    expect(await quarantineItems()).toEqual([
      expect.objectContaining({
        sk: `QUARANTINE#${victim}`,
        key: victim,
        etag: corruptEtag,
        runId: 'quarantine-1',
        errorName: 'CorruptInputError',
      }),
    ]);
    expect((await historyItems(h, day)).find((i) => i.runId === 'quarantine-1')).toMatchObject({
      status: 'FAILED',
      quarantined: 1,
    });
    expect((await listPartition(h.store, day)).map((o) => o.key)).toEqual([...written.keys].sort());

    // Act 2: the next run
    const second = await run(h, input(day), 'quarantine-2');
    const status = captureIo({ env: h.cloud.env });
    const statusCode = await cli(
      ['status', '--table', 'events', '--state-table', stateTable, '--json'],
      status,
    );
    const listed = captureIo({ env: h.cloud.env });
    const listCode = await cli(
      [
        'quarantine',
        `s3://${WORKFLOW_BUCKET}/events`,
        '--partition',
        `date=${day}`,
        '--state-table',
        stateTable,
      ],
      listed,
    );

    // Assess 2: the five neighbours are one file with exactly their rows; the victim is left untouched
    expect(second.status, `${second.error}: ${second.cause}`).toBe('SUCCEEDED');
    expect(second.output).toMatchObject({ groupsDone: 1, filesRetired: 5, quarantined: 1 });
    const after = await listPartition(h.store, day);
    expect(after.map((o) => o.key)).toEqual(
      [victim, `events/date=${day}/part-quarantine-2-0001-00000.zstd.parquet`].sort(),
    );
    const output = after.filter((o) => o.key !== victim).map((o) => o.key);
    expect(await rowMultiset(h.store, output, h.scratch)).toEqual(neighbourRows);
    expect(after.find((o) => o.key === victim)?.etag).toBe(corruptEtag);
    expect(Buffer.from(await h.store.get(victim)).equals(Buffer.from(corrupt))).toBe(true);
    const plan = JSON.parse(
      new TextDecoder().decode(await h.store.get('_lake-compactor/plans/quarantine-2.json')),
    ) as { skipped: { key: string; reason: string }[] };
    expect(plan.skipped).toEqual([
      { key: victim, reason: expect.stringMatching(/^quarantined since .* by run quarantine-1: /) },
    ]);
    expect([statusCode, listCode]).toEqual([0, 0]);
    const row = (
      JSON.parse(status.stdout.join('\n')) as { partition: string; quarantined: { key: string }[] }[]
    ).find((r) => r.partition === `date=${day}`);
    expect(row?.quarantined.map((q) => q.key)).toEqual([victim]);
    expect(listed.stdout.join('\n')).toContain(victim);
    expect(listed.stdout.join('\n')).toContain(`1 file quarantined in table events partition "date=${day}"`);

    // Act 3: the writer replaces the file with a good one and adds three more; the next run
    await h.store.put(victim, good);
    const more = await writePartition(h.store, day, 3, 42);
    const moreRows = await rowMultiset(h.store, more.keys, h.scratch);
    const third = await run(h, input(day), 'quarantine-3');

    // Assess 3: the quarantine is released and the file is compacted with the rest, no row lost or doubled
    expect(third.status, `${third.error}: ${third.cause}`).toBe('SUCCEEDED');
    expect(third.output).toMatchObject({ groupsDone: 1, filesRetired: 5, quarantined: 0 });
    expect(await quarantineItems()).toEqual([]);
    const final = (await listPartition(h.store, day)).map((o) => o.key);
    expect(final).toEqual([`events/date=${day}/part-quarantine-3-0001-00000.zstd.parquet`]);
    expect((await rowMultiset(h.store, final, h.scratch)).sort()).toEqual(
      [...neighbourRows, ...victimRows, ...moreRows].sort(),
    );
  });

  it('aborts a group as a conflict, not a corrupt file, when a writer replaced an input after planning', async () => {
    // Prepare: between planning and compaction a writer overwrites one input with other (valid) rows
    const day = '2024-01-16';
    const written = await writePartition(h.store, day, 6, 31);
    const victim = written.keys[2] as string;
    const replacement = await h.store.get(
      (await writePartition(h.store, '2023-12-15', 1, 32)).keys[0] as string,
    );
    h.hooks.set('Compact group', async () => {
      await h.store.put(victim, replacement);
    });
    const before = new Map((await listPartition(h.store, day)).map((o) => [o.key, o.etag]));

    // Act
    const execution = await run(h, input(day), 'replaced-1');

    // Assess: the group was left alone and reported as aborted; the writer's file is what readers see
    expect(execution.status).toBe('SUCCEEDED');
    const summary = execution.output as Record<string, unknown>;
    expect(summary).toMatchObject({ groupsAborted: 1, groupsDone: 0, failedGroups: 0 });
    const after = await listPartition(h.store, day);
    expect(after.map((o) => o.key)).toEqual([...written.keys].sort());
    for (const o of after) if (o.key !== victim) expect(o.etag, o.key).toBe(before.get(o.key));
    expect(await h.store.get(victim)).toEqual(replacement);
    expect(await keysUnder(h.store, '_lake-compactor/staging/replaced-1/')).toEqual([]);
    const [history] = await historyItems(h, day);
    expect(history?.groupResults).toEqual([
      expect.objectContaining({
        state: 'aborted',
        reason: expect.stringContaining(`${victim} (changed since planning`),
      }),
    ]);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('publishes nothing when a staged output is tampered with before verification, and does not retry it', async () => {
    // Prepare
    const day = '2024-01-06';
    const written = await writePartition(h.store, day, 6, 15);
    const before = await rowMultiset(h.store, written.keys, h.scratch);
    const foreign = await h.store.get((await writePartition(h.store, '2023-12-02', 1, 6)).keys[0] as string);
    h.hooks.set('Verify group', async () => {
      const staged = (await keysUnder(h.store, '_lake-compactor/staging/tamper-1/')).filter((k) =>
        k.endsWith('.parquet'),
      );
      for (const key of staged) await h.store.put(key, foreign);
    });
    const verifyId = h.cloud.logicalId(h.stack.workflow.functions.verify as never, 'AWS::Lambda::Function');
    const verifiesBefore = h.cloud.invocations.filter((i) => i.functionLogicalId === verifyId).length;

    // Act
    const execution = await run(h, input(day), 'tamper-1');

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('VerificationError');
    expect(h.cloud.invocations.filter((i) => i.functionLogicalId === verifyId).length - verifiesBefore).toBe(
      1,
    );
    expect(await outputsOf(day, 'tamper-1')).toEqual([]);
    expect(
      await rowMultiset(
        h.store,
        (await listPartition(h.store, day)).map((o) => o.key),
        h.scratch,
      ),
    ).toEqual(before);
    expect(await keysUnder(h.store, '_lake-compactor/staging/tamper-1/')).toEqual([]);
  });

  it('runs plans with more groups than the inline limit through the Distributed Map', async () => {
    // Prepare
    const day = '2024-01-07';
    const written = await writePartition(h.store, day, 20, 16);
    const before = await rowMultiset(h.store, written.keys, h.scratch);

    // Act
    const execution = await run(h, input(day, { targetFileSizeMB: 0.01, maxGroupMB: 0.02 }), 'distributed-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const output = execution.output as { groups: number; groupsDone: number };
    expect(output.groups).toBeGreaterThan(1);
    expect(output.groupsDone).toBe(output.groups);
    const entered = execution.history.filter(
      (e) =>
        e?.type === 'StateEntered' &&
        (e as { state?: { name?: string } }).state?.name === 'Compact group (distributed)',
    );
    expect(entered).toHaveLength(output.groups);
    const after = (await listPartition(h.store, day)).map((o) => o.key);
    expect(after).toEqual(await outputsOf(day, 'distributed-1'));
    expect(await rowMultiset(h.store, after, h.scratch)).toEqual(before);
  });

  it('dry run: stores the plan with its estimated cost, changes no file and releases the lease', async () => {
    // Prepare
    const day = '2024-01-08';
    const written = await writePartition(h.store, day, 6, 17);

    // Act
    const execution = await run(h, input(day, { dryRun: true }), 'dry-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      outcome: 'dry-run',
      planKey: '_lake-compactor/plans/dry-1.json',
    });
    expect((execution.output as { estimatedCost: { usd: number } }).estimatedCost.usd).toBeGreaterThan(0);
    expect((await listPartition(h.store, day)).map((o) => o.key)).toEqual([...written.keys].sort());
    expect(await keysUnder(h.store, '_lake-compactor/plans/dry-1.json')).toHaveLength(1);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
  });

  it('gives up with a reason after its quiet checks while the partition keeps being written', async () => {
    // Prepare
    const day = '2024-01-09';
    await writePartition(h.store, day, 6, 18);
    const stats = new DynamoStatsStore({
      client: h.cloud.dynamodb,
      tableName: h.cloud.tableName(h.stack.table),
    });
    const now = Date.now();
    await stats.touch({ table: 'events', partition: `date=${day}` }, { lastWriteAt: now, firstWriteAt: now });

    // Act
    const execution = await run(h, input(day, { quietMinutes: 30 }), 'busy-1');

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(execution.output).toMatchObject({
      outcome: 'gave-up',
      reason: expect.stringContaining('gave up'),
    });
    const checks = execution.history.filter(
      (e) => e?.type === 'StateEntered' && (e as { state?: { name?: string } }).state?.name === 'Check quiet',
    );
    expect(checks).toHaveLength(5);
    expect(await partitionItem(h, day)).toMatchObject({ state: 'idle' });
    expect(await listPartition(h.store, day)).toHaveLength(6);
  });

  it('several partitions: validates all, then starts one child execution per partition with deterministic names', async () => {
    // Prepare
    await writePartition(h.store, '2024-01-10', 5, 19);
    await writePartition(h.store, '2024-01-11', 5, 20);

    // Act
    const parent = await run(
      h,
      { table: 'events', partitions: ['date=2024-01-10', 'date=2024-01-11'], quietMinutes: 0 },
      'fan-1',
    );
    await h.cloud.drain(60_000);

    // Assess
    expect(parent.status, `${parent.error}: ${parent.cause}`).toBe('SUCCEEDED');
    const children = (parent.output as { children: { name: string }[] }).children.map((c) => c.name);
    expect(children).toHaveLength(2);
    const ended = h.cloud.executions.filter((e) => children.includes(e.name));
    expect(ended.map((e) => e.status)).toEqual(['SUCCEEDED', 'SUCCEEDED']);
    expect(await listPartition(h.store, '2024-01-10')).toHaveLength(1);
    expect(await listPartition(h.store, '2024-01-11')).toHaveLength(1);
  });

  it('refuses an invalid request before changing anything, listing every problem', async () => {
    // Prepare
    const day = '2024-01-12';

    // Act
    const execution = await run(
      h,
      { table: 'clicks', partition: `date=${day}`, strategy: 'sort', typo: 1 },
      'invalid-1',
    );

    // Assess
    expect(execution.status).toBe('FAILED');
    expect(execution.error).toBe('InvalidInputError');
    const message = (JSON.parse(execution.cause ?? '{}') as { errorMessage: string }).errorMessage;
    expect(message).toContain('"clicks" is not configured; configured tables: "events"');
    expect(message).toContain('sortColumns: strategy "sort" needs sortColumns');
    expect(message).toContain('Unrecognized key: "typo"');
    expect(await partitionItem(h, day)).toBeUndefined();
  });

  it('updates the partition statistics to the new layout at once; the late S3 events then change nothing', async () => {
    // Prepare
    const day = '2024-01-13';
    const written = await writePartition(h.store, day, 7, 21);
    const stats = new DynamoStatsStore({
      client: h.cloud.dynamodb,
      tableName: h.cloud.tableName(h.stack.table),
    });
    const tables = parseTableConfigs(WORKFLOW_TABLES);
    const policies = new Map(tables.map((t) => [t.name, resolveTablePolicy(t)]));
    const resolve = (events: ObjectEvent[]): ResolvedEvent[] =>
      events.flatMap((e) => {
        const r = resolveEvent(tables, policies, e);
        return r.kind === 'data' ? [r.event] : [];
      });
    const listed = await listPartition(h.store, day);
    const seq = (n: number) => n.toString(16).toUpperCase().padStart(32, '0');
    await stats.applyEvents(
      resolve(
        listed.map((o) => ({
          bucket: 'lake',
          key: o.key,
          kind: 'created',
          size: o.size,
          etag: o.etag,
          sequencer: seq(16),
          eventTime: 1,
          eventName: 'ObjectCreated:Put',
        })),
      ),
    );
    const ref = { table: 'events', partition: `date=${day}` };
    expect((await stats.get(ref))?.fileCount).toBe(7);

    // Act
    const execution = await run(h, input(day), 'stats-1');
    const afterRun = await stats.get(ref);
    const output = (await listPartition(h.store, day))[0];
    await stats.applyEvents(
      resolve([
        ...written.keys.map(
          (key): ObjectEvent => ({
            bucket: 'lake',
            key,
            kind: 'removed',
            sequencer: seq(4096),
            eventTime: 2,
            eventName: 'ObjectRemoved:Delete',
          }),
        ),
        {
          bucket: 'lake',
          key: output?.key ?? '',
          kind: 'created',
          size: output?.size ?? 0,
          etag: output?.etag ?? '',
          sequencer: seq(4096),
          eventTime: 2,
          eventName: 'ObjectCreated:Copy',
        },
      ]),
    );
    const afterEvents = await stats.get(ref);

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    expect(afterRun).toMatchObject({ fileCount: 1, totalBytes: output?.size, state: 'idle' });
    expect(afterRun?.lastCompactedAt).toBeTypeOf('number');
    expect(afterEvents).toMatchObject({ fileCount: 1, totalBytes: output?.size });
  });

  it('sort strategy: the output holds the same rows, ordered by the sort columns', async () => {
    // Prepare
    const day = '2024-01-14';
    const written = await writePartition(h.store, day, 6, 22);
    const before = await rowMultiset(h.store, written.keys, h.scratch);

    // Act
    const execution = await run(
      h,
      input(day, { strategy: 'sort', sortColumns: ['user_id'], codec: 'snappy' }),
      'sort-1',
    );

    // Assess
    expect(execution.status, `${execution.error}: ${execution.cause}`).toBe('SUCCEEDED');
    const keys = (await listPartition(h.store, day)).map((o) => o.key);
    expect(keys).toEqual([`events/date=${day}/part-sort-1-0001-00000.snappy.parquet`]);
    expect(await rowMultiset(h.store, keys, h.scratch)).toEqual(before);
    const file = path.join(h.scratch, 'sorted.parquet');
    await writeFile(file, await h.store.get(keys[0] as string));
    const db = await openDuckDb();
    try {
      const outOfOrder = await db.scalar(
        `SELECT count(*) FROM (SELECT user_id, lag(user_id) OVER (ORDER BY file_row_number) AS prev
           FROM read_parquet(${sqlString(file)}, file_row_number = true)) WHERE prev > user_id`,
      );
      expect(Number(outOfOrder)).toBe(0);
    } finally {
      db.close();
    }
  });

  it('takes over the profiler schedule of its generation, and refuses a stale generation', async () => {
    // Prepare
    const day = '2024-01-15';
    await writePartition(h.store, day, 6, 23);
    const stats = new DynamoStatsStore({
      client: h.cloud.dynamodb,
      tableName: h.cloud.tableName(h.stack.table),
    });
    const ref = { table: 'events', partition: `date=${day}` };
    const hourAgo = Date.now() - 3_600_000;
    const snapshot = await stats.touch(ref, { lastWriteAt: hourAgo, firstWriteAt: hourAgo });
    const name = 'events-profiled-g1';
    const scheduled = await stats.schedule(
      snapshot,
      { runId: name, executionName: name, acquiredAt: Date.now() },
      { at: Date.now(), compact: true, reasons: ['test'], action: `started ${name}` },
    );
    expect(scheduled).toMatchObject({ state: 'scheduled', generation: 1 });
    const request = (generation: number, runId: string) => ({
      table: 'events',
      partition: `date=${day}`,
      generation,
      runId,
      requestedAt: new Date().toISOString(),
      reasons: ['test'],
    });

    // Act
    const stale = await run(h, request(7, 'events-profiled-g7'), 'events-profiled-g7');
    const profiled = await run(h, request(1, name), name);

    // Assess
    expect(stale.status).toBe('FAILED');
    expect(stale.error).toBe('LeaseHeldError');
    expect(profiled.status, `${profiled.error}: ${profiled.cause}`).toBe('SUCCEEDED');
    expect(profiled.output).toMatchObject({ trigger: 'profiler', groupsDone: 1 });
    expect(await stats.get(ref)).toMatchObject({ state: 'idle', generation: 1 });
  });

  it('lease adapter: the holder may retry its acquire, another run is refused by name, only the holder releases', async () => {
    // Prepare
    const tables = parseTableConfigs(WORKFLOW_TABLES);
    const leases = new DynamoPartitionLease({
      client: h.cloud.dynamodb,
      tableName: h.cloud.tableName(h.stack.table),
      tables,
      policies: new Map(tables.map((t) => [t.name, resolveTablePolicy(t)])),
    });
    const ref = { table: 'events', partition: 'date=2024-02-01' };

    // Act
    const first = await leases.acquire(ref, { runId: 'holder-1', now: 1_000 });
    const retried = await leases.acquire(ref, { runId: 'holder-1', now: 2_000 });
    const other = leases.acquire(ref, { runId: 'other-1', now: 3_000 });
    await expect(other).rejects.toBeInstanceOf(LeaseHeldError);
    const message = await other.catch((err: Error) => err.message);
    const releasedByOther = await leases.release(ref, 'other-1', {});
    const releasedByHolder = await leases.release(ref, 'holder-1', { lastCompactedAt: 4_000 });
    const again = await leases.acquire(ref, { runId: 'other-1', now: 5_000 });

    // Assess
    expect(retried).toEqual({ ...first, acquiredAt: 1_000 });
    expect(message).toContain('holder-1');
    expect([releasedByOther, releasedByHolder]).toEqual([false, true]);
    expect(again.generation).toBe(first.generation + 1);
  });
});
