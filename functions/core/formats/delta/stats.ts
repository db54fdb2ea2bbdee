// The `stats` JSON of an `add` action for a Parquet file lake-compactor wrote, computed from its footer the way
// Spark Delta's StatisticsCollection computes it from the rows: numRecords, minValues, maxValues and nullCount
// over the columns the table indexes, keyed by physical names, values in Delta's JSON formats.
import { CompactorError } from '../../errors.js';
import {
  type ParquetColumnStats,
  type ParquetFileStats,
  type ParquetStatValue,
  parquetColumnStats,
} from '../../parquet/column-stats.js';
import { type FooterSource, readFooterBytes } from '../../parquet/footer.js';
import type { ColumnMappingMode, DeltaField, DeltaSchema, DeltaType } from './schema.js';
import { PHYSICAL_NAME_KEY } from './schema.js';

/** The table settings stats depend on; a `DeltaMetadata` of the snapshot fits. */
export interface DeltaStatsTable {
  readonly schema: DeltaSchema;
  /** Logical names: these columns are not in the data files and are neither indexed nor counted. */
  readonly partitionColumns: readonly string[];
  readonly configuration: Readonly<Record<string, string>>;
}

export interface DeltaStatsOptions {
  /**
   * Characters (code points) kept of string bounds. Spark's session setting
   * `spark.databricks.io.skipping.stringPrefixLength`, default 32; it is not a table property.
   */
  readonly stringPrefixLength?: number;
  /**
   * Write `"tightBounds":true`. Spark writes it when the table's protocol supports deletion vectors; a new
   * file has none, so its bounds are tight (PROTOCOL.md "Per-file Statistics").
   */
  readonly tightBounds?: boolean;
}

export const NUM_INDEXED_COLS_KEY = 'delta.dataSkippingNumIndexedCols';
export const STATS_COLUMNS_KEY = 'delta.dataSkippingStatsColumns';
const COLUMN_MAPPING_MODE_KEY = 'delta.columnMapping.mode';
/** Spark Delta's default of `delta.dataSkippingNumIndexedCols` (DeltaConfigs.DATA_SKIPPING_NUM_INDEXED_COLS). */
export const DEFAULT_NUM_INDEXED_COLS = 32;
/** Spark Delta's default string prefix (DeltaSQLConf.DATA_SKIPPING_STRING_PREFIX_LENGTH). */
export const DEFAULT_STRING_PREFIX_LENGTH = 32;
/**
 * The tie-breaker Spark appends to a truncated string maximum (StatisticsCollection.truncateMaxStringAgg):
 * U+FFFD sorts above every character a prefix could be cut before, except U+FFFD…U+FFFF and characters beyond
 * the BMP, which are therefore kept in the prefix.
 */
const TIE_BREAKER = 0xfffd;

/** A table property that stats collection depends on has a value Delta itself would refuse. */
export class DeltaStatsConfigError extends CompactorError {
  constructor(
    readonly property: string,
    readonly value: string,
    reason: string,
  ) {
    super(
      `Delta table property ${property}=${JSON.stringify(value)} is not valid (${reason}); fix it with ALTER TABLE … SET TBLPROPERTIES before compacting: the stats of a rewritten file would be wrong.`,
    );
  }
}

/**
 * The `stats` string of an `add` for a data file with these Parquet statistics, as Spark Delta writes it:
 * - numRecords: the file's rows.
 * - Columns: `delta.dataSkippingStatsColumns` when set (logical names, case-insensitive, `a.b` for a nested
 *   field, backticks for names with dots or commas; a struct means all its fields), else the first
 *   `delta.dataSkippingNumIndexedCols` (default 32, -1 = all) columns in schema order, counting every
 *   non-struct field (an array or map counts as one) and descending into structs. Partition columns are
 *   removed first: they do not count (StatisticsCollection.getIndexedColumns/truncateSchema).
 * - Keys: physical names at every level under column mapping `name`/`id`, nested structs as nested objects.
 * - minValues/maxValues, only for the types Spark collects them for (SkippingEligibleDataType): integers,
 *   decimals as exact JSON numbers (`12.30`), dates `YYYY-MM-DD`, timestamps `YYYY-MM-DDTHH:mm:ss.sssZ`
 *   (timestamp_ntz without `Z`) truncated down to milliseconds (the protocol's footnote: readers widen the
 *   max by 1 ms), strings cut to `stringPrefixLength` code points — the max then gets Spark's tie-breaker.
 *   Booleans, binary, arrays and maps get none, as in Spark.
 *   float/double get none, unlike Spark: Spark's max of a column holding NaN is NaN (NaN sorts last) but
 *   Parquet bounds leave NaN out, so a footer cannot give a bound Spark-semantics readers may trust.
 *   A bound is omitted whenever the footer lacks a trustworthy one (see `parquetColumnStats`), never guessed.
 * - nullCount for every indexed column except arrays and maps (their leaves count null elements, not null
 *   rows, so the footer cannot give the row count Spark records); a column absent from the file is all nulls.
 * @throws DeltaStatsConfigError when a stats property or the column mapping mode is not valid Delta.
 */
