// Reads a Delta table's state at its latest or a given version through the ObjectStore port: newest complete
// checkpoint at or below it (classic, multi-part or V2 with sidecars), then every later JSON commit, contiguously.
import pLimit from 'p-limit';
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { MetadataTooLargeError, ObjectNotFoundError } from '../../errors.js';
import { KeyOutsideTableError, keyUnderRoot, type RootedKey } from '../../keys.js';
import {
  currentMemoryBudget,
  currentMetadataLimits,
  DELTA_ACTION_HEAP_BYTES,
  describeBytes,
  type MetadataLimits,
  readWithin,
} from '../../memory-budget.js';
import {
  type AddAction,
  type CommitInfoAction,
  type DeletionVector,
  type DeltaAction,
  type FileStats,
  parseActions,
  parseStats,
  type RemoveAction,
  type TxnAction,
} from './actions.js';
import { parquetRowGroups, readParquetRowGroup } from './checkpoint-parquet.js';
import { deletionVectorRelativePath } from './dv-paths.js';
import { DeltaFeatureNotSupportedError, DeltaLogError } from './errors.js';
import {
  type CompleteCheckpoint,
  classifyLogFile,
  commitFileName,
  completeCheckpoints,
  LAST_CHECKPOINT,
  type LogFile,
} from './log-files.js';
import { checkProtocol, type SupportedProtocol } from './protocol.js';
import { LogReplay } from './replay.js';
import {
  type ColumnMappingMode,
  type DeltaSchema,
  deltaSchemaFingerprint,
  type MappedColumn,
  mappedColumns,
  parseDeltaSchema,
} from './schema.js';

/** One live data file (an `add` no later `remove` cancelled). */
export interface DeltaFile {
  /** The path exactly as the log writes it (a URI: relative paths are percent-encoded). */
  readonly path: string;
  /** The object key in the store (table root + decoded relative path); undefined for an absolute URI. */
  readonly key: string | undefined;
  /** Partition values by logical column name, from the log (never from the directory), null for null. */
  readonly partitionValues: Readonly<Record<string, string | null>>;
  /** Partition values exactly as the log keys them (physical names under column mapping). */
  readonly physicalPartitionValues: Readonly<Record<string, string | null>>;
  readonly size: number;
  readonly modificationTime: number;
  readonly dataChange: boolean;
  readonly stats?: FileStats;
  /** The raw stats JSON, for a rewrite that must carry it unchanged. */
  readonly statsJson?: string;
  readonly tags?: Readonly<Record<string, string | null>>;
  readonly deletionVector?: DeletionVector;
  readonly baseRowId?: number;
  readonly defaultRowCommitVersion?: number;
}

/** A `remove` still in the log's state: a file vacuum may delete once its retention has passed. */
export interface DeltaTombstone {
  readonly path: string;
  /** The object key (as for a live file); undefined for an absolute URI or a path the confinement rule refuses. */
  readonly key: string | undefined;
  /** Why the path is no key of this table (it leaves the root): such a tombstone is history no one acts on. */
  readonly refused?: string;
  /** When it was removed (epoch ms); vacuum's retention counts from here. */
  readonly deletionTimestamp?: number;
  readonly dataChange: boolean;
  readonly extendedFileMetadata?: boolean;
  readonly size?: number;
  readonly partitionValues?: Readonly<Record<string, string | null>>;
  readonly deletionVector?: DeletionVector;
}

export interface DeltaMetadata {
  readonly id: string;
  readonly name?: string;
  readonly description?: string;
  readonly provider: string;
  /** `format.options` as the log has it (absent when the log leaves it out), so a checkpoint can carry it. */
  readonly formatOptions?: Readonly<Record<string, string>>;
  readonly schemaString: string;
  readonly schema: DeltaSchema;
  /** Logical names, in the log's order. */
  readonly partitionColumns: readonly string[];
  readonly configuration: Readonly<Record<string, string>>;
  readonly createdTime?: number;
  readonly columnMapping: { readonly mode: ColumnMappingMode; readonly columns: readonly MappedColumn[] };
  readonly schemaFingerprint: string;
}

