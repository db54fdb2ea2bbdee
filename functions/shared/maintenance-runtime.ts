// Shared plumbing of the maintenance Lambdas (vacuum, tiering): what a scheduled event means, when an
// invocation must stop paging, and the checkpoint that lets a large lake be processed across runs.
import type { Context } from 'aws-lambda';
import { InvalidInputError, ObjectNotFoundError } from '../core/errors.js';
import { maintenanceCursorKey } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';

/** Time kept back from the Lambda timeout for the last page's deletes and the response. */
export const SAFETY_MARGIN_MS = 90_000;

/**
 * The input an operator or a rule meant. A rule without Input delivers the bare scheduled event, which
 * carries no settings: it means "the defaults" (which include dryRun: true).
 */
export function maintenanceInput(event: unknown): unknown {
  if (
    event !== null &&
    typeof event === 'object' &&
    (event as Record<string, unknown>)['detail-type'] === 'Scheduled Event'
  ) {
    return {};
  }
  return event ?? {};
}

/** Stops paging when the invocation is about to run out of time (never when there is no context). */
export function deadlineOf(context: Context | undefined): () => boolean {
  return () =>
    typeof context?.getRemainingTimeInMillis === 'function' &&
    context.getRemainingTimeInMillis() < SAFETY_MARGIN_MS;
}

/** Where a scheduled run keeps its place between invocations: one small JSON object in the work root. */
export interface Checkpoint {
  readonly store: ObjectStore;
  readonly key: string;
}

/** The checkpoint of `job` for these tables: in the first table's bucket, under the work root's `maintenance/`. */
export function checkpointOf(
  job: 'vacuum' | 'tiering',
  tables: readonly { readonly bucket?: string | undefined }[],
  storeFor: (bucket: string) => ObjectStore,
  workRoot: string,
): Checkpoint | undefined {
  const bucket = tables.find((t) => t.bucket !== undefined)?.bucket;
  return bucket === undefined
    ? undefined
    : { store: storeFor(bucket), key: maintenanceCursorKey(workRoot, job) };
}

interface Saved {
  readonly cursor: string;
  /** The table selection the cursor belongs to (`*` = all). */
  readonly tables: string;
}

/**
 * Runs `work` resuming where the last scheduled run stopped. With `resume: true` in the input (the
 * schedules set it) and no explicit cursor, the saved cursor is used when it belongs to the same table
 * selection; afterwards the new cursor is saved, or the checkpoint removed when the pass is complete.
 * So a lake larger than one invocation is vacuumed across several scheduled runs instead of only ever its
 * first pages. A saved cursor that no longer fits (tables reconfigured) is dropped and the pass restarts.
 */
export async function resumable<R extends { readonly cursor?: string }>(
  input: unknown,
  checkpoint: Checkpoint | undefined,
  work: (input: Record<string, unknown>) => Promise<R>,
): Promise<R> {
  const { resume, ...rest } = (input ?? {}) as Record<string, unknown>;
  if (resume !== true || checkpoint === undefined || rest.cursor !== undefined) return work(rest);
  const selection = Array.isArray(rest.tables) ? [...(rest.tables as string[])].sort().join(',') : '*';
  let saved: Saved | undefined;
  if (await checkpoint.store.head(checkpoint.key)) {
    try {
      saved = JSON.parse(new TextDecoder().decode(await checkpoint.store.get(checkpoint.key))) as Saved;
    } catch (err) {
      if (!(err instanceof ObjectNotFoundError) && !(err instanceof SyntaxError)) throw err;
    }
  }
  let result: R;
  try {
    result =
      saved !== undefined && saved.tables === selection
        ? await work({ ...rest, cursor: saved.cursor })
        : await work(rest);
  } catch (err) {
    if (!(err instanceof InvalidInputError) || saved === undefined || !/cursor/.test(err.message)) throw err;
    result = await work(rest);
  }
  if (result.cursor === undefined) await checkpoint.store.deleteMany([{ key: checkpoint.key }]);
  else {
    const next: Saved = { cursor: result.cursor, tables: selection };
    await checkpoint.store.put(checkpoint.key, JSON.stringify(next), { contentType: 'application/json' });
  }
  return result;
}
