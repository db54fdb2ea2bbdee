// Reference encoders for Delta deletion vectors in tests, written from the protocol independently of the
// reader under test: Z85 (ZeroMQ RFC 32) and an inline DV (magic + portable 64-bit Roaring, array containers).

const Z85 = '0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#';

/** Z85 of `bytes`, zero-padded to whole 4-byte words as Delta pads inline DVs. */
export function z85Encode(bytes: Uint8Array): string {
  const padded = new Uint8Array(Math.ceil(bytes.length / 4) * 4);
  padded.set(bytes);
  const view = new DataView(padded.buffer);
  let out = '';
  for (let i = 0; i < padded.length; i += 4) {
    let word = view.getUint32(i, false);
    const digits: string[] = [];
    for (let k = 0; k < 5; k++) {
      digits.unshift(Z85[word % 85] as string);
      word = Math.floor(word / 85);
    }
    out += digits.join('');
  }
  return out;
}

/**
 * The `RoaringBitmapArray` bytes of `positions` (each below 2^32): magic 1681511377, one bucket per high key
 * (here only key 0), each a 32-bit Roaring bitmap without runs (cookie 12346) of array containers.
 */
export function roaringBitmapArray(positions: readonly number[]): Uint8Array {
  const sorted = [...new Set(positions)].sort((a, b) => a - b);
  const containers = new Map<number, number[]>();
  for (const p of sorted) {
    const key = Math.floor(p / 0x10000);
    containers.set(key, [...(containers.get(key) ?? []), p % 0x10000]);
  }
  const bytes: number[] = [];
  const u16 = (v: number) => bytes.push(v & 0xff, (v >>> 8) & 0xff);
  const u32 = (v: number) => bytes.push(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  u32(1681511377);
  u32(1); // bucket count, 64-bit little-endian
  u32(0);
  u32(0); // the bucket's high key
  u32(12346);
  u32(containers.size);
  for (const [key, values] of containers) {
    u16(key);
    u16(values.length - 1);
  }
  let offset = 8 + containers.size * 8;
  for (const values of containers.values()) {
    u32(offset);
    offset += values.length * 2;
  }
  for (const values of containers.values()) for (const v of values) u16(v);
  return Uint8Array.from(bytes);
}

/** An inline (`i`) deletion vector descriptor deleting `positions`. */
export function inlineDeletionVector(positions: readonly number[]): {
  storageType: 'i';
  pathOrInlineDv: string;
  sizeInBytes: number;
  cardinality: number;
} {
  const bitmap = roaringBitmapArray(positions);
  return {
    storageType: 'i',
    pathOrInlineDv: z85Encode(bitmap),
    sizeInBytes: bitmap.length,
    cardinality: new Set(positions).size,
  };
}
