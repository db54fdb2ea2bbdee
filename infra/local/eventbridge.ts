// EventBridge as the local cloud needs it: the template's rules (schedules and event patterns), an
// event-pattern matcher, target input selection, and S3's EventBridge event documents.
//
// Pattern matching covers what CDK's `events.Match` emits: literal values (any of), nested objects,
// `prefix`, `suffix`, `equals-ignore-case`, `wildcard`, `anything-but` (values, prefix, suffix),
// `exists`, `numeric` and `$or`. `cidr` is not supported (never matches).
import { randomUUID } from 'node:crypto';
import type { S3EventRecord } from 'aws-lambda';
import { LocalCloudError } from './errors.js';
import type { RawS3Event } from './s3-events.js';
import type { TemplateModel } from './template.js';

/** One target of a rule, resolved. */
export interface RuleTarget {
  readonly Id: string;
  readonly Arn: string;
  readonly Input?: string;
  readonly InputPath?: string;
  readonly InputTransformer?: unknown;
}

/** An `AWS::Events::Rule` of the template. */
export interface EventRule {
  readonly logicalId: string;
  readonly arn: string;
  readonly scheduleExpression?: string;
  readonly eventPattern?: Record<string, unknown>;
  /** Bus name (`default` unless the rule names one). */
  readonly eventBusName: string;
  readonly enabled: boolean;
  readonly targets: readonly RuleTarget[];
}

/** Reads every rule of the template with resolved targets. */
export function eventRulesFromTemplate(model: TemplateModel): EventRule[] {
  return model.resourcesOfType('AWS::Events::Rule').map(([logicalId, resource]) => {
    const props = model.resolve(resource.Properties ?? {}) as {
      ScheduleExpression?: string;
      EventPattern?: Record<string, unknown> | string;
      EventBusName?: string;
      State?: string;
      Targets?: RuleTarget[];
    };
    const pattern =
      typeof props.EventPattern === 'string' ? JSON.parse(props.EventPattern) : props.EventPattern;
    const bus = props.EventBusName ?? 'default';
    return {
      logicalId,
      arn: model.arn(logicalId),
      scheduleExpression: props.ScheduleExpression,
      eventPattern: pattern as Record<string, unknown> | undefined,
      // A bus given by ARN is named by its last segment.
      eventBusName: bus.includes('/') ? bus.slice(bus.lastIndexOf('/') + 1) : bus,
      enabled: props.State === undefined || props.State === 'ENABLED',
      targets: props.Targets ?? [],
    };
  });
}

/** The document a target receives: its Input, the InputPath selection, or the event itself. */
export function targetInput(rule: EventRule, target: RuleTarget, event: unknown): unknown {
  if (target.InputTransformer !== undefined) {
    throw new LocalCloudError(
      `Rule ${rule.logicalId} target ${target.Id} uses InputTransformer, which the local cloud does not support; use Input or InputPath.`,
    );
  }
  if (target.Input !== undefined) return JSON.parse(target.Input) as unknown;
  if (target.InputPath !== undefined) return selectPath(event, target.InputPath);
  return event;
}

/** `$.a.b` on a plain object (EventBridge InputPath). */
export function selectPath(document: unknown, jsonPath: string): unknown {
  if (jsonPath === '$') return document;
  return jsonPath
    .replace(/^\$\.?/, '')
    .split('.')
    .reduce<unknown>(
      (value, key) =>
        value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[key] : undefined,
      document,
    );
}

/** Whether `event` matches an EventBridge event pattern. */
export function matchesPattern(pattern: unknown, event: unknown): boolean {
  if (pattern === null || typeof pattern !== 'object' || Array.isArray(pattern)) return false;
  for (const [key, expected] of Object.entries(pattern as Record<string, unknown>)) {
    if (key === '$or') {
      if (!Array.isArray(expected) || !expected.some((alternative) => matchesPattern(alternative, event)))
        return false;
      continue;
    }
    const value =
      event !== null && typeof event === 'object' ? (event as Record<string, unknown>)[key] : undefined;
    if (Array.isArray(expected)) {
      if (!matchesAny(expected, value)) return false;
    } else if (expected !== null && typeof expected === 'object') {
      if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
      if (!matchesPattern(expected, value)) return false;
    } else {
      return false;
    }
  }
  return true;
}

function matchesAny(conditions: readonly unknown[], value: unknown): boolean {
  const values = Array.isArray(value) ? (value as unknown[]) : [value];
  // `exists: false` and `anything-but` must hold for the field as a whole.
  return conditions.some((condition) => matchesCondition(condition, value, values));
}

