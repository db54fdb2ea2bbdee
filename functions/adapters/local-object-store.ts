// ObjectStore over a local folder with S3's semantics where they matter: byte-order paged listing,
// atomic writes (readers never see half a file), atomic put-if-absent and copy-if-match, no empty dirs;
// in-flight writes live in the hidden work area (the work root's `tmp/`), never beside table files.

import { createHash, randomUUID } from 'node:crypto';
import { type BigIntStats, closeSync, constants, fstatSync, openSync, readSync, realpathSync } from 'node:fs';
import {
  type FileHandle,
  link,
  lstat,
  mkdir,
  open,
  readdir,
  rename,
  rmdir,
  stat,
  unlink,
} from 'node:fs/promises';
import { hostname } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import pLimit from 'p-limit';
import { InvalidInputError, ObjectNotFoundError, PreconditionFailedError } from '../core/errors.js';
import { printable } from '../core/keys.js';
import { DEFAULT_WORK_ROOT, tempPrefix } from '../core/workflow/layout.js';
import type {
  CopyOptions,
  DeleteRef,
  DeleteResult,
  ListOptions,
  ListPage,
  ObjectInfo,
  ObjectStore,
  PutOptions,
  PutStreamOptions,
} from '../ports/object-store.js';
import { assertByteRange, followPages, listPage, sortByKey, unsatisfiableRange } from './listing.js';

/**
 * Name prefix of the in-flight writes of earlier versions, which made them beside the target (inside
 * partition folders) and could leave them there when killed. Such files never appear in listings and
 * are not valid keys to write; they can be deleted by key (`vacuum` removes them by age).
 */
export const LEGACY_TEMP_FILE_PREFIX = '.lake-compactor-tmp-';

/** This host as it appears in temp-file names (no dots, so the name splits back unambiguously). */
export const TEMP_FILE_HOST = hostname().replace(/[^A-Za-z0-9-]/g, '_') || 'localhost';

const DAY_MS = 86_400_000;

/**
 * Reads of at most this many bytes are made with the synchronous file calls. A promise-based read is
 * four thread-pool round trips (open, fstat, read, close): ~200 µs of CPU per read on the 2-core CI
 * machine against ~12 µs synchronously — for a streaming writer's tiny files that was 13 % of a
 * compaction's CPU (docs/engine.md, "Tiny files"). Blocking the event loop for a read this small from
 * a local disk costs less than the hops; larger reads stay asynchronous so a slow disk does not stall it.
 */
export const SYNC_READ_MAX_BYTES = 1024 * 1024;

/** `<host>.<pid>.<uuid>`: whose write it is, so a later process can tell a dead writer's leftovers. */
function tempName(): string {
  return `${TEMP_FILE_HOST}.${process.pid}.${randomUUID()}`;
}

