// Which input files are quarantined: one that broke a rewrite is left out of later plans while it is the
// same object (same ETag), so its neighbours still compact; a new ETag, or its removal, releases it.
import { z } from 'zod';
import { CorruptInputError, UnsupportedInputError } from './errors.js';

/**
 * One quarantined file, as stored. `etag` is the object the rewrite failed on: the quarantine holds only
 * while the listed object still has it, so a writer or an operator replacing the file releases it.
 */
export const quarantinedFileSchema = z.object({
  table: z.string().min(1),
  /** The partition's path relative to the table root ('' when unpartitioned). */
  partition: z.string(),
  key: z.string().min(1),
  /** Entity tag without quotes, as planned. */
  etag: z.string(),
  /** What was wrong with it (the error's reason, without the advice around it). */
  reason: z.string(),
  /** `CorruptInputError` or `UnsupportedInputError`. */
  errorName: z.string().min(1),
  /** The run (execution name) whose rewrite failed on it. */
  runId: z.string().min(1),
  /** When it was quarantined, epoch ms. */
  since: z.number().int().nonnegative(),
  /**
   * For an engine's refusal of a valid file (`UnsupportedInputError`): the settings it was refused under, so a run
   * whose settings lift the refusal tries the file again (see {@link liftedBy}). Absent for a damaged file, which
   * no setting repairs, and in records written before this field existed (they hold until cleared, as they did).
   */
  refusedUnder: z
    .object({
      /** Which of the two settings below can lift this refusal (the engine's `UnsupportedInputError.liftedBy`). */
      liftedBy: z.enum(['schemaFidelity', 'memory']),
      /** The schema fidelity the run asked for (`exact` refuses what `logical` writes, e.g. INT96 timestamps). */
      schemaFidelity: z.enum(['exact', 'logical']),
      /** The memory (MB) of the process whose rewrite refused it (a row group too large for it). */
      memoryMb: z.number().int().positive(),
    })
    .optional(),
});
export type QuarantinedFile = z.infer<typeof quarantinedFileSchema>;

/** A partition whose quarantine is read or cleared. */
export interface QuarantinePartition {
  readonly table: string;
  readonly partition: string;
}

/**
 * The input a failed rewrite blames, when the failure is the file's own (damaged, or valid but not
 * reproducible by the engine) — the only failures worth quarantining. Anything else (throttling, memory,
 * a stalled writer, an unreadable *output*) says nothing against one input, and a key outside the group
 * (e.g. `(batch)` from the fingerprint, or an output key) names no input: neither quarantines anything.
 */
export function blamedInput(
  err: unknown,
  inputKeys: readonly string[],
): CorruptInputError | UnsupportedInputError | undefined {
  if (!(err instanceof CorruptInputError || err instanceof UnsupportedInputError)) return undefined;
  return inputKeys.includes(err.key) ? err : undefined;
}

/** The settings an engine's refusal depends on, as a run has them (see `QuarantinedFile.refusedUnder`). */
export type RefusalSettings = Omit<NonNullable<QuarantinedFile['refusedUnder']>, 'liftedBy'>;

/**
 * Whether `current` settings lift a refusal recorded under `refusedUnder`, by the setting that can lift it: the run
 * now asks for the logical fidelity where the file was refused under the exact one, or the compact process has more
 * memory than the one that refused it. Only a change that can lift it: an INT96 refusal is not retried for more
 * memory, and a run with less memory, or back to exact, would only meet the same refusal again.
 */
export function liftedBy(
  refusedUnder: QuarantinedFile['refusedUnder'],
  current: RefusalSettings | undefined,
): boolean {
  if (refusedUnder === undefined || current === undefined) return false;
  return refusedUnder.liftedBy === 'schemaFidelity'
    ? refusedUnder.schemaFidelity === 'exact' && current.schemaFidelity === 'logical'
    : current.memoryMb > refusedUnder.memoryMb;
}

/**
 * Splits a partition's quarantine against its current listing: `active` are files still listed with the
 * quarantined ETag (planning leaves them out); `released` are records whose object was replaced (another
 * ETag) or removed since, which the caller clears — nothing of the old object is left to protect — and, given the
 * run's `settings`, records of refusals those settings lift (the file is tried again; refused again, it is
 * quarantined again under the new settings).
 */
export function matchQuarantine(
  records: readonly QuarantinedFile[],
  listed: readonly { readonly key: string; readonly etag: string }[],
  settings?: RefusalSettings,
): { active: QuarantinedFile[]; released: QuarantinedFile[] } {
  const etags = new Map(listed.map((f) => [f.key, f.etag]));
  const active: QuarantinedFile[] = [];
  const released: QuarantinedFile[] = [];
  for (const record of records) {
    if (etags.get(record.key) === record.etag && !liftedBy(record.refusedUnder, settings))
      active.push(record);
    else released.push(record);
  }
  return { active, released };
}

/** The planner's skip reason for a quarantined file: when, by which run, why, and how it is released. */
export function quarantineSkipReason(record: QuarantinedFile): string {
  return (
    `quarantined since ${new Date(record.since).toISOString()} by run ${record.runId}: ${record.reason} ` +
    `(${record.errorName}); left alone until the object is replaced or an operator clears it ` +
    '(lake-compactor quarantine <uri> --clear <key>)'
  );
}

/** Sorted by table, partition, then key (code-unit order, the same on every machine). */
export function sortQuarantine(records: readonly QuarantinedFile[]): QuarantinedFile[] {
  const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  return [...records].sort(
    (a, b) => cmp(a.table, b.table) || cmp(a.partition, b.partition) || cmp(a.key, b.key),
  );
}