/** A table version as the log defines it. */
export interface DeltaSnapshot {
  /** The table root as given, normalised to '' or ending with `/`. */
  readonly tableRoot: string;
  readonly version: number;
  readonly protocol: SupportedProtocol;
  readonly metadata: DeltaMetadata;
  /** Live files, sorted by path (byte order). */
  readonly files: readonly DeltaFile[];
  /** Removes still in the state, sorted by path. */
  readonly tombstones: readonly DeltaTombstone[];
  /** Latest `txn` version per application id (idempotent streaming writers). */
  readonly transactions: Readonly<Record<string, TxnAction>>;
  /** Live domain metadata by domain: configuration strings as written. */
  readonly domains: Readonly<Record<string, string>>;
  /** The checkpoint the read started from, if any. */
  readonly checkpoint?: { readonly version: number; readonly files: readonly string[]; readonly v2: boolean };
  /** commitInfo of `version`, when that commit was read (not when the read ended on a checkpoint). */
  readonly commitInfo?: CommitInfoAction;
  /** Whether `delta.enableInCommitTimestamps` is on: a commit must then write `inCommitTimestamp`. */
  readonly inCommitTimestamps: boolean;
  /** Whether `delta.appendOnly` is on: only dataChange=false removes are allowed. */
  readonly appendOnly: boolean;
}

export interface ReadDeltaOptions {
  /** The version to read; the latest when omitted. */
  readonly version?: number;
  /** Log files fetched in flight. */
  readonly concurrency?: number;
}

const lastCheckpointSchema = z.object({
  version: z.number().int().nonnegative(),
  parts: z.number().int().nullish(),
});