/** The host and process of a temp file's writer, or undefined for a name this store did not make. */
export function parseTempName(name: string): { host: string; pid: number } | undefined {
  const match =
    /^([A-Za-z0-9_-]+)\.(\d+)\.[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.exec(name);
  return match ? { host: match[1] as string, pid: Number(match[2]) } : undefined;
}

/** Whether a process of this host is alive (EPERM: alive, but another user's). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return errno(error) === 'EPERM';
  }
}

/** A temp file of the work area that a process left behind, and why it may go. */
export interface StaleTempFile {
  readonly key: string;
  readonly reason: string;
}

/** How long a folder found free of links leaving the root is trusted before it is resolved again. */
const LINK_CHECK_TTL_MS = 1_000;

/** Concurrent stat() calls when describing a listing page. */
const STAT_CONCURRENCY = 32;
/** Concurrent unlink() calls in deleteMany. */
const UNLINK_CONCURRENCY = 16;

type ErrnoError = NodeJS.ErrnoException;

/** Up to `length` bytes of `fd` from `position`, synchronously; fewer only where the file ends sooner. */
function readSyncFrom(fd: number, position: number, length: number): Uint8Array {
  const buffer = new Uint8Array(length);
  let offset = 0;
  while (offset < length) {
    const bytesRead = readSync(fd, buffer, offset, length - offset, position + offset);
    if (bytesRead === 0) break;
    offset += bytesRead;
  }
  return offset === length ? buffer : buffer.subarray(0, offset);
}

function errno(error: unknown): string | undefined {
  return (error as ErrnoError | undefined)?.code;
}

async function unlinkIfPresent(path: string): Promise<'deleted' | 'missing'> {
  try {
    await unlink(path);
    return 'deleted';
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return 'missing';
    throw error;
  }
}

/**
 * ETag of a local file: md5 of `(size, mtimeNs, ino, dev)`, not of the content.
 *
 * Why: listing must describe every object on a page, and hashing content would read every byte of
 * every listed file (a partition of 180,000 files, or gigabytes, just to list it). Every write of
 * this store replaces the file (write to a temp file, then rename/link), which gives a new inode
 * and mtime, so the ETag changes whenever content changes. Consequences: (1) a rewrite with
 * identical bytes still gets a new ETag, so a conditional copy planned before it fails safely
 * (PreconditionFailedError, re-plan) rather than wrongly succeeding; (2) a copy's ETag differs
 * from its source's (S3 keeps the md5), so callers must use the ETag that `copy()` returns;
 * (3) ETags are not md5 of the content, so never compare them with S3 ETags; (4) an external
 * program editing a file in place within one mtime tick without changing its size would go
 * unnoticed — nanosecond mtimes make that practically impossible on ext4/xfs/apfs.
 */
function etagOf(stats: BigIntStats): string {
  return createHash('md5').update(`${stats.size}:${stats.mtimeNs}:${stats.ino}:${stats.dev}`).digest('hex');
}

function infoOf(key: string, stats: BigIntStats): ObjectInfo {
  return {
    key,
    size: Number(stats.size),
    etag: etagOf(stats),
    lastModified: new Date(Number(stats.mtimeMs)),
    storageClass: 'STANDARD',
  };
}

/**
 * Serialises check-then-publish sections per file path within this process (every store instance on
 * the same folder shares it), so conditional writes of one process cannot both pass their check.
 */
const pathLocks = new Map<string, Promise<void>>();

async function withPathLock<T>(path: string, section: () => Promise<T>): Promise<T> {
  const previous = pathLocks.get(path) ?? Promise.resolve();
  let release: () => void = () => {};
  const current = new Promise<void>((done) => {
    release = done;
  });
  const tail = previous.then(() => current);
  pathLocks.set(path, tail);
  await previous;
  try {
    return await section();
  } finally {
    release();
    if (pathLocks.get(path) === tail) pathLocks.delete(path);
  }
}

/**
 * Keys are `/`-separated paths relative to the root folder. A local folder cannot hold what S3 can
 * in a few cases, and those keys are refused with InvalidInputError: empty segments (`a//b`, a
 * trailing `/`), `.`/`..` segments (which would escape or alias the root), NUL bytes, a key whose path goes
 * through a symbolic link to outside the root, and a key that is also the "directory" of another key (`a` and
 * `a/b`).
 */
export class LocalObjectStore implements ObjectStore {
  readonly description: string;
  readonly root: string;
  /** Key prefix of in-flight writes: the work root's `tmp/` (see core/workflow/layout.ts). */
  readonly tempPrefix: string;
  /** Where in-flight writes are made: `<root>/<tempPrefix>` (same filesystem as every key). */
  private readonly tempDir: string;
  /** The root's real path (links resolved), for the link check; resolved on first use (the folder may not exist yet). */
  private resolvedRoot: string | undefined;
  /** Folders whose path was found free of links leaving the root, and when (see `checkFolders`). */
  private readonly checkedFolders = new Map<string, number>();

  /** `options.workRoot`: the work root whose `tmp/` holds in-flight writes (default `_lake-compactor/`). */
  constructor(rootDir: string, options: { readonly workRoot?: string } = {}) {
    this.root = resolve(rootDir);
    this.description = this.root;
    this.tempPrefix = tempPrefix(options.workRoot ?? DEFAULT_WORK_ROOT);
    this.tempDir = join(this.root, ...this.tempPrefix.split('/').filter(Boolean));
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    const keys = await this.walk(prefix, options.delimiter);
    const page = listPage(sortByKey(keys.map((key) => ({ key }))), {
      prefix,
      delimiter: options.delimiter,
      token: options.token,
      maxKeys: options.maxKeys,
    });
    const limit = pLimit(STAT_CONCURRENCY);
    const described = await Promise.all(page.objects.map(({ key }) => limit(() => this.head(key))));
    const objects = described.filter((info): info is ObjectInfo => info !== undefined);
    return page.nextToken === undefined
      ? { objects, commonPrefixes: page.commonPrefixes }
      : { objects, commonPrefixes: page.commonPrefixes, nextToken: page.nextToken };
  }

  listAll(prefix: string): AsyncIterable<ObjectInfo> {
    return followPages((token) => this.list(prefix, token === undefined ? {} : { token }));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    const path = this.pathOf(key);
    try {
      let stats = await lstat(path, { bigint: true });
      if (stats.isSymbolicLink()) {
        this.refuseEscapingLink(key, path);
        stats = await stat(path, { bigint: true });
      }
      return stats.isFile() ? infoOf(key, stats) : undefined;
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return undefined;
      throw error;
    }
  }

  async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    assertByteRange(key, start, endInclusive);
    if (endInclusive - start < SYNC_READ_MAX_BYTES) return this.getRangeSync(key, start, endInclusive);
    const handle = await this.openExisting(key);
    try {
      const size = Number((await handle.stat({ bigint: true })).size);
      if (start >= size) throw unsatisfiableRange(key, start, size);
      const length = Math.min(endInclusive, size - 1) - start + 1;
      const buffer = new Uint8Array(length);
      let offset = 0;
      while (offset < length) {
        const { bytesRead } = await handle.read(buffer, offset, length - offset, start + offset);
        if (bytesRead === 0) break;
        offset += bytesRead;
      }
      return offset === length ? buffer : buffer.subarray(0, offset);
    } finally {
      await handle.close();
    }
  }

  /** `getRange` for a small range (see SYNC_READ_MAX_BYTES): the same checks and clamping, no thread-pool hops. */
  private getRangeSync(key: string, start: number, endInclusive: number): Uint8Array {
    const fd = this.openExistingSync(key);
    try {
      const size = Number(fstatSync(fd, { bigint: true }).size);
      if (start >= size) throw unsatisfiableRange(key, start, size);
      return readSyncFrom(fd, start, Math.min(endInclusive, size - 1) - start + 1);
    } finally {
      closeSync(fd);
    }
  }

  async get(key: string): Promise<Uint8Array> {
    try {
      // A small object in one synchronous read (see SYNC_READ_MAX_BYTES), a larger one asynchronously.
      const path = this.pathOf(key);
      const fd = this.openNoFollowSync(key, path);
      try {
        const stats = fstatSync(fd);
        if (stats.isFile() && stats.size <= SYNC_READ_MAX_BYTES) return readSyncFrom(fd, 0, stats.size);
      } finally {
        closeSync(fd);
      }
      const handle = await this.openNoFollow(key, path);
      try {
        return new Uint8Array(await handle.readFile());
      } finally {
        await handle.close();
      }
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR' || errno(error) === 'EISDIR') {
        throw new ObjectNotFoundError(key);
      }
      throw error;
    }
  }

  /**
   * Writes the whole object atomically. `ifNoneMatch: '*'` is atomic against any process (a `link` that
   * fails when the key exists). `ifMatch` is a check followed by a rename under a lock of this process:
   * atomic against this process's other writes, NOT against another process writing the same key between
   * the check and the rename — a filesystem offers no compare-and-swap of a file's content. Callers that
   * need it across processes (a journal shared by two CLIs) are not supported on a local folder.
   */
  async put(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<{ etag: string }> {
    const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
    const { etag } = await this.writeAtomically(key, options, async (handle) => {
      await handle.writeFile(bytes);
    });
    return { etag };
  }

  /** Streams into a temp file of the work area (memory bounded by one chunk), then publishes it atomically. */
  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array>,
    options: PutStreamOptions = {},
  ): Promise<{ etag: string; size: number }> {
    return this.writeAtomically(key, options, async (handle) => {
      for await (const chunk of body) {
        let offset = 0;
        while (offset < chunk.byteLength) {
          const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
          offset += bytesWritten;
        }
      }
    });
  }

  /**
   * Copies through a temp file and a rename. The ETag check and the copy read the same open file:
   * since every write replaces the file rather than editing it, the bytes copied are exactly the
   * version whose ETag matched, even if a writer replaces the source meanwhile.
   */
  async copy(
    sourceKey: string,
    destinationKey: string,
    options: CopyOptions = {},
  ): Promise<{ etag: string }> {
    this.pathOf(destinationKey, 'write');
    if (options.sourceVersionId !== undefined) {
      throw new InvalidInputError(
        `Cannot copy version ${options.sourceVersionId} of ${sourceKey}: a local folder keeps no versions; retire to a trash prefix instead`,
      );
    }
    const source = await this.openExisting(sourceKey);
    try {
      if (options.ifMatch !== undefined) {
        const etag = etagOf(await source.stat({ bigint: true }));
        if (options.ifMatch.replaceAll('"', '') !== etag) {
          throw new PreconditionFailedError(
            sourceKey,
            `Precondition failed for ${sourceKey}: its ETag is ${etag}, not ${options.ifMatch}. It changed since it was planned; re-plan.`,
          );
        }
      }
      const create = options.ifNoneMatch === undefined ? {} : { ifNoneMatch: options.ifNoneMatch };
      const { etag } = await this.writeAtomically(destinationKey, create, async (target) => {
        const buffer = new Uint8Array(1024 * 1024);
        let position = 0;
        for (;;) {
          const { bytesRead } = await source.read(buffer, 0, buffer.byteLength, position);
          if (bytesRead === 0) break;
          await target.write(buffer, 0, bytesRead);
          position += bytesRead;
        }
      });
      return { etag };
    } finally {
      await source.close();
    }
  }

  /**
   * Unlinks each key (missing ones count as deleted), then removes folders left empty, up to the
   * root. With `ifMatch`, the file is first renamed aside (atomic), its ETag checked, and on a
   * mismatch linked back (unless a writer re-created the key meanwhile, whose file then wins) and
   * reported with code PreconditionFailed — so a file replaced after the check is never deleted.
   * Version ids are ignored: a local folder keeps no versions.
   */
  async deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult> {
    const deleted: DeleteRef[] = [];
    const errors: { key: string; code: string; message: string }[] = [];
    const parents = new Set<string>();
    const limit = pLimit(UNLINK_CONCURRENCY);
    await Promise.all(
      refs.map((ref) =>
        limit(async () => {
          try {
            const path = this.pathOf(ref.key, 'delete');
            const outcome =
              ref.ifMatch === undefined ? await unlinkIfPresent(path) : await this.deleteIfMatch(path, ref);
            if (outcome === 'changed') {
              errors.push({
                key: ref.key,
                code: 'PreconditionFailed',
                message: `${ref.key} changed since it was read (ETag is no longer ${ref.ifMatch}); it was not deleted`,
              });
              return;
            }
            if (outcome === 'deleted') parents.add(dirname(path));
            deleted.push(ref);
          } catch (error) {
            errors.push({
              key: ref.key,
              code: error instanceof InvalidInputError ? 'InvalidKey' : (errno(error) ?? 'Error'),
              message: `${(error as Error).message}; check the key and permissions, then retry`,
            });
          }
        }),
      ),
    );
    // Deepest first, so a parent is tried after its children were removed.
    const ordered = [...parents].sort((a, b) => b.split(sep).length - a.split(sep).length);
    for (const folder of ordered) await this.removeEmptyFolders(folder);
    return { deleted, errors };
  }

  /**
   * A changed file is reported without being touched. A matching one is renamed aside into the temp
   * area (atomic: a writer replacing it afterwards keeps its new file), checked again, and unlinked — or,
   * if it was replaced between the check and the rename, linked back.
   */
  private async deleteIfMatch(path: string, ref: DeleteRef): Promise<'deleted' | 'missing' | 'changed'> {
    const wanted = (ref.ifMatch ?? '').replaceAll('"', '');
    return withPathLock(path, async () => {
      try {
        if (etagOf(await stat(path, { bigint: true })) !== wanted) return 'changed';
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return 'missing';
        throw error;
      }
      const aside = join(this.tempDir, tempName());
      try {
        await this.inTempDir(() => rename(path, aside));
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return 'missing';
        throw error;
      }
      try {
        if (etagOf(await stat(aside, { bigint: true })) === wanted) return 'deleted';
        await link(aside, path).catch((error: unknown) => {
          if (errno(error) !== 'EEXIST') throw error;
        });
        return 'changed';
      } finally {
        await unlink(aside).catch(() => {});
      }
    });
  }

  /**
   * Removes temp files of the work area that no live write of this host owns: those of processes of this
   * host that are no longer running (a CLI killed mid-write), and any older than `maxAgeMs` (a day by
   * default: other hosts sharing the folder, names this store did not make). Returns what it removed.
   */
  async removeStaleTempFiles(now: number, maxAgeMs: number = DAY_MS): Promise<StaleTempFile[]> {
    const stale = await this.staleTempFiles(now, maxAgeMs);
    for (const file of stale) await unlinkIfPresent(join(this.root, ...file.key.split('/')));
    return stale;
  }

  /** The temp files {@link removeStaleTempFiles} would remove, with why. */
  async staleTempFiles(now: number, maxAgeMs: number = DAY_MS): Promise<StaleTempFile[]> {
    let names: string[];
    try {
      names = await readdir(this.tempDir);
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return [];
      throw error;
    }
    const stale: StaleTempFile[] = [];
    for (const name of names.sort()) {
      let modified: number;
      try {
        modified = (await stat(join(this.tempDir, name))).mtimeMs;
      } catch {
        continue; // published or removed meanwhile
      }
      const writer = parseTempName(name);
      const key = `${this.tempPrefix}${name}`;
      if (writer !== undefined && writer.host === TEMP_FILE_HOST && !processAlive(writer.pid)) {
        stale.push({ key, reason: `temp file of process ${writer.pid}, which is no longer running` });
      } else if (now - modified >= maxAgeMs) {
        stale.push({ key, reason: `temp file written ${Math.floor((now - modified) / 3_600_000)} h ago` });
      }
    }
    return stale;
  }

  /**
   * Temp files that earlier versions left beside their targets (`.lake-compactor-tmp-*`, hidden from
   * listings) under `prefix`, as objects whose keys `deleteMany` accepts.
   */
  async legacyTempFiles(prefix = ''): Promise<ObjectInfo[]> {
    const found: ObjectInfo[] = [];
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(join(this.root, prefix), { recursive: true, withFileTypes: true });
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return [];
      throw error;
    }
    for (const entry of entries) {
      if (!entry.isFile() || !entry.name.startsWith(LEGACY_TEMP_FILE_PREFIX)) continue;
      const path = join(entry.parentPath, entry.name);
      const key = path
        .slice(this.root.length + 1)
        .split(sep)
        .join('/');
      try {
        found.push(infoOf(key, await stat(path, { bigint: true })));
      } catch {
        // removed meanwhile
      }
    }
    return sortByKey(found);
  }

  /**
   * Maps a key to its file path, refusing keys a folder cannot hold or that would leave the root. Writes
   * are also refused into the temp area and under the legacy temp-file prefix (deletes are allowed, so
   * leftovers can be removed by key).
   */
  private pathOf(key: string, use: 'read' | 'write' | 'delete' = 'read'): string {
    const segments = key.split('/');
    const bad = segments.find((s) => s === '' || s === '.' || s === '..' || s.includes('\0'));
    if (bad !== undefined || key.length === 0) {
      throw new InvalidInputError(
        `Key "${key}" cannot be stored in a local folder: keys are /-separated relative paths without empty, "." or ".." segments`,
      );
    }
    if (use !== 'delete' && (segments.at(-1) as string).startsWith(LEGACY_TEMP_FILE_PREFIX)) {
      throw new InvalidInputError(
        `Key "${key}" uses the reserved temp-file prefix ${LEGACY_TEMP_FILE_PREFIX}; rename it`,
      );
    }
    if (use === 'write' && key.startsWith(this.tempPrefix)) {
      throw new InvalidInputError(
        `Key "${key}" is in the store's temp area ${this.tempPrefix}, reserved for in-flight writes; use another key`,
      );
    }
    const path = join(this.root, ...segments);
    if (!path.startsWith(this.root + sep)) {
      throw new InvalidInputError(
        `Key "${key}" resolves outside the store root ${this.root}; use a relative key`,
      );
    }
    this.checkFolders(key, path);
    return path;
  }

  /**
   * The link check of a key's folders (see {@link refuseEscapingLink}), remembered per folder for
   * {@link LINK_CHECK_TTL_MS}: resolving a path costs several system calls, which per request would
   * double the cost of a streaming writer's tiny files. The file's own name is checked where it is used:
   * opened without following a link ({@link openNoFollow}), looked at with `lstat` (head), while a
   * rename or unlink never follows one.
   */
  private checkFolders(key: string, path: string): void {
    const dir = dirname(path);
    if (dir.length <= this.root.length) return;
    const now = Date.now();
    const at = this.checkedFolders.get(dir);
    if (at !== undefined && now - at < LINK_CHECK_TTL_MS) return;
    const exists = this.refuseEscapingLink(key, dir);
    if (this.checkedFolders.size > 10_000) this.checkedFolders.clear();
    if (exists) this.checkedFolders.set(dir, now);
  }

  /** Opens `path` for reading without following a link as its last name; a link is checked, then followed. */
  private openNoFollowSync(key: string, path: string): number {
    try {
      return openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      if (errno(error) !== 'ELOOP') throw error;
      this.refuseEscapingLink(key, path);
      return openSync(path, 'r');
    }
  }

  /** {@link openNoFollowSync}, asynchronously. */
  private async openNoFollow(key: string, path: string): Promise<FileHandle> {
    try {
      return await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (error) {
      if (errno(error) !== 'ELOOP') throw error;
      this.refuseEscapingLink(key, path);
      return await open(path, 'r');
    }
  }

  /**
   * Refuses a key whose path goes through a symbolic link to outside the root: the file itself, or the deepest of
   * its folders that exists (for a write, where the file does not exist yet). Why: the keys a table's metadata
   * names are untrusted, and a link planted in the table folder (a shared NFS/EFS mount) would otherwise let
   * `data/lnk/x` read, overwrite or delete a file of another folder; a listing never follows links, so only such
   * named keys can reach one. A link that stays inside the root is followed as before. A link swapped in between
   * the check and the use (a race on the same filesystem) is not excluded. True when `path` itself exists.
   */
  private refuseEscapingLink(key: string, path: string): boolean {
    let probe = path;
    for (;;) {
      let real: string;
      try {
        real = realpathSync.native(probe);
      } catch (error) {
        const code = errno(error);
        if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
        const up = dirname(probe);
        if (up.length <= this.root.length) return false;
        probe = up;
        continue;
      }
      const root = this.realRoot();
      if (real !== root && !real.startsWith(root + sep))
        throw new InvalidInputError(
          `Key "${printable(key)}" goes through a symbolic link to ${printable(real)}, outside the folder ${this.root}: a key of a local folder never leaves it. Nothing was read, written or deleted there; remove the link, or point at the folder the link names`,
        );
      return probe === path;
    }
  }

  /** The root with every symbolic link resolved, once. */
  private realRoot(): string {
    this.resolvedRoot ??= realpathSync.native(this.root);
    return this.resolvedRoot;
  }

  private openExistingSync(key: string): number {
    try {
      return this.openNoFollowSync(key, this.pathOf(key));
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') throw new ObjectNotFoundError(key);
      throw error;
    }
  }

  private async openExisting(key: string): Promise<FileHandle> {
    try {
      return await this.openNoFollow(key, this.pathOf(key));
    } catch (error) {
      if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') throw new ObjectNotFoundError(key);
      throw error;
    }
  }

  /**
   * Writes via `fill` into a temp file of the work area (`_lake-compactor/tmp/<host>.<pid>.<uuid>`, on the
   * same filesystem), then publishes it: `rename` (atomic replace) or, for put-if-absent, `link` (atomic,
   * fails with EEXIST when the key exists) — so readers see the old file or the whole new one, never a
   * partial one, and a process killed mid-write leaves nothing in the table's folders (its temp file is
   * removed by {@link removeStaleTempFiles} once the process is gone).
   */
  private async writeAtomically(
    key: string,
    options: PutOptions,
    fill: (handle: FileHandle) => Promise<void>,
  ): Promise<{ etag: string; size: number }> {
    const path = this.pathOf(key, 'write');
    if (options.ifNoneMatch === '*' && (await this.head(key)) !== undefined) {
      throw new PreconditionFailedError(key);
    }
    const temp = join(this.tempDir, tempName());
    const handle = await this.inTempDir(() => open(temp, 'wx'));
    try {
      try {
        await fill(handle);
      } finally {
        await handle.close();
      }
      return await withPathLock(path, async () => {
        if (options.ifMatch !== undefined) await this.checkMatch(key, options.ifMatch);
        await this.publish(key, path, temp, options.ifNoneMatch === '*');
        const stats = await stat(path, { bigint: true });
        return { etag: etagOf(stats), size: Number(stats.size) };
      });
    } finally {
      await unlink(temp).catch(() => {});
    }
  }

  /** The If-Match check of a put: ObjectNotFoundError when the key is missing, else PreconditionFailedError on another ETag. */
  private async checkMatch(key: string, ifMatch: string): Promise<void> {
    const current = await this.head(key);
    if (current === undefined) throw new ObjectNotFoundError(key);
    if (current.etag !== ifMatch.replaceAll('"', '')) {
      throw new PreconditionFailedError(
        key,
        `Precondition failed for ${key}: its ETag is ${current.etag}, not ${ifMatch}. Re-read it and decide again.`,
      );
    }
  }

  /** Moves a finished temp file to `path`; makes the folder again when a concurrent delete pruned it. */
  private async publish(key: string, path: string, temp: string, ifAbsent: boolean): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(dirname(path), { recursive: true });
        if (ifAbsent) await link(temp, path);
        else await rename(temp, path);
        return;
      } catch (error) {
        const code = errno(error);
        if (ifAbsent && code === 'EEXIST') throw new PreconditionFailedError(key);
        if (code === 'ENOTDIR' || code === 'EEXIST' || code === 'EISDIR' || code === 'ENOTEMPTY') {
          throw this.conflict(key);
        }
        if (code !== 'ENOENT' || attempt >= 3) throw error;
      }
    }
  }

  /** Runs `action` on the temp area, creating it first (again, when a concurrent delete pruned it). */
  private async inTempDir<T>(action: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        await mkdir(this.tempDir, { recursive: true });
        return await action();
      } catch (error) {
        if (errno(error) !== 'ENOENT' || attempt >= 3) throw error;
      }
    }
  }

  private conflict(key: string): InvalidInputError {
    return new InvalidInputError(
      `Key "${key}" conflicts with an existing key: a local folder cannot hold both "a" and "a/b"; use an S3 store or rename one`,
    );
  }

  /** rmdir upwards while folders are empty; stops at the root or at the first non-empty folder. */
  private async removeEmptyFolders(folder: string): Promise<void> {
    let current = folder;
    while (current.startsWith(this.root + sep)) {
      try {
        await rmdir(current);
      } catch (error) {
        if (errno(error) === 'ENOENT') {
          current = dirname(current);
          continue;
        }
        return;
      }
      current = dirname(current);
    }
  }

  /**
   * Keys under `prefix`, unsorted. Folders that cannot contain matching keys are skipped; with
   * delimiter `/`, a folder below the prefix level stands for one common prefix, so only its first
   * file is looked for instead of walking it all (a table root lists fast however big it is).
   */
  private async walk(prefix: string, delimiter: string | undefined): Promise<string[]> {
    const keys: string[] = [];
    const startDir = prefix.slice(0, prefix.lastIndexOf('/') + 1);
    const visit = async (relDir: string): Promise<void> => {
      let entries: import('node:fs').Dirent[];
      try {
        entries = await readdir(join(this.root, relDir), { withFileTypes: true });
      } catch (error) {
        if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return;
        throw error;
      }
      for (const entry of entries) {
        if (entry.name.startsWith(LEGACY_TEMP_FILE_PREFIX)) continue;
        const rel = relDir + entry.name;
        if (entry.isDirectory()) {
          const asPrefix = `${rel}/`;
          if (asPrefix.startsWith(prefix)) {
            if (delimiter === '/') {
              const first = await this.firstFile(asPrefix);
              if (first !== undefined) keys.push(first);
            } else {
              await visit(asPrefix);
            }
          } else if (prefix.startsWith(asPrefix)) {
            await visit(asPrefix);
          }
        } else if (entry.isFile() && rel.startsWith(prefix)) {
          keys.push(rel);
        }
      }
    };
    await visit(startDir);
    return keys;
  }

  /** Some file key under the folder `relDir` (ending with `/`), or undefined when it holds none. */
  private async firstFile(relDir: string): Promise<string | undefined> {
    let entries: import('node:fs').Dirent[];
    try {
      entries = await readdir(join(this.root, relDir), { withFileTypes: true });
    } catch {
      return undefined;
    }
    for (const entry of entries) {
      if (entry.isFile() && !entry.name.startsWith(LEGACY_TEMP_FILE_PREFIX)) return relDir + entry.name;
    }
    for (const entry of entries) {
      if (entry.isDirectory()) {
        const found = await this.firstFile(`${relDir}${entry.name}/`);
        if (found !== undefined) return found;
      }
    }
    return undefined;
  }
}
