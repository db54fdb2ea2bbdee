// The portable Roaring bitmap format (RoaringFormatSpec), 64-bit extension: what Delta deletion vectors and
// Iceberg v3 DVs both serialize deleted row positions as. One decoder for both formats, streaming ranges.

const SERIAL_COOKIE_NO_RUN = 12346;
const SERIAL_COOKIE = 12347;
const NO_OFFSET_THRESHOLD = 4;

/**
 * Receives the decoded values in ascending order as ranges: the values `high · 2^32 + [start, end)`,
 * `end` ≤ 2^32. Consecutive values come as one range where the container has them as one (runs, bitset
 * words, array neighbours), so a long run never becomes one call per value.
 */
export type RoaringSink = (high: number, start: number, end: number) => void;

/**
 * Why the bytes cannot be decoded; never returns. `unsupported` marks a valid bitmap of a kind the decoder
 * does not read (an unknown cookie) rather than damaged bytes, so a format can report the two differently.
 */
export type RoaringFailure = (reason: string, unsupported?: boolean) => never;

/**
 * Decodes a 64-bit Roaring bitmap in the portable format (CRoaring's and Java RoaringBitmap's
 * `Roaring64NavigableMap` serialization: a little-endian 64-bit count of 32-bit buckets, each a
 * 32-bit high key and a 32-bit Roaring bitmap) into `sink`.
 * @returns the values decoded and the bytes read (a caller that expects nothing after the bitmap checks it).
 */
export function decodePortableRoaring64(
  bytes: Uint8Array,
  sink: RoaringSink,
  fail: RoaringFailure,
): { readonly cardinality: number; readonly bytesRead: number } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let pos = 0;
  let cardinality = 0;
  let previousHigh = -1;
  const need = (n: number) => {
    if (pos + n > bytes.byteLength) fail('ends inside its bitmap');
  };
  need(8);
  const buckets = view.getBigUint64(pos, true);
  pos += 8;
  if (buckets > BigInt(bytes.byteLength)) fail(`declares ${buckets} buckets in ${bytes.byteLength} bytes`);
  // Pending range, so neighbours across containers and array values coalesce.
  let pHigh = -1;
  let pStart = 0;
  let pEnd = 0;
  const emit = (high: number, start: number, end: number) => {
    cardinality += end - start;
    if (high === pHigh && start === pEnd) {
      pEnd = end;
      return;
    }
    if (pHigh >= 0) sink(pHigh, pStart, pEnd);
    pHigh = high;
    pStart = start;
    pEnd = end;
  };
  for (let b = 0n; b < buckets; b++) {
    need(4);
    const high = view.getUint32(pos, true);
    pos += 4;
    if (high <= previousHigh) fail(`bucket keys are not ascending (${high} after ${previousHigh})`);
    previousHigh = high;
    decodeRoaring32(high);
  }
  if (pHigh >= 0) sink(pHigh, pStart, pEnd);
  return { cardinality, bytesRead: pos };

  function decodeRoaring32(high: number): void {
    need(4);
    const cookie = view.getUint32(pos, true);
    pos += 4;
    let containers: number;
    let runFlags: Uint8Array | undefined;
    if ((cookie & 0xffff) === SERIAL_COOKIE) {
      containers = (cookie >>> 16) + 1;
      const flagBytes = Math.ceil(containers / 8);
      need(flagBytes);
      runFlags = bytes.subarray(pos, pos + flagBytes);
      pos += flagBytes;
    } else if (cookie === SERIAL_COOKIE_NO_RUN) {
      need(4);
      containers = view.getUint32(pos, true);
      pos += 4;
    } else fail(`a Roaring bitmap with cookie ${cookie}`, true);
    need(containers * 4);
    const keys: number[] = [];
    const cards: number[] = [];
    for (let i = 0; i < containers; i++) {
      keys.push(view.getUint16(pos, true));
      cards.push(view.getUint16(pos + 2, true) + 1);
      pos += 4;
    }
    if (runFlags === undefined || containers >= NO_OFFSET_THRESHOLD) pos += containers * 4; // offsets: not needed
    for (let i = 0; i < containers; i++) {
      const base = (keys[i] as number) * 0x10000;
      const card = cards[i] as number;
      const isRun = runFlags !== undefined && (((runFlags[i >> 3] as number) >> (i & 7)) & 1) === 1;
      if (isRun) {
        need(2);
        const runs = view.getUint16(pos, true);
        pos += 2;
        need(runs * 4);
        for (let r = 0; r < runs; r++) {
          const start = view.getUint16(pos, true);
          const lengthMinusOne = view.getUint16(pos + 2, true);
          pos += 4;
          emitChecked(high, base + start, base + start + lengthMinusOne + 1);
        }
      } else if (card <= 4096) {
        need(card * 2);
        for (let k = 0; k < card; k++) {
          const v = base + view.getUint16(pos + k * 2, true);
          emitChecked(high, v, v + 1);
        }
        pos += card * 2;
      } else {
        need(8192);
        // 1024 little-endian 64-bit words, read as 2048 little-endian 32-bit halves (low half first)
        for (let w = 0; w < 2048; w++) {
          const word = view.getUint32(pos + w * 4, true);
          if (word === 0) continue;
          let bit = 0;
          while (bit < 32) {
            if (((word >>> bit) & 1) === 0) {
              bit++;
              continue;
            }
            const from = bit;
            while (bit < 32 && ((word >>> bit) & 1) === 1) bit++;
            emitChecked(high, base + w * 32 + from, base + w * 32 + bit);
          }
        }
        pos += 8192;
      }
    }
  }

  function emitChecked(high: number, start: number, end: number): void {
    if (high === pHigh && start < pEnd) fail(`values are not ascending (${start} after ${pEnd - 1})`);
    emit(high, start, end);
  }
}
