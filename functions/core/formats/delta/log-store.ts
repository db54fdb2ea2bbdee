// How a Delta commit is made atomic, and how a table's declared coordination is checked against what its log shows.
// A commit is the file `_delta_log/<version>.json`, and two writers must never both write the same version.
// Writers of one table must use the same coordination, so it is declared per table (coordination.ts):
//
//   s3-conditional  `PutObject` with `If-None-Match: *` on the commit file (S3 answers 412 when it exists):
//                   what delta-rs commits with. No extra infrastructure.        (ConditionalPutLogStore, below)
//   dynamodb        the commit-entry protocol of Spark's `S3DynamoDBLogStore`: a conditional put of (tablePath,
//                   fileName) in a DynamoDB table decides the winner, the commit is written through a temp file
//                   and marked complete; readers finish an incomplete entry.
//                   Implemented in functions/adapters/formats/delta/dynamodb-log-store.ts.
//   quiet-window    put-if-absent, but only inside the declared windows and only while the log shows no other
//                   writer's commit: for writers with no coordination at all.  (QuietWindowLogStore, below)
//
// Each also checks the declaration against the evidence other writers leave (`check`): a writer that does not
// coordinate the declared way is refused before planning, right before every commit's put, and before VACUUM.
// The commit code (commit.ts) knows only "check, then write version N if absent".
import type { ObjectInfo, ObjectStore } from '../../../ports/object-store.js';
import { PreconditionFailedError } from '../../errors.js';
import { normalizeTableRoot, readCommitActions } from './log.js';
import { classifyLogFile, commitFileName } from './log-files.js';
import { DEFAULT_QUIET_MINUTES, parseQuietWindow, type QuietWindow, quietWindowAt } from './quiet-window.js';

/** Whether a commit was written, or another writer's commit of that version exists already. */
export type CommitWriteResult = 'written' | 'exists';

/**
 * What a check of the coordination found: a writer that does not coordinate as declared (`mismatch`: refused and
 * alarmed, only a configuration change or stopping that writer fixes it), or a declared condition that does not
 * hold right now (`not-now`: a quiet window closed or not quiet yet; nothing is wrong, the commit waits).
 */
export type CoordinationFinding =
  | { readonly kind: 'mismatch'; readonly message: string }
  | { readonly kind: 'not-now'; readonly message: string };

/** When and why a check runs. */
export interface CoordinationCheckContext {
  /** Epoch ms. */
  readonly now: number;
  /** A quiet window matters to what writes the log (a plan leads to a commit); VACUUM only deletes data files. */
  readonly purpose: 'plan' | 'commit' | 'vacuum';
}

/** Atomic put-if-absent of a Delta commit file, the one primitive every Delta writer relies on. */
export interface DeltaLogStore {
  /** How commits are coordinated, for messages and reports (`s3-conditional`, `dynamodb:<table>`). */
  readonly description: string;
  /**
   * Writes `<tableRoot>/_delta_log/<version 20 digits>.json` with `body` only if no commit of that version exists
   * (or is being written by another writer): `exists` when one does, and then nothing was written.
   * `tableRoot` is a key prefix of the object store ('' or ending without `/`).
   */
  writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult>;
  /**
   * Makes every commit the coordinator has accepted visible in `_delta_log/` before a reader lists the log
   * (DynamoDB: an entry whose copy was interrupted is completed). A no-op for S3 conditional writes.
   */
  prepareRead(tableRoot: string): Promise<void>;
  /**
   * What the log (and the coordinator) show about writers that do not coordinate the declared way, or a declared
   * condition that does not hold now; undefined when the table may be planned, committed or vacuumed. Reads only.
   */
  check(tableRoot: string, context: CoordinationCheckContext): Promise<CoordinationFinding | undefined>;
}

/** The latest commit entry of a table in a DynamoDB commit table, as far as a check needs it. */
export interface CommitEntrySummary {
  /** `tablePath` as stored (the table's URI as its writers spell it). */
  readonly tablePath: string;
  /** `<20-digit version>.json`. */
  readonly fileName: string;
  readonly complete: boolean;
}

