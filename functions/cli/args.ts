// Argument parsers and naming rules shared by every CLI command, so `--target-mb big` and a URI's
// table name mean the same thing in profile, plan, compact, status and history.
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { InvalidArgumentError, Option } from 'commander';
import {
  DEFAULT_TABLE_FORMAT,
  isTableFormatName,
  TABLE_FORMAT_NAMES,
  type TableFormatName,
  unsupportedFormatMessage,
} from '../core/formats/index.js';
import { type MemoryBudget, memoryBudget } from '../core/memory-budget.js';
import { workRootProblem } from '../core/workflow/layout.js';

export function positiveNumber(value: string): number {
  const n = Number(value);
  if (!Number.isFinite(n) || n <= 0) throw new InvalidArgumentError('expected a positive number.');
  return n;
}

export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive integer.');
  return n;
}

/** Table name for display and plans: the last segment of the URI's path. */
export function tableNameOf(uri: string): string {
  const segments = uri.replace(/\/+$/, '').split('/');
  return segments[segments.length - 1] || 'table';
}

/**
 * `--work-root <prefix>`: the work root in the location's bucket (or folder) where the command keeps (or
 * finds) plans, staging, trash, its journal, quarantine and temp files. Unset, the default `_lake-compactor/`.
 */
export function workRootOption(): Option {
  return new Option(
    '--work-root <prefix>',
    "the work root in the bucket or folder (default _lake-compactor/); beside a deployment, use the deployment's workRoot",
  ).argParser((value: string) => {
    const problem = workRootProblem(value);
    if (problem !== undefined) throw new InvalidArgumentError(`the work root ${problem}.`);
    return value;
  });
}

/**
 * `--format <name>`: the location's table format, one of the registry's (core/formats/index.ts); any other name
 * is refused before anything is listed, with the message every other refusal of a format uses.
 */
export function formatOption(): Option {
  return new Option('--format <name>', `table format of the location: ${TABLE_FORMAT_NAMES.join(', ')}`)
    .default(DEFAULT_TABLE_FORMAT)
    .argParser((value: string): TableFormatName => {
      if (!isTableFormatName(value)) throw new InvalidArgumentError(`${unsupportedFormatMessage(value)}.`);
      return value;
    });
}

/** The smallest `--memory-mb` accepted: below it not even the runtime fits. */
const MIN_MEMORY_MB = 128;

/** `--memory-mb <n>`: a whole number of MB, at least {@link MIN_MEMORY_MB}. */
export function memoryMbArgument(value: string): number {
  const n = Number(value);
  if (!Number.isSafeInteger(n) || n < MIN_MEMORY_MB)
    throw new InvalidArgumentError(`expected a whole number of MB, at least ${MIN_MEMORY_MB}.`);
  return n;
}

/**
 * The memory budget of one CLI command (see core/memory-budget.ts): `--memory-mb` when the command line has a valid
 * one, else this machine's memory, never more than Node's heap limit (the metadata decoders hold what they decode
 * on the heap). An invalid `--memory-mb` is left to commander, which refuses it as a usage error.
 */
export function cliMemoryBudget(argv: readonly string[]): MemoryBudget {
  let given: number | undefined;
  for (const [i, arg] of argv.entries()) {
    const value =
      arg === '--memory-mb' ? argv[i + 1] : arg.startsWith('--memory-mb=') ? arg.slice(12) : undefined;
    if (value === undefined) continue;
    try {
      given = memoryMbArgument(value);
    } catch {
      given = undefined;
    }
  }
  if (given !== undefined)
    return memoryBudget(
      given,
      `run it with a larger --memory-mb (now ${given}) on a machine that has the memory`,
    );
  const machine = Math.floor(Math.min(totalmem(), getHeapStatistics().heap_size_limit) / (1024 * 1024));
  return memoryBudget(
    machine,
    `run it with --memory-mb above ${machine} (this machine's memory or Node's heap limit, whichever is less) on a machine that has it, with Node's heap raised to match (NODE_OPTIONS=--max-old-space-size=<MB>)`,
  );
}
