// Pre-flight of a group: reads every input's footer before anything is written and refuses, with a
// typed error naming the file, any input that is damaged, empty, or that the writer cannot reproduce exactly.

import { type AsyncBuffer, type FileMetaData, parquetMetadata } from 'hyparquet';
import pLimit from 'p-limit';
import { CorruptInputError, UnsupportedInputError } from '../../core/errors.js';
import { exactSchemaSignature, runKeyOf, schemaKeyOf } from '../../core/fingerprint/fingerprint.js';
import { currentMemoryBudget, currentMetadataLimits, describeBytes } from '../../core/memory-budget.js';
import { type DecimalForm, decimalFormsOf, withDecimalAnnotations } from '../../core/parquet/decimal-form.js';
import { type DictionaryPages, decodedRowGroupBounds } from '../../core/parquet/decoded-size.js';
import {
  type ParquetFooter,
  PREFLIGHT_WHOLE_READ_BYTES,
  parseFooterWithMetadata,
  readFooterBytes,
} from '../../core/parquet/footer.js';
import { type Int96Unit, logicalShapeOf } from '../../core/parquet/logical-schema.js';
import { withUuidAnnotations } from '../../core/parquet/uuid-annotation.js';
import {
  type ColumnProjection,
  footerSchemaTree,
  mistypedColumn,
  projectionTargetKey,
} from '../../core/projection.js';
import type { ObjectStore } from '../../ports/object-store.js';
import {
  type InputFile,
  type Int96Mode,
  LAST_UPDATED_SEQUENCE_NUMBER_FIELD,
  type LeftOutInput,
  ROW_ID_FIELD,
  type SchemaFidelity,
} from '../../ports/parquet-engine.js';
import { arrowSchemaEntry, storedDecimalSchemaIpc } from './decimal-form.js';
import { convertedSchemaIpc, readInt96, unitsOf } from './int96.js';
import { lineageSchemaIpc } from './lineage.js';
import { projectedSchemaIpc, uuidColumnsOf } from './projection.js';
import { pw, type WriterSettings, writerProperties } from './wasm.js';

/** Codecs and encodings parquet-rs 59 decodes. Anything else is refused up front. */
const SUPPORTED_CODECS = new Set(['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW']);
const SUPPORTED_ENCODINGS = new Set([
  'PLAIN',
  'PLAIN_DICTIONARY',
  'RLE',
  'BIT_PACKED',
  'DELTA_BINARY_PACKED',
  'DELTA_LENGTH_BYTE_ARRAY',
  'DELTA_BYTE_ARRAY',
  'RLE_DICTIONARY',
  'BYTE_STREAM_SPLIT',
]);

/**
 * The parts of an input's footer the rewrite still needs after pre-flight. Kept once per input
 * for the whole rewrite, so kept small: full footers (leaf columns, codecs, fingerprints, and a
 * separate copy of the key-value metadata each) held ~3 KB of heap per input — ~30 MB for a
 * 10,000-file group. Inputs with equal key-value metadata share one object.
 */
export type InputFooter = Pick<ParquetFooter, 'rows' | 'rowGroups' | 'keyValueMetadata'>;

/** What pre-flight learnt about one input. */
export interface CheckedInput {
  readonly file: InputFile;
  readonly footer: InputFooter;
  /** Identity of the output schema this input needs (schema + key-value metadata + field ids). */
  readonly schemaKey: string;
  /**
   * Which inputs may share its outputs (`runKeyOf`): the output schema without the key-value entries that may
   * differ (writer stamps), so files differing only in those are written together, with the first one's entries.
   */
  readonly runKey: string;
  /** Names of INT96 leaf columns (Spark legacy timestamps). */
  readonly int96Columns: readonly string[];
  /**
   * Written in another physical form than it was read (schema fidelity `logical`, or INT96 converted):
   * its pages cannot be copied as they are, so it is never stitched. Absent: false.
   */
  readonly reshaped?: boolean;
  /** Rows the rewrite keeps: the footer's minus the file's deleted rows (`file.deleted`). */
  readonly liveRows: number;
  /**
   * Names of its MAP columns whose key is OPTIONAL (Presto/Trino before 386/0.274, Athena): under fidelity
   * `logical` they are written as standard maps, whose key is REQUIRED, which holds only while no key is null, so
   * every decoded batch of such an input is checked (`assertMapKeysPresent`). Absent: none.
   */
  readonly optionalMapKeys?: readonly string[];
  /**
   * Whether its decoded size could not be bounded from the footer and the bytes pre-flight had (a large file with a
   * dictionary whose values may be long): the rewrite checks it (`checkDecodedSize`) once it has fetched the file,
   * before decoding it. Absent: false.
   */
  readonly decodeCheckPending?: boolean;
  /**
   * Its top-level decimal columns stored as FIXED_LEN_BYTE_ARRAY of another length than the writer picks, or as
   * BYTE_ARRAY (`decimalFormsOf`), which its outputs keep in that form (`WriterSettings.decimalForms`): under schema
   * fidelity `exact` only (`logical` writes the writer's standard form, as it always did). Absent: none.
   */
  readonly decimalForms?: readonly DecimalForm[];
}