/** Reads a DynamoDB commit table without writing to it: what `checkDynamoDbTable` needs. */
export interface CommitEntryProbe {
  /** `dynamodb:<table> (<region>)`, for messages. */
  readonly description: string;
  /** The table path the table at `tableRoot` has in this commit table's entries. */
  tablePathOf(tableRoot: string): string;
  /** The table's latest entry, or undefined when it has none. */
  latestEntry(tableRoot: string): Promise<CommitEntrySummary | undefined>;
}

/** The `engineInfo` of lake-compactor's own commits (commit.ts), which a check never takes for another writer's. */
export const LAKE_COMPACTOR_ENGINE_INFO = 'lake-compactor';

/** The key of a commit file of the table at `tableRoot`. */
export function commitKey(tableRoot: string, version: number): string {
  return `${tableRoot === '' ? '' : `${tableRoot.replace(/\/$/, '')}/`}_delta_log/${commitFileName(version)}`;
}

/**
 * How many of the latest commits a check reads the `commitInfo` of (an `engineInfo` naming Spark, the latest
 * commit not written by lake-compactor): ten small GETs per plan and per commit, enough to see a writer that
 * committed since the last run without reading a streaming table's whole log every time.
 */
export const RECENT_COMMITS_CHECKED = 10;

/** A commit file of the log, as listed. */
export interface ListedCommit {
  readonly version: number;
  readonly lastModified: Date;
}

/** What one listing of `_delta_log/` shows a coordination check. */
export interface LogEvidence {
  /** Commit files, ascending by version. */
  readonly commits: readonly ListedCommit[];
  /**
   * Spark `S3DynamoDBLogStore` temp files (`_delta_log/.tmp/<20 digits>.json.<uuid>`). Spark never deletes them,
   * and no put-if-absent writer writes them (lake-compactor's own DynamoDB mode removes its temp file once the
   * entry is complete), so one is the fingerprint of a writer committing through a DynamoDB table.
   */
  readonly sparkTempFiles: readonly ObjectInfo[];
}

const SPARK_TEMP_FILE =
  /^\d{20}\.json\.[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}$/;

/** Lists the table's `_delta_log/` once: its commit files and Spark's DynamoDB temp files. */
export async function listLogEvidence(store: ObjectStore, tableRoot: string): Promise<LogEvidence> {
  const prefix = `${normalizeTableRoot(tableRoot)}_delta_log/`;
  const commits: ListedCommit[] = [];
  const sparkTempFiles: ObjectInfo[] = [];
  for await (const object of store.listAll(prefix)) {
    const name = object.key.slice(prefix.length);
    if (name.startsWith('.tmp/')) {
      if (SPARK_TEMP_FILE.test(name.slice('.tmp/'.length))) sparkTempFiles.push(object);
      continue;
    }
    const file = classifyLogFile(name);
    if (file?.kind === 'commit') commits.push({ version: file.version, lastModified: object.lastModified });
  }
  commits.sort((a, b) => a.version - b.version);
  return { commits, sparkTempFiles };
}

/** The `engineInfo` of a commit's `commitInfo` (undefined when it has none, or the commit is gone). */
export async function engineInfoOf(
  store: ObjectStore,
  tableRoot: string,
  version: number,
): Promise<string | undefined> {
  const actions = await readCommitActions(store, tableRoot, version);
  const info = actions?.find((a) => a.kind === 'commitInfo');
  if (info?.kind !== 'commitInfo') return undefined;
  const engine = (info.commitInfo as { engineInfo?: unknown }).engineInfo;
  return typeof engine === 'string' ? engine : undefined;
}

/** Spark's `engineInfo` (`Apache-Spark/3.5.1 Delta-Lake/3.2.0`, delta-io/delta Actions.scala `getEngineInfo`). */
export function isSparkEngine(engineInfo: string | undefined): boolean {
  return engineInfo !== undefined && /^Apache-Spark\//.test(engineInfo);
}

/** The finding for Spark temp files under `.tmp/` where no DynamoDB coordination was declared. */
function sparkTempFilesFinding(evidence: LogEvidence, declared: string): CoordinationFinding | undefined {
  const first = evidence.sparkTempFiles[0];
  if (first === undefined) return undefined;
  return {
    kind: 'mismatch',
    message: `${evidence.sparkTempFiles.length} temp file(s) of Spark's S3DynamoDBLogStore are under _delta_log/.tmp/ (e.g. ${first.key}, written ${first.lastModified.toISOString()}): a writer commits to this table through a DynamoDB commit table, which the declared "${declared}" coordination never sees. Declare deltaLogStore { "type": "dynamodb", "tableName": <its spark.io.delta.storage.S3DynamoDBLogStore.ddb.tableName>, "region": <its ddb.region, us-east-1 when unset> } (CLI: --delta-log-store dynamodb --delta-ddb-table … --delta-ddb-region …); if no writer uses S3DynamoDBLogStore any more, delete _delta_log/.tmp/ (Spark never removes these files)`,
  };
}

