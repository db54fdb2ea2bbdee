// Every key a deployment keeps besides outputs (plans, items, staging, trash, journal, quarantine, temp
// files, checkpoints) derives here from its work root and the run id, so every step and retry finds them.
import { z } from 'zod';
import type { Codec } from '../../ports/parquet-engine.js';

/**
 * The work root of a deployment that sets none (and of runs started before work roots were configurable):
 * hidden (`_`) so no table reader, planner or profiler sees it.
 */
export const DEFAULT_WORK_ROOT = '_lake-compactor/';

/** Longest work root: keys under it add a run id, a group and (in trash) a table key, within S3's 1024 bytes. */
export const MAX_WORK_ROOT_LENGTH = 128;

/**
 * Why `root` cannot be a work root, or undefined. A work root is a relative key prefix ending with `/`, of
 * folders named with letters, digits, `_`, `.` and `-` (IAM treats `*`, `?` and `${…}` in an ARN specially),
 * whose first folder starts with `_`, so table readers, the planner and the profiler skip it as they skip
 * every hidden folder. Two deployments on one bucket must use different work roots, neither inside the
 * other: vacuum removes what it finds under its own work root that its journal does not know.
 */
export function workRootProblem(root: string): string | undefined {
  const shown = JSON.stringify(root);
  if (root === '') return `is empty; use a folder such as "${DEFAULT_WORK_ROOT}"`;
  if (/^[a-z0-9]+:\/\//i.test(root)) {
    return `${shown} is a URI; use a key prefix relative to the bucket, such as "${DEFAULT_WORK_ROOT}"`;
  }
  if (root.startsWith('/'))
    return `${shown} starts with "/"; use a relative key prefix, such as "${root.replace(/^\/+/, '')}"`;
  if (!root.endsWith('/')) return `${shown} does not end with "/"; write it as a folder: "${root}/"`;
  if (root.length > MAX_WORK_ROOT_LENGTH) {
    return `${shown} is ${root.length} characters long; use at most ${MAX_WORK_ROOT_LENGTH} (keys under it add run ids and table keys)`;
  }
  const segments = root.slice(0, -1).split('/');
  if (segments.some((s) => s === ''))
    return `${shown} has an empty folder ("//"); write it with single slashes`;
  if (segments.some((s) => s === '.' || s === '..'))
    return `${shown} has a "." or ".." folder; name real folders`;
  const odd = segments.find((s) => !/^[A-Za-z0-9_.-]+$/.test(s));
  if (odd !== undefined) {
    return `${shown} has the folder "${odd}"; use letters, digits, "_", "." and "-" only (IAM grants name the work root)`;
  }
  const first = segments[0] ?? '';
  if (!first.startsWith('_')) {
    return `${shown} must start with a folder whose name starts with "_" (e.g. "_${first}/"), which table readers, the planner and the profiler skip`;
  }
  if (RESERVED_TOP_FOLDERS.includes(first)) {
    return `${shown} starts with "${first}/", which belongs to writers (Spark's scratch, a table's transaction log); choose another name, such as "_lake-compactor-<deployment>/"`;
  }
  return undefined;
}

/** Hidden folders other systems write at a table root: never a work root, and never judged as one. */
export const RESERVED_TOP_FOLDERS: readonly string[] = ['_temporary', '_delta_log'];

/** A work root as configured (an environment variable, a run context, a CLI option), checked by {@link workRootProblem}. */
export const workRootSchema = z.string().superRefine((root, ctx) => {
  const problem = workRootProblem(root);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: `work root ${problem}` });
});

/**
 * Whether a key (relative to a bucket's root) may lie in some deployment's work area — this one's or another's
 * on the same bucket: under a top-level folder whose name starts with `_` or `.` (every work root's does, and
 * readers skip such folders, so they hold no table data), other than the writers' own folders (Spark's
 * `_temporary/` and `.spark-staging-*`, a transaction log). A bucket-root table's maintenance leaves such keys to
 * the deployment that owns them.
 */
export function mayBeWorkArea(key: string): boolean {
  const slash = key.indexOf('/');
  if (slash === -1) return false;
  const top = key.slice(0, slash);
  if (RESERVED_TOP_FOLDERS.includes(top) || top.startsWith('.spark-staging-')) return false;
  return top.startsWith('_') || top.startsWith('.');
}

/** Whether two work roots share keys (equal, or one inside the other): two deployments on a bucket must not. */
export function workRootsOverlap(a: string, b: string): boolean {
  return a.startsWith(b) || b.startsWith(a);
}

