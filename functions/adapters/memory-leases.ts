// An in-memory PartitionLeases with the DynamoDB adapter's rules (idle or scheduled at the request's
// generation → compacting; the holder's retry succeeds; release only by the holder): tests, the local CLI run.
import { LeaseHeldError, PartitionNeedsAttentionError } from '../core/errors.js';
import type { Attention, PartitionRef, ReleasePatch } from '../core/profiler/model.js';
import type {
  LayoutChange,
  LeaseGrant,
  LeaseRequest,
  PartitionLeases,
  RunHistory,
} from '../core/workflow/ports.js';

interface Item {
  state: 'idle' | 'scheduled' | 'compacting' | 'needs-attention';
  generation: number;
  holder?: string;
  holderArn?: string;
  renewedAt?: number;
  attention?: Attention;
  lastWriteAt?: number;
  lastCompactedAt?: number;
  awaitedVersion?: number;
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
    const takeOver = request.takeOverFrom;
    const free =
      item.state === 'idle' ||
      (item.state === 'needs-attention' && request.settle === true) ||
      (takeOver !== undefined &&
        (item.state === 'scheduled' || item.state === 'compacting') &&
        item.holder === takeOver.runId &&
        item.generation === takeOver.generation) ||
      (request.generation !== undefined &&
        item.state === 'scheduled' &&
        item.generation === request.generation);
    if (!free && item.state === 'needs-attention') {
      throw new PartitionNeedsAttentionError(
        `Partition "${ref.partition}" of table ${ref.table} needs attention: ${item.attention?.reason ?? '?'}`,
      );
    }
    if (!free) {
      throw new LeaseHeldError(`held by ${item.holder ?? '?'}`, {
        runId: item.holder ?? '?',
        ...(item.holderArn === undefined ? {} : { executionArn: item.holderArn }),
        generation: item.generation,
        state: item.state,
        acquiredAt: 0,
      });
    }
    if (request.generation === undefined) item.generation += 1;
    item.state = 'compacting';
    item.holder = request.runId;
    if (request.executionArn === undefined) delete item.holderArn;
    else item.holderArn = request.executionArn;
    return grant();
  }

  async lastWriteAt(ref: PartitionRef): Promise<number | undefined> {
    return this.item(ref).lastWriteAt;
  }

  async holds(ref: PartitionRef, runId: string): Promise<boolean> {
    const item = this.item(ref);
    return item.state === 'compacting' && item.holder === runId;
  }

  async renew(ref: PartitionRef, runId: string, now: number): Promise<boolean> {
    const item = this.item(ref);
    if (item.state !== 'compacting' || item.holder !== runId) return false;
    item.renewedAt = now;
    return true;
  }

  async release(ref: PartitionRef, runId: string, patch: ReleasePatch): Promise<boolean> {
    const item = this.item(ref);
    if (item.state === 'idle' || item.state === 'needs-attention' || item.holder !== runId) return false;
    if (patch.attention === undefined) {
      item.state = 'idle';
      delete item.holder;
      delete item.renewedAt;
      delete item.attention;
    } else {
      item.state = 'needs-attention';
      item.attention = patch.attention;
    }
    if (patch.lastCompactedAt !== undefined) item.lastCompactedAt = patch.lastCompactedAt;
    if (patch.awaitedVersion === undefined) delete item.awaitedVersion;
    else item.awaitedVersion = patch.awaitedVersion;
    return true;
  }

  async applyLayoutChange(_ref: PartitionRef, change: LayoutChange): Promise<void> {
    this.changes.push(change);
  }

  async putHistory(item: RunHistory): Promise<void> {
    this.history.push(item);
  }
}
