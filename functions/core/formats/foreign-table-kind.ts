// What lake-compactor says about a table of a format it recognises by its own log or metadata, wherever it meets one
// it must not treat as plain Parquet: each format's folder declares it (`<format>/foreign-table.ts`), and
// foreign-formats.ts lists them. Kept apart from the TableFormat port because the refusal is an error
// (core/errors.ts) that every layer raises: this module and the declarations import nothing, so errors.ts can
// compose the message from them without an import cycle.

/** How the location that was asked for lies to the table met: it is the table, lies inside it, or contains it. */
export type ForeignTableRelation = 'is' | 'is inside' | 'contains';

/** One recognised format, as the refusal of a location that is, lies in or holds one of its tables words it. */
export interface ForeignTableKind {
  /** The format's name, as a table config spells it (`format: "<name>"`) and markers record it. */
  readonly name: string;
  /** How people call it in messages (the format's title). */
  readonly title: string;
  /** The article before the title: `a`, or `an` before a vowel. */
  readonly article: 'a' | 'an';
  /**
   * What the refusal names as found: the evidence object, or the log folder it lies in. `table` is the
   * table's root without a trailing slash, as a URI or path; `evidenceKey` the object that gave it away.
   */
  evidence(table: string, evidenceKey: string): string;
  /**
   * Why its files must not be treated as plain Parquet (its log or metadata, not the listing, says which files are
   * live, and what breaks otherwise), ending with the separator the advice follows.
   */
  readonly whyNotPlainParquet: string;
  /**
   * What to do instead, when the command that met it has no advice of its own: the config and the CLI flags that
   * maintain the table through its format (for a location that is the table, or for the table at `table`), or, for a
   * format recognised but not implemented, what to use instead.
   */
  refusalAdvice(table: string, relation: ForeignTableRelation): string;
}
