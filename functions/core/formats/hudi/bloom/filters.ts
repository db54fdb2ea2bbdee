// Hudi's two bloom filter types (`BloomFilterTypeCode`): SIMPLE, one Hadoop BloomFilter, and DYNAMIC_V0, Hudi's
// `HoodieDynamicBoundedBloomFilter` — a Hadoop DynamicBloomFilter whose matrix grows a row per `numEntries` keys up
// to `maxEntries`, then reuses its rows round-robin. Both are sized from (numEntries, fpp) exactly as Hudi sizes
// them, so building one from a file's keys with its table's settings reproduces the footer Hudi wrote.
import {
  BitVectorFilter,
  bitPositions,
  FILTER_HEADER_BYTES,
  type FilterShape,
  MURMUR_HASH,
  writeFilterHeader,
} from './bit-vector-filter.js';
import { UnsupportedBloomFilterError } from './errors.js';
import { javaUtf8Bytes } from './record-keys.js';

/** The footer's `hoodie_bloom_filter_type_code` values (a footer without one holds a SIMPLE filter). */
export type BloomFilterTypeCode = 'SIMPLE' | 'DYNAMIC_V0';

/** `hoodie.index.bloom.num_entries` default: keys per filter (per row of a dynamic one). */
export const DEFAULT_BLOOM_NUM_ENTRIES = 60000;
/** `hoodie.index.bloom.fpp` default. */
export const DEFAULT_BLOOM_FPP = 0.000000001;
/** `hoodie.bloom.index.filter.dynamic.max.entries` default. */
export const DEFAULT_BLOOM_DYNAMIC_MAX_ENTRIES = 100000;
/** `hoodie.bloom.index.filter.type` default. */
export const DEFAULT_BLOOM_TYPE_CODE: BloomFilterTypeCode = 'DYNAMIC_V0';

const LOG2_SQUARED = Math.log(2) * Math.log(2);

/**
 * Hudi's `BloomFilterUtils.getBitSize`: `(int) ceil(numEntries * (-ln(fpp) / ln(2)²))`. The defaults give
 * 2,587,966 bits, the vector size every fixture footer carries.
 */
export function bloomBitSize(numEntries: number, fpp: number): number {
  return Math.ceil(numEntries * (-Math.log(fpp) / LOG2_SQUARED));
}

/** Hudi's `BloomFilterUtils.getNumHashes`: `(int) ceil(ln(2) * bitSize / numEntries)`; 30 at the defaults. */
export function bloomNumHashes(bitSize: number, numEntries: number): number {
  return Math.ceil((Math.log(2) * bitSize) / numEntries);
}

/** What a table's writer configuration says about the filters it writes (`hoodie.index.bloom.*`). */
export interface BloomFilterSettings {
  readonly typeCode: BloomFilterTypeCode;
  /** `hoodie.index.bloom.num_entries`. */
  readonly numEntries: number;
  /** `hoodie.index.bloom.fpp`. */
  readonly fpp: number;
  /** `hoodie.bloom.index.filter.dynamic.max.entries` (DYNAMIC_V0 only). */
  readonly maxEntries?: number;
}

/** Hudi's defaults: DYNAMIC_V0, 60000 entries, fpp 1e-9, bounded at 100000 entries. */
export const DEFAULT_BLOOM_SETTINGS: BloomFilterSettings = {
  typeCode: DEFAULT_BLOOM_TYPE_CODE,
  numEntries: DEFAULT_BLOOM_NUM_ENTRIES,
  fpp: DEFAULT_BLOOM_FPP,
  maxEntries: DEFAULT_BLOOM_DYNAMIC_MAX_ENTRIES,
};

/** A key as Hudi adds it: a string is hashed as Java's `getBytes(UTF_8)`, bytes as they are. */
export type BloomKey = string | Uint8Array;

function keyBytes(key: BloomKey): Uint8Array {
  return typeof key === 'string' ? javaUtf8Bytes(key) : key;
}

