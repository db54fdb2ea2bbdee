// The fingerprint segment of a stitched output: not a digest of its rows but the list of source row groups
// it claims to be, byte for byte, in output order — a claim verify proves from the objects themselves.

/** The segment kinds an ordered fingerprint may hold: absent is a digest of the rows (`OrderedSegment`). */
export const SEGMENT_KINDS = ['stitched-v1'] as const;

/** One row group copied into a stitched output, as the plan saw its input. */
export interface StitchedSourceRef {
  /** The input's key. */
  readonly key: string;
  /** The input's ETag as planned: verify reads exactly this version, or refuses. */
  readonly etag: string;
  /** The row group's index in the input's footer. */
  readonly rowGroup: number;
  /** Its rows, from the input's footer. */
  readonly rows: number;
}

/**
 * What a stitched output promises: its row groups are these source row groups, in this order, page bytes and
 * column metadata unchanged but for offsets. The rewrite records it without decoding the inputs — decoding
 * them only to hash rows that are copied, not re-encoded, cost about what DuckDB's whole COPY does — and
 * verify checks it from the output and the sources' own bytes (core/verify/stitched-proof.ts), which is as
 * strict as hashing the rows of both sides: identical pages read under identical column metadata are
 * identical values for any correct reader.
 */
export interface StitchedSegment {
  readonly kind: 'stitched-v1';
  readonly rows: number;
  readonly sources: readonly StitchedSourceRef[];
}

/** Whether a recorded segment is a stitched one (any other known segment is a row digest). */
export function isStitchedSegment(segment: object): segment is StitchedSegment {
  return 'kind' in segment && segment.kind === 'stitched-v1';
}
