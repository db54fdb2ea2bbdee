// UUID columns given their annotation after the write. The Arrow writer stores a 16-byte fixed-size binary as
// FIXED_LEN_BYTE_ARRAY(16) and knows no UUID annotation (its Arrow extension type is not read), while a table schema
// that says `uuid` expects the UUID logical type on that column. The stored bytes are a UUID's either way — 16 bytes
// in the order the canonical text spells them — and both order unsigned byte by byte, so the column's pages and
// statistics stay as written: only the schema element gains its annotation here, as decimal-form.ts does for decimals.
import { CompactorError } from '../errors.js';
import { editFooter } from './footer-edit.js';
import { field, isStruct, setField, T, type ThriftStruct } from './thrift-compact.js';

/** parquet.thrift ids: SchemaElement fields and the LogicalType union's UUID member. */
const SE_TYPE = 1;
const SE_TYPE_LENGTH = 2;
const SE_NAME = 4;
const SE_NUM_CHILDREN = 5;
const SE_LOGICAL_TYPE = 10;
const LOGICAL_UUID = 14;
const FIXED_LEN_BYTE_ARRAY = 7;

/** The footer could not be given its UUID annotations: the writer did not write a column as expected. */
export class UuidAnnotationError extends CompactorError {}

/**
 * `file` — a whole Parquet file, or its last bytes holding at least the whole footer — with the column at each of
 * `paths` (top-level name, then struct field names) annotated UUID. Everything else in the footer, and every byte
 * before it, is unchanged; the footer length is rewritten.
 * @throws UuidAnnotationError when a path names no column, or one not stored as FIXED_LEN_BYTE_ARRAY(16).
 */
export function withUuidAnnotations(file: Uint8Array, paths: readonly (readonly string[])[]): Uint8Array {
  if (paths.length === 0) return file;
  return editFooter(
    file,
    (_struct, elements) => annotateUuids(elements, paths),
    (message) => new UuidAnnotationError(message),
  );
}

/** `withUuidAnnotations`'s edit of the decoded footer's schema elements. */
function annotateUuids(elements: readonly unknown[], paths: readonly (readonly string[])[]): void {
  // Every element by its path of names from the root (the flat list is depth-first, `num_children` per group).
  const byPath = new Map<string, ThriftStruct>();
  const text = new TextDecoder();
  let next = 0;
  const visit = (path: readonly string[]): void => {
    const e = elements[next++];
    if (!isStruct(e)) return;
    const name = field(e, SE_NAME)?.value;
    const own = next === 1 ? [] : [...path, name instanceof Uint8Array ? text.decode(name) : ''];
    if (own.length > 0) byPath.set(JSON.stringify(own), e);
    const children = Number(field(e, SE_NUM_CHILDREN)?.value ?? 0);
    for (let c = 0; c < children; c++) visit(own);
  };
  visit([]);
  for (const path of paths) {
    const e = byPath.get(JSON.stringify(path));
    if (
      e === undefined ||
      field(e, SE_TYPE)?.value !== FIXED_LEN_BYTE_ARRAY ||
      field(e, SE_TYPE_LENGTH)?.value !== 16 ||
      field(e, SE_NUM_CHILDREN) !== undefined
    )
      throw new UuidAnnotationError(`column ${path.join('.')} was not written as FIXED_LEN_BYTE_ARRAY(16)`);
    setField(e, SE_LOGICAL_TYPE, T.STRUCT, {
      fields: [{ id: LOGICAL_UUID, type: T.STRUCT, value: { fields: [] } }],
    });
  }
}