/** What both filter types offer: Hudi's `BloomFilter` interface. */
export interface HudiBloomFilter {
  readonly typeCode: BloomFilterTypeCode;
  add(key: BloomKey): void;
  /** False only for a key never added. */
  mightContain(key: BloomKey): boolean;
  /** The bytes Hudi's `serializeToString` Base64-encodes. */
  toBytes(): Uint8Array;
  /** The footer's `org.apache.hudi.bloomfilter` value (standard Base64, padded, no line breaks, as java.util.Base64). */
  serializeToString(): string;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

/** Hudi's `SimpleBloomFilter`: one Hadoop BloomFilter, serialised as Hadoop's `BloomFilter.write`. */
export class SimpleBloomFilter implements HudiBloomFilter {
  readonly typeCode = 'SIMPLE' as const;

  constructor(readonly filter: BitVectorFilter) {}

  /** Hudi's `SimpleBloomFilter(numEntries, errorRate, MURMUR_HASH)`. */
  static create(numEntries: number, fpp: number): SimpleBloomFilter {
    const { vectorSize, nbHash } = sized(numEntries, fpp);
    return new SimpleBloomFilter(new BitVectorFilter(vectorSize, nbHash, MURMUR_HASH));
  }

  add(key: BloomKey): void {
    this.filter.add(keyBytes(key));
  }

  mightContain(key: BloomKey): boolean {
    return this.filter.mightContain(keyBytes(key));
  }

  toBytes(): Uint8Array {
    const out = new Uint8Array(this.filter.serializedLength);
    this.filter.writeTo(new DataView(out.buffer), 0);
    return out;
  }

  serializeToString(): string {
    return base64(this.toBytes());
  }
}

/** Bytes of DYNAMIC_V0's own fields after the header: nr, currentNbRecord, matrix length (ints). */
export const DYNAMIC_FIELDS_BYTES = 12;

/**
 * Hudi's `HoodieDynamicBoundedBloomFilter` (its `InternalDynamicBloomFilter`): rows of standard filters of one
 * shape. Keys fill the last row; when it holds `nr` keys, a new row is added while `rows × nr < maxNr`; past that
 * bound (`reachedMax`), keys go to row 0 and then to the rows in turn — Hudi's exact sequence, replayed here so the
 * same keys in the same order give the same bytes. `reachedMax` and the round-robin index are not serialised: a
 * decoded filter starts them afresh, as Hudi's does.
 */
export class DynamicBoundedBloomFilter implements HudiBloomFilter {
  readonly typeCode = 'DYNAMIC_V0' as const;
  private reachedMax = false;
  private curMatrixIndex = 0;

  /**
   * @param shape The outer header (each row carries its own, equal in everything Hudi writes).
   * @param nr Keys per row (`numEntries`).
   * @param currentNbRecord Keys added to the last row (serialised; keeps counting past the bound).
   * @param maxNr Rows stop growing once `rows × nr ≥ maxNr` (Java int arithmetic). Not serialised: a decoded
   *   filter has Java's field default, 0, so keys added to it go round-robin over its rows, as in Hudi.
   */
  constructor(
    readonly shape: FilterShape,
    readonly nr: number,
    private currentNbRecord: number,
    readonly rows: BitVectorFilter[],
    readonly maxNr: number,
  ) {}

  /** Hudi's `HoodieDynamicBoundedBloomFilter(numEntries, errorRate, MURMUR_HASH, maxNoOfEntries)`. */
  static create(numEntries: number, fpp: number, maxEntries: number): DynamicBoundedBloomFilter {
    const shape = { ...sized(numEntries, fpp), hashType: MURMUR_HASH };
    return new DynamicBoundedBloomFilter(shape, numEntries, 0, [rowOf(shape)], maxEntries);
  }

  /** Keys counted in the last row (the serialised `currentNbRecord`). */
  get recordsInLastRow(): number {
    return this.currentNbRecord;
  }

