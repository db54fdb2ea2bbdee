// Plans a composed object (literal bytes and ranges of other objects, in order) as S3 multipart parts:
// large ranges become server-side copies (UploadPartCopy), everything else is uploaded from memory — within
// S3's rules, so that the copies save the download and re-upload of most of a stitched output's bytes.

import type { ComposedPiece, ComposedRange } from '../../ports/object-store.js';
import { CompactorError } from '../errors.js';

/** S3's multipart rules: every part but the last at least 5 MiB, none over 5 GiB, at most 10,000 parts. */
export interface PartLimits {
  readonly minPartBytes: number;
  readonly maxPartBytes: number;
  readonly maxParts: number;
}

export const S3_PART_LIMITS: PartLimits = {
  minPartBytes: 5 * 1024 * 1024,
  maxPartBytes: 5 * 1024 * 1024 * 1024,
  maxParts: 10_000,
};

/** A part copied server-side: one range of one object. */
export interface CopyPart {
  readonly kind: 'copy';
  readonly range: ComposedRange;
}

/** A part uploaded from memory: literal bytes and ranges that are read (at their ETag) and concatenated. */
export interface UploadPart {
  readonly kind: 'upload';
  readonly pieces: readonly ComposedPiece[];
  readonly size: number;
}

export type PlannedPart = CopyPart | UploadPart;

/** A composed object that S3's multipart rules cannot express (over 10,000 parts). */
export class ComposeLimitError extends CompactorError {}

export function pieceSize(piece: ComposedPiece): number {
  return piece.kind === 'bytes' ? piece.bytes.length : piece.endInclusive - piece.start + 1;
}

/**
 * Plans `pieces` as multipart parts whose concatenation is the pieces in order. A range of at least the
 * minimum part size becomes one copy part (several, near-equal, when over the maximum). Everything else
 * collects into an upload part, which is sent as soon as it reaches the minimum. An upload part that has not
 * reached it when a range comes takes bytes of that range to reach it — only what it lacks when the range's
 * remainder can still be copied, else the whole range (so at most about two minimum parts are ever read into
 * memory per part). Hence a stitched output's first part is `PAR1` with (at least the start of) the first
 * input, and the footer rides in the last.
 * @throws ComposeLimitError when the plan needs more parts than allowed.
 */
export function planParts(
  pieces: readonly ComposedPiece[],
  limits: PartLimits = S3_PART_LIMITS,
): PlannedPart[] {
  const { minPartBytes: min, maxPartBytes: max } = limits;
  const parts: PlannedPart[] = [];
  let buffer: ComposedPiece[] = [];
  let buffered = 0;
  const flush = (): void => {
    if (buffered > 0) parts.push({ kind: 'upload', pieces: buffer, size: buffered });
    buffer = [];
    buffered = 0;
  };
  // No merging here: `normalised` already joined neighbouring ranges, and a range split by the loop below
  // never lands in one buffer twice (the first share fills it to the minimum, which flushes it).
  const add = (piece: ComposedPiece): void => {
    buffer.push(piece);
    buffered += pieceSize(piece);
    if (buffered >= min) flush();
  };
  for (const piece of normalised(pieces)) {
    if (piece.kind === 'bytes') {
      for (let at = 0; at < piece.bytes.length; ) {
        const take = Math.min(piece.bytes.length - at, max - buffered);
        add({ kind: 'bytes', bytes: piece.bytes.subarray(at, at + take) });
        at += take;
      }
      continue;
    }
    let start = piece.start;
    const end = piece.endInclusive;
    while (start <= end) {
      const remaining = end - start + 1;
      if (buffered > 0) {
        const lacking = min - buffered;
        const take = remaining - lacking >= min ? lacking : remaining;
        add({ ...piece, start, endInclusive: start + take - 1 });
        start += take;
        continue;
      }
      if (remaining < min) {
        add({ ...piece, start, endInclusive: end });
        break;
      }
      const count = Math.ceil(remaining / max);
      for (let i = 0; i < count; i++) {
        const from = start + Math.floor((remaining * i) / count);
        const to = start + Math.floor((remaining * (i + 1)) / count) - 1;
        parts.push({ kind: 'copy', range: { ...piece, start: from, endInclusive: to } });
      }
      break;
    }
  }
  flush();
  if (parts.length > limits.maxParts) {
    throw new ComposeLimitError(
      `A composed object of ${parts.length} parts exceeds S3's ${limits.maxParts}; write it as a stream instead.`,
    );
  }
  return parts;
}

/** The pieces without empty ones, consecutive ranges of one object version merged (one copy, not two). */
function normalised(pieces: readonly ComposedPiece[]): ComposedPiece[] {
  const out: ComposedPiece[] = [];
  for (const piece of pieces) {
    if (pieceSize(piece) <= 0) continue;
    const last = out.at(-1);
    if (last === undefined) out.push(piece);
    else out.splice(-1, 1, ...merged(last, piece));
  }
  return out;
}

/** `a` then `b` as one range when `b` continues `a` in the same object version, else both. */
function merged(a: ComposedPiece, b: ComposedPiece): ComposedPiece[] {
  if (
    a.kind === 'range' &&
    b.kind === 'range' &&
    a.key === b.key &&
    a.etag === b.etag &&
    a.endInclusive + 1 === b.start
  ) {
    return [{ ...a, endInclusive: b.endInclusive }];
  }
  return [a, b];
}
