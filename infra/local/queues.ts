// SQS as a Lambda event source sees it, in memory: queues from the template with their redrive
// policy, and pollers that batch, deliver, honour partial batch failures and dead-letter.
//
// Semantics kept from AWS: up to BatchSize records per invocation, waiting up to the batching
// window for a full batch; a thrown error fails the whole batch; `batchItemFailures` fail only
// those records (when the mapping has ReportBatchItemFailures, and an unknown identifier fails the
// batch); a failed record returns to the queue and moves to the DLQ once it has been received
// `maxReceiveCount` times. Simplified: one poller per mapping (batches are sequential), the
// visibility timeout is a fixed, short redelivery delay.
import { createHash, randomUUID } from 'node:crypto';
import type { SQSBatchResponse, SQSEvent, SQSRecord } from 'aws-lambda';
import type { TemplateModel } from './template.js';

/** One message waiting in (or in flight from) a local queue. */
export interface LocalQueueMessage {
  readonly messageId: string;
  readonly body: string;
  readonly sentTimestamp: number;
  receiveCount: number;
  firstReceiveTimestamp?: number;
  /** Epoch ms from which the message may be received; Infinity while in flight. */
  visibleAt: number;
}

/** A message that exhausted its receives, as the DLQ (or the harness) keeps it. */
export interface DeadLetter {
  /** Logical id of the queue the message failed from. */
  readonly sourceQueue: string;
  /** Logical id of the redrive target, or undefined when the queue has none (harness cap reached). */
  readonly deadLetterQueue?: string;
  readonly messageId: string;
  readonly body: string;
  readonly receiveCount: number;
}

/** A queue of the template. */
export class LocalQueue {
  readonly messages: LocalQueueMessage[] = [];
  /** Set when a mapping consumes this queue. */
  consumed = false;

  constructor(
    readonly logicalId: string,
    readonly name: string,
    readonly arn: string,
    readonly url: string,
    readonly redrive: { readonly deadLetterQueue: string; readonly maxReceiveCount: number } | undefined,
  ) {}

  /** Enqueues a message body (a string, like SQS); returns its message id. */
  send(body: string, now = Date.now()): string {
    const messageId = randomUUID();
    this.messages.push({ messageId, body, sentTimestamp: now, receiveCount: 0, visibleAt: now });
    return messageId;
  }

  /** Messages that can be received now. */
  visible(now = Date.now()): LocalQueueMessage[] {
    return this.messages.filter((message) => message.visibleAt <= now);
  }
}

/** Builds the template's queues (`AWS::SQS::Queue`) with their RedrivePolicy. */
export function queuesFromTemplate(model: TemplateModel): Map<string, LocalQueue> {
  const queues = new Map<string, LocalQueue>();
  for (const [logicalId, resource] of model.resourcesOfType('AWS::SQS::Queue')) {
    const props = model.resolve(resource.Properties ?? {}) as {
      RedrivePolicy?: { deadLetterTargetArn?: string; maxReceiveCount?: number | string };
    };
    const target = props.RedrivePolicy?.deadLetterTargetArn;
    const deadLetterQueue = target === undefined ? undefined : model.findResource('AWS::SQS::Queue', target);
    queues.set(
      logicalId,
      new LocalQueue(
        logicalId,
        model.physicalName(logicalId),
        model.arn(logicalId),
        model.ref(logicalId),
        deadLetterQueue === undefined
          ? undefined
          : { deadLetterQueue, maxReceiveCount: Number(props.RedrivePolicy?.maxReceiveCount ?? 1) },
      ),
    );
  }
  return queues;
}

/** An `AWS::Lambda::EventSourceMapping` from a queue, as deployed. */
export interface QueueMapping {
  readonly logicalId: string;
  readonly queue: string;
  readonly functionLogicalId: string;
  readonly batchSize: number;
  readonly batchingWindowMs: number;
  readonly reportBatchItemFailures: boolean;
  readonly enabled: boolean;
}

/** Reads the SQS event source mappings of the template (others, e.g. DynamoDB streams, are skipped). */
export function queueMappingsFromTemplate(model: TemplateModel): QueueMapping[] {
  const mappings: QueueMapping[] = [];
  for (const [logicalId, resource] of model.resourcesOfType('AWS::Lambda::EventSourceMapping')) {
    const props = model.resolve(resource.Properties ?? {}) as {
      EventSourceArn?: string;
      FunctionName?: string;
      BatchSize?: number;
      MaximumBatchingWindowInSeconds?: number;
      FunctionResponseTypes?: string[];
      Enabled?: boolean;
    };
    const queue =
      props.EventSourceArn === undefined
        ? undefined
        : model.findResource('AWS::SQS::Queue', props.EventSourceArn);
    const fn =
      props.FunctionName === undefined
        ? undefined
        : model.findResource('AWS::Lambda::Function', props.FunctionName);
    if (queue === undefined || fn === undefined) continue;
    mappings.push({
      logicalId,
      queue,
      functionLogicalId: fn,
      batchSize: Number(props.BatchSize ?? 10),
      batchingWindowMs: Number(props.MaximumBatchingWindowInSeconds ?? 0) * 1000,
      reportBatchItemFailures: props.FunctionResponseTypes?.includes('ReportBatchItemFailures') ?? false,
      enabled: props.Enabled !== false,
    });
  }
  return mappings;
}

export interface PollerOptions {
  /** Overrides every mapping's batching window (tests shorten it). */
  readonly batchingWindowMs?: number;
  /** Delay before a failed record is visible again (the visibility timeout). @default 20 */
  readonly redeliveryDelayMs?: number;
  /** Receives after which a failed record of a queue *without* redrive is given up. @default 10 */
  readonly maxReceiveCountWithoutRedrive?: number;
  readonly region: string;
}