  add(key: BloomKey): void {
    let row = this.activeRow();
    if (row === undefined) {
      row = rowOf(this.shape);
      this.rows.push(row);
      this.currentNbRecord = 0;
    }
    row.add(keyBytes(key));
    this.currentNbRecord = (this.currentNbRecord + 1) | 0;
  }

  /** `getActiveStandardBF`: the row the next key goes to, or undefined when a row must be added first. */
  private activeRow(): BitVectorFilter | undefined {
    const n = this.rows.length;
    if (this.reachedMax) {
      const index = this.curMatrixIndex % n;
      this.curMatrixIndex++;
      return this.rows[index];
    }
    if (this.currentNbRecord >= this.nr) {
      if (Math.imul(n, this.nr) < this.maxNr) return undefined;
      this.reachedMax = true;
      return this.rows[0];
    }
    return this.rows[n - 1];
  }

  mightContain(key: BloomKey): boolean {
    const bytes = keyBytes(key);
    let positions: number[] | undefined;
    for (const row of this.rows) {
      if (!sameShape(row, this.shape)) {
        if (row.mightContain(bytes)) return true;
        continue;
      }
      positions ??= bitPositions(bytes, this.shape);
      if (row.mightContainPositions(positions)) return true;
    }
    return false;
  }

  toBytes(): Uint8Array {
    let length = FILTER_HEADER_BYTES + DYNAMIC_FIELDS_BYTES;
    for (const row of this.rows) length += row.serializedLength;
    const out = new Uint8Array(length);
    const view = new DataView(out.buffer);
    let at = writeFilterHeader(view, 0, this.shape);
    view.setInt32(at, this.nr);
    view.setInt32(at + 4, this.currentNbRecord);
    view.setInt32(at + 8, this.rows.length);
    at += DYNAMIC_FIELDS_BYTES;
    for (const row of this.rows) at = row.writeTo(view, at);
    return out;
  }

  serializeToString(): string {
    return base64(this.toBytes());
  }
}

function sameShape(a: FilterShape, b: FilterShape): boolean {
  return a.vectorSize === b.vectorSize && a.nbHash === b.nbHash && a.hashType === b.hashType;
}

function rowOf(shape: FilterShape): BitVectorFilter {
  return new BitVectorFilter(shape.vectorSize, shape.nbHash, shape.hashType);
}

/** Largest vector a Java int can size (Hudi casts to int; a bigger request is a configuration error). */
const MAX_VECTOR_BITS = 2 ** 31 - 1;

function sized(numEntries: number, fpp: number): { vectorSize: number; nbHash: number } {
  if (!Number.isInteger(numEntries) || numEntries <= 0) {
    throw new UnsupportedBloomFilterError(`numEntries must be a positive integer, not ${numEntries}`);
  }
  if (!(fpp > 0 && fpp < 1)) throw new UnsupportedBloomFilterError(`fpp must be between 0 and 1, not ${fpp}`);
  const vectorSize = bloomBitSize(numEntries, fpp);
  if (vectorSize > MAX_VECTOR_BITS) {
    throw new UnsupportedBloomFilterError(
      `${numEntries} entries at fpp ${fpp} need ${vectorSize} bits, over 2^31-1`,
    );
  }
  return { vectorSize, nbHash: bloomNumHashes(vectorSize, numEntries) };
}

/**
 * A new empty filter as a Hudi writer with these settings creates one for each base file
 * (`BloomFilterFactory.createBloomFilter`).
 */
export function createBloomFilter(settings: BloomFilterSettings = DEFAULT_BLOOM_SETTINGS): HudiBloomFilter {
  if (settings.typeCode === 'SIMPLE') return SimpleBloomFilter.create(settings.numEntries, settings.fpp);
  return DynamicBoundedBloomFilter.create(
    settings.numEntries,
    settings.fpp,
    settings.maxEntries ?? DEFAULT_BLOOM_DYNAMIC_MAX_ENTRIES,
  );
}