/** The folders of a work root, each owned by one part of the system. */
export type WorkFolder =
  | 'plans'
  | 'previews'
  | 'staging'
  | 'trash'
  | 'journal'
  | 'quarantine'
  | 'tmp'
  | 'maintenance';

/** One folder of the work root, ending with `/` (grants, lifecycle rules and listings name these). */
export function workFolder(workRoot: string, folder: WorkFolder): string {
  return `${workRoot}${folder}/`;
}

/** The plan JSON of a run (replayable, printable). */
export function planKey(workRoot: string, runId: string): string {
  return `${workFolder(workRoot, 'plans')}${runId}.json`;
}

/** The Distributed Map's items file: `[{ groupId, expectedOutputFiles }]`. */
export function itemsKey(workRoot: string, runId: string): string {
  return `${workFolder(workRoot, 'plans')}${runId}.items.json`;
}

/**
 * A rewrite dry run's preview (the first rows of the partition as rewritten): table rows, so they are kept in the data's
 * own bucket beside the plan's folder, not in the execution's output — which Step Functions logs with the execution
 * data and sends to EventBridge ("Execution Status Change") — and expired with the owned bucket's staging leftovers.
 */
export function previewKey(workRoot: string, runId: string): string {
  return `${workFolder(workRoot, 'previews')}${runId}.json`;
}

/** The run id of a preview key under `workRoot` (see {@link previewKey}), or undefined for any other key. */
export function parsePreviewKey(workRoot: string, key: string): string | undefined {
  const previews = workFolder(workRoot, 'previews');
  if (!key.startsWith(previews) || !key.endsWith('.json')) return undefined;
  const runId = key.slice(previews.length, -'.json'.length);
  return runId === '' || runId.includes('/') ? undefined : runId;
}

/** The run id of a plan key under `workRoot` (never of an items file), or undefined for any other key. */
export function parsePlanKey(workRoot: string, key: string): string | undefined {
  const plans = workFolder(workRoot, 'plans');
  if (!key.startsWith(plans) || !key.endsWith('.json')) return undefined;
  const runId = key.slice(plans.length, -'.json'.length);
  return runId === '' || runId.includes('/') || runId.endsWith('.items') ? undefined : runId;
}

/** Staging prefix of one group; everything under it belongs to that group only. */
export function stagingPrefix(workRoot: string, runId: string, groupId: string): string {
  return `${workFolder(workRoot, 'staging')}${runId}/${groupId}/`;
}

/** The run and group of a key under `workRoot`'s staging, or undefined for any other key. */
export function parseStagingKey(
  workRoot: string,
  key: string,
): { runId: string; groupId: string } | undefined {
  const staging = workFolder(workRoot, 'staging');
  if (!key.startsWith(staging)) return undefined;
  const [runId = '', groupId = '', ...rest] = key.slice(staging.length).split('/');
  return runId === '' || groupId === '' || rest.length === 0 ? undefined : { runId, groupId };
}

/** The group's input fingerprint, kept beside its staged outputs so a retried verify can find it. */
export function fingerprintKey(workRoot: string, runId: string, groupId: string): string {
  return `${stagingPrefix(workRoot, runId, groupId)}_fingerprint.json`;
}

/** Where `trash` mode moves a run's inputs (the input's full key is appended). */
export function trashPrefix(workRoot: string, runId: string): string {
  return `${workFolder(workRoot, 'trash')}${runId}/`;
}

/** The run and the original key of a trash copy under `workRoot`, or undefined for any other key. */
export function parseTrashKey(
  workRoot: string,
  key: string,
): { runId: string; inputKey: string } | undefined {
  const trash = workFolder(workRoot, 'trash');
  if (!key.startsWith(trash)) return undefined;
  const rest = key.slice(trash.length);
  const slash = rest.indexOf('/');
  if (slash <= 0 || slash === rest.length - 1) return undefined;
  return { runId: rest.slice(0, slash), inputKey: rest.slice(slash + 1) };
}

/** Oversized journal file lists (the DynamoDB journal's manifests). */
export function journalManifestPrefix(workRoot: string): string {
  return workFolder(workRoot, 'journal');
}

/**
 * The journal kept in the store itself (the CLI's; see adapters/store-journal.ts): one object per group
 * entry under `runs/<runId>/`, one fence object per unsettled group under `open/<table>/<partition>/`.
 */