export function deltaFileStats(
  file: ParquetFileStats,
  table: DeltaStatsTable,
  options: DeltaStatsOptions = {},
): string {
  const mode = columnMappingMode(table.configuration);
  const prefixLength = options.stringPrefixLength ?? DEFAULT_STRING_PREFIX_LENGTH;
  if (!Number.isSafeInteger(prefixLength) || prefixLength < 1) {
    throw new RangeError(`stringPrefixLength must be a positive integer, got ${prefixLength}`);
  }
  const partitions = new Set(table.partitionColumns.map((c) => c.toLowerCase()));
  const dataFields = table.schema.fields.filter((f) => !partitions.has(f.name.toLowerCase()));
  const indexed = indexedFields(dataFields, table.configuration);

  const byPath = new Map<string, ParquetColumnStats>();
  for (const column of file.columns) byPath.set(pathKey(column.path), column);
  const hasColumnsUnder = (path: readonly string[]): boolean =>
    file.columns.some((c) => c.path.length >= path.length && path.every((p, i) => c.path[i] === p));

  const walk = (fields: readonly DeltaField[], parent: readonly string[]): JsonTrees => {
    const out: JsonTrees = { min: [], max: [], nulls: [] };
    for (const field of fields) {
      const name = physicalName(field, mode);
      const path = [...parent, name];
      if (typeof field.type !== 'string' && field.type.type === 'struct') {
        const nested = walk(field.type.fields, path);
        for (const part of ['min', 'max', 'nulls'] as const) {
          if (nested[part].length > 0) out[part].push([name, nested[part]]);
        }
        continue;
      }
      if (!hasColumnsUnder(path)) {
        out.nulls.push([name, String(file.rows)]);
        continue;
      }
      if (typeof field.type !== 'string') continue; // array or map
      const column = byPath.get(pathKey(path));
      if (column === undefined || column.repeated) continue;
      if (column.nullCount !== undefined) out.nulls.push([name, String(column.nullCount)]);
      const min = column.min && formatBound(field.type, column.min, 'min', prefixLength);
      const max = column.max && formatBound(field.type, column.max, 'max', prefixLength);
      if (min !== undefined && max !== undefined) {
        out.min.push([name, min]);
        out.max.push([name, max]);
      }
    }
    return out;
  };
  const trees = walk(indexed, []);
  const parts = [
    `"numRecords":${file.rows}`,
    `"minValues":${renderTree(trees.min)}`,
    `"maxValues":${renderTree(trees.max)}`,
    `"nullCount":${renderTree(trees.nulls)}`,
    ...(options.tightBounds === true ? ['"tightBounds":true'] : []),
  ];
  return `{${parts.join(',')}}`;
}

/**
 * Reads the footer of a data file through the store (at most two ranged reads, see `readFooter`) and returns
 * `deltaFileStats` of it.
 * @throws CorruptInputError / UnsupportedInputError for a file that is not a sound Parquet file.
 */
export async function deltaFileStatsOf(
  store: FooterSource,
  key: string,
  size: number | undefined,
  table: DeltaStatsTable,
  options: DeltaStatsOptions = {},
): Promise<string> {
  const footer = await readFooterBytes(store, key, size);
  return deltaFileStats(parquetColumnStats(key, footer.size, footer.tail), table, options);
}

/** An ordered JSON object: keys with a raw JSON token or a nested object. */
type JsonTree = readonly (readonly [string, string | JsonTree])[];
interface JsonTrees {
  min: [string, string | JsonTree][];
  max: [string, string | JsonTree][];
  nulls: [string, string | JsonTree][];
}

function renderTree(tree: JsonTree): string {
  const entries = tree.map(
    ([key, value]) => `${JSON.stringify(key)}:${typeof value === 'string' ? value : renderTree(value)}`,
  );
  return `{${entries.join(',')}}`;
}

const pathKey = (path: readonly string[]): string => path.join('\u0000');

