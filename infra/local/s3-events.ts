// Turns s3rver's notifications into the records real S3 sends (URL-encoded keys, real event names,
// eTag/size/sequencer) and routes them by the template's bucket notification configurations.
//
// s3rver quirks fixed here (LOCAL-CLOUD.md): raw keys → encoded like S3 (`+` for spaces);
// multipart `ObjectCreated:Post` → `ObjectCreated:CompleteMultipartUpload`; copies get their eTag
// from the store; batch DeleteObjects, which s3rver does not report, is observed on the HTTP
// response (see `observeBatchDeletes`) and reported as one `ObjectRemoved:Delete` per key.
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { S3EventRecord } from 'aws-lambda';
import type { RunningS3Server, S3rverEvent } from './s3-server.js';
import type { TemplateModel } from './template.js';

/** Where one notification configuration sends matching events. */
export type NotificationTarget =
  | { readonly kind: 'queue'; readonly logicalId: string }
  | { readonly kind: 'lambda'; readonly logicalId: string }
  | { readonly kind: 'topic'; readonly logicalId: string }
  /** A destination outside the template (an ARN the harness cannot resolve): recorded only. */
  | { readonly kind: 'external'; readonly arn: string };

/** One notification configuration of one bucket, as deployed. */
export interface NotificationRule {
  readonly bucket: string;
  readonly id?: string;
  /** S3 event types, e.g. `s3:ObjectCreated:*`. */
  readonly events: readonly string[];
  readonly prefix: string;
  readonly suffix: string;
  readonly target: NotificationTarget;
}

/**
 * Reads every bucket notification configuration of the template: `Custom::S3BucketNotifications`
 * (what CDK emits for owned and imported buckets) and `AWS::S3::Bucket` NotificationConfiguration.
 */
export function notificationRulesFromTemplate(model: TemplateModel): NotificationRule[] {
  const rules: NotificationRule[] = [];
  const configurations: { bucket: string; configuration: NotificationConfiguration }[] = [];
  for (const [, resource] of model.resourcesOfType('Custom::S3BucketNotifications')) {
    const props = model.resolve(resource.Properties ?? {}) as {
      BucketName?: string;
      NotificationConfiguration?: NotificationConfiguration;
    };
    if (props.BucketName !== undefined && props.NotificationConfiguration !== undefined) {
      configurations.push({ bucket: props.BucketName, configuration: props.NotificationConfiguration });
    }
  }
  for (const [logicalId, resource] of model.resourcesOfType('AWS::S3::Bucket')) {
    const configuration = resource.Properties?.NotificationConfiguration;
    if (configuration !== undefined) {
      configurations.push({
        bucket: model.physicalName(logicalId),
        configuration: model.resolve(configuration) as NotificationConfiguration,
      });
    }
  }
  const kinds = [
    ['QueueConfigurations', 'QueueArn', 'Queue', 'queue', 'AWS::SQS::Queue'],
    ['LambdaFunctionConfigurations', 'LambdaFunctionArn', 'Function', 'lambda', 'AWS::Lambda::Function'],
    ['TopicConfigurations', 'TopicArn', 'Topic', 'topic', 'AWS::SNS::Topic'],
  ] as const;
  for (const { bucket, configuration } of configurations) {
    for (const [listName, arnKey, altKey, kind, type] of kinds) {
      for (const entry of configuration[listName] ?? []) {
        const arn = String(entry[arnKey] ?? entry[altKey] ?? '');
        const events = entry.Events ?? (entry.Event === undefined ? [] : [entry.Event]);
        const filterRules = entry.Filter?.Key?.FilterRules ?? entry.Filter?.S3Key?.Rules ?? [];
        const rule = (name: string) => filterRules.find((r) => r.Name.toLowerCase() === name)?.Value ?? '';
        const logicalId = model.findResource(type, arn);
        rules.push({
          bucket,
          id: entry.Id,
          events,
          prefix: rule('prefix'),
          suffix: rule('suffix'),
          target: logicalId === undefined ? { kind: 'external', arn } : { kind, logicalId },
        });
      }
    }
  }
  return rules;
}

interface NotificationEntry {
  Id?: string;
  Events?: string[];
  Event?: string;
  Filter?: {
    Key?: { FilterRules?: { Name: string; Value: string }[] };
    S3Key?: { Rules?: { Name: string; Value: string }[] };
  };
  QueueArn?: string;
  Queue?: string;
  LambdaFunctionArn?: string;
  Function?: string;
  TopicArn?: string;
  Topic?: string;
}
interface NotificationConfiguration {
  QueueConfigurations?: NotificationEntry[];
  LambdaFunctionConfigurations?: NotificationEntry[];
  TopicConfigurations?: NotificationEntry[];
}

/** Whether a rule takes this event (type wildcard, prefix and suffix on the raw key, like S3). */
export function ruleMatches(
  rule: NotificationRule,
  bucket: string,
  eventName: string,
  rawKey: string,
): boolean {
  if (rule.bucket !== bucket) return false;
  if (!rawKey.startsWith(rule.prefix) || !rawKey.endsWith(rule.suffix)) return false;
  const full = `s3:${eventName}`;
  return rule.events.some((pattern) =>
    pattern.endsWith('*') ? full.startsWith(pattern.slice(0, -1)) : full === pattern,
  );
}

/**
 * A key as S3 writes it into notifications: form-URL-encoded (space → `+`, `+` → `%2B`, `=` →
 * `%3D`, parentheses and other reserved characters percent-encoded) with `/` kept. Handlers must
 * `decodeURIComponent(key.replace(/\+/g, ' '))`.
 */
export function encodeS3EventKey(key: string): string {
  return encodeURIComponent(key)
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
    .replaceAll('%20', '+')
    .replaceAll('%2F', '/');
}