/** The latest commits' versions, newest first, at most {@link RECENT_COMMITS_CHECKED}. */
function recentVersions(evidence: LogEvidence): number[] {
  return evidence.commits
    .slice(-RECENT_COMMITS_CHECKED)
    .map((c) => c.version)
    .reverse();
}

/**
 * S3 conditional writes (`If-None-Match: *`), through the ObjectStore port: S3 and the local folder store refuse
 * the put when the key exists (PreconditionFailedError), which is exactly "another writer won this version".
 *
 * Its check refuses the writers that do not commit with put-if-absent, by the evidence they leave: Spark's
 * `S3DynamoDBLogStore` temp files under `_delta_log/.tmp/`; an entry of the table in the DynamoDB commit table
 * the setting names to check (`checkDynamoDbTable`); a commit among the latest {@link RECENT_COMMITS_CHECKED}
 * whose `engineInfo` is Spark's (no Spark log store commits with put-if-absent on S3). The last is a heuristic
 * over recent commits, not a guarantee: a Spark job that commits once a week between checks is only seen when its
 * commit is among the latest ones — declare such a table's coordination by its writers, not by what was seen.
 */
export class ConditionalPutLogStore implements DeltaLogStore {
  readonly description = 's3-conditional';

  constructor(
    private readonly store: ObjectStore,
    /** The DynamoDB commit table to check for entries of the table (`checkDynamoDbTable`). */
    private readonly entries?: CommitEntryProbe,
  ) {}

  async writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult> {
    return putIfAbsent(this.store, tableRoot, version, body);
  }

  async prepareRead(): Promise<void> {}

  async check(tableRoot: string): Promise<CoordinationFinding | undefined> {
    const evidence = await listLogEvidence(this.store, tableRoot);
    const temp = sparkTempFilesFinding(evidence, 's3-conditional');
    if (temp !== undefined) return temp;
    if (this.entries !== undefined) {
      const entry = await this.entries.latestEntry(tableRoot);
      if (entry !== undefined) {
        return {
          kind: 'mismatch',
          message: `the DynamoDB commit table ${this.entries.description} holds commit entries of this table (tablePath ${entry.tablePath}, latest ${entry.fileName}, ${entry.complete ? 'complete' : 'incomplete'}): a writer commits through it with Spark's S3DynamoDBLogStore protocol, which put-if-absent commits never exclude. Declare deltaLogStore { "type": "dynamodb" } with that table's name and region (CLI: --delta-log-store dynamodb)`,
        };
      }
    }
    for (const version of recentVersions(evidence)) {
      const engine = await engineInfoOf(this.store, tableRoot, version);
      if (isSparkEngine(engine)) {
        return {
          kind: 'mismatch',
          message: `version ${version} was committed by ${engine} (its commitInfo.engineInfo), and Spark never commits with put-if-absent on S3: its default S3SingleDriverLogStore checks that the file is absent and then overwrites it unconditionally, and S3DynamoDBLogStore coordinates through DynamoDB. "s3-conditional" cannot exclude it. Declare "dynamodb" if the Spark writers use io.delta.storage.S3DynamoDBLogStore, or "quiet-window" (with the windows in which they are stopped) if they use the default log store`,
        };
      }
    }
    return undefined;
  }
}

/** `If-None-Match: *` put of a commit file: `exists` when the store refuses it because the file is there. */
async function putIfAbsent(
  store: ObjectStore,
  tableRoot: string,
  version: number,
  body: Uint8Array,
): Promise<CommitWriteResult> {
  try {
    await store.put(commitKey(tableRoot, version), body, {
      ifNoneMatch: '*',
      contentType: 'application/json',
    });
    return 'written';
  } catch (err) {
    if (err instanceof PreconditionFailedError) return 'exists';
    throw err;
  }
}