function matchesCondition(condition: unknown, value: unknown, values: readonly unknown[]): boolean {
  if (condition === null || typeof condition !== 'object') {
    return value !== undefined && values.some((candidate) => candidate === condition);
  }
  const [operator, argument] = Object.entries(condition as Record<string, unknown>)[0] ?? [];
  const strings = values.filter((candidate): candidate is string => typeof candidate === 'string');
  switch (operator) {
    case 'exists':
      return (value !== undefined) === argument;
    case 'prefix':
    case 'suffix': {
      const ignoreCase = typeof argument === 'object' && argument !== null;
      const text = String(
        ignoreCase ? (argument as Record<string, unknown>)['equals-ignore-case'] : argument,
      );
      const needle = ignoreCase ? text.toLowerCase() : text;
      return strings.some((candidate) => {
        const haystack = ignoreCase ? candidate.toLowerCase() : candidate;
        return operator === 'prefix' ? haystack.startsWith(needle) : haystack.endsWith(needle);
      });
    }
    case 'equals-ignore-case':
      return strings.some((candidate) => candidate.toLowerCase() === String(argument).toLowerCase());
    case 'wildcard': {
      const regex = new RegExp(`^${String(argument).split('*').map(escapeRegExp).join('.*')}$`, 's');
      return strings.some((candidate) => regex.test(candidate));
    }
    case 'anything-but': {
      if (value === undefined) return false;
      if (argument !== null && typeof argument === 'object' && !Array.isArray(argument)) {
        return !matchesCondition(argument, value, values);
      }
      const excluded = Array.isArray(argument) ? argument : [argument];
      return values.every((candidate) => !excluded.includes(candidate));
    }
    case 'numeric': {
      const terms = Array.isArray(argument) ? argument : [];
      return values.some((candidate) => {
        if (typeof candidate !== 'number') return false;
        for (let i = 0; i + 1 < terms.length; i += 2) {
          const bound = Number(terms[i + 1]);
          const ok =
            terms[i] === '>'
              ? candidate > bound
              : terms[i] === '>='
                ? candidate >= bound
                : terms[i] === '<'
                  ? candidate < bound
                  : terms[i] === '<='
                    ? candidate <= bound
                    : terms[i] === '='
                      ? candidate === bound
                      : false;
          if (!ok) return false;
        }
        return true;
      });
    }
    default:
      return false;
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Buckets whose notification configuration turns on EventBridge delivery. */
export function eventBridgeBucketsFromTemplate(model: TemplateModel): Set<string> {
  const buckets = new Set<string>();
  for (const [, resource] of model.resourcesOfType('Custom::S3BucketNotifications')) {
    const props = model.resolve(resource.Properties ?? {}) as {
      BucketName?: string;
      NotificationConfiguration?: { EventBridgeConfiguration?: unknown };
    };
    if (
      props.BucketName !== undefined &&
      props.NotificationConfiguration?.EventBridgeConfiguration !== undefined
    ) {
      buckets.add(props.BucketName);
    }
  }
  for (const [logicalId, resource] of model.resourcesOfType('AWS::S3::Bucket')) {
    const configuration = resource.Properties?.NotificationConfiguration as
      | { EventBridgeConfiguration?: { EventBridgeEnabled?: boolean } }
      | undefined;
    if (
      configuration?.EventBridgeConfiguration?.EventBridgeEnabled !== false &&
      configuration?.EventBridgeConfiguration
    ) {
      buckets.add(model.physicalName(logicalId));
    }
  }
  return buckets;
}

/**
 * The EventBridge document S3 sends for an object event (`Object Created` / `Object Deleted`),
 * with the key encoded as in notifications (`record.s3.object.key`).
 */
export function s3EventBridgeEvent(
  raw: RawS3Event,
  record: S3EventRecord,
  environment: { readonly accountId: string; readonly region: string },
): Record<string, unknown> {
  const created = record.eventName.startsWith('ObjectCreated:');
  const reason = created
    ? ({
        Put: 'PutObject',
        Post: 'PostObject',
        Copy: 'CopyObject',
        CompleteMultipartUpload: 'CompleteMultipartUpload',
      }[record.eventName.slice('ObjectCreated:'.length)] ?? 'PutObject')
    : 'DeleteObject';
  const object = record.s3.object as { key: string; size?: number; eTag?: string; sequencer: string };
  return {
    version: '0',
    id: randomUUID(),
    'detail-type': created ? 'Object Created' : 'Object Deleted',
    source: 'aws.s3',
    account: environment.accountId,
    time: `${raw.eventTime.slice(0, 19)}Z`,
    region: environment.region,
    resources: [`arn:aws:s3:::${raw.bucket}`],
    detail: {
      version: '0',
      bucket: { name: raw.bucket },
      object: {
        key: object.key,
        ...(created ? { size: object.size ?? 0, etag: object.eTag ?? '' } : {}),
        sequencer: object.sequencer,
      },
      'request-id': record.responseElements['x-amz-request-id'],
      requester: environment.accountId,
      'source-ip-address': '127.0.0.1',
      reason,
      ...(created ? {} : { 'deletion-type': 'Permanently Deleted' }),
    },
  };
}

/** The EventBridge envelope of a PutEvents entry. */
export function putEventsEnvelope(
  entry: {
    readonly source?: string;
    readonly detailType?: string;
    readonly detail: unknown;
    readonly resources?: readonly string[];
    readonly eventId: string;
    readonly time: Date;
  },
  environment: { readonly accountId: string; readonly region: string },
): Record<string, unknown> {
  return {
    version: '0',
    id: entry.eventId,
    'detail-type': entry.detailType,
    source: entry.source,
    account: environment.accountId,
    time: `${entry.time.toISOString().slice(0, 19)}Z`,
    region: environment.region,
    resources: entry.resources ?? [],
    detail: entry.detail ?? {},
  };
}
