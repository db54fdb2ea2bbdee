// Multiset comparison of rows for tests that look at a table between two requests: which expected rows a
// snapshot does not show (a row listed twice still counts once per occurrence).

/** The rows of `expected` that `rows` lacks, counting duplicates (empty: `rows` holds all of them). */
export function missingRows(expected: readonly string[], rows: readonly string[]): string[] {
  const missing = [...expected];
  for (const row of rows) {
    const at = missing.indexOf(row);
    if (at >= 0) missing.splice(at, 1);
  }
  return missing;
}