/**
 * The most one row group may decode to in the WebAssembly decoder, whatever the process's memory: its heap is 32-bit
 * (4 GiB at most, holding the file's pages as well as the decoded batch) and a string column's values sit behind
 * 32-bit offsets, so more than 2 GiB of one column overflows them. Past it the decoder traps ("unreachable") instead
 * of failing by name: parquet-testing's `large_string_map.brotli.parquet` (two 1 GiB map keys in one row group) did
 * on a function whose memory let its row groups be larger. Checked before anything is decoded, so such a file is
 * refused by name.
 */
export const DECODER_ROW_GROUP_BYTES = 2 * 1024 ** 3 - 1;

/** Bytes one row group may decode to here: this process's memory share, never past {@link DECODER_ROW_GROUP_BYTES}. */
export function rowGroupDecodeBudget(): number {
  return Math.min(currentMetadataLimits().rowGroupDecodedBytes, DECODER_ROW_GROUP_BYTES);
}

/**
 * Refuses an input any of whose row groups could decode to more than one row group may take in this process's
 * memory (a dictionary bomb: a 4 KB file whose 1 MiB string is referenced 1,500 times), before anything of it is
 * decoded; `bytes` is the whole file when the caller has it, or the dictionary pages it read by range. Returns whether the check must be made again with the
 * file's bytes (see `CheckedInput.decodeCheckPending`).
 * @throws UnsupportedInputError naming the file, the row group and the column (the compact step quarantines it).
 * @throws CorruptInputError when a dictionary page is not readable where the footer puts it.
 */
export function checkDecodedSize(
  key: string,
  meta: FileMetaData,
  footer: Pick<ParquetFooter, 'columns'>,
  bytes: Uint8Array | DictionaryPages | undefined,
): boolean {
  const budget = rowGroupDecodeBudget();
  let result: ReturnType<typeof decodedRowGroupBounds>;
  try {
    result = decodedRowGroupBounds(meta, footer.columns, budget, bytes);
  } catch (err) {
    throw new CorruptInputError(key, `a dictionary page cannot be read (${(err as Error).message})`, {
      cause: err,
    });
  }
  // Without the bytes, the footer's worst case proves nothing against the file: check again once it is fetched.
  if (result.kind === 'needs-bytes') return true;
  const { worst } = result;
  if (worst.bytes > DECODER_ROW_GROUP_BYTES) {
    throw new UnsupportedInputError(
      key,
      `row group ${worst.rowGroup} could decode to ${describeBytes(worst.bytes)} (column ${worst.column} the most), more than the ${describeBytes(DECODER_ROW_GROUP_BYTES)} the decoder can hold for one row group whatever the memory (a 32-bit WebAssembly heap, whose string columns have 32-bit offsets); rewrite the file with smaller row groups, or exclude it`,
    );
  }
  if (worst.bytes > budget) {
    throw new UnsupportedInputError(
      key,
      `row group ${worst.rowGroup} could decode to ${describeBytes(worst.bytes)} (column ${worst.column} the most), more than the ${describeBytes(budget)} one row group may take in this process's memory; ${currentMemoryBudget().advice}, or rewrite the file with smaller row groups`,
      { liftedBy: 'memory' },
    );
  }
  return false;
}

/** {@link checkDecodedSize} of an input whose check was pending, with its whole bytes: once, before decoding. */
export function checkDecodedSizeOf(input: CheckedInput, bytes: Uint8Array): void {
  if (input.decodeCheckPending !== true) return;
  const { footer, metadata } = parseFooterWithMetadata(input.file.key, bytes.length, bytes);
  checkDecodedSize(input.file.key, metadata, footer, bytes);
}

