// The props Hive-style Parquet adds to a table's (composed into `LakeCompactorTable` by the registry, ../index.ts):
// declared here so that what a user reads on a Hive-style prop lives with the rest of the format's infrastructure,
// and the shared props name no format. The setting itself (its modes, its refusal on other formats) is the
// format's table field in functions/core/formats/hive/settings.ts, which the props schema and the functions share.
import type { SchemaEvolution } from '../../../functions/core/planning-choices.js';

/** What a table's props may say of Hive-style Parquet. */
export interface HiveTableProps {
  /**
   * Hive-style Parquet tables only (`format: "parquet"`, the default; refused on any other, whose own table schema
   * decides). Such a table has no schema of its own, so whether files written under different Parquet schemas may
   * share an output is the operator's call:
   * - `never`: they are never grouped; each schema population of a partition compacts on its own.
   * - `union`: files whose schemas unify by column name are grouped and written in the union of their columns —
   *   null where a file lacks a column, `int32` widened to `int64` and `float` to `double`, a decimal's precision
   *   widened only where every declared `readers` family reads it. Anything else (a type change that is not such a
   *   widening, a name clash of different types, a nested change) is refused in the plan naming the file and the
   *   column, and those files are left alone. Verification recomputes the projected rows from the inputs
   *   independently of the rewrite. Opt in only when every reader of the table reads the union by name.
   * A run's `schemaEvolution` input (or the CLI's `--schema-evolution`) overrides it for that run. See
   * docs/table-formats.md, "Hive-style Parquet: files of different schemas".
   * @default 'never'
   */
  readonly schemaEvolution?: SchemaEvolution;
}
