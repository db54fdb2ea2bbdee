// Proves the multipart plan of a composed object: the parts concatenate to the pieces in order, every part but
// the last reaches S3's minimum, none exceeds its maximum, large ranges are copied server-side and small
// neighbours read into memory, and a plan over S3's part count is refused.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ComposeLimitError,
  type PlannedPart,
  pieceSize,
  planParts,
  S3_PART_LIMITS,
} from '../../../../functions/core/parquet/compose.js';
import type { ComposedPiece } from '../../../../functions/ports/object-store.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

function bytes(text: string): ComposedPiece {
  return { kind: 'bytes', bytes: new TextEncoder().encode(text) };
}

function range(key: string, start: number, length: number, etag = 'e1'): ComposedPiece {
  return { kind: 'range', key, etag, start, endInclusive: start + length - 1 };
}

/** The pieces as a canonical list: literal bytes joined into one hex run, contiguous ranges of one version joined. */
function canonical(pieces: readonly ComposedPiece[]): string[] {
  const list: { kind: string; hex?: string; key?: string; etag?: string; start?: number; end?: number }[] =
    [];
  for (const p of pieces) {
    if (pieceSize(p) === 0) continue;
    const last = list.at(-1);
    if (p.kind === 'bytes') {
      const hex = Buffer.from(p.bytes).toString('hex');
      if (last?.kind === 'bytes') last.hex += hex;
      else list.push({ kind: 'bytes', hex });
    } else if (
      last?.kind === 'range' &&
      last.key === p.key &&
      last.etag === p.etag &&
      (last.end as number) + 1 === p.start
    ) {
      last.end = p.endInclusive;
    } else {
      list.push({ kind: 'range', key: p.key, etag: p.etag, start: p.start, end: p.endInclusive });
    }
  }
  return list.map((s) => JSON.stringify(s));
}

function concatenated(parts: readonly PlannedPart[]): ComposedPiece[] {
  return parts.flatMap((p) => (p.kind === 'copy' ? [p.range] : p.pieces));
}

const partSize = (p: PlannedPart): number => (p.kind === 'copy' ? pieceSize(p.range) : p.size);

const pieceArb: fc.Arbitrary<ComposedPiece> = fc.oneof(
  fc.uint8Array({ maxLength: 40 }).map((b): ComposedPiece => ({ kind: 'bytes', bytes: b })),
  fc
    .record({
      key: fc.constantFrom('a', 'b', 'c'),
      etag: fc.constantFrom('e1', 'e2'),
      start: fc.integer({ min: 0, max: 64 * MiB }),
      length: fc.oneof(
        fc.integer({ min: 0, max: 12 * MiB }),
        fc.integer({ min: 0, max: 12 * GiB }),
        fc.constantFrom(5 * MiB - 1, 5 * MiB, 5 * MiB + 1, 10 * MiB, 5 * GiB, 5 * GiB + 1),
      ),
    })
    .map((r) => range(r.key, r.start, r.length, r.etag)),
);

describe('planParts', () => {
  it('concatenates to the pieces in order, every part but the last at least 5 MiB, none over 5 GiB nor over 10,000 parts', () => {
    fc.assert(
      fc.property(fc.array(pieceArb, { maxLength: 30 }), (pieces) => {
        // Act
        const parts = planParts(pieces);

        // Assess
        expect(canonical(concatenated(parts))).toEqual(canonical(pieces));
        for (const [i, part] of parts.entries()) {
          if (i < parts.length - 1)
            expect(partSize(part)).toBeGreaterThanOrEqual(S3_PART_LIMITS.minPartBytes);
          expect(partSize(part)).toBeLessThanOrEqual(S3_PART_LIMITS.maxPartBytes);
          expect(partSize(part)).toBeGreaterThan(0);
          if (part.kind === 'upload') {
            expect(part.size).toBe(part.pieces.reduce((n, p) => n + pieceSize(p), 0));
            // What is read into memory stays under two minimum parts (literal bytes aside).
            const read = part.pieces.reduce((n, p) => n + (p.kind === 'range' ? pieceSize(p) : 0), 0);
            expect(read).toBeLessThan(2 * S3_PART_LIMITS.minPartBytes);
          }
        }
        expect(parts.length).toBeLessThanOrEqual(S3_PART_LIMITS.maxParts);
      }),
      { seed: 1907, numRuns: 400 },
    );
  });

  it('copies a stitched output server-side but for PAR1 with the first input and the footer', () => {
    // Prepare
    const pieces = [
      bytes('PAR1'),
      range('in/a', 4, 6 * MiB),
      range('in/b', 4, 6 * MiB),
      range('in/c', 4, 7 * MiB),
      bytes('footer'),
      bytes('PAR1'),
    ];

    // Act
    const parts = planParts(pieces);

    // Assess
    expect(parts.map((p) => (p.kind === 'copy' ? `copy ${p.range.key}` : `upload ${p.size}`))).toEqual([
      `upload ${4 + 6 * MiB}`,
      'copy in/b',
      'copy in/c',
      'upload 10',
    ]);
  });

  it('reads only what the first part lacks of a range whose remainder can still be copied', () => {
    // Prepare
    const pieces = [bytes('PAR1'), range('in/a', 4, 20 * MiB), bytes('tail')];

    // Act
    const parts = planParts(pieces);

    // Assess
    expect(parts[0]).toMatchObject({ kind: 'upload', size: 5 * MiB });
    expect(parts[1]).toMatchObject({
      kind: 'copy',
      range: { key: 'in/a', start: 4 + 5 * MiB - 4, endInclusive: 4 + 20 * MiB - 1 },
    });
    expect(parts).toHaveLength(3);
  });

  it('splits a range over 5 GiB into near-equal copy parts', () => {
    // Prepare
    const length = 12 * GiB + 3;

    // Act
    const parts = planParts([range('big', 0, length)]);

    // Assess
    expect(parts.map((p) => p.kind)).toEqual(['copy', 'copy', 'copy']);
    expect(parts.map(partSize).reduce((n, s) => n + s, 0)).toBe(length);
    expect(Math.max(...parts.map(partSize)) - Math.min(...parts.map(partSize))).toBeLessThanOrEqual(1);
  });

  it('joins contiguous ranges of one object version into one copy, but not across versions', () => {
    // Prepare
    const pieces = [range('a', 0, 3 * MiB), range('a', 3 * MiB, 3 * MiB), range('a', 6 * MiB, 6 * MiB, 'e2')];

    // Act
    const parts = planParts(pieces);

    // Assess
    expect(parts).toEqual([
      { kind: 'copy', range: range('a', 0, 6 * MiB) },
      { kind: 'copy', range: range('a', 6 * MiB, 6 * MiB, 'e2') },
    ]);
  });

  it('refuses a plan over the part count limit', () => {
    // Prepare
    const limits = { minPartBytes: 4, maxPartBytes: 8, maxParts: 3 };

    // Act
    const plan = () => planParts([bytes('x'.repeat(40))], limits);

    // Assess
    expect(plan).toThrow(ComposeLimitError);
  });
});