export interface PreflightOptions {
  readonly maxRequestsInFlight: number;
  /** Whole small files seen during pre-flight are kept up to this many bytes, saving a second GET. */
  readonly cacheBytes: number;
  readonly int96: Int96Mode;
  /** `logical`: accept an output schema that differs from the input's only in physical forms (see logical-schema.ts). */
  readonly schemaFidelity?: SchemaFidelity;
  readonly settings: Omit<WriterSettings, 'keyValueMetadata'>;
  readonly signal?: AbortSignal;
  /**
   * Footer keys the rewrite computes per output (`RewriteOptions.outputFooterEntries`): dropped from each input's
   * metadata as read, so they neither keep inputs apart nor reach an output, and no schema key counts them.
   */
  readonly ownedFooterKeys?: readonly string[];
}

export interface PreflightResult {
  readonly inputs: readonly CheckedInput[];
  /** Whole-file bytes fetched during pre-flight, by key; the rewrite takes (and deletes) them. */
  readonly cache: Map<string, Uint8Array>;
  /** Bytes fetched by pre-flight (footers, and whole small files). */
  readonly bytesRead: number;
  /** Inputs planned without their footer that pre-flight refused (see `InputFile.footerDeferred`): not in `inputs`. */
  readonly leftOut: readonly LeftOutInput[];
}

/**
 * Reads an input's footer bytes (at most two ranged reads, see `readFooterBytes`) and parses them once:
 * the footer, the raw FileMetaData pre-flight checks, and the bytes read (the whole file when small).
 */
async function footerWithTail(
  store: ObjectStore,
  file: InputFile,
  whole: boolean,
  ownedKeys: readonly string[] | undefined,
): Promise<{ footer: ParquetFooter; meta: FileMetaData; tail: Uint8Array }> {
  const { size, tail } = await readFooterBytes(store, file.key, file.size, whole ? file.size : undefined);
  // The owned entries are cut before the footer is parsed (never decoded: a table format's index can be most of a
  // small file's footer); `withoutOwnedKeys` then has nothing left to drop.
  const { footer, metadata } = parseFooterWithMetadata(file.key, size, tail, ownedKeys);
  return { footer, meta: metadata, tail };
}

/** An input's footer and metadata without the entries the rewrite computes per output (see `ownedFooterKeys`). */
function withoutOwnedKeys<T extends { footer: ParquetFooter; meta: FileMetaData }>(
  read: T,
  owned: readonly string[] | undefined,
): T {
  if (owned === undefined || owned.length === 0) return read;
  const keyValueMetadata = Object.fromEntries(
    Object.entries(read.footer.keyValueMetadata).filter(([k]) => !owned.includes(k)),
  );
  const kv = read.meta.key_value_metadata?.filter((e) => !owned.includes(e.key));
  return {
    ...read,
    footer: { ...read.footer, keyValueMetadata },
    meta: { ...read.meta, ...(kv !== undefined && { key_value_metadata: kv }) },
  };
}

function rawMetadata(key: string, tail: Uint8Array): FileMetaData {
  try {
    return parquetMetadata(
      tail.buffer.slice(tail.byteOffset, tail.byteOffset + tail.byteLength) as ArrayBuffer,
      { geoparquet: false },
    );
  } catch (err) {
    throw new CorruptInputError(key, `unreadable footer metadata (${(err as Error).message})`, {
      cause: err,
    });
  }
}

/** A checked input with its whole footer, while pre-flight still needs it. */
type Checked = Omit<CheckedInput, 'footer'> & { readonly footer: ParquetFooter };

/**
 * What fixes an input only schema fidelity `logical` can rewrite: the table setting and the CLI flag, named as
 * the operator types them (the engine's own `int96` option is for callers that predate fidelity).
 */
const LOGICAL_FIDELITY_ADVICE =
  'set schemaFidelity: "logical" on the table (on the CLI: --schema-fidelity logical)';

/** Shared by every input without INT96 columns (nearly all), instead of an empty array each. */
const NO_COLUMNS: readonly string[] = Object.freeze([]);

