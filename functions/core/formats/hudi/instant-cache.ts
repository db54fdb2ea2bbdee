// The decoded commit metadata of completed instants, kept by a warm function across its reads of a table. Every read
// of a Hudi table decodes each completed write on the active timeline (what a partition's slices and delta-commit
// count are follows from all of them), so without it the profiler's read of one commit event GETs the whole active
// timeline again. An instant file is keyed by its store and key and the ETag the timeline's listing gave it: a file
// written again under the same name (a repaired or re-completed instant) has another ETag and is read afresh, so an
// entry is never stale, only unused. Bounded by the files' sizes; the least recently used go first.
import type { HudiCommitMetadata, InstantMetadataCache } from './timeline.js';

/** The default bound: the summed sizes of the instant files whose decoded metadata is kept. */
export const DEFAULT_INSTANT_CACHE_BYTES = 32 * 1024 * 1024;

export class HudiInstantCache implements InstantMetadataCache {
  private readonly entries = new Map<
    string,
    { readonly etag: string; readonly metadata: HudiCommitMetadata; readonly bytes: number }
  >();
  private held = 0;

  /** @param maxBytes the summed instant-file sizes kept at most; a larger single file is not kept. */
  constructor(readonly maxBytes = DEFAULT_INSTANT_CACHE_BYTES) {}

  /** The decoded metadata of `key` as it was at `etag`, or undefined (never read, evicted, or another ETag). */
  get(key: string, etag: string): HudiCommitMetadata | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined || entry.etag !== etag) return undefined;
    // Most recently used last: eviction takes the first.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.metadata;
  }

  /** Keeps `metadata` decoded from `key` at `etag` (`bytes`: the file's size), evicting the least recently used. */
  set(key: string, etag: string, metadata: HudiCommitMetadata, bytes: number): void {
    const old = this.entries.get(key);
    if (old !== undefined) {
      this.entries.delete(key);
      this.held -= old.bytes;
    }
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { etag, metadata, bytes });
    this.held += bytes;
    for (const [k, v] of this.entries) {
      if (this.held <= this.maxBytes) break;
      this.entries.delete(k);
      this.held -= v.bytes;
    }
  }

  /** How many instants' metadata are kept. */
  get size(): number {
    return this.entries.size;
  }
}
