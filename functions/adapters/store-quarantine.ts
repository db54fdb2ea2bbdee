// The Quarantine port on an ObjectStore, for the CLI's `compact` (which has no state table): one small JSON
// object per quarantined file under `_lake-compactor/quarantine/`, read back with a (strongly consistent) listing.
import { createHash } from 'node:crypto';
import { ObjectNotFoundError } from '../core/errors.js';
import { type QuarantinedFile, quarantinedFileSchema, sortQuarantine } from '../core/quarantine.js';
import { WORK_ROOT } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { Quarantine, QuarantinePartition } from '../ports/quarantine.js';

/** Root of the records, beside (never inside) `_lake-compactor/journal/`, staging, trash and plans. */
export const QUARANTINE_PREFIX = `${WORK_ROOT}quarantine/`;

/** Encoded names longer than this are hashed: one path segment must fit a local file system's 255 bytes. */
const MAX_NAME = 200;

/**
 * `_lake-compactor/quarantine/<table>/<partition>/` with each part URI-encoded, so a partition's `/` and a
 * key's `/` stay inside one segment. The unpartitioned partition ('') is `_`: encoding never yields a bare
 * `_` for anything else but `_`, and a partition directory named `_` is hidden, never data.
 */
export function quarantinePartitionPrefix(partition: QuarantinePartition): string {
  const encoded = encodeURIComponent(partition.partition);
  return `${QUARANTINE_PREFIX}${encodeURIComponent(partition.table)}/${encoded === '' ? '_' : encoded}/`;
}

/**
 * The record's key: the URI-encoded object key, or for very long keys `%sha256-<hex>` (encodeURIComponent
 * never produces `%s`, so the two forms cannot collide). The file's own key is inside the record.
 */
export function quarantineRecordKey(partition: QuarantinePartition, key: string): string {
  const encoded = encodeURIComponent(key);
  const name =
    encoded.length <= MAX_NAME ? encoded : `%sha256-${createHash('sha256').update(key).digest('hex')}`;
  return `${quarantinePartitionPrefix(partition)}${name}.json`;
}

export class StoreQuarantine implements Quarantine {
  readonly description: string;

  constructor(private readonly store: ObjectStore) {
    const root = store.description.endsWith('/') ? store.description : `${store.description}/`;
    this.description = `${root}${QUARANTINE_PREFIX}`;
  }

  async record(file: QuarantinedFile): Promise<void> {
    const record = quarantinedFileSchema.parse(file);
    await this.store.put(quarantineRecordKey(record, record.key), JSON.stringify(record, null, 2), {
      contentType: 'application/json',
    });
  }

  async list(partition: QuarantinePartition): Promise<QuarantinedFile[]> {
    const records = await this.readAll(quarantinePartitionPrefix(partition));
    return sortQuarantine(
      records.filter((r) => r.table === partition.table && r.partition === partition.partition),
    );
  }

  async listTable(table: string): Promise<QuarantinedFile[]> {
    const records = await this.readAll(`${QUARANTINE_PREFIX}${encodeURIComponent(table)}/`);
    return sortQuarantine(records.filter((r) => r.table === table));
  }

  async clear(partition: QuarantinePartition, key?: string): Promise<QuarantinedFile[]> {
    const removed = (await this.list(partition)).filter((r) => key === undefined || r.key === key);
    if (removed.length > 0) {
      await this.store.deleteMany(removed.map((r) => ({ key: quarantineRecordKey(r, r.key) })));
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