function columnMappingMode(configuration: Readonly<Record<string, string>>): ColumnMappingMode {
  const mode = configuration[COLUMN_MAPPING_MODE_KEY] ?? 'none';
  if (mode === 'none' || mode === 'name' || mode === 'id') return mode;
  throw new DeltaStatsConfigError(COLUMN_MAPPING_MODE_KEY, mode, 'expected none, name or id');
}

function physicalName(field: DeltaField, mode: ColumnMappingMode): string {
  const physical = mode === 'none' ? undefined : field.metadata[PHYSICAL_NAME_KEY];
  return typeof physical === 'string' ? physical : field.name;
}

const isStruct = (type: DeltaType): type is { type: 'struct'; fields: readonly DeltaField[] } =>
  typeof type !== 'string' && type.type === 'struct';

/** The data fields stats are collected for, as a schema pruned to them (Spark's getIndexedColumns). */
export function indexedFields(
  dataFields: readonly DeltaField[],
  configuration: Readonly<Record<string, string>>,
): DeltaField[] {
  const statsColumns = configuration[STATS_COLUMNS_KEY];
  if (statsColumns !== undefined) {
    const paths = parseStatsColumns(statsColumns).map((p) => p.map((part) => part.toLowerCase()));
    return filterFields(dataFields, paths);
  }
  const raw = configuration[NUM_INDEXED_COLS_KEY];
  const count = raw === undefined ? DEFAULT_NUM_INDEXED_COLS : Number(raw.trim());
  if (raw !== undefined && (!/^\s*-?\d+\s*$/.test(raw) || !Number.isSafeInteger(count) || count < -1)) {
    throw new DeltaStatsConfigError(NUM_INDEXED_COLS_KEY, raw, 'expected an integer ≥ -1');
  }
  return count < 0 ? [...dataFields] : truncateFields(dataFields, count).fields;
}

/** The first `limit` non-struct fields in schema order, struct by struct (Spark's truncateSchema). */
function truncateFields(
  fields: readonly DeltaField[],
  limit: number,
): { fields: DeltaField[]; counted: number } {
  const out: DeltaField[] = [];
  let counted = 0;
  for (const field of fields) {
    if (counted >= limit) break;
    if (isStruct(field.type)) {
      const inner = truncateFields(field.type.fields, limit - counted);
      counted += inner.counted;
      out.push({ ...field, type: { type: 'struct', fields: inner.fields } });
    } else {
      counted += 1;
      out.push(field);
    }
  }
  return { fields: out, counted };
}

/**
 * The fields named by lower-cased paths (Spark's filterSchema): a path ending at a field takes all of it; a
 * longer one descends into a struct; a path through a non-struct matches nothing. Names compare
 * case-insensitively, as Spark lower-cases both sides.
 */
function filterFields(fields: readonly DeltaField[], paths: readonly (readonly string[])[]): DeltaField[] {
  const out: DeltaField[] = [];
  for (const field of fields) {
    const here = paths.filter((p) => p[0] === field.name.toLowerCase()).map((p) => p.slice(1));
    if (here.length === 0) continue;
    if (here.every((rest) => rest.length === 0)) {
      out.push(field);
    } else if (isStruct(field.type)) {
      const inner = filterFields(
        field.type.fields,
        here.filter((rest) => rest.length > 0),
      );
      out.push({ ...field, type: { type: 'struct', fields: inner } });
    }
  }
  return out;
}

/**
 * `delta.dataSkippingStatsColumns` as Spark parses it (a multipartIdentifierList): comma-separated column
 * names, each dot-separated parts; a part in backticks may hold any character, a doubled backtick standing
 * for one. Blank means no columns.
 * @throws DeltaStatsConfigError for text Spark's parser rejects (empty part, unclosed backtick, stray space).
 */
export function parseStatsColumns(value: string): string[][] {
  if (value.trim() === '') return [];
  const fail = (reason: string): never => {
    throw new DeltaStatsConfigError(STATS_COLUMNS_KEY, value, reason);
  };
  const columns: string[][] = [];
  let parts: string[] = [];
  let i = 0;
  const skipSpaces = (): void => {
    while (i < value.length && /\s/.test(value[i] ?? '')) i += 1;
  };
  for (;;) {
    skipSpaces();
    let part = '';
    if (value[i] === '`') {
      i += 1;
      for (;;) {
        if (i >= value.length) fail('unclosed backtick');
        if (value[i] === '`') {
          if (value[i + 1] === '`') {
            part += '`';
            i += 2;
            continue;
          }
          i += 1;
          break;
        }
        part += value[i];
        i += 1;
      }
    } else {
      while (i < value.length && /[\p{L}\p{N}_]/u.test(value[i] ?? '')) {
        part += value[i];
        i += 1;
      }
      if (part === '') fail(`expected a column name at position ${i}`);
    }
    parts.push(part);
    skipSpaces();
    if (i >= value.length) {
      columns.push(parts);
      return columns;
    }
    if (value[i] === '.') {
      i += 1;
    } else if (value[i] === ',') {
      columns.push(parts);
      parts = [];
      i += 1;
    } else {
      fail(`unexpected ${JSON.stringify(value[i])} at position ${i}`);
    }
  }
}