/** Options of the record builder. */
export interface S3RecordContext {
  readonly region: string;
  /** Looks up the current ETag (without quotes) of an object, for copies s3rver reports without one. */
  readonly etagOf: (bucket: string, key: string) => Promise<string | undefined>;
  /** A fresh, increasing sequencer. */
  readonly nextSequencer: () => string;
}

/** One s3rver record (raw key) or a harness-observed batch delete, before translation. */
export interface RawS3Event {
  readonly eventName: string;
  readonly eventTime: string;
  readonly bucket: string;
  readonly key: string;
  readonly size?: number;
  readonly eTag?: string;
}

/** Flattens an s3rver notification into raw events. */
export function rawEventsOf(event: S3rverEvent): RawS3Event[] {
  return event.Records.map((record) => ({
    eventName: record.eventName,
    eventTime: record.eventTime,
    bucket: record.s3.bucket.name,
    key: record.s3.object.key,
    size: record.s3.object.size,
    eTag: record.s3.object.eTag,
  }));
}

/** Builds the record real S3 would send for a raw event. */
export async function toS3EventRecord(raw: RawS3Event, context: S3RecordContext): Promise<S3EventRecord> {
  const eventName =
    raw.eventName === 'ObjectCreated:Post' ? 'ObjectCreated:CompleteMultipartUpload' : raw.eventName;
  const created = eventName.startsWith('ObjectCreated:');
  const eTag = created ? (raw.eTag ?? (await context.etagOf(raw.bucket, raw.key)) ?? '') : undefined;
  const object = {
    key: encodeS3EventKey(raw.key),
    ...(created ? { size: raw.size ?? 0, eTag: (eTag ?? '').replaceAll('"', '') } : {}),
    sequencer: context.nextSequencer(),
  } as S3EventRecord['s3']['object'];
  return {
    eventVersion: '2.1',
    eventSource: 'aws:s3',
    awsRegion: context.region,
    eventTime: raw.eventTime,
    eventName,
    userIdentity: { principalId: 'AWS:LOCALCLOUD' },
    requestParameters: { sourceIPAddress: '127.0.0.1' },
    responseElements: { 'x-amz-request-id': randomHex(16), 'x-amz-id-2': randomHex(32) },
    s3: {
      s3SchemaVersion: '1.0',
      configurationId: 'local-cloud',
      bucket: {
        name: raw.bucket,
        ownerIdentity: { principalId: 'LOCALCLOUD' },
        arn: `arn:aws:s3:::${raw.bucket}`,
      },
      object,
    },
  };
}

/** Monotonic sequencers: fixed-width upper-case hex, so later events compare greater, as in S3. */
export function sequencerSource(start: bigint = BigInt(Date.now()) * 1_000_000n): () => string {
  let next = start;
  return () => {
    next += 1n;
    return next.toString(16).toUpperCase().padStart(18, '0');
  };
}

/**
 * Reports DeleteObjects (`POST /<bucket>?delete`), which s3rver handles without an event. The
 * harness listens on s3rver's HTTP server ahead of Koa and captures the response body, then calls
 * `report` with one `ObjectRemoved:Delete` per `<Deleted><Key>` as the response is sent
 * — so deletes by any client (tests, handlers) are seen. s3rver lists every requested key as
 * Deleted (existing or not), so every requested key is reported. Returns the function that stops observing.
 */
export function observeBatchDeletes(s3: RunningS3Server, report: (events: RawS3Event[]) => void): () => void {
  const httpServer = (s3.server as unknown as { httpServer?: Server }).httpServer;
  if (httpServer === undefined) return () => {};
  const listener = (request: IncomingMessage, response: ServerResponse): void => {
    if (request.method !== 'POST') return;
    const url = new URL(request.url ?? '/', 'http://local');
    const bucket = /^\/([^/]+)\/?$/.exec(url.pathname)?.[1];
    if (bucket === undefined || !url.searchParams.has('delete')) return;
    const chunks: Buffer[] = [];
    const end = response.end.bind(response) as (...args: unknown[]) => ServerResponse;
    const write = response.write.bind(response) as (...args: unknown[]) => boolean;
    const capture = (chunk: unknown): void => {
      if (typeof chunk === 'string') chunks.push(Buffer.from(chunk));
      else if (chunk instanceof Uint8Array) chunks.push(Buffer.from(chunk));
    };
    response.write = ((...args: unknown[]) => {
      capture(args[0]);
      return write(...args);
    }) as typeof response.write;
    response.end = ((...args: unknown[]) => {
      if (typeof args[0] !== 'function') capture(args[0]);
      // Reported before the bytes leave, so a client that sees the response and then drains finds it pending.
      if (response.statusCode === 200) {
        const body = Buffer.concat(chunks).toString('utf8');
        const eventTime = new Date().toISOString();
        const keys = [...body.matchAll(/<Deleted>\s*<Key>([\s\S]*?)<\/Key>/g)].map((match) =>
          decodeXml(match[1] ?? ''),
        );
        if (keys.length > 0) {
          report(
            keys.map((key) => ({
              eventName: 'ObjectRemoved:Delete',
              eventTime,
              bucket: decodeURIComponent(bucket),
              key,
            })),
          );
        }
      }
      return end(...args);
    }) as typeof response.end;
  };
  httpServer.prependListener('request', listener);
  return () => {
    httpServer.off('request', listener);
  };
}

function decodeXml(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_match, entity: string) => {
    const lower = entity.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[lower] ?? '';
  });
}

function randomHex(length: number): string {
  let out = '';
  while (out.length < length)
    out += Math.floor(Math.random() * 16)
      .toString(16)
      .toUpperCase();
  return out;
}
