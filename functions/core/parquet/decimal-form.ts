// Decimal columns kept in their input's physical form. The Arrow writer picks a decimal's physical type from its
// precision alone (INT32 up to 9 digits, INT64 up to 18, else FIXED_LEN_BYTE_ARRAY of the fewest bytes), while Avro-
// based writers store e.g. decimal(10, 2) as FIXED_LEN_BYTE_ARRAY(5) or BYTE_ARRAY. Such a column is handed to the
// writer as bytes — each value's unscaled integer, big-endian two's complement, which is exactly the Parquet DECIMAL
// encoding of those physical types — and the footer the writer produced is then given back the column's DECIMAL
// annotation here: the data pages are the same bytes either way, only the schema element says how to read them.
import type { SchemaElement } from 'hyparquet';
import { CompactorError } from '../errors.js';
import { editFooter } from './footer-edit.js';
import { field, isStruct, setField, T, type ThriftStruct } from './thrift-compact.js';

/** A top-level decimal column the writer would store in another physical form than its input's. */
export interface DecimalForm {
  /** The top-level column's name. */
  readonly column: string;
  readonly physical: 'FIXED_LEN_BYTE_ARRAY' | 'BYTE_ARRAY';
  /** Bytes per value, for FIXED_LEN_BYTE_ARRAY. */
  readonly length?: number;
  readonly precision: number;
  readonly scale: number;
}

/** The most digits an Arrow `decimal128` holds, which is what the decoder reads such a column as. */
const DECIMAL128_DIGITS = 38;

/** The fewest bytes whose two's complement holds every value of `precision` digits (what the writer uses above 18). */
export function decimalBytes(precision: number): number {
  let n = 1;
  while (10n ** BigInt(precision) > 1n << BigInt(8 * n - 1)) n++;
  return n;
}

function isDecimal(e: SchemaElement): boolean {
  return e.converted_type === 'DECIMAL' || e.logical_type?.type === 'DECIMAL';
}

/** Precision and scale of a decimal element: the logical type's, else the element's own fields. */
function precisionScale(e: SchemaElement): { precision: number; scale: number } | undefined {
  const logical = e.logical_type?.type === 'DECIMAL' ? e.logical_type : undefined;
  const precision = logical?.precision ?? e.precision;
  const scale = logical?.scale ?? e.scale ?? 0;
  return precision === undefined ? undefined : { precision, scale };
}

/**
 * The top-level decimal columns of `schema` (a footer's flat schema) stored as FIXED_LEN_BYTE_ARRAY of another length
 * than the writer would choose for their precision, or as BYTE_ARRAY, of at most 38 digits. Decimals inside groups,
 * and INT32/INT64 decimals, are not listed: the writer writes those as it always did.
 */
export function decimalFormsOf(schema: readonly SchemaElement[]): DecimalForm[] {
  const forms: DecimalForm[] = [];
  const skip = (at: number): number => {
    let next = at + 1;
    for (let c = 0; c < (schema[at]?.num_children ?? 0); c++) next = skip(next);
    return next;
  };
  for (let i = 1; i < schema.length; i = skip(i)) {
    const e = schema[i] as SchemaElement;
    if ((e.num_children ?? 0) > 0 || e.repetition_type === 'REPEATED' || !isDecimal(e)) continue;
    const ps = precisionScale(e);
    if (ps === undefined || ps.precision < 1 || ps.precision > DECIMAL128_DIGITS) continue;
    if (e.type === 'BYTE_ARRAY') forms.push({ column: e.name, physical: 'BYTE_ARRAY', ...ps });
    else if (e.type === 'FIXED_LEN_BYTE_ARRAY' && e.type_length !== undefined) {
      const engine = ps.precision <= 18 ? 0 : decimalBytes(ps.precision);
      if (e.type_length !== engine)
        forms.push({ column: e.name, physical: 'FIXED_LEN_BYTE_ARRAY', length: e.type_length, ...ps });
    }
  }
  return forms;
}

