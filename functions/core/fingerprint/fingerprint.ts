// The group fingerprint: rows, per-column null counts, schema identity and a row hash of the kind the
// rewrite chose (an order-preserving per-column digest per output, or the 64-bit row multiset hash) —
// plain JSON, so it travels from the compact Lambda to the verify Lambda through Step Functions.

import { createHash } from 'node:crypto';
import type { FileMetaData, SchemaElement } from 'hyparquet';
import { z } from 'zod';
import { keyValueGroupingOf, keyValueRecord } from '../parquet/key-value.js';
import { normalizedLogicalType } from '../parquet/schema.js';
import type { OrderedSegment } from './ordered-digest.js';
import type { MultisetHash } from './row-hash.js';
import { isStitchedSegment, type StitchedSegment } from './stitched.js';

/**
 * How a group's rows are hashed. `ordered-columns-v1` (see ordered-digest.ts): a SHA-256 per column
 * over the rows in order, one digest per output — for rewrites that keep row order, where it is
 * cheaper and stricter (it also sees rows moved). `multiset-v1` (see row-hash.ts): the sum of row
 * hashes — for rewrites that reorder rows (sorted), where only the multiset is kept.
 */
export const FINGERPRINT_KINDS = ['ordered-columns-v1', 'multiset-v1'] as const;
export type FingerprintKind = (typeof FINGERPRINT_KINDS)[number];

/** What the rewrite promises about a group's rows; verify recomputes it from the outputs alone. */
export type GroupFingerprint = MultisetFingerprint | OrderedFingerprint;

interface FingerprintCommon {
  readonly rows: number;
  /**
   * SHA-256 prefix over the sorted distinct output schemas, each the exact schema signature of
   * the footer plus the file's key-value metadata (see `schemaKeyOf`).
   */
  readonly schemaFingerprint: string;
  /** Top-level null count per column name, summed over the group. */
  readonly nullCounts: Readonly<Record<string, number>>;
  /** What the rewrite set rather than copied: absent when nothing (see {@link DerivedRecord}). */
  readonly derived?: DerivedRecord;
}

/**
 * What a rewrite wrote that is not its inputs' (`RewriteOptions.derivedColumns`, `outputFooterEntries`), recorded
 * so verify can tell it from a difference: derived columns are left out of the row digests and null counts on
 * both sides and each output value is checked against its rule; the owned footer keys are left out of the schema
 * identity on both sides. Absent, every column and entry is compared.
 */
export interface DerivedRecord {
  readonly columns: readonly { readonly column: string; readonly value: 'output-file-name' }[];
  readonly footerKeys: readonly string[];
}

export interface MultisetFingerprint extends FingerprintCommon {
  /** Absent in fingerprints recorded before kinds existed, which were all multiset hashes. */
  readonly kind?: 'multiset-v1';
  /** Sum mod 2^64 of every row's 64-bit hash, as 16 hex digits. */
  readonly hash: string;
}

export interface OrderedFingerprint extends FingerprintCommon {
  readonly kind: 'ordered-columns-v1';
  /** SHA-256 (hex) over the segments, in order. */
  readonly hash: string;
  /**
   * One per output, in output order: its rows and the digest of its rows, in order — or, for a stitched
   * output, the source row groups it copies (`stitched-v1`, proven from bytes by verify). `nullCounts`
   * cover the digest segments only: a stitched output's null counts are its sources', which the byte proof
   * covers along with every other value.
   */
  readonly segments: readonly FingerprintSegment[];
}

/**
 * A segment of an ordered fingerprint as recorded: a row digest (with `cuts` when the output was digested in parts,
 * see `joinSegments`), or a stitched output's sources.
 */
export type FingerprintSegment =
  | { readonly rows: number; readonly digest: string; readonly cuts?: readonly number[] }
  | StitchedSegment;

const rowsSchema = z.number().int().nonnegative();
/**
 * A recorded segment: strict objects, so that a segment of a kind this build does not know is refused
 * rather than read as a digest with an extra key dropped.
 */
const segmentSchema = z.union([
  z.strictObject({ rows: rowsSchema, digest: z.string() }),
  z.strictObject({ rows: rowsSchema, digest: z.string(), cuts: z.array(rowsSchema).min(2) }),
  z.strictObject({
    kind: z.literal('stitched-v1'),
    rows: rowsSchema,
    sources: z.array(
      z.strictObject({
        key: z.string(),
        etag: z.string(),
        rowGroup: z.number().int().nonnegative(),
        rows: rowsSchema,
      }),
    ),
  }),
]);

/**
 * A fingerprint as it arrives in a step's event (JSON through Step Functions). The kind and the ordered
 * segments must survive parsing: dropped, the fingerprint would read as another kind and fail
 * verification (never pass it). An unknown kind is refused here.
 */
export const groupFingerprintSchema = z.object({
  kind: z.enum(FINGERPRINT_KINDS).optional(),
  rows: z.number().int().nonnegative(),
  schemaFingerprint: z.string(),
  nullCounts: z.record(z.string(), z.number()),
  hash: z.string(),
  segments: z.array(segmentSchema).optional(),
  derived: z
    .strictObject({
      columns: z.array(z.strictObject({ column: z.string(), value: z.literal('output-file-name') })),
      footerKeys: z.array(z.string()),
    })
    .optional(),
});

/** The kind a recorded fingerprint says it is (a fingerprint without one predates kinds: a multiset hash). */
export function fingerprintKindOf(f: { readonly kind?: string }): string {
  return f.kind ?? 'multiset-v1';
}

