// Common set-up of the profiler's unit tests: two overlapping tables, an S3 notification body, and the
// resolution of a key to a data event (what the events and accounting tests both start from).
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { normalizeSequencer, resolveEvent } from '../../../../functions/core/profiler/events.js';
import type { ResolvedEvent } from '../../../../functions/core/profiler/model.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';

export const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
// Two overlapping tables: configs refuse nesting, and the resolver still picks the longest root on its own.
export const tables = [
  ...parseTableConfigs([
    {
      name: 'events',
      bucket: 'lake',
      prefix: 'events',
      partitionColumns: ['date'],
      dateColumn: 'date',
      dateFormat: 'yyyy-MM-dd',
    },
  ]),
  ...parseTableConfigs([{ name: 'clicks', bucket: 'lake', prefix: 'events/clicks' }]),
];
export const policies = new Map(tables.map((t) => [t.name, DEFAULT_POLICY]));

export function s3Body(eventName: string, key: string, object: Record<string, unknown>): string {
  return JSON.stringify({
    Records: [
      {
        eventSource: 'aws:s3',
        eventName,
        eventTime: new Date(NOW).toISOString(),
        s3: { bucket: { name: 'lake' }, object: { key, ...object } },
      },
    ],
  });
}

export function resolved(
  key: string,
  kind: 'created' | 'removed',
  sequencer: string,
  size?: number,
): ResolvedEvent {
  const result = resolveEvent(tables, policies, {
    bucket: 'lake',
    key,
    kind,
    ...(size === undefined ? {} : { size }),
    sequencer: normalizeSequencer(sequencer),
    eventTime: NOW,
    eventName: kind,
  });
  if (result.kind !== 'data')
    throw new Error(`expected data, got ${result.kind === 'ignored' ? result.reason : result.kind}`);
  return result.event;
}
