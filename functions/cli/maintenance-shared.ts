// What `lake-compactor vacuum` and `lake-compactor tier` share: the operator's I/O, their errors (a usage
// problem is found before anything is listed, exit 2), the location as a store, and who confirms a real run.

import { createInterface } from 'node:readline/promises';
import type { OpenedStore } from '../adapters/open-store.js';
import { CompactorError, InvalidInputError, UsageError } from '../core/errors.js';
import type { TableConfig } from '../core/table-config.js';
import { DEFAULT_WORK_ROOT } from '../core/workflow/layout.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import { tableNameOf } from './args.js';

/** Rows of candidates printed in text mode; `--json` lists every one. */
export const PRINTED_ROWS = 50;

export interface MaintenanceIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Asks the operator to confirm a destructive run. When absent, a y/N prompt on the terminal is used if
   * stdin is one; otherwise a real run needs `--yes` (a script or pipe cannot answer a prompt).
   */
  readonly confirm?: (question: string) => Promise<boolean>;
}

/** The operator answered no (or nothing): nothing was changed. */
export class OperationCancelledError extends CompactorError {}

/** A real run finished but some objects could not be removed or moved; they are listed. */
export class MaintenanceIncompleteError extends CompactorError {}

/**
 * A usage problem found before anything was listed or changed (an invalid value, the retention gate, the
 * wrong kind of location, a real run nobody can confirm): the CLI exits 2 with it, like for a bad flag.
 */
export { UsageError };

/** Runs `validate`, re-raising its input errors as usage errors (a schema's verdict on the options). */
export function asUsage<T>(validate: () => T): T {
  try {
    return validate();
  } catch (err) {
    if (err instanceof InvalidInputError && !(err instanceof UsageError)) throw new UsageError(err.message);
    throw err;
  }
}

/** The job's location as the store and key prefix the CLI opened. */
export function openedOf(job: {
  readonly uri: string;
  readonly store: ObjectStore;
  readonly table: TableConfig;
  readonly workRoot?: string;
}): OpenedStore {
  return {
    store: job.store,
    prefix: job.table.prefix === '' ? '' : `${job.table.prefix}/`,
    uri: job.uri,
    workRoot: job.workRoot ?? DEFAULT_WORK_ROOT,
  };
}

export function isS3(uri: string): boolean {
  return /^s3a?:\/\//i.test(uri.trim());
}

export function bucketOf(uri: string): string {
  return /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local';
}

/** The URI's last segment as a valid table name (a folder may be called `my lake (copy)`). */
export function defaultName(uri: string): string {
  return (
    tableNameOf(uri)
      .replace(/[^A-Za-z0-9_.-]/g, '_')
      .replace(/^[^A-Za-z0-9]+/, '') || 'table'
  );
}

/**
 * Who confirms a real run: nobody for a dry run or with `--yes`; the injected or terminal prompt when
 * there is one. A real run with neither is refused before anything is listed: a scheduler or a pipe would
 * otherwise delete without anyone having seen the list (the scheduled functions are dry-run by default for
 * the same reason), and `--yes` makes that choice explicit in the script.
 */
export function confirmerFor(
  io: MaintenanceIo,
  options: { readonly dryRun?: boolean; readonly yes?: boolean },
  command: 'vacuum' | 'tier',
): ((question: string) => Promise<boolean>) | undefined {
  if (options.dryRun || options.yes) return undefined;
  const confirm = io.confirm ?? terminalConfirm();
  if (confirm === undefined) {
    throw new UsageError(
      `${command} without --dry-run changes the lake, and stdin is not a terminal to confirm it: pass --yes to go ahead without a prompt, or --dry-run to only list what would change`,
    );
  }
  return confirm;
}

/** A y/N prompt on stderr when stdin is a terminal; undefined otherwise. */
function terminalConfirm(): ((question: string) => Promise<boolean>) | undefined {
  if (!process.stdin.isTTY) return undefined;
  return async (question) => {
    const rl = createInterface({ input: process.stdin, output: process.stderr });
    try {
      return /^y(es)?$/i.test((await rl.question(`${question} [y/N] `)).trim());
    } finally {
      rl.close();
    }
  };
}

/** The operation a maintenance run applies object by object, and the store call that applies it. */
interface AppliedChange {
  /** `vacuum` or `tier`: the command the report says to run again. */
  readonly command: 'vacuum' | 'tier';
  /** The past tense the report uses: `deleted`, `moved`. */
  readonly past: string;
  /** Why an interruption leaves nothing half done, said after the counts. */
  readonly safe: string;
}

/**
 * How far a `vacuum` or `tier` run got, kept as it goes, so Ctrl-C (through compact's withInterruptReport) can say
 * what was already changed, what was left and what to run next. Why: each delete or in-place copy is final and
 * independent, and the next run lists again and does what is still due — but an operator who sees the process exit
 * 130 in silence knows none of that.
 */
export class MaintenanceProgress {
  private planned: number | undefined;
  private applied = 0;
  /** Objects of a request under way: a batch delete stopped midway may have removed some of them. */
  private inFlight = 0;

  constructor(
    private readonly uri: string,
    private readonly dryRun: boolean,
    private readonly change: AppliedChange,
  ) {}

  /** The listing is done: `objects` will be changed once confirmed. */
  listed(objects: number): void {
    this.planned = objects;
  }

  /**
   * `store`, counting the objects the run changes through it (deletes that succeeded; in-place copies): what the
   * report says was done. Every other call passes through; `instanceof` still sees the store's class.
   */
  counting(store: ObjectStore): ObjectStore {
    const track = async <T>(
      objects: number,
      call: () => Promise<T>,
      done: (result: T) => number,
    ): Promise<T> => {
      this.inFlight += objects;
      try {
        const result = await call();
        this.applied += done(result);
        return result;
      } finally {
        this.inFlight -= objects;
      }
    };
    return new Proxy(store, {
      get: (target, property) => {
        if (property === 'deleteMany' && this.change.command === 'vacuum') {
          return (refs: Parameters<ObjectStore['deleteMany']>[0]) =>
            track(
              refs.length,
              () => target.deleteMany(refs),
              (result) => refs.length - result.errors.length,
            );
        }
        if (property === 'copy' && this.change.command === 'tier') {
          return (...args: Parameters<ObjectStore['copy']>) =>
            track(
              1,
              () => target.copy(...args),
              () => 1,
            );
        }
        const value = Reflect.get(target, property, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  }

  /** What Ctrl-C prints: what was changed, what was left, and what to run next. */
  interruptedReport(): string[] {
    const { command, past, safe } = this.change;
    const again = `next: run the same lake-compactor ${command} ${this.uri} again: it lists again and does only what is still due.`;
    if (this.dryRun) return [`\ninterrupted (Ctrl-C) during a dry run: nothing was ${past}.`];
    if (this.planned === undefined)
      return [`\ninterrupted (Ctrl-C) while listing: nothing was ${past} yet.`, again];
    const left = Math.max(0, this.planned - this.applied - this.inFlight);
    const inFlight =
      this.inFlight === 0 ? '' : `, ${this.inFlight} in a request under way (${past} or not, each whole)`;
    return [
      `\ninterrupted (Ctrl-C): ${this.applied} of ${this.planned} objects ${past}${inFlight}, ${left} left as they were. ${safe}`,
      again,
    ];
  }
}