function checkOne(file: InputFile, footer: ParquetFooter, meta: FileMetaData, int96: Int96Mode): Checked {
  const key = file.key;
  if (footer.rows === 0) {
    throw new UnsupportedInputError(
      key,
      'it has zero rows, so there is nothing to compact; exclude it from the group',
    );
  }
  if (file.rows !== undefined && file.rows !== footer.rows) {
    throw new CorruptInputError(
      key,
      `the plan says ${file.rows} rows but the footer says ${footer.rows} (changed since planning?)`,
    );
  }
  const lastDeleted = file.deleted?.last;
  if (lastDeleted !== undefined && lastDeleted >= footer.rows) {
    throw new CorruptInputError(
      key,
      `its deletes name row ${lastDeleted}, but it holds ${footer.rows} rows: they are not of this file`,
    );
  }
  for (const codec of footer.codecs) {
    if (!SUPPORTED_CODECS.has(codec))
      throw new UnsupportedInputError(key, `compression codec ${codec} is not supported`);
  }
  for (const group of meta.row_groups) {
    for (const chunk of group.columns) {
      for (const encoding of chunk.meta_data?.encodings ?? []) {
        if (!SUPPORTED_ENCODINGS.has(encoding)) {
          throw new UnsupportedInputError(
            key,
            `column ${chunk.meta_data?.path_in_schema.join('.')} uses encoding ${encoding ?? '(unknown id)'}, which the decoder does not support`,
          );
        }
      }
    }
  }
  const seen = new Map<string, string | undefined>();
  for (const kv of meta.key_value_metadata ?? []) {
    if (seen.has(kv.key) && seen.get(kv.key) !== kv.value) {
      throw new UnsupportedInputError(
        key,
        `key-value metadata key ${kv.key} appears twice with different values`,
      );
    }
    seen.set(kv.key, kv.value);
  }
  const int96Columns = footer.columns.filter((c) => c.physicalType === 'INT96').map((c) => c.path.join('.'));
  if (int96Columns.length > 0 && int96 === 'refuse') {
    throw new UnsupportedInputError(
      key,
      `columns ${int96Columns.join(', ')} are INT96 timestamps, which the writer cannot write as they are; ${LOGICAL_FIDELITY_ADVICE} to write them as INT64 TIMESTAMP (MICROS, or NANOS where a value needs it; UTC) with the same instants (readers differ on INT96, so this is opt-in)`,
      { liftedBy: 'schemaFidelity' },
    );
  }
  return {
    file,
    footer,
    schemaKey: schemaKeyOf(meta),
    runKey: runKeyOf(meta),
    int96Columns: int96Columns.length === 0 ? NO_COLUMNS : int96Columns,
    reshaped: int96Columns.length > 0,
    liveRows: footer.rows - (file.deleted?.count ?? 0),
  };
}

/**
 * The columns of `meta` annotated with a LogicalType union member no version of parquet.thrift this engine reads
 * defines (parquet-testing's `unknown-logical-type.parquet`: GEOMETRY's id hacked to 2555), each with the member's
 * id as the fingerprint's schema signature spells it (`UNKNOWN:{"field_2555":{}}`).
 */
function unknownLogicalTypes(meta: FileMetaData): string[] {
  const signature = exactSchemaSignature(meta.schema) as unknown[][];
  return signature.flatMap((entry) => {
    const type = (entry[6] as { type?: unknown } | null)?.type;
    return typeof type === 'string' && type.startsWith('UNKNOWN:') ? [`${String(entry[0])} (${type})`] : [];
  });
}

/** The MAP columns of `meta` whose key is OPTIONAL (see `CheckedInput.optionalMapKeys`), as an object to spread. */
function optionalMapKeysOf(meta: FileMetaData): { optionalMapKeys?: readonly string[] } {
  const names: string[] = [];
  const schema = meta.schema;
  for (let i = 0; i + 2 < schema.length; i++) {
    const map = schema[i];
    const entries = schema[i + 1];
    const key = schema[i + 2];
    const annotated = map?.converted_type === 'MAP' || map?.logical_type?.type === 'MAP';
    if (annotated && entries?.repetition_type === 'REPEATED' && key?.repetition_type === 'OPTIONAL') {
      names.push(map?.name ?? '');
    }
  }
  return names.length === 0 ? {} : { optionalMapKeys: names };
}

/** Builds a footer-only Parquet buffer (`PAR1` + FileMetaData + length + `PAR1`) for schema reads. */
function footerOnly(tail: Uint8Array, metadataLength: number): Uint8Array {
  const footer = tail.subarray(tail.length - 8 - metadataLength);
  const out = new Uint8Array(4 + footer.length);
  out.set([0x50, 0x41, 0x52, 0x31]);
  out.set(footer, 4);
  return out;
}

/** What a trial write found: the output schema's key, and whether its physical forms differ from the input's. */
interface Trial {
  readonly schemaKey: string;
  readonly runKey: string;
  readonly reshaped: boolean;
  /** Decimal columns written in the input's physical form (see `CheckedInput.decimalForms`). */
  readonly decimalForms?: readonly DecimalForm[];
}

/**
 * An empty file of the Arrow schema `ipc` as the rewrite writes it: decimal columns of `forms` handed to the writer as
 * bytes and annotated after (as `OutputWriter` does), with the input's key-value metadata.
 */