/**
 * Canonical text of a footer's schema tree for exactness checks: per element, the name (not the
 * root's, which is writer-specific), repetition, child count, physical type, FIXED_LEN_BYTE_ARRAY
 * width, field id and the normalised logical type — where INTEGER(32, signed) on INT32 and
 * INTEGER(64, signed) on INT64 count as no annotation (they are the physical type's own meaning;
 * DuckDB writes them, parquet-rs does not). Decimal precision/scale, timestamp units and
 * isAdjustedToUTC, LIST/MAP structure and nullability all count.
 */
export function exactSchemaSignature(schema: readonly SchemaElement[]): unknown[] {
  return schema.map((e, i) => {
    let logical = normalizedLogicalType(e);
    if (
      logical?.type === 'INTEGER' &&
      logical.isSigned === true &&
      ((e.type === 'INT32' && logical.bitWidth === 32) || (e.type === 'INT64' && logical.bitWidth === 64))
    ) {
      logical = undefined;
    }
    return [
      i === 0 ? '' : e.name,
      i === 0 ? '' : (e.repetition_type ?? 'REQUIRED'),
      e.num_children ?? 0,
      e.type ?? '',
      e.type === 'FIXED_LEN_BYTE_ARRAY' ? (e.type_length ?? 0) : 0,
      e.field_id ?? null,
      logical === undefined ? null : logical,
    ];
  });
}

/**
 * One output schema's identity: the exact schema signature plus the key-value metadata (minus `ARROW:schema`, and
 * minus `ownedKeys`: entries a rewrite computes per output, see {@link DerivedRecord}).
 */
export function schemaKeyOf(
  meta: Pick<FileMetaData, 'schema' | 'key_value_metadata'>,
  ownedKeys: readonly string[] = [],
): string {
  const kv = (meta.key_value_metadata ?? [])
    .filter((k) => k.key !== 'ARROW:schema' && !ownedKeys.includes(k.key))
    .map((k) => [k.key, k.value ?? ''])
    .sort(([a], [b]) => ((a as string) < (b as string) ? -1 : (a as string) > (b as string) ? 1 : 0));
  const unique = kv.filter((entry, i) => i === 0 || JSON.stringify(entry) !== JSON.stringify(kv[i - 1]));
  return createHash('sha256')
    .update(JSON.stringify(['exact-schema/v1', exactSchemaSignature(meta.schema), unique]))
    .digest('hex');
}

/**
 * Which inputs may share outputs: the exact schema signature plus only the key-value entries files must agree on
 * (`keyValueGroupingOf`: Spark's calendar rebase, content entries such as bloom filters). Inputs of one run key
 * are written with the first one's key-value metadata, so their outputs' `schemaKeyOf` is that input's.
 */
export function runKeyOf(meta: Pick<FileMetaData, 'schema' | 'key_value_metadata'>): string {
  return createHash('sha256')
    .update(
      JSON.stringify([
        'run/v1',
        exactSchemaSignature(meta.schema),
        keyValueGroupingOf(keyValueRecord(meta.key_value_metadata ?? [])),
      ]),
    )
    .digest('hex');
}

/** Combines the distinct schema keys of a group into the fingerprint's `schemaFingerprint`. */
export function combineSchemaKeys(keys: Iterable<string>): string {
  const sorted = [...new Set(keys)].sort();
  return createHash('sha256').update(sorted.join('\n')).digest('hex').slice(0, 32);
}

export function toGroupFingerprint(acc: MultisetHash, schemaKeys: Iterable<string>): MultisetFingerprint {
  return {
    kind: 'multiset-v1',
    rows: acc.rows,
    schemaFingerprint: combineSchemaKeys(schemaKeys),
    nullCounts: acc.nullCountsRecord(),
    hash: acc.digest(),
  };
}

/**
 * The group fingerprint of ordered segments (one per output, in output order): row digests, and the
 * stitched outputs' source lists, which enter the hash as recorded (without stitched segments the hash is
 * what it was before they existed).
 */
export function toOrderedFingerprint(
  segments: readonly (OrderedSegment | StitchedSegment)[],
  schemaKeys: Iterable<string>,
): OrderedFingerprint {
  const nullCounts = new Map<string, number>();
  for (const s of segments) {
    if (isStitchedSegment(s)) continue;
    for (const [k, v] of Object.entries(s.nullCounts)) nullCounts.set(k, (nullCounts.get(k) ?? 0) + v);
  }
  const parts = segments.map(
    (s): FingerprintSegment =>
      isStitchedSegment(s)
        ? {
            kind: s.kind,
            rows: s.rows,
            sources: s.sources.map((r) => ({ key: r.key, etag: r.etag, rowGroup: r.rowGroup, rows: r.rows })),
          }
        : { rows: s.rows, digest: s.digest, ...(s.cuts !== undefined && { cuts: [...s.cuts] }) },
  );
  return {
    kind: 'ordered-columns-v1',
    rows: segments.reduce((n, s) => n + s.rows, 0),
    schemaFingerprint: combineSchemaKeys(schemaKeys),
    nullCounts: Object.fromEntries(
      [...nullCounts.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    ),
    hash: createHash('sha256')
      .update(JSON.stringify(['ordered-columns-v1', parts]))
      .digest('hex'),
    segments: parts,
  };
}

export {
  type ArrowColumn,
  type ArrowSlots,
  columnsOfBatch,
  joinSegments,
  OrderedDigest,
  type OrderedSegment,
  OrderedSegments,
} from './ordered-digest.js';
export { MultisetHash } from './row-hash.js';
export {
  isStitchedSegment,
  SEGMENT_KINDS,
  type StitchedSegment,
  type StitchedSourceRef,
} from './stitched.js';
