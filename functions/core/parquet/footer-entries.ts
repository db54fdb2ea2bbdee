// Replacing key-value entries in a Parquet file's footer after its data is written: the footer is the file's
// last bytes and nothing before it points into it, so entries computed from the rows just encoded (an index over
// them) can be set without touching a page — only the footer and its length change.
import { CompactorError } from '../errors.js';
import { PARQUET_MAGIC, withFooter } from './footer.js';
import {
  decodeStruct,
  encodeStruct,
  setField,
  T,
  type ThriftStruct,
  type ThriftValue,
} from './thrift-compact.js';

/** FileMetaData.key_value_metadata and KeyValue's fields, in parquet.thrift. */
const FMD_KV = 5;
const KV_KEY = 1;
const KV_VALUE = 2;

/** The last bytes of a Parquet file held too few to contain its whole footer. */
export class FooterNotInTailError extends CompactorError {}

/**
 * `tail` — the last bytes of a Parquet file, holding at least its whole footer — with the footer's key-value
 * metadata changed: entries whose key is in `drop` or `entries` removed, then `entries` appended in their order.
 * The bytes before the footer are returned unchanged; the footer length is rewritten.
 * @throws FooterNotInTailError when `tail` does not hold the whole footer.
 */
export function withFooterEntries(
  tail: Uint8Array,
  entries: Readonly<Record<string, string>>,
  drop: readonly string[] = [],
): Uint8Array {
  const n = tail.length;
  const magic = tail.subarray(n - 4);
  if (n < 8 || magic.some((b, i) => b !== PARQUET_MAGIC[i])) {
    throw new FooterNotInTailError('the bytes do not end with a Parquet footer');
  }
  const length = new DataView(tail.buffer, tail.byteOffset + n - 8, 4).getUint32(0, true);
  const start = n - 8 - length;
  if (start < 0)
    throw new FooterNotInTailError(`the footer of ${length} bytes is longer than the ${n} bytes held`);
  const { struct } = decodeStruct(tail.subarray(start, n - 8));
  replaceKeyValues(struct, entries, drop);
  return withFooter(tail.subarray(0, start), encodeStruct(struct));
}

/**
 * Changes a decoded FileMetaData's key-value metadata in place as {@link withFooterEntries} does: entries whose key
 * is in `drop` or `entries` removed, then `entries` appended in their order. Shared with footers assembled from
 * parts (core/parquet/stitch.ts), so an output gets the same entries, in the same places, whichever way it is written.
 */
export function replaceKeyValues(
  struct: ThriftStruct,
  entries: Readonly<Record<string, string>>,
  drop: readonly string[] = [],
): void {
  const encoder = new TextEncoder();
  const decoder = new TextDecoder();
  const replaced = new Set([...drop, ...Object.keys(entries)]);
  const existing = struct.fields.find((f) => f.id === FMD_KV)?.value;
  const items: ThriftValue[] =
    typeof existing === 'object' && existing !== null && 'items' in existing
      ? existing.items.filter((item) => {
          if (typeof item !== 'object' || item === null || !('fields' in item)) return true;
          const key = item.fields.find((f) => f.id === KV_KEY)?.value;
          return !(key instanceof Uint8Array && replaced.has(decoder.decode(key)));
        })
      : [];
  for (const [key, value] of Object.entries(entries)) {
    const kv: ThriftStruct = {
      fields: [
        { id: KV_KEY, type: T.BINARY, value: encoder.encode(key) },
        { id: KV_VALUE, type: T.BINARY, value: encoder.encode(value) },
      ],
    };
    items.push(kv);
  }
  setField(struct, FMD_KV, T.LIST, { elementType: T.STRUCT, items });
}