function writeTrial(
  ipc: Uint8Array,
  forms: readonly DecimalForm[],
  settings: PreflightOptions['settings'],
  keyValueMetadata: Readonly<Record<string, string>>,
): Uint8Array {
  if (forms.length === 0)
    return pw.writeParquet(pw.Table.fromIPCStream(ipc), writerProperties({ ...settings, keyValueMetadata }));
  const out = pw.writeParquet(
    pw.Table.fromIPCStream(storedDecimalSchemaIpc(ipc, forms)),
    writerProperties({ ...settings, keyValueMetadata, decimalForms: forms }),
  );
  return withDecimalAnnotations(out, forms, arrowSchemaEntry(ipc));
}

/**
 * Writes an empty file with the input's Arrow schema through the real writer and compares its
 * footer with the input's: any difference (a type, an annotation, a field id, key-value metadata)
 * means the rewrite would not reproduce the input exactly, so it is refused before any write —
 * unless schema fidelity is `logical` and the two schemas have the same logical shape (legacy
 * decimals, lists and maps written in the standard forms), with the key-value metadata unchanged.
 * INT96 columns (`int96Units`) are expected as INT64 TIMESTAMP(unit, UTC) in either fidelity.
 */
function trialWrite(
  input: Checked,
  inputMeta: FileMetaData,
  tail: Uint8Array,
  settings: PreflightOptions['settings'],
  int96Units: Readonly<Record<string, Int96Unit>>,
  fidelity: SchemaFidelity,
): Trial {
  const key = input.file.key;
  // Under `exact`, decimals stored as FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY are written in that form (decimal-form.ts).
  const forms = fidelity === 'exact' ? decimalFormsOf(inputMeta.schema) : [];
  let out: Uint8Array;
  try {
    const schema = pw.readSchema(footerOnly(tail, input.footer.metadataLength));
    const ipc = schema.intoIPCStream();
    out = writeTrial(
      input.int96Columns.length > 0 ? convertedSchemaIpc(ipc, int96Units) : ipc,
      forms,
      settings,
      input.footer.keyValueMetadata,
    );
  } catch (err) {
    if (err instanceof UnsupportedInputError) throw err;
    throw new UnsupportedInputError(
      key,
      `its schema cannot be mapped to the writer (${(err as Error).message})`,
      {
        cause: err,
      },
    );
  }
  const writtenMeta = rawMetadata(`${key} (trial output)`, out);
  const writtenKey = schemaKeyOf(writtenMeta);
  // INT96 leaves are expected to come out as INT64 TIMESTAMP(unit, UTC); everything else unchanged.
  const int96 = new Set(input.int96Columns);
  const expected = exactSchemaSignature(inputMeta.schema).map((entry, i) => {
    const e = entry as unknown[];
    if (e[3] !== 'INT96') return entry;
    const name = inputMeta.schema[i]?.name ?? '';
    const unit = int96.has(name) ? (int96Units[name] ?? 'MICROS') : 'MICROS';
    return [e[0], e[1], e[2], 'INT64', 0, e[5], { type: 'TIMESTAMP', unit, isAdjustedToUTC: true }];
  });
  const after = exactSchemaSignature(writtenMeta.schema);
  const expectedKey = input.int96Columns.length > 0 ? JSON.stringify(expected) : input.schemaKey;
  const actualKey = input.int96Columns.length > 0 ? JSON.stringify(after) : writtenKey;
  const runKey = runKeyOf(writtenMeta);
  if (expectedKey === actualKey && (input.int96Columns.length === 0 || sameKv(inputMeta, writtenMeta))) {
    return {
      schemaKey: writtenKey,
      runKey,
      reshaped: input.int96Columns.length > 0,
      ...(forms.length > 0 && { decimalForms: forms }),
    };
  }
  if (
    fidelity === 'logical' &&
    sameKv(inputMeta, writtenMeta) &&
    logicalShapeOf(inputMeta.schema, int96Units) === logicalShapeOf(writtenMeta.schema)
  ) {
    return { schemaKey: writtenKey, runKey, reshaped: true };
  }
  const unknown = unknownLogicalTypes(inputMeta);
  if (unknown.length > 0) {
    throw new UnsupportedInputError(
      key,
      `${unknown.length === 1 ? 'column' : 'columns'} ${unknown.join(', ')} ${unknown.length === 1 ? 'carries' : 'carry'} a logical type this engine does not know (a type newer than its Parquet readers): the writer cannot write an annotation it does not know, and writing the bare physical values would change what a reader that knows the type reads, so the file cannot be rewritten with the same values in either schema fidelity; exclude it, or rewrite it with a writer that knows the type`,
    );
  }
  const differences: string[] = [];
  for (let i = 1; i < Math.max(expected.length, after.length); i++) {
    const a = JSON.stringify(expected[i]);
    const b = JSON.stringify(after[i]);
    if (a !== b) differences.push(`${a ?? '(none)'} would be written as ${b ?? '(none)'}`);
  }
  if (!sameKv(inputMeta, writtenMeta)) {
    differences.push(`key-value metadata ${kvText(inputMeta)} would be written as ${kvText(writtenMeta)}`);
  }
  if (differences.length === 0) differences.push('key-value metadata values would change');
  // Only the physical forms differ: the logical values are kept under fidelity `logical`, so say how to ask for it.
  const fixable =
    fidelity === 'exact' &&
    sameKv(inputMeta, writtenMeta) &&
    logicalShapeOf(inputMeta.schema, int96Units) === logicalShapeOf(writtenMeta.schema);
  throw new UnsupportedInputError(
    key,
    `the writer cannot reproduce its schema exactly: ${differences.slice(0, 3).join('; ')}${fixable ? `; ${LOGICAL_FIDELITY_ADVICE} to write it in the standard form, values unchanged` : ''}`,
    fixable ? { liftedBy: 'schemaFidelity' } : undefined,
  );
}

