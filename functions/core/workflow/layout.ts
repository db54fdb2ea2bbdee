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
 * The journal kept in the store itself (the CLI's; see adapters/store-journal.ts): one object per group
 * entry under `runs/<runId>/`, one fence object per unsettled group under `open/<table>/<partition>/`.
 */
export const STORE_JOURNAL_RUNS_PREFIX = `${WORK_ROOT}journal/runs/`;
export const STORE_JOURNAL_FENCES_PREFIX = `${WORK_ROOT}journal/open/`;

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
export function storeJournalEntryKey(runId: string, groupId: string): string {
  return `${STORE_JOURNAL_RUNS_PREFIX}${journalSegment(runId)}/${journalSegment(groupId)}.json`;
}

/** The run and group of a store-journal entry key, or undefined for any other key. */
export function parseStoreJournalEntryKey(key: string): { runId: string; groupId: string } | undefined {
  if (!key.startsWith(STORE_JOURNAL_RUNS_PREFIX) || !key.endsWith('.json')) return undefined;
  const parts = key.slice(STORE_JOURNAL_RUNS_PREFIX.length, -'.json'.length).split('/');
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
