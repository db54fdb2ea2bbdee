// A written Parquet file's footer edited after the write: the decimal and UUID annotations the Arrow writer cannot
// write (decimal-form.ts, uuid-annotation.ts) are given to its schema elements here, every page byte unchanged.
import { PARQUET_MAGIC, withFooter } from './footer.js';
import { decodeStruct, encodeStruct, field, type ThriftStruct } from './thrift-compact.js';

/** parquet.thrift: FileMetaData.schema. */
const FMD_SCHEMA = 2;

/**
 * `file` — a whole Parquet file, or its last bytes holding at least the whole footer — with its FileMetaData changed
 * in place by `edit` (given the decoded struct and its flat list of schema elements, depth first) and encoded again:
 * every byte before the footer is unchanged, and the footer length is rewritten.
 * @param fail the error to throw, given what is wrong, when the bytes do not end with a whole footer (each caller
 *   throws its own typed error, whose name says which annotation could not be given).
 */
export function editFooter(
  file: Uint8Array,
  edit: (metadata: ThriftStruct, elements: readonly unknown[]) => void,
  fail: (message: string) => Error,
): Uint8Array {
  const n = file.length;
  if (n < 8 || file.subarray(n - 4).some((b, i) => b !== PARQUET_MAGIC[i]))
    throw fail('the bytes do not end with a Parquet footer');
  const length = new DataView(file.buffer, file.byteOffset + n - 8, 4).getUint32(0, true);
  const start = n - 8 - length;
  if (start < 0) throw fail(`the footer of ${length} bytes is longer than the ${n} bytes held`);
  const { struct } = decodeStruct(file.subarray(start, n - 8));
  const schema = field(struct, FMD_SCHEMA)?.value;
  edit(struct, typeof schema === 'object' && schema !== null && 'items' in schema ? schema.items : []);
  return withFooter(file.subarray(0, start), encodeStruct(struct));
}
