// Per-column digests of rows as a Parquet reader decodes them: what a rewrite's verification compares between the
// rows re-derived from the inputs and the rows read back from the outputs. One SHA-256 per column over its values in
// row order, so a difference names the column (and the output) instead of just "differs".
import { createHash, type Hash } from 'node:crypto';

/** A decoded value as canonical text: types tagged, so 1 (float), 1n (integer) and '1' never digest alike. */
export function canonicalValue(v: unknown): string {
  if (v === null || v === undefined) return 'N';
  switch (typeof v) {
    case 'boolean':
      return v ? 'b1' : 'b0';
    case 'bigint':
      return `i${v}`;
    case 'number':
      return Object.is(v, -0) ? 'f-0' : `f${v}`;
    case 'string':
      return `s${JSON.stringify(v)}`;
    default:
      break;
  }
  if (v instanceof Uint8Array) return `x${Buffer.from(v).toString('hex')}`;
  if (v instanceof Date) return `d${v.getTime()}`;
  if (Array.isArray(v)) return `[${v.map(canonicalValue).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) =>
    a < b ? -1 : a > b ? 1 : 0,
  );
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonicalValue(x)}`).join(',')}}`;
}

/** Digests of one output's rows, column by column, fed row by row. */
export class ColumnDigests {
  private readonly hashes: Hash[];
  private readonly nulls: number[];
  private count = 0;
  private finished: string | undefined;

  constructor(readonly columns: readonly string[]) {
    this.hashes = columns.map(() => createHash('sha256'));
    this.nulls = columns.map(() => 0);
  }

  /** The next row's values, in `columns` order. */
  add(values: readonly unknown[]): void {
    for (let i = 0; i < this.columns.length; i++) {
      const v = values[i];
      if (v === null || v === undefined) this.nulls[i] = (this.nulls[i] ?? 0) + 1;
      // JSON-escaped text never holds a raw NUL: the separator keeps the encoding injective.
      (this.hashes[i] as Hash).update(`${canonicalValue(v)}\u0000`);
    }
    this.count++;
  }

  get rows(): number {
    return this.count;
  }

  /** Null count per column. */
  nullCounts(): Record<string, number> {
    return Object.fromEntries(this.columns.map((c, i) => [c, this.nulls[i] ?? 0]));
  }

  /** The digest as recorded: the columns' SHA-256 prefixes by name, as JSON (a mismatch then names its columns). */
  finish(): string {
    this.finished ??= JSON.stringify(
      Object.fromEntries(
        this.columns.map((c, i) => [c, (this.hashes[i] as Hash).digest('hex').slice(0, 32)]),
      ),
    );
    return this.finished;
  }
}

/** The columns whose digests differ between two recorded digests (`finish()` texts); every column when unreadable. */
export function differingColumns(expected: string, actual: string): string[] {
  try {
    const e = JSON.parse(expected) as Record<string, string>;
    const a = JSON.parse(actual) as Record<string, string>;
    const names = [...new Set([...Object.keys(e), ...Object.keys(a)])];
    return names.filter((n) => e[n] !== a[n]);
  } catch {
    return ['(unreadable digest)'];
  }
}
