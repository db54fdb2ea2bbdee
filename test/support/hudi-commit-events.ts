// Test helper: the commit events S3 raises for a Hudi table's completed instants, as the profiler resolves them, and
// the completed write instants on the table's timeline (one event each) — for the profiler's Hudi tests.
import type { Policy } from '../../functions/core/policy.js';
import { type CommitEvent, resolveEvent } from '../../functions/core/profiler/events.js';
import type { TableConfig } from '../../functions/core/table-config.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';

/** The timeline folder of a table at `root` (version 6: `.hoodie/`; 8+: `.hoodie/timeline/`), ending with `/`. */
export function timelineFolder(root: string, version: 6 | 8): string {
  return `${root}/${version === 6 ? '.hoodie' : '.hoodie/timeline'}/`;
}

/**
 * The maker of commit events for the table at `root` of bucket `lake` among `tables`: each event the one S3 sends for
 * the completed instant file `name` at `eventTime`, its sequencer one more than the last.
 */
export function commitEventsOf(
  tables: readonly TableConfig[],
  policies: ReadonlyMap<string, Policy>,
  root: string,
  eventTime: number,
): (version: 6 | 8, name: string) => CommitEvent {
  let sequence = 0;
  return (version, name) => {
    sequence += 1;
    const resolution = resolveEvent(tables, policies, {
      bucket: 'lake',
      key: `${timelineFolder(root, version)}${name}`,
      kind: 'created',
      size: 1024,
      sequencer: sequence.toString(16).toUpperCase().padStart(32, '0'),
      eventTime,
      eventName: 'ObjectCreated:Put',
    });
    if (resolution.kind !== 'commit') throw new Error(`expected a commit event for ${name}`);
    return resolution;
  };
}

/** The completed instant files of `actions` on the timeline of the table at `root`, oldest first. */
export async function completedInstantNames(
  store: ObjectStore,
  root: string,
  version: 6 | 8,
  actions: readonly string[] = ['commit', 'deltacommit', 'replacecommit'],
): Promise<string[]> {
  const folder = timelineFolder(root, version);
  const pattern = new RegExp(`^\\d{17}(_\\d{17})?\\.(${actions.join('|')})$`);
  const names: string[] = [];
  for await (const o of store.listAll(folder)) {
    const name = o.key.slice(folder.length);
    if (pattern.test(name)) names.push(name);
  }
  return names.sort();
}