/** `a/b` and `a/b/` → `a/b/`; '' stays ''. */
export function normalizeTableRoot(tableRoot: string): string {
  const trimmed = tableRoot.replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:/;

/**
 * The table's state at `options.version` (latest when omitted), read only through `store`: the newest complete
 * checkpoint at or below it (a multi-part one missing a part is skipped), then every later JSON commit.
 * Log compaction files (`x.y.compacted.json`) are ignored: they only summarise commits that are still there,
 * so replaying the commits gives the same state. `_last_checkpoint` only checks that the listing is not behind.
 * @throws DeltaFeatureNotSupportedError when the protocol at that version needs what is not implemented.
 * @throws DeltaLogError when the log is missing, incomplete or malformed, or the version does not exist.
 */
export async function readDeltaSnapshot(
  store: ObjectStore,
  tableRoot: string,
  options: ReadDeltaOptions = {},
): Promise<DeltaSnapshot> {
  const root = normalizeTableRoot(tableRoot);
  const logPrefix = `${root}_delta_log/`;
  const fail = (reason: string, cause?: unknown): DeltaLogError =>
    new DeltaLogError(root, reason, cause === undefined ? undefined : { cause });

  const files: LogFile[] = [];
  /** Listed sizes by name: each file is checked against the memory budget before it is read. */
  const sizes = new Map<string, number>();
  for await (const object of store.listAll(logPrefix)) {
    const name = object.key.slice(logPrefix.length);
    if (name.includes('/')) continue; // .tmp/, _sidecars/, _staged_commits/: not log entries by themselves
    const file = classifyLogFile(name);
    if (file !== undefined) {
      files.push(file);
      sizes.set(name, object.size);
    }
  }
  const commits = new Set(files.flatMap((f) => (f.kind === 'commit' ? [f.version] : [])));
  const checkpoints = completeCheckpoints(files);
  const versions = [...commits, ...checkpoints.map((c) => c.version)];
  if (versions.length === 0)
    throw fail(`no commit or checkpoint under ${logPrefix}: it is not a Delta table`);
  const latest = Math.max(...versions);
  const target = options.version ?? latest;
  if (!Number.isSafeInteger(target) || target < 0 || target > latest) {
    throw fail(`version ${target} does not exist (the latest version is ${latest})`);
  }

  // The listing is complete on S3, so the newest complete checkpoint at or below the target is found without the
  // `_last_checkpoint` hint; the hint still checks the listing: one that names a newer version than every listed
  // file means the listing lags (an eventually consistent S3-compatible store), and reading it would go back in time.
  if (files.some((f) => f.kind === 'lastCheckpoint')) {
    const hint = await readLastCheckpoint(store, logPrefix);
    if (hint !== undefined && hint.version > latest) {
      throw fail(
        `_last_checkpoint names version ${hint.version} but the listing shows versions up to ${latest} only: the listing is incomplete (an eventually consistent store?); retry later`,
      );
    }
  }
  const checkpoint = checkpoints.find((c) => c.version <= target);
  const start = checkpoint === undefined ? 0 : checkpoint.version + 1;
  for (let v = start; v <= target; v += 1) {
    if (!commits.has(v)) {
      throw fail(
        checkpoint === undefined && v === 0 && !commits.has(0)
          ? `commit 0 is gone and no complete checkpoint is at or below version ${target}: the history before ${target} was cleaned up, so version ${target} cannot be reconstructed`
          : `commit ${commitFileName(v)} is missing between ${start} and ${target}`,
      );
    }
  }

  const decode = (path: string): string => decodeLogPath(path, fail);
  const replay = new LogReplay(decode, (reason) => fail(reason));
  const limit = pLimit(options.concurrency ?? 16);
  const bounds = new StateBounds(root, logPrefix, currentMetadataLimits());
  for (const name of [
    ...(checkpoint?.names ?? []),
    ...Array.from({ length: target - start + 1 }, (_, i) => commitFileName(start + i)),
  ])
    bounds.checkFileSize(name, sizes.get(name) ?? 0);

  if (checkpoint !== undefined) {
    await applyCheckpoint(store, logPrefix, checkpoint, replay, bounds, fail);
  }
  // Commits are read concurrently but applied in order, a window at a time of at most the budget's file size in
  // listed bytes: the commits after a checkpoint are never all held at once.
  let commitInfo: CommitInfoAction | undefined;
  for (let from = start; from <= target; ) {
    let to = from;
    let bytes = sizes.get(commitFileName(from)) ?? 0;
    while (to < target && bytes + (sizes.get(commitFileName(to + 1)) ?? 0) <= bounds.limits.fileBytes) {
      to += 1;
      bytes += sizes.get(commitFileName(to)) ?? 0;
    }
    const window = await Promise.all(
      Array.from({ length: to - from + 1 }, (_, i) =>
        limit(() => readCommit(store, `${logPrefix}${commitFileName(from + i)}`, fail)),
      ),
    );
    window.forEach((actions, i) => {
      replay.applyCommit(actions, `commit ${commitFileName(from + i)}`);
      if (from + i === target) {
        for (const action of actions) if (action.kind === 'commitInfo') commitInfo = action.commitInfo;
      }
    });
    bounds.checkState(replay, commitFileName(to));
    from = to + 1;
  }
  bounds.checkStats(replay);

  if (replay.protocol === undefined) throw fail(`no protocol action at or below version ${target}`);
  if (replay.metadata === undefined) throw fail(`no metaData action at or below version ${target}`);
  const protocol = checkProtocol(root, replay.protocol);
  const metadata = toMetadata(root, replay.metadata, protocol, fail);

  const physicalOf = new Map<string, string>(
    metadata.columnMapping.columns
      .filter((c) => c.path.length === 1)
      .map((c) => [c.path[0] as string, c.physicalName]),
  );
  // Every path the state names is checked against the table root (core/keys.ts) before anything else is read. A
  // live file outside the root is a table problem, not a file problem: readers of the table read it (a normalising
  // reader resolves the `..`), so the table's content is partly another table's; compacting the rest would commit a
  // version that still names it, and vacuum would judge the table by a log it cannot trust. The table is refused by
  // name until its owner repairs the log. A tombstone outside the root is history: no reader of the current version
  // reads it and vacuum deletes only listed objects, so it is kept out of every key set and reported, never refused.
  const keyOf = (path: string): RootedKey | undefined =>
    ABSOLUTE_URI.test(path) ? undefined : keyUnderRoot(root, decode(path));
  const liveKeyOf = (path: string, deletionVector: DeletionVector | undefined): string | undefined => {
    const built = keyOf(path);
    if (built !== undefined && 'refused' in built)
      throw new KeyOutsideTableError(
        root || '(store root)',
        path,
        built.refused,
        'a live add action of its Delta log',
      );
    if (deletionVector?.storageType === 'u') {
      const dvKey = tryDeletionVectorKey(root, deletionVector.pathOrInlineDv);
      if (dvKey !== undefined && 'refused' in dvKey)
        throw new KeyOutsideTableError(
          root || '(store root)',
          dvKey.path,
          dvKey.refused,
          `the deletion vector of the live file ${path} in its Delta log`,
        );
    }
    return built?.key;
  };
  const liveFiles = [...replay.live.values()].map((add) => toFile(add, liveKeyOf, metadata, physicalOf));
  const tombstones = [...replay.tombstones.values()].map((remove) => toTombstone(remove, keyOf));
  const byPath = (a: { path: string }, b: { path: string }): number => compareBytes(a.path, b.path);

  return {
    tableRoot: root,
    version: target,
    protocol,
    metadata,
    files: liveFiles.sort(byPath),
    tombstones: tombstones.sort(byPath),
    transactions: Object.fromEntries(replay.transactions),
    domains: Object.fromEntries([...replay.domains].map(([d, m]) => [d, m.configuration])),
    ...(checkpoint === undefined
      ? {}
      : { checkpoint: { version: checkpoint.version, files: checkpoint.names, v2: checkpoint.v2 } }),
    ...(commitInfo === undefined ? {} : { commitInfo }),
    inCommitTimestamps: metadata.configuration['delta.enableInCommitTimestamps'] === 'true',
    appendOnly: metadata.configuration['delta.appendOnly'] === 'true',
  };
}

/**
 * `_last_checkpoint`, parsed, or undefined when absent or unreadable: the protocol makes it a hint readers may
 * ignore, so a torn or stale one must never fail a read.
 */
async function readLastCheckpoint(
  store: ObjectStore,
  logPrefix: string,
): Promise<z.infer<typeof lastCheckpointSchema> | undefined> {
  try {
    const parsed = lastCheckpointSchema.safeParse(
      JSON.parse(new TextDecoder().decode(await store.get(`${logPrefix}${LAST_CHECKPOINT}`))),
    );
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The actions of commit `version` of the table at `tableRoot`, or undefined when that commit does not exist (yet).
 * What a committer reads of the commits that won the versions after the one it planned at.
 * @throws DeltaLogError when the commit is malformed.
 */
export async function readCommitActions(
  store: ObjectStore,
  tableRoot: string,
  version: number,
): Promise<DeltaAction[] | undefined> {
  const root = normalizeTableRoot(tableRoot);
  const key = `${root}_delta_log/${commitFileName(version)}`;
  const fail = (reason: string, cause?: unknown): DeltaLogError =>
    new DeltaLogError(root, reason, cause === undefined ? undefined : { cause });
  let bytes: Uint8Array;
  try {
    bytes = await store.get(key);
  } catch (err) {
    if (err instanceof ObjectNotFoundError) return undefined;
    throw err;
  }
  // Nothing sized this commit beforehand (it is read because it won a race): check it before it is decoded.
  new StateBounds(root, `${root}_delta_log/`, currentMetadataLimits()).checkFileSize(
    commitFileName(version),
    bytes.length,
  );
  return parseJsonLines(new TextDecoder().decode(bytes), key, fail);
}

async function readCommit(
  store: ObjectStore,
  key: string,
  fail: (reason: string, cause?: unknown) => DeltaLogError,
): Promise<DeltaAction[]> {
  return parseJsonLines(new TextDecoder().decode(await store.get(key)), key, fail);
}

function parseJsonLines(
  text: string,
  key: string,
  fail: (reason: string, cause?: unknown) => DeltaLogError,
): DeltaAction[] {
  const actions: DeltaAction[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    try {
      actions.push(...parseActions(JSON.parse(line) as Record<string, unknown>));
    } catch (err) {
      throw fail(`${key} line ${i + 1} is not a valid Delta action (${describe(err)})`, err);
    }
  });
  return actions;
}

/** What the table's owner can do when its state is too large for this process's memory. */
const STATE_REMEDY =
  "have the table's owner compact it (OPTIMIZE) so it has fewer live files, and keep fewer tombstones (a shorter delta.deletedFileRetentionDuration, then a new checkpoint)";
/** What the table's owner can do when the commits since its last checkpoint are too large to read. */
const COMMITS_REMEDY = "have the table's owner write a checkpoint (the commits before it are then not read)";

/** Bytes of `stats` text per live file counted in DELTA_ACTION_HEAP_BYTES; longer stats are parsed at a cost. */
const STATS_INCLUDED_CHARS = 1024;
/** Heap bytes per character of stats text beyond that, once the file's stats are parsed (objects, keys, values). */
const STATS_HEAP_PER_CHAR = 4;

/**
 * The memory budget's bounds on one table state, checked as it is read: each log file's listed size before it is
 * fetched, a checkpoint's row count before it is decoded, the live actions after each piece, and the stats the
 * snapshot will parse. Each refusal is a MetadataTooLargeError naming the file and the table.
 */
class StateBounds {
  private checkpointRows = 0;
  constructor(
    private readonly root: string,
    private readonly logPrefix: string,
    readonly limits: MetadataLimits,
  ) {}

  private tooLarge(name: string, reason: string, remedy: string): MetadataTooLargeError {
    return new MetadataTooLargeError(
      `${this.logPrefix}${name}`,
      `Delta table ${this.root || '(store root)'}: ${name === '' ? 'the state read from' : 'log file'}`,
      reason,
      currentMemoryBudget().advice,
      remedy,
    );
  }

  checkFileSize(name: string, size: number): void {
    if (size > this.limits.fileBytes) {
      throw this.tooLarge(
        name,
        `it has ${describeBytes(size)}, more than the ${describeBytes(this.limits.fileBytes)} one log file may have`,
        name.includes('.checkpoint.') ? STATE_REMEDY : COMMITS_REMEDY,
      );
    }
  }

  /** A checkpoint's rows, counted over its parts and sidecars, before they are decoded. */
  addCheckpointRows(name: string, rows: number): void {
    this.checkpointRows += rows;
    if (this.checkpointRows > this.limits.deltaActions) {
      throw this.tooLarge(
        name,
        `the checkpoint holds ${this.checkpointRows} or more actions, more than the ${this.limits.deltaActions} a table state may hold here (${DELTA_ACTION_HEAP_BYTES} bytes each in ${describeBytes(this.limits.decodedBytes)})`,
        STATE_REMEDY,
      );
    }
  }

  checkState(replay: LogReplay, after: string): void {
    if (replay.size > this.limits.deltaActions) {
      throw this.tooLarge(
        after,
        `after it the table state holds ${replay.size} actions (live files, tombstones, transactions), more than the ${this.limits.deltaActions} it may hold here (${DELTA_ACTION_HEAP_BYTES} bytes each in ${describeBytes(this.limits.decodedBytes)})`,
        STATE_REMEDY,
      );
    }
  }

  /** The live files' stats, which the snapshot parses one by one, fit what is left of the budget. */
  checkStats(replay: LogReplay): void {
    let extra = 0;
    let longest = '';
    for (const [, add] of replay.live) {
      const over = (add.stats?.length ?? 0) - STATS_INCLUDED_CHARS;
      if (over > 0) {
        extra += over * STATS_HEAP_PER_CHAR;
        if (longest === '') longest = add.path;
      }
    }
    const total = replay.size * DELTA_ACTION_HEAP_BYTES + extra;
    if (total > this.limits.decodedBytes) {
      throw this.tooLarge(
        '',
        `its live files' stats would take about ${describeBytes(total)} parsed (e.g. the stats of ${longest}), more than the ${describeBytes(this.limits.decodedBytes)} a table state may take here`,
        "have the table's owner collect stats on fewer columns (delta.dataSkippingNumIndexedCols) and checkpoint it",
      );
    }
  }
}

/**
 * Applies a checkpoint to the (empty) replay piece by piece: each part (and its row groups one at a time), then
 * for a V2 checkpoint the add/remove actions of its sidecars (`_delta_log/_sidecars/`), which hold the file
 * actions the top-level file only points to. Nothing of it is decoded before its size and row count are checked.
 */
async function applyCheckpoint(
  store: ObjectStore,
  logPrefix: string,
  checkpoint: CompleteCheckpoint,
  replay: LogReplay,
  bounds: StateBounds,
  fail: (reason: string, cause?: unknown) => DeltaLogError,
): Promise<void> {
  const label = `checkpoint ${checkpoint.names[0] ?? checkpoint.version}`;
  const sidecars: string[] = [];
  for (const name of checkpoint.names) {
    await forEachActionPiece(store, `${logPrefix}${name}`, name, bounds, fail, (actions) => {
      for (const a of actions) if (a.kind === 'sidecar') sidecars.push(a.sidecar.path);
      replay.applyCheckpointPiece(actions, label);
      bounds.checkState(replay, name);
    });
  }
  for (const path of sidecars) {
    if (ABSOLUTE_URI.test(path))
      throw fail(`sidecar ${path} is an absolute URI; only sidecars inside _delta_log/_sidecars/ are read`);
    const built = keyUnderRoot(`${logPrefix}_sidecars`, decodeLogPath(path, fail));
    if ('refused' in built)
      throw new KeyOutsideTableError(
        logPrefix.slice(0, -'_delta_log/'.length) || '(store root)',
        path,
        `${built.refused} (sidecars lie in _delta_log/_sidecars/)`,
        `the V2 checkpoint ${checkpoint.names[0] ?? checkpoint.version}`,
      );
    const name = built.key.slice(logPrefix.length);
    await forEachActionPiece(store, built.key, name, bounds, fail, (actions) => {
      const other = actions.find((a) => a.kind !== 'add' && a.kind !== 'remove');
      if (other !== undefined)
        throw fail(
          `sidecar ${logPrefix}${name} holds a ${other.kind} action; sidecars may hold only add and remove`,
        );
      replay.applyCheckpointPiece(actions, label);
      bounds.checkState(replay, name);
    });
  }
}

/**
 * The actions of a JSON-lines or Parquet file of actions (by its name), handed to `use` a piece at a time: a JSON
 * file whole, a Parquet file one row group at a time once its footer's row count passed the budget. A sidecar,
 * which the listing does not size, is read with at most the budget's file size.
 */
async function forEachActionPiece(
  store: ObjectStore,
  key: string,
  name: string,
  bounds: StateBounds,
  fail: (reason: string, cause?: unknown) => DeltaLogError,
  use: (actions: DeltaAction[]) => void,
): Promise<void> {
  const bytes = name.startsWith('_sidecars/')
    ? await readWithin(
        store,
        key,
        bounds.limits.fileBytes,
        `Delta sidecar of ${logPrefixOf(key)}`,
        STATE_REMEDY,
      )
    : await store.get(key);
  if (key.endsWith('.json')) {
    use(parseJsonLines(new TextDecoder().decode(bytes), key, fail));
    return;
  }
  let groups: ReturnType<typeof parquetRowGroups>;
  try {
    groups = parquetRowGroups(bytes);
  } catch (err) {
    throw fail(`${key} is not a readable Parquet checkpoint (${describe(err)})`, err);
  }
  bounds.addCheckpointRows(
    name,
    groups.rows.reduce((a, b) => a + b, 0),
  );
  for (let i = 0; i < groups.rows.length; i++) {
    let rows: Record<string, unknown>[];
    try {
      rows = await readParquetRowGroup(groups, i);
    } catch (err) {
      throw fail(`${key} is not a readable Parquet checkpoint (${describe(err)})`, err);
    }
    let actions: DeltaAction[];
    try {
      actions = rows.flatMap((row) => parseActions(row));
    } catch (err) {
      throw fail(`${key} holds a malformed action (${describe(err)})`, err);
    }
    use(actions);
  }
}

/** `t/_delta_log/` of a key inside it, for messages. */
function logPrefixOf(key: string): string {
  const at = key.indexOf('_delta_log/');
  return at < 0 ? key : key.slice(0, at + '_delta_log/'.length);
}

function toMetadata(
  root: string,
  m: NonNullable<LogReplay['metadata']>,
  protocol: SupportedProtocol,
  fail: (reason: string, cause?: unknown) => DeltaLogError,
): DeltaMetadata {
  let schema: DeltaSchema;
  try {
    schema = parseDeltaSchema(m.schemaString);
  } catch (err) {
    throw fail(`the metaData schemaString is not a Delta schema (${describe(err)})`, err);
  }
  const modeSetting = m.configuration['delta.columnMapping.mode'] ?? 'none';
  if (
    protocolSupportsColumnMapping(protocol) &&
    modeSetting !== 'none' &&
    modeSetting !== 'name' &&
    modeSetting !== 'id'
  ) {
    throw new DeltaFeatureNotSupportedError(
      'writer feature',
      'columnMapping',
      `Delta table ${root || '(store root)'} sets delta.columnMapping.mode to "${modeSetting}"; lake-compactor knows the modes none, name and id. Nothing was changed; leave the table out of the configuration until the mode is supported.`,
    );
  }
  // PROTOCOL.md "Column Mapping": the property is honoured only when the protocol supports the feature.
  const mode: ColumnMappingMode = protocolSupportsColumnMapping(protocol)
    ? (modeSetting as ColumnMappingMode)
    : 'none';
  return {
    id: m.id,
    ...(m.name === undefined ? {} : { name: m.name }),
    ...(m.description === undefined ? {} : { description: m.description }),
    provider: m.format.provider,
    ...(m.format.options === undefined ? {} : { formatOptions: m.format.options }),
    schemaString: m.schemaString,
    schema,
    partitionColumns: m.partitionColumns,
    configuration: m.configuration,
    ...(m.createdTime === undefined ? {} : { createdTime: m.createdTime }),
    columnMapping: { mode, columns: mappedColumns(schema, mode) },
    schemaFingerprint: deltaSchemaFingerprint(schema),
  };
}

function protocolSupportsColumnMapping(protocol: SupportedProtocol): boolean {
  return (
    protocol.readerFeatures.includes('columnMapping') || protocol.writerFeatures.includes('columnMapping')
  );
}

function toFile(
  add: AddAction,
  keyOf: (path: string, deletionVector: DeletionVector | undefined) => string | undefined,
  metadata: DeltaMetadata,
  physicalOf: ReadonlyMap<string, string>,
): DeltaFile {
  const stats = parseStats(add);
  const partitionValues = Object.fromEntries(
    metadata.partitionColumns.map((column) => [
      column,
      add.partitionValues[physicalOf.get(column) ?? column] ?? null,
    ]),
  );
  return {
    path: add.path,
    key: keyOf(add.path, add.deletionVector),
    partitionValues,
    physicalPartitionValues: add.partitionValues,
    size: add.size,
    modificationTime: add.modificationTime,
    dataChange: add.dataChange,
    ...(stats === undefined ? {} : { stats }),
    ...(add.stats === undefined ? {} : { statsJson: add.stats }),
    ...(add.tags === undefined ? {} : { tags: add.tags }),
    ...(add.deletionVector === undefined ? {} : { deletionVector: add.deletionVector }),
    ...(add.baseRowId === undefined ? {} : { baseRowId: add.baseRowId }),
    ...(add.defaultRowCommitVersion === undefined
      ? {}
      : { defaultRowCommitVersion: add.defaultRowCommitVersion }),
  };
}

function toTombstone(remove: RemoveAction, keyOf: (path: string) => RootedKey | undefined): DeltaTombstone {
  const built = keyOf(remove.path);
  return {
    path: remove.path,
    key: built !== undefined && 'key' in built ? built.key : undefined,
    ...(built !== undefined && 'refused' in built ? { refused: built.refused } : {}),
    dataChange: remove.dataChange,
    ...(remove.deletionTimestamp === undefined ? {} : { deletionTimestamp: remove.deletionTimestamp }),
    ...(remove.extendedFileMetadata === undefined
      ? {}
      : { extendedFileMetadata: remove.extendedFileMetadata }),
    ...(remove.size === undefined ? {} : { size: remove.size }),
    ...(remove.partitionValues === undefined ? {} : { partitionValues: remove.partitionValues }),
    ...(remove.deletionVector === undefined ? {} : { deletionVector: remove.deletionVector }),
  };
}

/**
 * The key of the file a `u` deletion vector descriptor names, or why it may not be one (its random prefix is
 * untrusted text); undefined for a descriptor that is not a valid reference at all (reading it fails later, by name).
 */
function tryDeletionVectorKey(
  root: string,
  pathOrInlineDv: string,
): { key: string } | { path: string; refused: string } | undefined {
  let relative: string;
  try {
    relative = deletionVectorRelativePath(pathOrInlineDv);
  } catch {
    return undefined;
  }
  const built = keyUnderRoot(root, relative);
  return 'refused' in built ? { path: relative, refused: built.refused } : built;
}

/** A log path's decoded form: percent-decoding of the URI (`x=A%252FA` names the object `x=A%2FA`). */
function decodeLogPath(path: string, fail: (reason: string) => DeltaLogError): string {
  try {
    return decodeURIComponent(path);
  } catch {
    throw fail(`path "${path}" in the log is not a valid URI (bad percent-encoding)`);
  }
}

function describe(err: unknown): string {
  if (err instanceof z.ZodError)
    return err.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
  return err instanceof Error ? err.message : String(err);
}

/** Byte order, as S3 lists keys. */
function compareBytes(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}
