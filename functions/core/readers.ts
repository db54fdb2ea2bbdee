// The engines a table must stay readable by, and what the writer may use because of them: DELTA_BINARY_PACKED
// (faster to encode and smaller on integer and timestamp columns, see docs/engine.md) is written only where every
// declared reader decodes it in version-1 data pages. The evidence behind each row is cited in docs/configuration.md.
import { z } from 'zod';

/**
 * The reader families a table may declare. Versions are part of the name where support changed between them
 * (`spark-3.3` vs `spark-legacy`, `athena-v3` vs `athena-v2`); `any` stands for readers not listed (a
 * third-party tool, an unknown BI driver) and so supports nothing beyond what every reader reads.
 */
export const READERS = [
  'spark-3.3',
  'spark-legacy',
  'trino',
  'athena-v3',
  'athena-v2',
  'duckdb',
  'pyarrow',
  'polars',
  'hive',
  'impala',
  'redshift-spectrum',
  'any',
] as const;
export type Reader = (typeof READERS)[number];

/** What a reader family is known to decode beyond PLAIN, dictionary and RLE, and why we believe it. */
export interface ReaderSupport {
  /** Reads DELTA_BINARY_PACKED INT32/INT64 columns in version-1 data pages. */
  readonly deltaBinaryPacked: boolean;
  /** Where the answer comes from; "not established" means it is treated as unsupported until someone shows otherwise. */
  readonly evidence: string;
}

/**
 * The support table. A reader is marked as supporting an encoding only where a change in its own project
 * says so; where we could not establish it, the answer is "no", because the cost of a wrong "yes" is a table
 * its readers cannot read, and the cost of a wrong "no" is a few percent of encode time.
 */
export const READER_SUPPORT: Readonly<Record<Reader, ReaderSupport>> = {
  'spark-3.3': {
    deltaBinaryPacked: true,
    evidence: 'SPARK-36879 (apache/spark#34471): vectorized DELTA_BINARY_PACKED reader, released in 3.3.0',
  },
  'spark-legacy': {
    deltaBinaryPacked: false,
    evidence:
      'before SPARK-36879 the vectorized reader (on by default) fails with "Unsupported encoding: DELTA_BINARY_PACKED"',
  },
  trino: {
    deltaBinaryPacked: true,
    evidence: 'trinodb/trino#334 (INT64 delta, 2019) and #15850 (optimized DELTA_BINARY_PACKED decoders)',
  },
  'athena-v3': {
    deltaBinaryPacked: true,
    evidence: "engine version 3 is built on Trino's Parquet reader (AWS, Athena engine version 3 notes)",
  },
  'athena-v2': {
    deltaBinaryPacked: false,
    evidence: 'not established: engine v2 predates the Trino readers above; treated as unsupported',
  },
  duckdb: {
    deltaBinaryPacked: true,
    evidence:
      'duckdb/duckdb#6836 (timestamps, dates, times) and #8715; DuckDB writes it itself with PARQUET_VERSION v2',
  },
  pyarrow: {
    deltaBinaryPacked: true,
    evidence:
      'PARQUET-490 (apache/arrow#10627, Arrow C++ DeltaBitPackDecoder), released in Arrow/pyarrow 6.0',
  },
  polars: {
    deltaBinaryPacked: false,
    evidence:
      'pola-rs/polars#15214 (open): "Decoding Int64 DeltaBinaryPacked-encoded required parquet pages not yet implemented"',
  },
  hive: {
    deltaBinaryPacked: false,
    evidence: 'not established for its vectorized Parquet reader; treated as unsupported',
  },
  impala: {
    deltaBinaryPacked: false,
    evidence:
      'not established (Impala added RLE_DICTIONARY only in 4.0, IMPALA-6434); treated as unsupported',
  },
  'redshift-spectrum': {
    deltaBinaryPacked: false,
    evidence: 'not established: AWS documents no Parquet encodings for Spectrum; treated as unsupported',
  },
  any: {
    deltaBinaryPacked: false,
    evidence: 'an unnamed reader is assumed to read only PLAIN, dictionary and RLE',
  },
};

