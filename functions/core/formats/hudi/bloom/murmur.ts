// Hadoop's MurmurHash (`org.apache.hadoop.util.hash.MurmurHash`, Hash.MURMUR_HASH = 1), which Hudi copies as
// `org.apache.hudi.common.util.hash.MurmurHash` and uses for every bloom filter it writes.
//
// Why our own: this is MurmurHash2 as Hadoop ported it, not Murmur3, and the port has a quirk that decides the bits:
// the 1–3 trailing bytes are read as signed Java bytes, so a byte ≥ 0x80 sign-extends over the high bits before the
// XOR. A textbook MurmurHash2 (unsigned tail) gives other positions for any key whose length is not a multiple of
// four and whose tail holds a non-ASCII byte, and Hudi's index would then miss those keys.

const M = 0x5bd1e995;
const R = 24;

/** A Java `byte` (signed, −128..127) of an unsigned byte. */
function signed(b: number): number {
  return (b << 24) >> 24;
}

/**
 * Hadoop's `MurmurHash.hash(data, 0, data.length, seed)`: a signed 32-bit integer, exactly as Java returns it.
 */
export function hadoopMurmurHash(data: Uint8Array, seed: number): number {
  let length = data.length;
  let h = (seed ^ length) | 0;
  const len4 = length >> 2;
  for (let i = 0; i < len4; i++) {
    const i4 = i << 2;
    let k =
      ((data[i4 + 3] as number) << 24) |
      ((data[i4 + 2] as number) << 16) |
      ((data[i4 + 1] as number) << 8) |
      (data[i4] as number);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  const left = length - (len4 << 2);
  if (left !== 0) {
    length = data.length;
    // Java: `h ^= (int) data[length - 3] << 16` with data a signed byte[]: sign extension is part of the hash.
    if (left >= 3) h ^= signed(data[length - 3] as number) << 16;
    if (left >= 2) h ^= signed(data[length - 2] as number) << 8;
    if (left >= 1) h ^= signed(data[length - 1] as number);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}
