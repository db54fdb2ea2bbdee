// An in-memory Quarantine with the port's semantics (record replaces by key, lists sorted), for unit tests;
// records are copied in and out so callers cannot change what is stored.
import { type QuarantinedFile, sortQuarantine } from '../core/quarantine.js';
import type { Quarantine, QuarantinePartition } from '../ports/quarantine.js';

export class MemoryQuarantine implements Quarantine {
  readonly description = 'memory';
  private readonly records = new Map<string, QuarantinedFile>();

  async record(file: QuarantinedFile): Promise<void> {
    this.records.set(id(file, file.key), { ...file });
  }

  async list(partition: QuarantinePartition): Promise<QuarantinedFile[]> {
    return sortQuarantine(
      [...this.records.values()].filter(
        (r) => r.table === partition.table && r.partition === partition.partition,
      ),
    ).map((r) => ({ ...r }));
  }

  async listTable(table: string): Promise<QuarantinedFile[]> {
    return sortQuarantine([...this.records.values()].filter((r) => r.table === table)).map((r) => ({ ...r }));
  }

  async clear(partition: QuarantinePartition, key?: string): Promise<QuarantinedFile[]> {
    const removed = (await this.list(partition)).filter((r) => key === undefined || r.key === key);
    for (const r of removed) this.records.delete(id(r, r.key));
    return removed;
  }
}

function id(partition: QuarantinePartition, key: string): string {
  return JSON.stringify([partition.table, partition.partition, key]);
}
