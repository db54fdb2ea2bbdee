// One standard Bloom filter as Hadoop serialises it (`org.apache.hadoop.util.bloom.BloomFilter`, copied by Hudi as
// `InternalBloomFilter`): the building block of both of Hudi's filter types. The bit vector is kept in Hadoop's own
// byte layout (bit i in byte i/8 under mask 1 << i%8), so writing it is a copy and a decoded filter re-serialises
// byte for byte.
import { UnsupportedBloomFilterError } from './errors.js';
import { hadoopMurmurHash } from './murmur.js';

/** `Hash.JENKINS_HASH` and `Hash.MURMUR_HASH` (`org.apache.hadoop.util.hash.Hash`). */
export const JENKINS_HASH = 0;
export const MURMUR_HASH = 1;

/** `Filter.VERSION`: the header's first int in every filter Hadoop ≥ 0.20 and Hudi write. */
export const FILTER_VERSION = -1;

/** Bytes of a filter header: version (int), nbHash (int), hashType (byte), vectorSize (int). */
export const FILTER_HEADER_BYTES = 13;

/** The shape shared by a filter and its header: what Hadoop's `Filter` holds. */
export interface FilterShape {
  /** Number of bits (Hadoop's `vectorSize`); every position is taken modulo this. */
  readonly vectorSize: number;
  /** Number of hash values per key (`nbHash`). */
  readonly nbHash: number;
  /** `MURMUR_HASH` (all Hudi writes) or `JENKINS_HASH`. */
  readonly hashType: number;
}

/**
 * Hadoop's `HashFunction.hash(key)`: `nbHash` bit positions, each the previous hash fed back as the next seed
 * (starting from 0) and reduced by Java's `Math.abs(h % vectorSize)` (remainder keeps the dividend's sign).
 */
export function bitPositions(key: Uint8Array, shape: FilterShape): number[] {
  if (key.length === 0)
    throw new UnsupportedBloomFilterError('an empty key cannot be hashed (Hadoop refuses it)');
  if (shape.hashType !== MURMUR_HASH) {
    throw new UnsupportedBloomFilterError(
      `hash type ${shape.hashType} is not implemented (only Murmur, type 1, which Hudi writes)`,
    );
  }
  const out = new Array<number>(shape.nbHash);
  let seed = 0;
  for (let i = 0; i < shape.nbHash; i++) {
    seed = hadoopMurmurHash(key, seed);
    out[i] = Math.abs(seed % shape.vectorSize);
  }
  return out;
}

/** Bytes of the bit vector of `vectorSize` bits (Java's `(int) (((long) vectorSize + 7) / 8)`). */
export function vectorBytes(vectorSize: number): number {
  return Math.floor((vectorSize + 7) / 8);
}

/** A standard Bloom filter: a header and its bits. Mutable only through {@link BitVectorFilter.add}. */
export class BitVectorFilter implements FilterShape {
  /**
   * @param bits The vector in Hadoop's layout; bits past `vectorSize` in the last byte are zero, as Java writes
   *   them (the decoder clears them, since Java ignores them on read).
   */
  constructor(
    readonly vectorSize: number,
    readonly nbHash: number,
    readonly hashType: number,
    readonly bits: Uint8Array = new Uint8Array(vectorBytes(vectorSize)),
  ) {}

  /**
   * Sets the key's bits (Hadoop's `BloomFilter.add`): the positions of {@link bitPositions}, set as they are hashed
   * — no array per key, since every row of a rewritten file is added.
   */
  add(key: Uint8Array): void {
    if (key.length === 0 || this.hashType !== MURMUR_HASH) {
      for (const p of bitPositions(key, this)) this.setBit(p);
      return;
    }
    let seed = 0;
    for (let i = 0; i < this.nbHash; i++) {
      seed = hadoopMurmurHash(key, seed);
      this.setBit(Math.abs(seed % this.vectorSize));
    }
  }

  /** Whether every bit of the key is set: false means the key was never added (Hadoop's `membershipTest`). */
  mightContain(key: Uint8Array): boolean {
    return this.mightContainPositions(bitPositions(key, this));
  }

  /** {@link mightContain} for positions already computed (a dynamic filter tests each row with the same ones). */
  mightContainPositions(positions: readonly number[]): boolean {
    for (const p of positions) {
      if (((this.bits[p >> 3] as number) & (1 << (p & 7))) === 0) return false;
    }
    return true;
  }

  setBit(position: number): void {
    this.bits[position >> 3] = (this.bits[position >> 3] as number) | (1 << (position & 7));
  }

  /** Bytes `write(DataOutput)` emits: {@link FILTER_HEADER_BYTES} then the vector. */
  get serializedLength(): number {
    return FILTER_HEADER_BYTES + this.bits.length;
  }

  /** Writes Hadoop's `Filter.write` header and the vector at `offset`; returns the offset after it. */
  writeTo(view: DataView, offset: number): number {
    let at = writeFilterHeader(view, offset, this);
    new Uint8Array(view.buffer, view.byteOffset + at, this.bits.length).set(this.bits);
    at += this.bits.length;
    return at;
  }
}

/** Hadoop's `Filter.write` header (big-endian, as Java's DataOutput). */
export function writeFilterHeader(view: DataView, offset: number, shape: FilterShape): number {
  view.setInt32(offset, FILTER_VERSION);
  view.setInt32(offset + 4, shape.nbHash);
  view.setInt8(offset + 8, shape.hashType);
  view.setInt32(offset + 9, shape.vectorSize);
  return offset + FILTER_HEADER_BYTES;
}