export function storeJournalRunsPrefix(workRoot: string): string {
  return `${workFolder(workRoot, 'journal')}runs/`;
}

/** See {@link storeJournalRunsPrefix}. */
export function storeJournalFencesPrefix(workRoot: string): string {
  return `${workFolder(workRoot, 'journal')}open/`;
}

/**
 * One key segment of the store journal for a name that may hold `/`, `=` or nothing at all (the root
 * partition is `''`): URI-encoded, with `''` as `%` and `.`/`..` escaped — segments a local folder could
 * not hold otherwise. encodeURIComponent never yields a lone `%`, so every segment decodes back.
 */
export function journalSegment(value: string): string {
  if (value === '') return '%';
  if (value === '.' || value === '..') return value.replaceAll('.', '%2E');
  return encodeURIComponent(value);
}

/** The name a {@link journalSegment} stands for. */
export function parseJournalSegment(text: string): string {
  return text === '%' ? '' : decodeURIComponent(text);
}

/** Key of a group's entry in the store journal. */
export function storeJournalEntryKey(workRoot: string, runId: string, groupId: string): string {
  return `${storeJournalRunsPrefix(workRoot)}${journalSegment(runId)}/${journalSegment(groupId)}.json`;
}

/**
 * The record `lake-compactor undo` keeps of undoing a run (`started`, then `done`), beside the store journal's
 * runs: a second undo finds the run undone, and one that finds it only started resumes it rather than taking what
 * the first changed for a later writer's change. Not under `runs/`, so vacuum, which judges that folder by the
 * journal, never takes it for an entry.
 */
export function undoRecordKey(workRoot: string, runId: string): string {
  return `${workFolder(workRoot, 'journal')}undone/${journalSegment(runId)}.json`;
}

/** The run and group of a store-journal entry key under `workRoot`, or undefined for any other key. */
export function parseStoreJournalEntryKey(
  workRoot: string,
  key: string,
): { runId: string; groupId: string } | undefined {
  const runs = storeJournalRunsPrefix(workRoot);
  if (!key.startsWith(runs) || !key.endsWith('.json')) return undefined;
  const parts = key.slice(runs.length, -'.json'.length).split('/');
  if (parts.length !== 2) return undefined;
  try {
    return {
      runId: parseJournalSegment(parts[0] as string),
      groupId: parseJournalSegment(parts[1] as string),
    };
  } catch {
    return undefined; // not an encoding this journal wrote
  }
}

/** Records of files a rewrite failed on (the CLI's store quarantine; see adapters/store-quarantine.ts). */
export function quarantinePrefix(workRoot: string): string {
  return workFolder(workRoot, 'quarantine');
}

/**
 * In-flight writes of a local-folder store (`<host>.<pid>.<uuid>`): beside the work area, on the same
 * filesystem as the table so publishing them stays an atomic rename or link, and hidden from readers.
 */
export function tempPrefix(workRoot: string): string {
  return workFolder(workRoot, 'tmp');
}

/** Where a scheduled maintenance job keeps its place between invocations. */
export function maintenanceCursorKey(workRoot: string, job: 'vacuum' | 'tiering'): string {
  return `${workFolder(workRoot, 'maintenance')}${job}.cursor.json`;
}

/**
 * What output names are made of: a RunContext has these fields (declared here, not imported, so the run
 * input may use this module's work-root rules without an import cycle).
 */
export interface RunKeyParts {
  readonly runId: string;
  readonly codec: Codec;
}

/** `part-<runId>-<gggg>-<nnnnn>.<codec>.parquet`: unique per run, ordered by group then output. */
export function outputFileName(run: RunKeyParts, groupId: string, index: number): string {
  const group = groupId.replace(/^g/, '').padStart(4, '0');
  return `part-${run.runId}-${group}-${String(index).padStart(5, '0')}.${run.codec}.parquet`;
}

/** Final key of a group's `index`-th output, in the partition's directory. */
export function outputKey(
  run: RunKeyParts & { readonly partitionDir: string },
  groupId: string,
  index: number,
): string {
  return `${run.partitionDir}${outputFileName(run, groupId, index)}`;
}

/** Staging key of a group's `index`-th output, under the run's work root. */
export function stagedOutputKey(
  run: RunKeyParts & { readonly workRoot: string },
  groupId: string,
  index: number,
): string {
  return `${stagingPrefix(run.workRoot, run.runId, groupId)}${outputFileName(run, groupId, index)}`;
}
