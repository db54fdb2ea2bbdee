// Profiler benchmark against DynamoDB Local: events/s through the real handler, DynamoDB requests and
// capacity units per event (counted by SDK middleware), core CPU per event, and the cost per million events.
//
// `npm run bench -- profiler [--events 5000] [--partitions 20] [--batch N] [--concurrency 4] [--duplicates 0.05]`
// (--batch defaults to the deployed event source mapping's BatchSize; Lambda memory is the deployed profiler's).
import { type AttributeValue, DynamoDBClient, ScanCommand } from '@aws-sdk/client-dynamodb';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type { Context, SQSEvent } from 'aws-lambda';
import { DynamoStatsStore } from '../../functions/adapters/dynamodb-stats-store.js';
import { decide } from '../../functions/core/policy.js';
import { planAccounting } from '../../functions/core/profiler/accounting.js';
import { latestPerFile, parseQueueMessage, resolveEvent } from '../../functions/core/profiler/events.js';
import type { ResolvedEvent } from '../../functions/core/profiler/model.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createProfilerHandler, policiesOf } from '../../functions/handlers/profiler.js';
import { systemClock } from '../../functions/ports/clock.js';
import { createObservability } from '../../functions/shared/middleware.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';

/**
 * Prices used for the cost estimate: AWS list prices, us-east-1, on-demand, no free tier.
 * - Lambda arm64: $0.20 per 1M requests, $0.0000133334 per GB-second (memory as the template configures it).
 * - SQS standard: $0.40 per 1M requests: S3's SendMessage per event, and Lambda's poller receives and deletes
 *   at most 10 messages per ReceiveMessage / DeleteMessageBatch, whatever the function's batch size.
 * - DynamoDB on-demand: $0.625 per 1M write request units, $0.125 per 1M read request units
 *   (transactional writes cost 2 WRU per item-KB; strongly consistent reads 1 RRU per 4 KB).
 */
export const PRICES = {
  lambdaPerMillionRequests: 0.2,
  lambdaPerGbSecond: 0.0000133334,
  sqsPerMillionRequests: 0.4,
  /** Most messages one ReceiveMessage returns and one DeleteMessageBatch deletes. */
  sqsMessagesPerRequest: 10,
  dynamoPerMillionWru: 0.625,
  dynamoPerMillionRru: 0.125,
} as const;

