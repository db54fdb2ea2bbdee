// The Quarantine port on an ObjectStore, for the CLI's `compact` (which has no state table): one small JSON
// object per quarantined file under the work root's `quarantine/`, read back with a (strongly consistent) listing.
import { createHash } from 'node:crypto';
import { ObjectNotFoundError } from '../core/errors.js';
import { type QuarantinedFile, quarantinedFileSchema, sortQuarantine } from '../core/quarantine.js';
import { DEFAULT_WORK_ROOT, quarantinePrefix } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Quarantine, QuarantinePartition } from '../ports/quarantine.js';

/** Encoded names longer than this are hashed: one path segment must fit a local file system's 255 bytes. */
const MAX_NAME = 200;

/**
 * `<work root>quarantine/<table>/<partition>/` with each part URI-encoded, so a partition's `/` and a
 * key's `/` stay inside one segment. The unpartitioned partition ('') is `_`: encoding never yields a bare
 * `_` for anything else but `_`, and a partition directory named `_` is hidden, never data.
 */
export function quarantinePartitionPrefix(workRoot: string, partition: QuarantinePartition): string {
  const encoded = encodeURIComponent(partition.partition);
  return `${quarantinePrefix(workRoot)}${encodeURIComponent(partition.table)}/${encoded === '' ? '_' : encoded}/`;
}

/**
 * The record's key: the URI-encoded object key, or for very long keys `%sha256-<hex>` (encodeURIComponent
 * never produces `%s`, so the two forms cannot collide). The file's own key is inside the record.
 */
export function quarantineRecordKey(workRoot: string, partition: QuarantinePartition, key: string): string {
  const encoded = encodeURIComponent(key);
  const name =
    encoded.length <= MAX_NAME ? encoded : `%sha256-${createHash('sha256').update(key).digest('hex')}`;
  return `${quarantinePartitionPrefix(workRoot, partition)}${name}.json`;
}

export interface StoreQuarantineOptions {
  /** The work root the records live in (the deployment's, beside one). @default DEFAULT_WORK_ROOT */
  readonly workRoot?: string;
}

export class StoreQuarantine implements Quarantine {
  readonly description: string;
  private readonly workRoot: string;

  constructor(
    private readonly store: ObjectStore,
    options: StoreQuarantineOptions = {},
  ) {
    this.workRoot = options.workRoot ?? DEFAULT_WORK_ROOT;
    const root = store.description.endsWith('/') ? store.description : `${store.description}/`;
    this.description = `${root}${quarantinePrefix(this.workRoot)}`;
  }

  async record(file: QuarantinedFile): Promise<void> {
    const record = quarantinedFileSchema.parse(file);
    await this.store.put(
      quarantineRecordKey(this.workRoot, record, record.key),
      JSON.stringify(record, null, 2),
      {
        contentType: 'application/json',
      },
    );
  }

  async list(partition: QuarantinePartition): Promise<QuarantinedFile[]> {
    const records = await this.readAll(quarantinePartitionPrefix(this.workRoot, partition));
    return sortQuarantine(
      records.filter((r) => r.table === partition.table && r.partition === partition.partition),
    );
  }

  async listTable(table: string): Promise<QuarantinedFile[]> {
    const records = await this.readAll(`${quarantinePrefix(this.workRoot)}${encodeURIComponent(table)}/`);
    return sortQuarantine(records.filter((r) => r.table === table));
  }

  async clear(partition: QuarantinePartition, key?: string): Promise<QuarantinedFile[]> {
    const removed = (await this.list(partition)).filter((r) => key === undefined || r.key === key);
    if (removed.length > 0) {
      await this.store.deleteMany(
        removed.map((r) => ({ key: quarantineRecordKey(this.workRoot, r, r.key) })),
      );
    }
    return removed;
  }

  /**
   * Every record under `prefix`. A record that is not valid JSON of the right shape is skipped rather than
   * failing every plan of its partition: at worst its file is planned again, fails again, and is recorded
   * anew over it.
   */
  private async readAll(prefix: string): Promise<QuarantinedFile[]> {
    const records: QuarantinedFile[] = [];
    for await (const object of this.store.listAll(prefix)) {
      if (!object.key.endsWith('.json')) continue;
      let parsed: ReturnType<typeof quarantinedFileSchema.safeParse>;
      try {
        parsed = quarantinedFileSchema.safeParse(
          JSON.parse(new TextDecoder().decode(await this.store.get(object.key))),
        );
      } catch (err) {
        // Removed between the listing and the read, or not JSON: nothing to honour. Anything else is real.
        if (err instanceof ObjectNotFoundError || err instanceof SyntaxError) continue;
        throw err;
      }
      if (parsed.success) records.push(parsed.data);
    }
    return records;
  }
}
