// Hive-style Parquet's own settings (see formats/format-settings.ts): `schemaEvolution`, the opt-in union of a
// partition's schema populations (schema-union.ts), as a table-config field and a run input, both refused on tables
// of every other format (a Delta or Iceberg table projects onto its own schema instead). The choice itself — its
// modes, its names, its message — is defined once in core/planning-choices.ts, which the `--schema-evolution` flag of
// `plan` and `compact` reads too.
import { z } from 'zod';
import { SCHEMA_EVOLUTION_NAMES, schemaEvolutionSchema } from '../../planning-choices.js';
import { readersSchema } from '../../readers.js';
import { defineFormatSettings, type SettingsValue } from '../format-settings.js';

/** What a Hive-style run carries in its context for the listing to read back (see {@link hiveRunOptionsSchema}). */
const HIVE_RUN_CONTEXT = {
  /** `union` when the run unifies its partition's schema populations (absent: never). */
  schemaEvolution: z.literal('union').optional(),
  /**
   * The readers the union's widenings are checked against (the request's, else the table's), recorded only with
   * `union`: a decimal widens only where every one of them reads it.
   */
  schemaUnionReaders: readersSchema.optional(),
};

/** What a Hive-style table's config may say of the format: whether its schema populations are unified. */
export const hiveSettings = defineFormatSettings({
  tableFields: {
    /**
     * `never` (default): files of different Parquet schemas are never grouped. `union`: files whose schemas unify by
     * column name are grouped into outputs of the union of their columns (schema-union.ts); the rest are refused by
     * name and left alone.
     */
    schemaEvolution: schemaEvolutionSchema().optional(),
  },
  run: {
    input: {
      /** This run's schema evolution, over the table's (`never` or `union`). */
      [SCHEMA_EVOLUTION_NAMES.runInput]: schemaEvolutionSchema().optional(),
    },
    context: HIVE_RUN_CONTEXT,
    resolve: (table, request) => {
      const mode = request.schemaEvolution ?? table.schemaEvolution ?? 'never';
      if (mode !== 'union') return {};
      const readers = request.readers ?? table.readers;
      return {
        schemaEvolution: 'union' as const,
        ...(readers === undefined ? {} : { schemaUnionReaders: [...readers] }),
      };
    },
  },
});

/** A Hive-style table's settings, as the format reads them. */
export type HiveTableSettings = SettingsValue<typeof hiveSettings>;

/** The run options the Hive listing reads back (`SnapshotOptions.formatOptions`), as its context resolved them. */
export const hiveRunOptionsSchema = z.object(HIVE_RUN_CONTEXT);