function flag(flags: readonly string[], name: string, fallback: number): number {
  const i = flags.indexOf(`--${name}`);
  const value = i >= 0 ? Number(flags[i + 1]) : fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} expects a number`);
  return value;
}

/** Counts requests per command and the capacity DynamoDB reports (ReturnConsumedCapacity added to every call). */
const WRITE_COMMANDS = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'TransactWriteItemsCommand',
  'BatchWriteItemCommand',
]);

function instrument(client: DynamoDBClient) {
  const counts = {
    requests: 0,
    byCommand: new Map<string, number>(),
    wcu: 0,
    rcu: 0,
    readItems: 0,
    failedWriteItems: 0,
    analyticWru: 0,
    /** Puts that wrote (a conditional put that failed changed no record). */
    puts: 0,
  };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      counts.requests += 1;
      const name = context.commandName ?? 'unknown';
      counts.byCommand.set(name, (counts.byCommand.get(name) ?? 0) + 1);
      const input = args.input as Record<string, unknown>;
      if (name !== 'DescribeTableCommand') input.ReturnConsumedCapacity = 'TOTAL';
      if (name === 'BatchGetItemCommand') {
        for (const request of Object.values(input.RequestItems as Record<string, { Keys: unknown[] }>)) {
          counts.readItems += request.Keys.length;
        }
      }
      // DynamoDB Local reports only CapacityUnits (by item size): a write request's are write units.
      const writes = WRITE_COMMANDS.has(name);
      const addCapacity = (capacity: unknown): number => {
        let units = 0;
        for (const c of Array.isArray(capacity) ? capacity : capacity === undefined ? [] : [capacity]) {
          const cc = c as { CapacityUnits?: number; WriteCapacityUnits?: number; ReadCapacityUnits?: number };
          units += (writes ? cc.WriteCapacityUnits : cc.ReadCapacityUnits) ?? cc.CapacityUnits ?? 0;
        }
        if (writes) counts.wcu += units;
        else counts.rcu += units;
        return units;
      };
      try {
        const result = await next(args);
        const units = addCapacity((result.output as { ConsumedCapacity?: unknown }).ConsumedCapacity);
        // On-demand pricing: 2 WRU per transactional item-KB (at least 2 per item), 1 WRU per other write-KB as
        // DynamoDB Local reports it by item size (at least 1 per write).
        const txItems = (input.TransactItems as unknown[] | undefined)?.length;
        if (txItems !== undefined) counts.analyticWru += Math.max(2 * txItems, 2 * units);
        else if (writes) counts.analyticWru += Math.max(1, units);
        if (name === 'PutItemCommand') counts.puts += 1;
        return result;
      } catch (err) {
        // Cancelled transactions and failed conditions consume write capacity too, but DynamoDB Local does
        // not report it: estimate 2 WRU per transaction item and 1 per failed conditional write (the partition
        // item, < 1 KB, is the only item written conditionally outside a transaction).
        const items = (input.TransactItems as unknown[] | undefined)?.length;
        counts.failedWriteItems += items === undefined ? 1 : 2 * items;
        throw err;
      }
    },
    { step: 'initialize', name: 'benchCounter', priority: 'high' },
  );
  return counts;
}

/**
 * An item's size as DynamoDB bills it (UTF-8 attribute names plus values; numbers ~1 byte per 2 digits + 1;
 * maps and lists 3 bytes + 1 per element): a write costs one unit per started KB of the larger of old and new.
 */
function itemBytes(item: Record<string, AttributeValue>): number {
  const valueBytes = (v: AttributeValue): number => {
    if (v.S !== undefined) return Buffer.byteLength(v.S);
    if (v.N !== undefined) return Math.ceil(v.N.replace(/[-.]/g, '').length / 2) + 1;
    if (v.BOOL !== undefined || v.NULL !== undefined) return 1;
    if (v.M !== undefined) return 3 + Object.keys(v.M).length + itemBytes(v.M);
    if (v.L !== undefined) return 3 + v.L.length + v.L.reduce((n, e) => n + valueBytes(e), 0);
    return 0;
  };
  return Object.entries(item).reduce((n, [k, v]) => n + Buffer.byteLength(k) + valueBytes(v), 0);
}

/** The largest segment item and partition item in the table after the run, and how many segments it holds. */
async function largestItems(client: DynamoDBClient, tableName: string) {
  const largest = { segment: 0, partition: 0, segments: 0 };
  let start: Record<string, AttributeValue> | undefined;
  do {
    const page = await client.send(new ScanCommand({ TableName: tableName, ExclusiveStartKey: start }));
    for (const item of page.Items ?? []) {
      const pk = item.pk?.S ?? '';
      const sk = item.sk?.S ?? '';
      const kind =
        pk.startsWith('PART#') && sk.startsWith('SEG#')
          ? 'segment'
          : sk === 'STATE'
            ? 'partition'
            : undefined;
      if (kind !== undefined) largest[kind] = Math.max(largest[kind], itemBytes(item));
      if (kind === 'segment') largest.segments += 1;
    }
    start = page.LastEvaluatedKey;
  } while (start);
  return largest;
}

/**
 * What a fresh listing would hold after the workload, per partition: each key's latest event by sequencer
 * (duplicates collapse, a delete removes), computed from the delivered bodies alone, without the store.
 */
function expectedListing(
  bodies: readonly string[],
  tables: ReturnType<typeof parseTableConfigs>,
  policies: ReturnType<typeof policiesOf>,
): Map<string, { fileCount: number; totalBytes: number }> {
  const latest = new Map<string, ResolvedEvent>();
  for (const body of bodies) {
    for (const event of parseQueueMessage(body).events) {
      const r = resolveEvent(tables, policies, event);
      if (r.kind !== 'data') continue;
      const seen = latest.get(r.event.fileId);
      if (seen === undefined || seen.sequencer < r.event.sequencer) latest.set(r.event.fileId, r.event);
    }
  }
  const listing = new Map<string, { fileCount: number; totalBytes: number }>();
  for (const event of latest.values()) {
    const totals = listing.get(event.ref.partition) ?? { fileCount: 0, totalBytes: 0 };
    if (event.kind === 'created') {
      totals.fileCount += 1;
      totals.totalBytes += event.size ?? 0;
    }
    listing.set(event.ref.partition, totals);
  }
  return listing;
}

let sequence = 0x100000000000n;
function s3Body(key: string, kind: 'created' | 'removed', size: number, time: number): string {
  sequence += 1n;
  return JSON.stringify({
    Records: [
      {
        eventVersion: '2.1',
        eventSource: 'aws:s3',
        eventTime: new Date(time).toISOString(),
        eventName: kind === 'created' ? 'ObjectCreated:Put' : 'ObjectRemoved:Delete',
        s3: {
          bucket: { name: 'lake' },
          object: {
            key: key.replaceAll('=', '%3D'),
            ...(kind === 'created' ? { size, eTag: 'e' } : {}),
            sequencer: sequence.toString(16).toUpperCase(),
          },
        },
      },
    ],
  });
}

/** The deployed profiler's batch size and memory, from the template the construct synthesizes. */
function deployed(template: CfnTemplate): { batchSize: number; memoryMb: number } {
  const resources = Object.values(template.Resources ?? {}) as {
    Type: string;
    Properties?: Record<string, unknown>;
  }[];
  const mapping = resources.find((r) => r.Type === 'AWS::Lambda::EventSourceMapping');
  const profiler = resources.find(
    (r) =>
      r.Type === 'AWS::Lambda::Function' &&
      String(r.Properties?.Description).startsWith('Keeps per-partition'),
  );
  const batchSize = Number(mapping?.Properties?.BatchSize);
  const memoryMb = Number(profiler?.Properties?.MemorySize);
  if (!Number.isFinite(batchSize) || !Number.isFinite(memoryMb)) {
    throw new Error('the template has no profiler event source mapping or function');
  }
  return { batchSize, memoryMb };
}

/** What a profiler run measured, for benches that add it to their own line (rewrite-cost.ts's all-in cost). */
export interface ProfilerMeasurement {
  /** The profiler's cost per S3 event (DynamoDB, SQS, Lambda) at list prices, USD. */
  readonly usdPerEvent: number;
  /** Events the run sent through the handler. */
  readonly events: number;
}

/** Runs the profiler bench (prints its lines) and returns its measured cost per event. */
export async function run(flags: readonly string[]): Promise<ProfilerMeasurement> {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'Bench', {
    compactor: { tables: [{ name: 'bench', bucketName: 'lake', prefix: 'bench/' }] },
  });
  const template = Template.fromStack(stack).toJSON() as CfnTemplate;
  const configured = deployed(template);
  const total = flag(flags, 'events', 5000);
  const partitions = flag(flags, 'partitions', 20);
  const batchSize = flag(flags, 'batch', configured.batchSize);
  const memoryGb = configured.memoryMb / 1024;
  const concurrency = flag(flags, 'concurrency', 4);
  const duplicates = flag(flags, 'duplicates', 0.05);

  // Workload: a writer landing small files across `partitions` partitions, 10% deletes, some redelivered.
  const now = Date.now();
  const bodies: string[] = [];
  const live: string[] = [];
  for (let i = 0; bodies.length < total; i++) {
    if (i % 10 === 9 && live.length > 0) {
      bodies.push(s3Body(live.shift() as string, 'removed', 0, now - 60_000));
    } else {
      const key = `bench/date=2026-11-${String(1 + (i % partitions)).padStart(2, '0')}/part-${i}.parquet`;
      live.push(key);
      bodies.push(s3Body(key, 'created', 2_000 + ((i * 7919) % 500_000), now - 60_000));
    }
    if (i % Math.max(1, Math.round(1 / Math.max(duplicates, 1e-9))) === 0)
      bodies.push(bodies[bodies.length - 1] as string);
  }
  bodies.length = total;

  const tables = parseTableConfigs([
    { name: 'bench', bucket: 'lake', prefix: 'bench', partitionColumns: ['date'] },
  ]);
  const policies = policiesOf(tables);

  // Core CPU per event, no I/O: parse, resolve, collapse and plan, plus one decision per partition and batch.
  const cpuStart = process.cpuUsage();
  for (let i = 0; i < bodies.length; i += batchSize) {
    const resolved: ResolvedEvent[] = [];
    for (const body of bodies.slice(i, i + batchSize)) {
      for (const event of parseQueueMessage(body).events) {
        const r = resolveEvent(tables, policies, event);
        if (r.kind === 'data') resolved.push(r.event);
      }
    }
    planAccounting(latestPerFile(resolved).values(), new Map());
    const state = {
      fileCount: 100,
      totalBytes: 1e6,
      smallFileCount: 100,
      smallFileBytes: 1e6,
      state: 'idle' as const,
    };
    for (let p = 0; p < Math.min(partitions, batchSize); p++)
      decide(state, policies.get('bench') ?? (undefined as never), now);
  }
  const cpu = process.cpuUsage(cpuStart);
  const cpuUsPerEvent = (cpu.user + cpu.system) / bodies.length;

  // Through the handler against DynamoDB Local.
  const dynamo = await startDynamoDbLocal({ startTimeoutMs: 120_000 });
  try {
    const admin = dynamo.client();
    const created = await createTablesFromTemplate(admin, new TemplateModel(template));
    const tableName = [...created.values()][0] as string;
    const client = new DynamoDBClient({
      endpoint: dynamo.endpoint,
      region: 'us-east-1',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const counts = instrument(client);
    process.env.POWERTOOLS_METRICS_DISABLED = 'true';
    process.env.POWERTOOLS_LOG_LEVEL = 'SILENT';
    const handler = createProfilerHandler({
      tables,
      policies,
      stats: new DynamoStatsStore({ client, tableName }),
      clock: systemClock,
      observability: createObservability('bench'),
    });
    const batches: SQSEvent[] = [];
    for (let i = 0; i < bodies.length; i += batchSize) {
      batches.push({
        Records: bodies
          .slice(i, i + batchSize)
          .map((body, j) => ({ messageId: `${i + j}`, body }) as SQSEvent['Records'][number]),
      });
    }
    const batchCount = batches.length;
    const context = { functionName: 'bench', awsRequestId: 'bench' } as Context;
    const handlerMs: number[] = [];
    // The handler's own CPU (DynamoDB Local is another process) and heap growth, for the memory choice.
    const heapStart = process.memoryUsage().heapUsed;
    let heapPeak = heapStart;
    const handlerCpuStart = process.cpuUsage();
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let batch = batches.shift(); batch !== undefined; batch = batches.shift()) {
          const start = performance.now();
          const response = await handler(batch, context);
          handlerMs.push(performance.now() - start);
          heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
          if (response && response.batchItemFailures.length > 0) throw new Error('bench batch had failures');
        }
      }),
    );
    const wallMs = performance.now() - t0;
    const handlerCpu = process.cpuUsage(handlerCpuStart);
    const handlerCpuUsPerEvent = (handlerCpu.user + handlerCpu.system) / bodies.length;
    // Exactness: every partition's counters equal what a listing after the workload would hold.
    const expected = expectedListing(bodies, tables, policies);
    const stored = await new DynamoStatsStore({ client: admin, tableName }).listPartitions('bench');
    const wrong = [...expected].filter(([partition, want]) => {
      const got = stored.find((p) => p.partition === partition);
      return got?.fileCount !== want.fileCount || got.totalBytes !== want.totalBytes;
    });
    const largest = await largestItems(admin, tableName);
    const eventsPerSecond = (bodies.length / wallMs) * 1000;
    const requestsPerEvent = counts.requests / bodies.length;
    const reportedWcuPerEvent = counts.wcu / bodies.length;
    const partitionCount = [...expected.keys()].length;
    const wcuPerEvent = (counts.analyticWru + counts.failedWriteItems) / bodies.length;
    // DynamoDB Local reports no read capacity: strongly consistent reads of items < 4 KB cost 1 RRU each.
    const rcuPerEvent = (counts.rcu > 0 ? counts.rcu : counts.readItems) / bodies.length;
    /** Each invocation's own wall summed: concurrent handlers share this one thread and DynamoDB Local. */
    const summedWallMsPerEvent = handlerMs.reduce((a, b) => a + b, 0) / bodies.length;
    // Lambda gives a function memoryMb / 1,769 of a vCPU: CPU-bound time costs the same GB-s at any memory up
    // to 1,769 MB, so only the time spent waiting on DynamoDB grows with memory.
    const vcpu = Math.min(1, configured.memoryMb / 1769);
    const cpuBoundMsPerEvent = handlerCpuUsPerEvent / 1000 / vcpu;
    // Billed duration per event: the handler's CPU at the function's vCPU share, or the elapsed wall per event
    // when waiting dominated, whichever is longer. Summing the concurrent handlers' walls instead (as this bench
    // did until this change) counts the thread they share once per handler: 4× at --concurrency 4.
    const lambdaMsPerEvent = Math.max(cpuBoundMsPerEvent, wallMs / bodies.length);

    const million = 1_000_000;
    const cost = {
      lambdaRequests: (million / batchSize) * (PRICES.lambdaPerMillionRequests / million),
      lambdaDuration: (lambdaMsPerEvent / 1000) * million * memoryGb * PRICES.lambdaPerGbSecond,
      sqs:
        (1 + (2 * Math.ceil(batchSize / PRICES.sqsMessagesPerRequest)) / batchSize) *
        PRICES.sqsPerMillionRequests,
      dynamoWrites: wcuPerEvent * PRICES.dynamoPerMillionWru,
      dynamoReads: rcuPerEvent * PRICES.dynamoPerMillionRru,
    };
    const totalCost = Object.values(cost).reduce((a, b) => a + b, 0);

    console.log(
      `  workload: ${bodies.length} events (${partitions} partitions, ~10% deletes, ~${duplicates * 100}% duplicates), batches of ${batchSize}, ${concurrency} concurrent invocations (${batchCount} batches)`,
    );
    console.log(
      `  throughput: ${eventsPerSecond.toFixed(0)} events/s (wall ${(wallMs / 1000).toFixed(1)} s, DynamoDB Local on loopback)`,
    );
    console.log(
      `  DynamoDB: ${requestsPerEvent.toFixed(3)} requests/event, ${wcuPerEvent.toFixed(3)} WRU/event priced (per started KB as DynamoDB Local reports it, at least 1 per write and 2 per transactional item; ${(counts.failedWriteItems / bodies.length).toFixed(3)} of them for cancelled/failed writes), ${rcuPerEvent.toFixed(3)} RRU/event; DynamoDB Local reported ${reportedWcuPerEvent.toFixed(3)} WCU/event`,
    );
    console.log(
      `    largest items: segment ${largest.segment} B, partition ${largest.partition} B; ${largest.segments} segment items for ${partitionCount} partitions after the run (1 write unit per started KB)`,
    );
    console.log(
      `    by command: ${[...counts.byCommand].map(([k, v]) => `${k.replace('Command', '')} ${v}`).join(', ')}`,
    );
    console.log(
      `  exact: ${wrong.length === 0 ? 'yes' : 'NO'}, ${expected.size - wrong.length} of ${expected.size} partitions' file counts and bytes equal a listing after the workload${wrong.length === 0 ? '' : ` (wrong: ${wrong.map(([p]) => p).join(', ')})`}`,
    );
    console.log(`  core CPU (parse, resolve, plan, decide; no I/O): ${cpuUsPerEvent.toFixed(1)} µs/event`);
    console.log(
      `  handler CPU per event (this process, incl. SDK): ${handlerCpuUsPerEvent.toFixed(1)} µs; heap growth during the run: peak ${((heapPeak - heapStart) / 2 ** 20).toFixed(1)} MB`,
    );
    console.log(
      `  Lambda duration per event: ${lambdaMsPerEvent.toFixed(3)} ms priced = max(handler CPU at ${vcpu.toFixed(2)} vCPU ${cpuBoundMsPerEvent.toFixed(3)} ms (the same GB-s at any memory ≤ 1,769 MB), elapsed wall ${(wallMs / bodies.length).toFixed(3)} ms); concurrent handlers' walls summed: ${summedWallMsPerEvent.toFixed(3)} ms`,
    );
    console.log(`  cost per million events: $${totalCost.toFixed(3)}`);
    for (const [k, v] of Object.entries(cost)) console.log(`    ${k.padEnd(15)} $${v.toFixed(4)}`);
    const split = {
      dynamodb: cost.dynamoWrites + cost.dynamoReads,
      sqs: cost.sqs,
      lambda: cost.lambdaRequests + cost.lambdaDuration,
    };
    console.log(
      `  split: DynamoDB $${split.dynamodb.toFixed(3)} (${wcuPerEvent.toFixed(3)} WRU/event), SQS $${split.sqs.toFixed(3)}, Lambda $${split.lambda.toFixed(3)} per million events`,
    );
    console.log(
      `  prices: Lambda arm64 $0.20/M req + $0.0000133334/GB-s at ${configured.memoryMb} MB; SQS $0.40/M req (receive and delete 10 messages per request); DynamoDB on-demand $0.625/M WRU, $0.125/M RRU (us-east-1)`,
    );
    console.log(
      `  PutItem requests (segments and decision items): ${counts.puts}, ${(bodies.length / Math.max(1, counts.puts)).toFixed(1)} events per put`,
    );
    client.destroy();
    if (wrong.length > 0) throw new Error("the profiler's statistics are not exact");
    return { usdPerEvent: totalCost / million, events: bodies.length };
  } finally {
    await dynamo.stop();
  }
}

const invokedDirectly = process.argv[1] !== undefined && /bench[\\/]profiler\.ts$/.test(process.argv[1]);
if (invokedDirectly) {
  run(process.argv.slice(2)).catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