/** parquet.thrift ids: FileMetaData.key_value_metadata, SchemaElement and LogicalType fields. */
const FMD_KV = 5;
const SE_TYPE = 1;
const SE_TYPE_LENGTH = 2;
const SE_NAME = 4;
const SE_NUM_CHILDREN = 5;
const SE_CONVERTED_TYPE = 6;
const SE_SCALE = 7;
const SE_PRECISION = 8;
const SE_LOGICAL_TYPE = 10;
const LOGICAL_DECIMAL = 5;
const CONVERTED_DECIMAL = 5;
const PHYSICAL = { BYTE_ARRAY: 6, FIXED_LEN_BYTE_ARRAY: 7 } as const;
const KV_KEY = 1;
const KV_VALUE = 2;

/** The footer could not be given its decimal annotations: the writer did not write the column as expected. */
export class DecimalFormError extends CompactorError {}

/**
 * `file` — a whole Parquet file, or its last bytes holding at least the whole footer — with each form's top-level
 * column annotated DECIMAL(precision, scale) (converted type and logical type) and, when `arrowSchema` is given, the
 * footer's `ARROW:schema` entry replaced by it (the writer recorded the bytes type it was handed). Everything else in
 * the footer, and every byte before it, is unchanged; the footer length is rewritten.
 * @throws DecimalFormError when a column is missing or not of the physical type (and length) its form says.
 */
export function withDecimalAnnotations(
  file: Uint8Array,
  forms: readonly DecimalForm[],
  arrowSchema?: string,
): Uint8Array {
  return editFooter(
    file,
    (struct, elements) => annotateDecimals(struct, elements, forms, arrowSchema),
    (message) => new DecimalFormError(message),
  );
}

/** `withDecimalAnnotations`'s edit of the decoded footer. */
function annotateDecimals(
  struct: ThriftStruct,
  elements: readonly unknown[],
  forms: readonly DecimalForm[],
  arrowSchema: string | undefined,
): void {
  const top = new Map<string, ThriftStruct>();
  const skip = (at: number): number => {
    const e = elements[at];
    const children = isStruct(e) ? Number(field(e, SE_NUM_CHILDREN)?.value ?? 0) : 0;
    let next = at + 1;
    for (let c = 0; c < children; c++) next = skip(next);
    return next;
  };
  const text = new TextDecoder();
  for (let i = 1; i < elements.length; i = skip(i)) {
    const e = elements[i];
    const name = isStruct(e) ? field(e, SE_NAME)?.value : undefined;
    if (isStruct(e) && name instanceof Uint8Array) top.set(text.decode(name), e);
  }
  for (const form of forms) {
    const e = top.get(form.column);
    const type = e === undefined ? undefined : field(e, SE_TYPE)?.value;
    const typeLength = e === undefined ? undefined : field(e, SE_TYPE_LENGTH)?.value;
    if (
      e === undefined ||
      type !== PHYSICAL[form.physical] ||
      (form.physical === 'FIXED_LEN_BYTE_ARRAY' && typeLength !== form.length)
    )
      throw new DecimalFormError(
        `column ${form.column} was not written as ${form.physical}${form.length === undefined ? '' : `(${form.length})`}`,
      );
    setField(e, SE_CONVERTED_TYPE, T.I32, CONVERTED_DECIMAL);
    setField(e, SE_SCALE, T.I32, form.scale);
    setField(e, SE_PRECISION, T.I32, form.precision);
    const decimal: ThriftStruct = {
      fields: [
        { id: 1, type: T.I32, value: form.scale },
        { id: 2, type: T.I32, value: form.precision },
      ],
    };
    setField(e, SE_LOGICAL_TYPE, T.STRUCT, {
      fields: [{ id: LOGICAL_DECIMAL, type: T.STRUCT, value: decimal }],
    });
  }
  if (arrowSchema !== undefined) {
    const kv = field(struct, FMD_KV)?.value;
    const items = typeof kv === 'object' && kv !== null && 'items' in kv ? kv.items : [];
    for (const item of items) {
      const key = isStruct(item) ? field(item, KV_KEY)?.value : undefined;
      if (isStruct(item) && key instanceof Uint8Array && text.decode(key) === 'ARROW:schema')
        setField(item, KV_VALUE, T.BINARY, new TextEncoder().encode(arrowSchema));
    }
  }
}
