// Argument parsers and naming rules shared by every CLI command, so `--target-mb big` and a URI's
// table name mean the same thing in profile, plan, compact, status and history.
import { InvalidArgumentError, Option } from 'commander';
import {
  DEFAULT_TABLE_FORMAT,
  isTableFormatName,
  TABLE_FORMAT_NAMES,
  type TableFormatName,
  unsupportedFormatMessage,
} from '../core/formats/index.js';
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
