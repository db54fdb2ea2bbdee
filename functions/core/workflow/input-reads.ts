// Which object the rewrite read of each input, learnt from the reads' own responses (no extra request): every GET
// of an input names the ETag and version id of the bytes it returned, so the group knows what it rewrote.
import type { JournalInput } from '../../ports/journal.js';
import type { ByteRange, ObjectStore, ReadBytes } from '../../ports/object-store.js';

/** What the reads of one input returned: one object (ETag and version), or objects that differ. */
export type InputRead =
  | { readonly kind: 'one'; readonly etag: string; readonly versionId?: string }
  | { readonly kind: 'differing'; readonly etags: readonly string[] };

export interface InputReads {
  /** The store to read the inputs through: reads of them are recorded, everything else passes as it is. */
  readonly store: ObjectStore;
  /** What the reads of `key` returned; undefined when it was not read through `store.read` (see below). */
  readOf(key: string): InputRead | undefined;
}

/**
 * Wraps `store` so that every GET of one of `keys` goes through `store.read` and records the ETag and version id
 * its response names. A store without `read` is returned as it is and nothing is recorded: callers then learn
 * versions as before (a HEAD at the commit). Reads of other keys (the engine's own staging, a format's delete
 * files) are not recorded. Nothing is sent that the unwrapped store would not have sent.
 */
export function recordInputReads(store: ObjectStore, keys: Iterable<string>): InputReads {
  const read = store.read?.bind(store);
  if (read === undefined) return { store, readOf: () => undefined };
  const wanted = new Set(keys);
  const seen = new Map<string, InputRead>();
  const note = (key: string, got: ReadBytes): Uint8Array => {
    const before = seen.get(key);
    if (before === undefined) {
      seen.set(key, {
        kind: 'one',
        etag: got.etag,
        ...(got.versionId === undefined ? {} : { versionId: got.versionId }),
      });
    } else if (before.kind === 'one' && (before.etag !== got.etag || before.versionId !== got.versionId)) {
      seen.set(key, { kind: 'differing', etags: [before.etag, got.etag] });
    }
    return got.bytes;
  };
  const readRecorded = async (key: string, range?: ByteRange): Promise<Uint8Array> =>
    note(key, await read(key, range));
  const wrapped: ObjectStore = {
    description: store.description,
    list: (prefix, options) => store.list(prefix, options),
    listAll: (prefix) => store.listAll(prefix),
    head: (key) => store.head(key),
    getRange: (key, start, endInclusive) =>
      wanted.has(key) ? readRecorded(key, { start, endInclusive }) : store.getRange(key, start, endInclusive),
    get: (key) => (wanted.has(key) ? readRecorded(key) : store.get(key)),
    read: async (key, range) => {
      const got = await read(key, range);
      if (wanted.has(key)) note(key, got);
      return got;
    },
    put: (key, body, options) => store.put(key, body, options),
    putStream: (key, body, options) => store.putStream(key, body, options),
    copy: (source, destination, options) => store.copy(source, destination, options),
    deleteMany: (refs) => store.deleteMany(refs),
  };
  // Optional capabilities stay optional: a store without them keeps its callers on their fallback paths.
  if (store.putComposed !== undefined) wrapped.putComposed = store.putComposed.bind(store);
  if (store.listMultipartUploads !== undefined)
    wrapped.listMultipartUploads = store.listMultipartUploads.bind(store);
  if (store.abortMultipartUpload !== undefined)
    wrapped.abortMultipartUpload = store.abortMultipartUpload.bind(store);
  if (store.versioning !== undefined) wrapped.versioning = store.versioning.bind(store);
  return { store: wrapped, readOf: (key) => seen.get(key) };
}

/** Why the rewrite's reads show an input is not the object the group planned; undefined when they do not. */
export function readConflict(
  input: Pick<JournalInput, 'key' | 'etag'>,
  read: InputRead | undefined,
): string | undefined {
  if (read === undefined) return undefined;
  if (read.kind === 'differing') {
    return `replaced while being read (ETags ${read.etags.join(', ')} in one rewrite)`;
  }
  // An input planned without an ETag (an older journal entry) has nothing to compare with.
  if (input.etag === '' || read.etag === input.etag) return undefined;
  return `changed since planning (read at ETag ${read.etag}, planned ${input.etag})`;
}

/**
 * The group's inputs with the version each was read at, where the reads named one and it is the planned object
 * by its ETag (see {@link readConflict}, which the caller checks first): the commit's delete-versioned mode then
 * needs no HEAD per input to learn it (see formats/hive/commit.ts, `currentInputs`). A version the journal
 * already holds stays; an input planned without an ETag gets none (nothing says the version read is the planned one).
 */
export function withReadVersions(
  inputs: readonly JournalInput[],
  readOf: (key: string) => InputRead | undefined,
): JournalInput[] {
  return inputs.map((input) => {
    const read = readOf(input.key);
    if (input.versionId !== undefined || read?.kind !== 'one' || read.versionId === undefined) return input;
    if (input.etag === '' || read.etag !== input.etag) return input;
    return { ...input, versionId: read.versionId };
  });
}
