// Ordered prefetch of a group's inputs: many GETs in flight to hide per-request latency, bounded by
// a request count and by bytes held (fetched but not yet decoded), and handed out strictly in input order.

import { CorruptInputError } from '../../core/errors.js';
import type { ObjectStore } from '../../ports/object-store.js';

export interface FetchItem {
  readonly key: string;
  readonly size: number;
}

export interface FetchLimits {
  readonly maxRequestsInFlight: number;
  readonly maxBytesInFlight: number;
  readonly signal?: AbortSignal;
}

/**
 * Fetches `items` ahead of the consumer. Bytes count against the budget from request start until
 * `release()`; one item larger than the budget is still fetched alone, so progress never stops.
 */
export class OrderedFetcher {
  private next = 0;
  private consumed = 0;
  private running = 0;
  private heldBytes = 0;
  private readonly results: (Promise<Uint8Array> | undefined)[];
  bytesRead = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly items: readonly FetchItem[],
    private readonly cache: Map<string, Uint8Array>,
    private readonly limits: FetchLimits,
  ) {
    this.results = new Array(items.length);
    this.pump();
  }

  private pump(): void {
    while (this.next < this.items.length) {
      const item = this.items[this.next] as FetchItem;
      const cached = this.cache.get(item.key);
      if (cached !== undefined) {
        this.cache.delete(item.key);
        this.results[this.next] = Promise.resolve(cached);
        this.heldBytes += item.size;
        this.next++;
        continue;
      }
      const nothingHeld = this.heldBytes === 0 && this.running === 0;
      if (!nothingHeld && this.heldBytes + item.size > this.limits.maxBytesInFlight) return;
      if (this.running >= this.limits.maxRequestsInFlight) return;
      this.running++;
      this.heldBytes += item.size;
      const p = this.fetchOne(item).finally(() => {
        this.running--;
        this.pump();
      });
      p.catch(() => undefined);
      this.results[this.next] = p;
      this.next++;
    }
  }

  private async fetchOne(item: FetchItem): Promise<Uint8Array> {
    this.limits.signal?.throwIfAborted();
    const bytes = await this.store.get(item.key);
    this.bytesRead += bytes.length;
    if (bytes.length !== item.size) {
      throw new CorruptInputError(
        item.key,
        `read ${bytes.length} bytes where the plan says ${item.size} (truncated or replaced since planning; re-plan the partition)`,
      );
    }
    return bytes;
  }

  /** The next input's bytes, in input order. */
  async take(): Promise<Uint8Array> {
    const i = this.consumed++;
    const p = this.results[i];
    if (p === undefined) throw new Error(`fetcher: item ${i} was not started (release() not called?)`);
    const bytes = await p;
    this.results[i] = undefined;
    return bytes;
  }

  /** Returns an item's bytes to the budget once decoded. */
  release(size: number): void {
    this.heldBytes -= size;
    this.pump();
  }
}
