// An in-memory PartitionLeases with the DynamoDB adapter's rules (idle or scheduled at the request's
// generation → compacting; the holder's retry succeeds; release only by the holder): tests, the local CLI run.
import { LeaseHeldError } from '../core/errors.js';
import type { PartitionRef } from '../core/profiler.js';
import type {
  LayoutChange,
  LeaseGrant,
  LeaseRequest,
  PartitionLeases,
  RunHistory,
} from '../core/workflow/ports.js';

interface Item {
  state: 'idle' | 'scheduled' | 'compacting';
  generation: number;
  holder?: string;
  lastWriteAt?: number;
  lastCompactedAt?: number;
}

export class MemoryLeases implements PartitionLeases {
  readonly items = new Map<string, Item>();
  readonly history: RunHistory[] = [];
  readonly changes: LayoutChange[] = [];

  item(ref: PartitionRef): Item {
    const id = `${ref.table}#${ref.partition}`;
    let item = this.items.get(id);
    if (item === undefined) {
      item = { state: 'idle', generation: 0 };
      this.items.set(id, item);
    }
    return item;
  }

  async acquire(ref: PartitionRef, request: LeaseRequest): Promise<LeaseGrant> {
    const item = this.item(ref);
    const grant = (): LeaseGrant => ({
      runId: request.runId,
      generation: item.generation,
      acquiredAt: request.now,
      ...(item.lastWriteAt === undefined ? {} : { lastWriteAt: item.lastWriteAt }),
    });
    if (item.state === 'compacting' && item.holder === request.runId) return grant();
    const free =
      item.state === 'idle' ||
      (request.generation !== undefined &&
        item.state === 'scheduled' &&
        item.generation === request.generation);
    if (!free) throw new LeaseHeldError(`held by ${item.holder ?? '?'}`);
    if (request.generation === undefined) item.generation += 1;
    item.state = 'compacting';
    item.holder = request.runId;
    return grant();
  }

  async lastWriteAt(ref: PartitionRef): Promise<number | undefined> {
    return this.item(ref).lastWriteAt;
  }

  async release(
    ref: PartitionRef,
    runId: string,
    patch: { readonly lastCompactedAt?: number },
  ): Promise<boolean> {
    const item = this.item(ref);
    if (item.state === 'idle' || item.holder !== runId) return false;
    item.state = 'idle';
    delete item.holder;
    if (patch.lastCompactedAt !== undefined) item.lastCompactedAt = patch.lastCompactedAt;
    return true;
  }

  async applyLayoutChange(_ref: PartitionRef, change: LayoutChange): Promise<void> {
    this.changes.push(change);
  }

  async putHistory(item: RunHistory): Promise<void> {
    this.history.push(item);
  }
}