/**
 * The output schema key of an input written with its row lineage (after `trialWrite` proved the rest of its
 * schema is reproduced, exactly or, under fidelity `logical`, in its logical shape): an empty file written with
 * the input's schema, INT96 columns as INT64 TIMESTAMP in `int96Units` (as the decode writes them), plus the
 * lineage columns.
 */
function lineageTrialWrite(
  input: Checked,
  tail: Uint8Array,
  settings: PreflightOptions['settings'],
  int96Units: Readonly<Record<string, Int96Unit>>,
  forms: readonly DecimalForm[],
): Pick<Trial, 'schemaKey' | 'runKey'> {
  const key = input.file.key;
  let out: Uint8Array;
  try {
    const ipc = pw.readSchema(footerOnly(tail, input.footer.metadataLength)).intoIPCStream();
    const converted = input.int96Columns.length > 0 ? convertedSchemaIpc(ipc, int96Units) : ipc;
    out = writeTrial(lineageSchemaIpc(key, converted), forms, settings, input.footer.keyValueMetadata);
  } catch (err) {
    if (err instanceof UnsupportedInputError) throw err;
    throw new UnsupportedInputError(
      key,
      `its schema with the row lineage columns cannot be mapped to the writer (${(err as Error).message})`,
      { cause: err },
    );
  }
  const written = rawMetadata(`${key} (trial output with row lineage)`, out);
  return { schemaKey: schemaKeyOf(written), runKey: runKeyOf(written) };
}

/**
 * Whether a projection writes both row lineage columns (`_row_id`, `_last_updated_sequence_number` by their field
 * ids, as 64-bit integers) from the input's columns of those names: the columns the engine fills for every row of an
 * input with row lineage before it projects the row, so each row's lineage reaches the output.
 */
function carriesRowLineage(projection: ColumnProjection): boolean {
  return [ROW_ID_FIELD, LAST_UPDATED_SEQUENCE_NUMBER_FIELD].every((l) =>
    projection.columns.some(
      (c) =>
        c.field.fieldId === l.id &&
        c.field.type === 'int64' &&
        c.source !== undefined &&
        c.source.widen === undefined &&
        c.source.fields === undefined,
    ),
  );
}

/**
 * The output schema of an input projected onto a table format's schema (`InputFile.projection`): an empty file
 * written with the projected Arrow schema and the projection's footer entries, whose top-level columns must come out
 * with exactly the projection's names and field ids (the writer keeps field ids from Arrow field metadata; a writer
 * that did not would publish files a reader matching by id could not read). With row lineage only when the
 * projection carries the lineage columns through (see `carriesRowLineage`).
 */
