// Rows of a Hudi Parquet file (a base file's keys and ordering values, a Parquet data block's records) with every
// top-level DECIMAL column exact: hyparquet turns decimals into doubles, which hold 15 digits, so those columns are
// read a second time with their annotation taken off (raw INT32, INT64 or two's-complement bytes) and given as a
// LogDecimal — the same value an Avro log record's decimal decodes to, so the two compare and write back alike.
import { type FileMetaData, parquetReadObjects, type SchemaElement } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { type LogDecimal, twosComplement } from './decimal.js';

/** Whether a schema element is annotated DECIMAL (by its converted or its logical type). */
export function isDecimalElement(e: SchemaElement): boolean {
  return e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL';
}

/** The top-level leaves of a file's schema (its flat columns) that are decimals. */
export function topLevelDecimals(metadata: FileMetaData): SchemaElement[] {
  const [root, ...rest] = metadata.schema;
  const out: SchemaElement[] = [];
  // Walk the flattened tree, keeping the root's direct children (skipping each nested child's own subtree).
  let i = 0;
  for (let child = 0; child < (root?.num_children ?? 0) && i < rest.length; child++) {
    const e = rest[i] as SchemaElement;
    if ((e.num_children ?? 0) === 0 && isDecimalElement(e)) out.push(e);
    i += 1 + subtreeSize(rest, i);
  }
  return out;
}

/** How many elements follow `rest[at]` in its subtree. */
function subtreeSize(rest: readonly SchemaElement[], at: number): number {
  let size = 0;
  let pending = rest[at]?.num_children ?? 0;
  while (pending > 0) {
    const e = rest[at + 1 + size];
    if (e === undefined) break;
    size++;
    pending += (e.num_children ?? 0) - 1;
  }
  return size;
}

/** The unscaled value hyparquet returns for a decimal column read without its annotation. */
function unscaledOf(raw: unknown): bigint | undefined {
  if (typeof raw === 'bigint') return raw;
  if (typeof raw === 'number' && Number.isInteger(raw)) return BigInt(raw);
  if (raw instanceof Uint8Array) return twosComplement(raw);
  return undefined;
}

/**
 * The rows of `file` (its `columns`, or all), as hyparquet reads them with `parsers`, except that every top-level
 * decimal column holds {@link LogDecimal}s (null stays null).
 * @throws Error when the file does not decode, or a decimal column holds a value of no decimal's physical type.
 */
export async function readRowsExact(options: {
  readonly file: ArrayBuffer;
  readonly metadata: FileMetaData;
  readonly columns?: readonly string[];
  readonly parsers?: Parameters<typeof parquetReadObjects>[0]['parsers'];
}): Promise<Record<string, unknown>[]> {
  const { file, metadata, parsers } = options;
  const columns = options.columns === undefined ? undefined : [...options.columns];
  const rows = (await parquetReadObjects({
    file,
    metadata,
    compressors,
    ...(columns === undefined ? {} : { columns }),
    ...(parsers === undefined ? {} : { parsers }),
  })) as Record<string, unknown>[];
  const decimals = topLevelDecimals(metadata).filter(
    (e) => columns === undefined || columns.includes(e.name),
  );
  if (decimals.length === 0 || rows.length === 0) return rows;
  const names = new Set(decimals.map((e) => e.name));
  // The same file, its decimal leaves unannotated: hyparquet hands their physical values (bytes left as bytes).
  const raw = {
    ...metadata,
    schema: metadata.schema.map((e) =>
      names.has(e.name) && (e.num_children ?? 0) === 0 && isDecimalElement(e)
        ? { ...e, converted_type: undefined, logical_type: undefined }
        : e,
    ),
  } as FileMetaData;
  const exact = (await parquetReadObjects({
    file,
    metadata: raw,
    compressors,
    columns: [...names],
    utf8: false,
  })) as Record<string, unknown>[];
  for (const e of decimals) {
    const scale = e.scale ?? 0;
    rows.forEach((row, i) => {
      const value = exact[i]?.[e.name];
      if (value === null || value === undefined) {
        row[e.name] = null;
        return;
      }
      const unscaled = unscaledOf(value);
      if (unscaled === undefined) throw new Error(`decimal column ${e.name} holds a ${typeof value}`);
      row[e.name] = { unscaled, scale } satisfies LogDecimal;
    });
  }
  return rows;
}