/**
 * Delivers one queue's messages to one function, one batch at a time. `kick()` after sending;
 * `busy` tells `drain()` whether anything is queued or in flight.
 */
export class QueuePoller {
  private running: Promise<void> | undefined;
  private stopped = false;
  private timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly mapping: QueueMapping,
    private readonly queue: LocalQueue,
    private readonly queues: ReadonlyMap<string, LocalQueue>,
    private readonly invoke: (event: SQSEvent) => Promise<unknown>,
    private readonly deadLetters: DeadLetter[],
    private readonly options: PollerOptions,
  ) {
    queue.consumed = true;
  }

  /** Whether messages are waiting, in flight, or scheduled for redelivery. */
  get busy(): boolean {
    return this.mapping.enabled && (this.queue.messages.length > 0 || this.running !== undefined);
  }

  /** Starts a delivery loop if none runs. */
  kick(): void {
    if (this.stopped || !this.mapping.enabled || this.running !== undefined) return;
    this.running = this.loop().finally(() => {
      this.running = undefined;
      if (this.queue.visible().length > 0) this.kick();
    });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    await this.running;
  }

  private async loop(): Promise<void> {
    const windowMs = this.options.batchingWindowMs ?? this.mapping.batchingWindowMs;
    while (!this.stopped) {
      const firstVisible = this.queue.visible()[0];
      if (firstVisible === undefined) return;
      // Like Lambda's poller: wait for a full batch, but no longer than the batching window.
      const windowEnds = Date.now() + windowMs;
      while (
        !this.stopped &&
        this.queue.visible().length < this.mapping.batchSize &&
        Date.now() < windowEnds
      ) {
        await sleep(Math.min(10, windowEnds - Date.now()));
      }
      const now = Date.now();
      const batch = this.queue.visible(now).slice(0, this.mapping.batchSize);
      for (const message of batch) {
        message.receiveCount += 1;
        message.firstReceiveTimestamp ??= now;
        message.visibleAt = Number.POSITIVE_INFINITY;
      }
      const event: SQSEvent = { Records: batch.map((message) => this.record(message)) };
      const failed = await this.deliver(event, batch);
      for (const message of batch) {
        if (failed.has(message.messageId)) this.fail(message);
        else this.remove(message);
      }
    }
  }

  /** Invokes the function; returns the ids of the records to retry. */
  private async deliver(event: SQSEvent, batch: readonly LocalQueueMessage[]): Promise<Set<string>> {
    const all = new Set(batch.map((message) => message.messageId));
    let response: unknown;
    try {
      response = await this.invoke(event);
    } catch {
      return all;
    }
    if (!this.mapping.reportBatchItemFailures) return new Set();
    const failures = (response as Partial<SQSBatchResponse> | null | undefined)?.batchItemFailures;
    if (failures === undefined || failures === null) return new Set();
    if (!Array.isArray(failures)) return all;
    const ids = new Set<string>();
    for (const failure of failures) {
      const id = (failure as { itemIdentifier?: unknown } | null)?.itemIdentifier;
      // Lambda retries the whole batch when an identifier is missing or unknown.
      if (typeof id !== 'string' || !all.has(id)) return all;
      ids.add(id);
    }
    return ids;
  }

  private fail(message: LocalQueueMessage): void {
    const redrive = this.queue.redrive;
    const limit = redrive?.maxReceiveCount ?? this.options.maxReceiveCountWithoutRedrive ?? 10;
    if (message.receiveCount >= limit) {
      this.remove(message);
      const deadLetterQueue = redrive === undefined ? undefined : this.queues.get(redrive.deadLetterQueue);
      deadLetterQueue?.messages.push({ ...message, visibleAt: Date.now() });
      this.deadLetters.push({
        sourceQueue: this.queue.logicalId,
        deadLetterQueue: deadLetterQueue?.logicalId,
        messageId: message.messageId,
        body: message.body,
        receiveCount: message.receiveCount,
      });
      return;
    }
    const delay = this.options.redeliveryDelayMs ?? 20;
    message.visibleAt = Date.now() + delay;
    this.kickAt(message.visibleAt);
  }

  /**
   * Kicks the poller once `visibleAt` has passed. A timer may fire a millisecond before `Date.now()` reaches its
   * due time (Node's timers and the wall clock round differently): a kick then finds the message not yet visible
   * and ends, and nothing would ever deliver it. So the kick is re-armed until the message really is visible.
   */
  private kickAt(visibleAt: number): void {
    if (this.stopped) return;
    const timer = setTimeout(
      () => {
        this.timers.delete(timer);
        if (Date.now() < visibleAt) this.kickAt(visibleAt);
        else this.kick();
      },
      Math.max(1, visibleAt - Date.now()),
    );
    this.timers.add(timer);
  }

  private remove(message: LocalQueueMessage): void {
    const index = this.queue.messages.indexOf(message);
    if (index >= 0) this.queue.messages.splice(index, 1);
  }

  private record(message: LocalQueueMessage): SQSRecord {
    return {
      messageId: message.messageId,
      receiptHandle: `${message.messageId}#${message.receiveCount}`,
      body: message.body,
      attributes: {
        ApproximateReceiveCount: String(message.receiveCount),
        SentTimestamp: String(message.sentTimestamp),
        SenderId: 'AIDALOCALCLOUD',
        ApproximateFirstReceiveTimestamp: String(message.firstReceiveTimestamp ?? message.sentTimestamp),
      },
      messageAttributes: {},
      md5OfBody: createHash('md5').update(message.body).digest('hex'),
      eventSource: 'aws:sqs',
      eventSourceARN: this.queue.arn,
      awsRegion: this.options.region,
    };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