function projectedTrialWrite(
  key: string,
  file: InputFile,
  projection: ColumnProjection,
  settings: PreflightOptions['settings'],
): Trial {
  if (file.rowLineage !== undefined && !carriesRowLineage(projection))
    throw new UnsupportedInputError(
      key,
      'it is to be projected onto its table schema and carries row lineage, which the projection does not write',
    );
  let out: Uint8Array;
  try {
    out = withUuidAnnotations(
      pw.writeParquet(
        pw.Table.fromIPCStream(projectedSchemaIpc(projection)),
        writerProperties({ ...settings, keyValueMetadata: projection.keyValueMetadata }),
      ),
      uuidColumnsOf(projection),
    );
  } catch (err) {
    throw new UnsupportedInputError(
      key,
      `its projected schema cannot be mapped to the writer (${(err as Error).message})`,
      { cause: err },
    );
  }
  const written = rawMetadata(`${key} (trial output, projected)`, out);
  const top = topLevel(written.schema);
  const expected = projection.columns.map((c) => `${c.field.name}#${c.field.fieldId}`);
  const actual = top.map((e) => `${e.name}#${e.field_id}`);
  if (expected.join() !== actual.join())
    throw new UnsupportedInputError(
      key,
      `its projected schema would be written with the columns ${actual.join(', ')}, not ${expected.join(', ')}`,
    );
  const mistyped = mistypedColumn(footerSchemaTree(written.schema), projection);
  if (mistyped !== undefined)
    throw new UnsupportedInputError(
      key,
      `its projected schema cannot be written exactly: column ${mistyped.column} would be stored as ${mistyped.stored}, not as the ${mistyped.type} the table's schema has`,
    );
  return { schemaKey: schemaKeyOf(written), runKey: runKeyOf(written), reshaped: true };
}

/** The top-level elements of a footer's flat schema (the root's direct children). */
function topLevel(elements: FileMetaData['schema']): FileMetaData['schema'] {
  const out: FileMetaData['schema'] = [];
  let i = 1;
  const skip = (at: number): number => {
    let next = at + 1;
    for (let c = 0; c < (elements[at]?.num_children ?? 0); c++) next = skip(next);
    return next;
  };
  while (i < elements.length) {
    out.push(elements[i] as FileMetaData['schema'][number]);
    i = skip(i);
  }
  return out;
}

function kvText(m: FileMetaData): string {
  return JSON.stringify(
    [
      ...new Set(
        (m.key_value_metadata ?? [])
          .filter((k) => k.key !== 'ARROW:schema')
          .map((k) => `${k.key}=${k.value ?? ''}`),
      ),
    ].sort(),
  );
}

function sameKv(a: FileMetaData, b: FileMetaData): boolean {
  return kvText(a) === kvText(b);
}