/** The message for a name that is not a reader family: every accepted name, so the fix is one edit. */
export function unknownReaderMessage(name: string): string {
  return `"${name}" is not a reader this table can declare; use one of ${READERS.join(', ')}`;
}

/** A list of reader families: at least one, each known, none twice; unknown names list the accepted ones. */
export const readersSchema = z
  .array(z.string())
  .min(1, `name at least one reader (${READERS.join(', ')}), or leave readers out`)
  .superRefine((names, ctx) => {
    names.forEach((name, index) => {
      if (!(READERS as readonly string[]).includes(name))
        ctx.addIssue({ code: 'custom', path: [index], message: unknownReaderMessage(name) });
      else if (names.indexOf(name) !== index)
        ctx.addIssue({ code: 'custom', path: [index], message: `"${name}" is listed twice` });
    });
  })
  .transform((names) => names as Reader[]);

/** The declared readers that cannot read DELTA_BINARY_PACKED (none when undeclared). */
export function readersWithoutDelta(readers: readonly Reader[] | undefined): Reader[] {
  return (readers ?? []).filter((r) => !READER_SUPPORT[r].deltaBinaryPacked);
}

/**
 * Whether integer and timestamp columns may be written DELTA_BINARY_PACKED. An explicit `deltaEncoding` wins
 * (the operator knows their readers); otherwise it is on only when the table declares its readers and every one
 * of them reads it — undeclared readers could be anything, so the default stays what every reader reads.
 */
export function resolveDeltaEncoding(
  deltaEncoding: boolean | undefined,
  readers: readonly Reader[] | undefined,
): boolean {
  if (deltaEncoding !== undefined) return deltaEncoding;
  return readers !== undefined && readers.length > 0 && readersWithoutDelta(readers).length === 0;
}

/**
 * Why `deltaEncoding: true` contradicts the declared readers, or undefined: turning it on for a reader known not
 * to decode it would write files that reader fails on, so the setting is refused rather than one of them ignored.
 */
export function deltaReadersConflict(
  deltaEncoding: boolean | undefined,
  readers: readonly Reader[] | undefined,
  /** How the caller's user set it: the config key (default) or, say, a CLI flag. */
  setting: { readonly name: string; readonly given: string } = { name: 'deltaEncoding', given: 'is true' },
): string | undefined {
  if (deltaEncoding !== true) return undefined;
  const unable = readersWithoutDelta(readers);
  if (unable.length === 0) return undefined;
  return `${setting.name} ${setting.given} but the declared reader(s) ${unable.join(', ')} cannot read DELTA_BINARY_PACKED; drop ${setting.name} (readers then decide) or the reader(s)`;
}

/**
 * The reader families known to read a Parquet decimal column written at a larger precision (same scale) than the
 * files beside it, each with its evidence: what a schema union (`schemaEvolution: 'union'`) must know before it
 * widens a decimal, because the widened output may change the column's physical type (INT32 → INT64 or
 * FIXED_LEN_BYTE_ARRAY) while the table's other files keep theirs. Empty: for no family listed in READERS could we
 * establish it (Spark's vectorized reader reads decimal promotions only from 4.0, SPARK-40876, which no family here
 * names), so a union refuses decimal widenings until a family here is shown to read them. int32 → int64 and
 * float32 → float64 are applied without this check, as the union's design decides: the output holds the type the
 * newer files already have, and the narrower files it replaces were in the table before the union; whether each
 * reader reads the remaining mix is the table's question, unchanged by the union (not established per reader here).
 * A byte or short (INT32 annotated INT(8) or INT(16)) widened to int16 or int32 needs no reader either: the output
 * keeps the physical INT32 every reader decodes, only its annotation widens (a reader ignoring the annotation reads
 * the same values); widened to int64 it is the int32 → int64 case.
 */
export const WIDENED_DECIMAL_READERS: ReadonlyMap<Reader, string> = new Map();

/** Whether every declared reader reads a widened decimal (false when none is declared: any reader could be one). */
export function readersReadWidenedDecimals(
  readers: readonly Reader[] | undefined,
  known: ReadonlyMap<Reader, string> = WIDENED_DECIMAL_READERS,
): boolean {
  return readers !== undefined && readers.length > 0 && readers.every((r) => known.has(r));
}