const INTEGER_TYPES = new Set(['byte', 'short', 'integer', 'long']);
const DECIMAL_TYPE = /^decimal(\(\s*\d+\s*,\s*\d+\s*\))?$/;

/** The raw JSON token of one bound for a column of Delta type `type`, or undefined when Delta keeps none. */
function formatBound(
  type: string,
  value: ParquetStatValue,
  side: 'min' | 'max',
  prefixLength: number,
): string | undefined {
  if (INTEGER_TYPES.has(type)) return value.kind === 'integer' ? value.value.toString() : undefined;
  if (DECIMAL_TYPE.test(type)) {
    if (value.kind === 'decimal') return decimalText(value.unscaled, value.scale);
    return value.kind === 'integer' ? value.value.toString() : undefined;
  }
  if (type === 'date') return value.kind === 'date' ? dateText(value.days) : undefined;
  if (type === 'timestamp' || type === 'timestamp_ntz') {
    if (value.kind !== 'timestamp') return undefined;
    const text = timestampText(value.nanos);
    return text === undefined ? undefined : JSON.stringify(type === 'timestamp' ? `${text}Z` : text);
  }
  if (type === 'string' && value.kind === 'string') {
    return JSON.stringify(
      side === 'min' ? truncateMin(value.value, prefixLength) : truncateMax(value.value, prefixLength),
    );
  }
  return undefined;
}

/** Exact plain decimal text of unscaled × 10^-scale (a JSON number; Spark writes Java BigDecimal text). */
export function decimalText(unscaled: bigint, scale: number): string {
  if (scale <= 0) return (unscaled * 10n ** BigInt(-scale)).toString();
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  const sign = unscaled < 0n ? '-' : '';
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Years Delta's JSON formats write with four digits; bounds outside them are left out rather than misread. */
function fourDigitYear(date: Date): boolean {
  const year = date.getUTCFullYear();
  return Number.isFinite(date.getTime()) && year >= 1 && year <= 9999;
}

function dateText(days: number): string | undefined {
  const date = new Date(days * 86_400_000);
  return fourDigitYear(date) ? JSON.stringify(date.toISOString().slice(0, 10)) : undefined;
}

/** `YYYY-MM-DDTHH:mm:ss.sss`, the instant truncated down to milliseconds (floor, also before 1970). */
function timestampText(nanos: bigint): string | undefined {
  const millis = nanos / 1_000_000n - (nanos % 1_000_000n < 0n ? 1n : 0n);
  if (millis > BigInt(Number.MAX_SAFE_INTEGER) || millis < -BigInt(Number.MAX_SAFE_INTEGER)) return undefined;
  const date = new Date(Number(millis));
  return fourDigitYear(date) ? date.toISOString().slice(0, -1) : undefined;
}

/** Spark's string min: the first `length` characters (`substring(min(c), 0, length)`, code points). */
export function truncateMin(value: string, length: number): string {
  const chars = Array.from(value);
  return chars.length <= length ? value : chars.slice(0, length).join('');
}

/**
 * Spark's string max (StatisticsCollection.truncateMaxStringAgg): unchanged when short enough, else the prefix,
 * then every following character that is not below the tie-breaker U+FFFD, then U+FFFD — so the result sorts
 * above every string with that prefix. Spark walks UTF-16 units, where a character beyond the BMP (a surrogate
 * pair) looks smaller than U+FFFD yet sorts above it in UTF-8; walking code points keeps such characters, so the
 * result is an upper bound in the byte order readers compare by.
 */
export function truncateMax(value: string, length: number): string {
  const chars = Array.from(value);
  if (chars.length <= length) return value;
  let end = length;
  while (end < chars.length && (chars[end]?.codePointAt(0) ?? 0) >= TIE_BREAKER) end += 1;
  return `${chars.slice(0, end).join('')}${String.fromCodePoint(TIE_BREAKER)}`;
}
