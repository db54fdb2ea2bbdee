// Argument parsers and naming rules shared by every CLI command, so `--target-mb big` and a URI's
// table name mean the same thing in profile, plan, compact, status and history.
import { InvalidArgumentError } from 'commander';

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
