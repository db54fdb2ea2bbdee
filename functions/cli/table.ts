// Renders rows as an aligned plain-text table for the CLI; numbers right-aligned so columns of
// figures can be compared at a glance. No colours, so output stays pipe- and log-friendly; cells escaped.

import { printable } from '../core/keys.js';

export interface Column<R> {
  readonly header: string;
  readonly value: (row: R) => string | number;
  readonly align?: 'left' | 'right';
}

/**
 * Every cell is shown with {@link printable}: keys, partitions and reasons come from listings and table metadata
 * written by others, and a control character in one (an ANSI escape, a newline) would rewrite or forge the lines
 * an operator reads before confirming.
 */
export function renderTable<R>(columns: readonly Column<R>[], rows: readonly R[]): string {
  const cells = rows.map((row) => columns.map((c) => printable(String(c.value(row)))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((r) => r[i]?.length ?? 0)));
  const line = (values: readonly string[]) =>
    values
      .map((v, i) => {
        const width = widths[i] ?? 0;
        return columns[i]?.align === 'right' ? v.padStart(width) : v.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  return [
    line(columns.map((c) => c.header)),
    line(widths.map((w) => '-'.repeat(w))),
    ...cells.map(line),
  ].join('\n');
}