/**
 * For tables whose other writers have no coordination (Spark's default `S3SingleDriverLogStore`: `exists()`, then
 * an unconditional PUT), declared with the windows in which those writers are stopped. A commit is attempted only
 * when, by a fresh listing taken right before the put:
 * - now is inside a declared window (else `not-now`: nothing is planned or committed outside one);
 * - no commit by another writer landed since the window opened (else `mismatch`: the declaration is wrong, a
 *   writer runs inside the window — refused and alarmed);
 * - the latest commit by another writer is at least `quietMinutes` old (else `not-now`: a job that ended just
 *   before the window opened may still be retrying its commit);
 * - no Spark `S3DynamoDBLogStore` temp file is under `.tmp/` (that writer needs `dynamodb`).
 * The put itself is still `If-None-Match: *`, so a writer that committed the same version first wins and this
 * commit rebases. What no check can prevent is a writer that checked `exists()` before this put and PUTs after
 * it: its commit then replaces this one. That is the risk `acceptUncoordinatedWriters` accepts, and why the
 * windows must be ones in which no such writer runs. lake-compactor's own earlier commits (engineInfo
 * `lake-compactor`) do not count as another writer's.
 */
export class QuietWindowLogStore implements DeltaLogStore {
  readonly description: string;
  private readonly windows: readonly QuietWindow[];
  private readonly quietMs: number;

  constructor(
    private readonly store: ObjectStore,
    setting: { readonly windows: readonly string[]; readonly quietMinutes?: number | undefined },
  ) {
    this.windows = setting.windows.map((text) => {
      const parsed = parseQuietWindow(text);
      if ('problem' in parsed) throw new RangeError(parsed.problem);
      return parsed;
    });
    this.quietMs = (setting.quietMinutes ?? DEFAULT_QUIET_MINUTES) * 60_000;
    this.description = `quiet-window ${setting.windows.join(', ')} UTC`;
  }

  async writeCommit(tableRoot: string, version: number, body: Uint8Array): Promise<CommitWriteResult> {
    return putIfAbsent(this.store, tableRoot, version, body);
  }

  async prepareRead(): Promise<void> {}

  async check(
    tableRoot: string,
    context: CoordinationCheckContext,
  ): Promise<CoordinationFinding | undefined> {
    const evidence = await listLogEvidence(this.store, tableRoot);
    const temp = sparkTempFilesFinding(evidence, 'quiet-window');
    if (temp !== undefined || context.purpose === 'vacuum') return temp;
    const window = quietWindowAt(this.windows, context.now);
    if (!window.open) {
      return { kind: 'not-now', message: `${window.reason}; nothing is committed outside them` };
    }
    const latest = await this.latestForeignCommit(tableRoot, evidence);
    if (latest === undefined) return undefined;
    const at = latest.commit.lastModified.getTime();
    if (at >= window.opensAt) {
      return {
        kind: 'mismatch',
        message: `version ${latest.commit.version} was committed at ${latest.commit.lastModified.toISOString()}${latest.engine === undefined ? '' : ` by ${latest.engine}`}, inside the quiet window that opened at ${new Date(window.opensAt).toISOString()}: the table's writers are not stopped during its declared windows, so a commit now could be overwritten. Fix the windows (deltaLogStore.windows) to when the writers really are stopped, or make them use S3DynamoDBLogStore and declare "dynamodb"`,
      };
    }
    const quietFor = context.now - at;
    if (quietFor < this.quietMs) {
      return {
        kind: 'not-now',
        message: `version ${latest.commit.version} was committed ${Math.floor(quietFor / 60_000)} min ago, less than the declared quietMinutes (${this.quietMs / 60_000}) before now: its writer may still be committing`,
      };
    }
    return undefined;
  }

  /** The newest commit (among the latest few) that lake-compactor did not write, with its engineInfo. */
  private async latestForeignCommit(
    tableRoot: string,
    evidence: LogEvidence,
  ): Promise<{ commit: ListedCommit; engine: string | undefined } | undefined> {
    const recent = evidence.commits.slice(-RECENT_COMMITS_CHECKED).reverse();
    for (const commit of recent) {
      const engine = await engineInfoOf(this.store, tableRoot, commit.version);
      if (engine !== LAKE_COMPACTOR_ENGINE_INFO) return { commit, engine };
    }
    return undefined;
  }
}
