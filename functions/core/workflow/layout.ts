// Where a run keeps its things: plan, items, staging, trash and output keys, all derived from the run id,
// so every step (and every retry) finds them without shared state. All of it lives under `_lake-compactor/`.
import type { RunContext } from '../run-input.js';

/** Root of everything the compactor writes besides outputs; hidden (`_`) so no table reader or planner sees it. */
export const WORK_ROOT = '_lake-compactor/';

/** The plan JSON of a run (replayable, printable). */
export function planKey(runId: string): string {
  return `${WORK_ROOT}plans/${runId}.json`;
}

/** The Distributed Map's items file: `[{ groupId, expectedOutputFiles }]`. */
export function itemsKey(runId: string): string {
  return `${WORK_ROOT}plans/${runId}.items.json`;
}

/** Staging prefix of one group; everything under it belongs to that group only. */
export function stagingPrefix(runId: string, groupId: string): string {
  return `${WORK_ROOT}staging/${runId}/${groupId}/`;
}

/** The group's input fingerprint, kept beside its staged outputs so a retried verify can find it. */
export function fingerprintKey(runId: string, groupId: string): string {
  return `${stagingPrefix(runId, groupId)}_fingerprint.json`;
}

/** Where `trash` mode moves a run's inputs (the input's full key is appended). */
export function trashPrefix(runId: string): string {
  return `${WORK_ROOT}trash/${runId}/`;
}

/** Oversized journal file lists. */
export const JOURNAL_MANIFEST_PREFIX = `${WORK_ROOT}journal/`;

/**
 * In-flight writes of a local-folder store (`<host>.<pid>.<uuid>`): beside the work area, on the same
 * filesystem as the table so publishing them stays an atomic rename or link, and hidden from readers.
 */
export const TEMP_PREFIX = `${WORK_ROOT}tmp/`;

/** `part-<runId>-<gggg>-<nnnnn>.<codec>.parquet`: unique per run, ordered by group then output. */
export function outputFileName(
  run: Pick<RunContext, 'runId' | 'codec'>,
  groupId: string,
  index: number,
): string {
  const group = groupId.replace(/^g/, '').padStart(4, '0');
  return `part-${run.runId}-${group}-${String(index).padStart(5, '0')}.${run.codec}.parquet`;
}

/** Final key of a group's `index`-th output, in the partition's directory. */
export function outputKey(
  run: Pick<RunContext, 'runId' | 'codec' | 'partitionDir'>,
  groupId: string,
  index: number,
): string {
  return `${run.partitionDir}${outputFileName(run, groupId, index)}`;
}

/** Staging key of a group's `index`-th output. */
export function stagedOutputKey(
  run: Pick<RunContext, 'runId' | 'codec'>,
  groupId: string,
  index: number,
): string {
  return `${stagingPrefix(run.runId, groupId)}${outputFileName(run, groupId, index)}`;
}