/** `file` as hyparquet's AsyncBuffer: each slice is one ranged GET, its bytes counted with `onRead`. */
function rangedBuffer(store: ObjectStore, file: InputFile, onRead: (bytes: number) => void): AsyncBuffer {
  return {
    byteLength: file.size,
    async slice(start: number, end?: number): Promise<ArrayBuffer> {
      const last = (end ?? file.size) - 1;
      if (last < start) return new ArrayBuffer(0);
      const bytes = await store.getRange(file.key, start, last);
      onRead(bytes.length);
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/**
 * Checks every input of a group, in input order, with bounded concurrency. Throws the first
 * input's error (in input order, so the message is deterministic) and writes nothing.
 */
export async function preflight(
  store: ObjectStore,
  files: readonly InputFile[],
  options: PreflightOptions,
): Promise<PreflightResult> {
  const limit = pLimit(options.maxRequestsInFlight);
  const int96Reads = pLimit(2);
  const cache = new Map<string, Uint8Array>();
  let cached = 0;
  let bytesRead = 0;
  /** Input schema key (and INT96 units) → trial, one trial write per distinct input schema. */
  const trials = new Map<string, Trial>();
  /** Key-value metadata by its JSON text: one shared object per distinct value (see InputFooter). */
  const kvs = new Map<string, Readonly<Record<string, string>>>();
  const slim = (footer: ParquetFooter): InputFooter => {
    const text = JSON.stringify(footer.keyValueMetadata);
    let keyValueMetadata = kvs.get(text);
    if (keyValueMetadata === undefined) {
      keyValueMetadata = footer.keyValueMetadata;
      kvs.set(text, keyValueMetadata);
    }
    return { rows: footer.rows, rowGroups: footer.rowGroups, keyValueMetadata };
  };
  const results = await Promise.allSettled(
    files.map((file) =>
      limit(async () => {
        options.signal?.throwIfAborted();
        // A small input the cache has room for is read whole at once (its room reserved before the GET, as reads
        // run concurrently): the rewrite then needs no second GET of it (one request per input, not two).
        const wholeRead = file.size <= PREFLIGHT_WHOLE_READ_BYTES && cached + file.size <= options.cacheBytes;
        if (wholeRead) cached += file.size;
        const { footer, meta, tail } = withoutOwnedKeys(
          await footerWithTail(store, file, wholeRead, options.ownedFooterKeys).catch((err: unknown) => {
            if (wholeRead) cached -= file.size;
            throw err;
          }),
          options.ownedFooterKeys,
        );
        bytesRead += tail.length;
        const checked = checkOne(file, footer, meta, options.int96);
        const whole = tail.length === file.size ? tail : undefined;
        const decodeCheckPending = checkDecodedSize(file.key, meta, footer, whole);
        let int96Units: Record<string, Int96Unit> = {};
        if (checked.int96Columns.length > 0) {
          // The unit of each INT96 column is the file's values' choice (see readInt96), and the output
          // schema depends on it: read them now, so a value no unit holds is refused before any write.
          // Only the INT96 column chunks are fetched (ranged reads), two files at a time: they are
          // decoded to one value object per row, which a group of large files would not fit at 128.
          const values = await int96Reads(() =>
            readInt96(
              file.key,
              whole ?? rangedBuffer(store, file, (n) => (bytesRead += n)),
              checked.int96Columns,
              meta,
            ),
          );
          int96Units = unitsOf(values);
        }
        // The output schema depends on the input schema, the INT96 units and, for an input with row lineage,
        // the lineage columns written with it: one trial write per distinct combination.
        const lineage = file.rowLineage === undefined ? '' : '\n+lineage';
        const projected = file.projection === undefined ? '' : `\n+${projectionTargetKey(file.projection)}`;
        const trialKey = `${checked.schemaKey}${JSON.stringify(int96Units)}${lineage}${projected}`;
        let trial = trials.get(trialKey);
        if (trial === undefined && file.projection !== undefined) {
          trial = projectedTrialWrite(file.key, file, file.projection, options.settings);
          trials.set(trialKey, trial);
        } else if (trial === undefined) {
          trial = trialWrite(
            checked,
            meta,
            tail,
            options.settings,
            int96Units,
            options.schemaFidelity ?? 'exact',
          );
          if (file.rowLineage !== undefined)
            trial = {
              ...trial,
              ...lineageTrialWrite(checked, tail, options.settings, int96Units, trial.decimalForms ?? []),
            };
          trials.set(trialKey, trial);
        }
        if (whole !== undefined && wholeRead) cache.set(file.key, whole);
        else if (whole !== undefined && cached + file.size <= options.cacheBytes) {
          cache.set(file.key, whole);
          cached += file.size;
        } else if (wholeRead) cached -= file.size;
        return {
          ...checked,
          // A projected input's outputs carry the projection's footer entries, not the input's.
          footer: slim(
            file.projection === undefined
              ? footer
              : { ...footer, keyValueMetadata: file.projection.keyValueMetadata },
          ),
          schemaKey: trial.schemaKey,
          runKey: trial.runKey,
          reshaped: trial.reshaped,
          ...(trial.decimalForms !== undefined && { decimalForms: trial.decimalForms }),
          ...(decodeCheckPending && { decodeCheckPending }),
          ...optionalMapKeysOf(meta),
        };
      }),
    ),
  );
  const inputs: CheckedInput[] = [];
  const leftOut: LeftOutInput[] = [];
  for (const [i, r] of results.entries()) {
    if (r.status === 'fulfilled') {
      inputs.push(r.value);
      continue;
    }
    const file = files[i];
    const left = file?.footerDeferred === true ? leftOutFor(file.key, r.reason) : undefined;
    if (left === undefined) throw r.reason;
    leftOut.push(left);
    cache.delete(file?.key ?? '');
  }
  return { inputs, cache, bytesRead, leftOut };
}

/**
 * Why an input planned without its footer is left out rather than failing the group: its own bytes are not a
 * readable Parquet file, or it holds zero rows — what planning would have skipped had it read the footer. Undefined
 * for anything else, which fails the group as for any input: a refusal the table's settings or the function's
 * memory decide (INT96 under exact fidelity, a row group too large to decode here) names the setting to change, and
 * a run that reported success while leaving every such file out would hide it; so would a missing object,
 * throttling or an abort.
 */
function leftOutFor(key: string, err: unknown): LeftOutInput | undefined {
  if (!(err instanceof CorruptInputError || err instanceof UnsupportedInputError) || err.key !== key)
    return undefined;
  if (err instanceof CorruptInputError)
    return { key, kind: 'unreadable', reason: err.reason, errorName: err.name };
  return ZERO_ROWS.test(err.reason)
    ? { key, kind: 'empty', reason: err.reason, errorName: err.name }
    : undefined;
}

/** The reason `checkOne` gives a zero-row input. */
const ZERO_ROWS = /^it has zero rows/;
