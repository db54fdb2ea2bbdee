// The footer half of verify's proof that a stitched output is the source row groups its fingerprint segment
// lists: both footers compared field by field (offsets aside, which must all move by the chunk's one delta),
// and the byte ranges whose contents the engine must then compare (pages, page indexes, bloom filters).
//
// Footers are read with the schema-less Thrift codec (thrift-compact.ts), not hyparquet's parser: it keeps
// every field as written, unknown ones included, so "equal but for offsets" is over the whole footer — a
// parser that models only the fields it knows would compare those alone. The checks below are written
// independently of the assembler (core/parquet/stitch.ts): they re-derive what each offset must be from the
// two footers, never from the code that moved them.

import type { StitchedSegment } from '../fingerprint/stitched.js';
import { keyValueGroupingOf, thriftKeyValues } from '../parquet/key-value.js';
import {
  decodeStruct,
  type ThriftList,
  type ThriftStruct,
  type ThriftValue,
} from '../parquet/thrift-compact.js';

/** Bytes `[offset, offset + length)` of an object. */
export interface Range {
  readonly offset: number;
  readonly length: number;
}

/** A Parquet object's footer: its FileMetaData bytes, and where its data ends (where the footer starts). */
export interface ObjectFooter {
  readonly key: string;
  readonly metadata: Uint8Array;
  readonly dataEnd: number;
}

/** Contents the engine must compare: equal bytes, equal offset indexes up to `delta`, equal bloom filters. */
export type RangeCheck =
  | {
      readonly kind: 'bytes';
      readonly what: string;
      readonly output: Range;
      readonly source: { readonly key: string; readonly range: Range };
    }
  | {
      readonly kind: 'offset-index';
      readonly what: string;
      readonly output: Range;
      readonly source: { readonly key: string; readonly range: Range };
      /** How far the chunk's pages moved: every page location must have moved by exactly this much. */
      readonly delta: number;
    }
  | {
      /** Bloom filters whose footers give no length: the length is read from each side's header. */
      readonly kind: 'bloom';
      readonly what: string;
      readonly output: number;
      readonly source: { readonly key: string; readonly offset: number };
    };

export interface StitchedFooterProof {
  /** Differences found in the footers (empty when they agree). */
  readonly problems: readonly string[];
  /** What the engine must still compare by contents. */
  readonly checks: readonly RangeCheck[];
}

/** Field ids of parquet.thrift. */
const FMD = { schema: 2, numRows: 3, rowGroups: 4, kv: 5, createdBy: 6, columnOrders: 7 };
const RG = { columns: 1, fileOffset: 5, ordinal: 7 };
const CC = { fileOffset: 2, metaData: 3, oiOffset: 4, oiLength: 5, ciOffset: 6, ciLength: 7 };
const CMD = {
  compressed: 7,
  dataPage: 9,
  indexPage: 10,
  dictionaryPage: 11,
  bloomOffset: 14,
  bloomLength: 15,
};
const NUM_ROWS_RG = 3;

function fieldOf(s: ThriftStruct, id: number): ThriftValue | undefined {
  return s.fields.find((f) => f.id === id)?.value;
}

function numberOf(s: ThriftStruct, id: number): number | undefined {
  const v = fieldOf(s, id);
  return typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : undefined;
}

function structOf(s: ThriftStruct, id: number): ThriftStruct | undefined {
  const v = fieldOf(s, id);
  return typeof v === 'object' && v !== null && 'fields' in v ? v : undefined;
}

function structsOf(s: ThriftStruct, id: number): ThriftStruct[] {
  const v = fieldOf(s, id);
  return typeof v === 'object' && v !== null && 'items' in v ? (v.items as ThriftStruct[]) : [];
}

/** `s` without fields `ids` (a shallow copy: values are shared, never changed). */
function without(s: ThriftStruct, ids: readonly number[]): ThriftStruct {
  return { fields: s.fields.filter((f) => !ids.includes(f.id)) };
}

/** Structural equality of Thrift values: same fields in the same order, same wire types, same values. */
export function thriftEqual(a: ThriftValue | undefined, b: ThriftValue | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  if (typeof a !== 'object' || typeof b !== 'object') return false;
  if (a instanceof Uint8Array || b instanceof Uint8Array) {
    return a instanceof Uint8Array && b instanceof Uint8Array && Buffer.from(a).equals(Buffer.from(b));
  }
  if ('fields' in a || 'fields' in b) {
    if (!('fields' in a) || !('fields' in b) || a.fields.length !== b.fields.length) return false;
    return a.fields.every((f, i) => {
      const g = b.fields[i];
      const bool = (t: number) => (t === 1 || t === 2 ? 1 : t);
      return (
        g !== undefined && f.id === g.id && bool(f.type) === bool(g.type) && thriftEqual(f.value, g.value)
      );
    });
  }
  if ('items' in a || 'items' in b) {
    const [x, y] = [a as ThriftList, b as ThriftList];
    if (!('items' in a) || !('items' in b) || x.elementType !== y.elementType) return false;
    return x.items.length === y.items.length && x.items.every((v, i) => thriftEqual(v, y.items[i]));
  }
  const [x, y] = [
    a as { entries: [ThriftValue, ThriftValue][] },
    b as { entries: [ThriftValue, ThriftValue][] },
  ];
  return (
    x.entries.length === y.entries.length &&
    x.entries.every(([k, v], i) => thriftEqual(k, y.entries[i]?.[0]) && thriftEqual(v, y.entries[i]?.[1]))
  );
}

/** Where a column chunk's pages start (dictionary page, when one precedes the data pages) and how long they are. */
function pagesOf(md: ThriftStruct): Range | undefined {
  const data = numberOf(md, CMD.dataPage);
  const dict = numberOf(md, CMD.dictionaryPage);
  const length = numberOf(md, CMD.compressed);
  if (data === undefined || length === undefined) return undefined;
  const start = dict !== undefined && dict > 0 && dict < data ? dict : data;
  return { offset: start, length };
}

/** Decodes FileMetaData bytes, or says why not. */
function metaOf(f: ObjectFooter, problems: string[]): ThriftStruct | undefined {
  try {
    return decodeStruct(f.metadata).struct;
  } catch (err) {
    problems.push(`${f.key}: footer does not decode (${(err as Error).message})`);
    return undefined;
  }
}

/**
 * Compares a stitched output's footer with its sources' footers, row group by row group as `segment` lists
 * them, and says which byte ranges must then be compared by contents. What must hold:
 * - the output's FileMetaData is its first source's but for the row count (the sum of the listed rows) and
 *   the row groups; every other source agrees on schema, created_by and column orders, and on the key-value
 *   entries files must agree on (`keyValueGroupingOf`; writer stamps may differ);
 * - row group i is the i-th listed source row group: every field equal, but its `file_offset` (moved by its
 *   first chunk's delta) and `ordinal` (i);
 * - each column chunk is the source's, field for field, but for its offsets: the chunk's pages moved by one
 *   delta, and `file_offset`, `data_page_offset`, `dictionary_page_offset` and `index_page_offset` all moved
 *   by exactly it; column index, offset index and bloom filter may be anywhere in the output (their lengths
 *   equal), their contents are checked instead — bytes equal, the offset index's page locations moved by the
 *   same delta;
 * - every range lies in each file's data, before its footer.
 */
export function stitchedFooterProof(
  output: ObjectFooter,
  segment: StitchedSegment,
  sources: ReadonlyMap<string, ObjectFooter>,
): StitchedFooterProof {
  const problems: string[] = [];
  const checks: RangeCheck[] = [];
  const out = metaOf(output, problems);
  if (out === undefined) return { problems, checks };
  const decoded = new Map<string, ThriftStruct | undefined>();
  const sourceMeta = (key: string): ThriftStruct | undefined => {
    if (!decoded.has(key)) {
      const f = sources.get(key);
      decoded.set(key, f === undefined ? undefined : metaOf(f, problems));
    }
    return decoded.get(key);
  };
  const first = segment.sources[0];
  const template = first === undefined ? undefined : sourceMeta(first.key);
  if (template === undefined) {
    problems.push(`${output.key}: no readable source footer to compare with`);
    return { problems, checks };
  }
  if (
    !thriftEqual(without(out, [FMD.numRows, FMD.rowGroups]), without(template, [FMD.numRows, FMD.rowGroups]))
  ) {
    problems.push(
      `${output.key}: file metadata (schema, key-value metadata, created_by…) differs from ${first?.key}'s`,
    );
  }
  // Writer stamps in the key-value metadata may differ between sources (the output keeps its first source's);
  // what files must agree on (`keyValueGroupingOf`) may not.
  const shared = [FMD.schema, FMD.createdBy, FMD.columnOrders];
  const grouping = keyValueGroupingOf(thriftKeyValues(out));
  for (const key of new Set(segment.sources.map((s) => s.key))) {
    const meta = sourceMeta(key);
    if (
      meta !== undefined &&
      (!shared.every((id) => thriftEqual(fieldOf(meta, id), fieldOf(out, id))) ||
        keyValueGroupingOf(thriftKeyValues(meta)) !== grouping)
    ) {
      problems.push(`${output.key}: schema or key-value metadata differs from source ${key}'s`);
    }
  }
  const listedRows = segment.sources.reduce((n, s) => n + s.rows, 0);
  if (numberOf(out, FMD.numRows) !== listedRows) {
    problems.push(
      `${output.key}: footer says ${numberOf(out, FMD.numRows)} rows, its sources list ${listedRows}`,
    );
  }
  const groups = structsOf(out, FMD.rowGroups);
  if (groups.length !== segment.sources.length) {
    problems.push(`${output.key}: ${groups.length} row groups, its sources list ${segment.sources.length}`);
  }
  const inside = (r: Range, end: number) => r.offset >= 4 && r.length >= 0 && r.offset + r.length <= end;
  for (const [i, ref] of segment.sources.entries()) {
    const rg = groups[i];
    const meta = sourceMeta(ref.key);
    const src = meta === undefined ? undefined : structsOf(meta, FMD.rowGroups)[ref.rowGroup];
    const where = `${output.key} row group ${i} (${ref.key} row group ${ref.rowGroup})`;
    if (rg === undefined) continue;
    if (src === undefined) {
      problems.push(`${where}: no such source row group`);
      continue;
    }
    const srcFooter = sources.get(ref.key) as ObjectFooter;
    if (numberOf(src, NUM_ROWS_RG) !== ref.rows || numberOf(rg, NUM_ROWS_RG) !== ref.rows) {
      problems.push(
        `${where}: listed with ${ref.rows} rows, the source has ${numberOf(src, NUM_ROWS_RG)}, the output ${numberOf(rg, NUM_ROWS_RG)}`,
      );
    }
    if (
      !thriftEqual(
        without(rg, [RG.columns, RG.fileOffset, RG.ordinal]),
        without(src, [RG.columns, RG.fileOffset, RG.ordinal]),
      )
    ) {
      problems.push(`${where}: row group metadata differs`);
    }
    const ordinal = numberOf(rg, RG.ordinal);
    if (
      (fieldOf(src, RG.ordinal) === undefined) !== (ordinal === undefined) ||
      (ordinal !== undefined && ordinal !== i)
    ) {
      problems.push(`${where}: ordinal ${ordinal}, expected ${i}`);
    }
    const outChunks = structsOf(rg, RG.columns);
    const srcChunks = structsOf(src, RG.columns);
    if (outChunks.length !== srcChunks.length) {
      problems.push(`${where}: ${outChunks.length} column chunks, the source has ${srcChunks.length}`);
      continue;
    }
    let firstDelta: number | undefined;
    for (const [c, occ] of outChunks.entries()) {
      const scc = srcChunks[c] as ThriftStruct;
      const at = `${where} column ${c}`;
      const omd = structOf(occ, CC.metaData);
      const smd = structOf(scc, CC.metaData);
      const oPages = omd && pagesOf(omd);
      const sPages = smd && pagesOf(smd);
      if (omd === undefined || smd === undefined || oPages === undefined || sPages === undefined) {
        problems.push(`${at}: no column metadata with page offsets`);
        continue;
      }
      const delta = oPages.offset - sPages.offset;
      firstDelta ??= delta;
      if (!inside(oPages, output.dataEnd) || !inside(sPages, srcFooter.dataEnd)) {
        problems.push(`${at}: pages lie outside the file's data`);
        continue;
      }
      // Column metadata: the source's with its page offsets moved by delta; bloom filter placed anywhere.
      const moved = (s: ThriftStruct, ids: readonly number[], by: (v: bigint) => bigint): ThriftStruct => ({
        fields: s.fields.map((f) =>
          ids.includes(f.id) && (typeof f.value === 'bigint' || typeof f.value === 'number')
            ? { ...f, value: typeof f.value === 'bigint' ? by(f.value) : Number(by(BigInt(f.value))) }
            : f,
        ),
      });
      const d = BigInt(delta);
      const expectedMd = moved(smd, [CMD.dataPage, CMD.indexPage, CMD.dictionaryPage], (v) => v + d);
      if (!thriftEqual(without(omd, [CMD.bloomOffset]), without(expectedMd, [CMD.bloomOffset]))) {
        problems.push(
          `${at}: column metadata differs from the source's, or its page offsets did not all move by ${delta}`,
        );
      }
      // Column chunk: file_offset moved by the same delta (0, "unknown" to old writers, stays 0); indexes placed anywhere.
      const expectedCc = moved(scc, [CC.fileOffset], (v) => (v > 0n ? v + d : v));
      // The offset index is re-encoded (its page offsets moved), so its length may change; its contents are checked.
      const placed = [CC.metaData, CC.oiOffset, CC.oiLength, CC.ciOffset];
      if (!thriftEqual(without(occ, placed), without(expectedCc, placed))) {
        problems.push(
          `${at}: column chunk differs from the source's, or its file_offset did not move by ${delta}`,
        );
      }
      if ((fieldOf(occ, CC.oiOffset) === undefined) !== (fieldOf(scc, CC.oiOffset) === undefined)) {
        problems.push(`${at}: offset index present on one side only`);
      }
      if ((fieldOf(occ, CC.ciOffset) === undefined) !== (fieldOf(scc, CC.ciOffset) === undefined)) {
        problems.push(`${at}: column index present on one side only`);
      }
      if ((fieldOf(omd, CMD.bloomOffset) === undefined) !== (fieldOf(smd, CMD.bloomOffset) === undefined)) {
        problems.push(`${at}: bloom filter present on one side only`);
      }
      checks.push({
        kind: 'bytes',
        what: `${at} pages`,
        output: oPages,
        source: { key: ref.key, range: sPages },
      });
      const rangeOf = (cc: ThriftStruct, o: number, l: number): Range | undefined => {
        const offset = numberOf(cc, o);
        const length = numberOf(cc, l);
        return offset === undefined || length === undefined ? undefined : { offset, length };
      };
      const pairs = [
        ['column index', CC.ciOffset, CC.ciLength],
        ['offset index', CC.oiOffset, CC.oiLength],
      ] as const;
      for (const [what, o, l] of pairs) {
        const or = rangeOf(occ, o, l);
        const sr = rangeOf(scc, o, l);
        if (or === undefined || sr === undefined) continue;
        if (!inside(or, output.dataEnd) || !inside(sr, srcFooter.dataEnd)) {
          problems.push(`${at}: ${what} lies outside the file's data`);
        } else if (what === 'column index') {
          checks.push({
            kind: 'bytes',
            what: `${at} ${what}`,
            output: or,
            source: { key: ref.key, range: sr },
          });
        } else {
          checks.push({
            kind: 'offset-index',
            what: `${at} ${what}`,
            output: or,
            source: { key: ref.key, range: sr },
            delta,
          });
        }
      }
      const ob = numberOf(omd, CMD.bloomOffset);
      const sb = numberOf(smd, CMD.bloomOffset);
      if (ob !== undefined && sb !== undefined) {
        const length = numberOf(smd, CMD.bloomLength);
        if (length === undefined) {
          checks.push({
            kind: 'bloom',
            what: `${at} bloom filter`,
            output: ob,
            source: { key: ref.key, offset: sb },
          });
        } else if (
          !inside({ offset: ob, length }, output.dataEnd) ||
          !inside({ offset: sb, length }, srcFooter.dataEnd)
        ) {
          problems.push(`${at}: bloom filter lies outside the file's data`);
        } else {
          checks.push({
            kind: 'bytes',
            what: `${at} bloom filter`,
            output: { offset: ob, length },
            source: { key: ref.key, range: { offset: sb, length } },
          });
        }
      }
    }
    const fileOffset = numberOf(rg, RG.fileOffset);
    const srcFileOffset = numberOf(src, RG.fileOffset);
    if (
      (fileOffset === undefined) !== (srcFileOffset === undefined) ||
      (fileOffset !== undefined &&
        srcFileOffset !== undefined &&
        fileOffset !== srcFileOffset + (firstDelta ?? 0))
    ) {
      problems.push(
        `${where}: file_offset ${fileOffset} is not the source's ${srcFileOffset} moved by ${firstDelta}`,
      );
    }
  }
  return { problems, checks };
}

/**
 * Whether an output's offset index is the source's with every page location's offset moved by `delta` and
 * everything else (sizes, first row indexes, any other field) equal; undefined when it is, else why not.
 * The known gap of the decode-only check: a reader that goes by the offset index (parquet-rs) reads an output
 * whose offset index is right and whose data_page_offset is wrong, and the other way round for others.
 */
export function offsetIndexProblem(
  output: Uint8Array,
  source: Uint8Array,
  delta: number,
): string | undefined {
  let o: ThriftStruct;
  let s: ThriftStruct;
  try {
    o = decodeStruct(output).struct;
    s = decodeStruct(source).struct;
  } catch (err) {
    return `offset index does not decode (${(err as Error).message})`;
  }
  const d = BigInt(delta);
  const expected: ThriftStruct = {
    fields: s.fields.map((f) =>
      f.id !== 1 || typeof f.value !== 'object' || !('items' in f.value)
        ? f
        : {
            ...f,
            value: {
              elementType: f.value.elementType,
              items: (f.value.items as ThriftStruct[]).map((loc) => ({
                fields: loc.fields.map((g) =>
                  g.id === 1 && typeof g.value === 'bigint' ? { ...g, value: g.value + d } : g,
                ),
              })),
            },
          },
    ),
  };
  return thriftEqual(o, expected)
    ? undefined
    : `offset index is not the source's with its page offsets moved by ${delta}`;
}

/** A bloom filter's length from the bytes at its start: its header (Thrift) plus the bitset it announces. */
export function bloomFilterLength(bytes: Uint8Array): number {
  const { struct, end } = decodeStruct(bytes);
  return end + (numberOf(struct, 1) ?? 0);
}

/**
 * The whole-input rule, from the sources' footers: over a group's stitched segments, each source's row
 * groups are listed once each, 0…n−1 in order (a copied input is copied whole).
 */
export function sourceCoverageProblems(
  segments: readonly StitchedSegment[],
  rowGroupCounts: ReadonlyMap<string, number>,
): string[] {
  const listed = new Map<string, number[]>();
  for (const s of segments) {
    for (const ref of s.sources) listed.set(ref.key, [...(listed.get(ref.key) ?? []), ref.rowGroup]);
  }
  const problems: string[] = [];
  for (const [key, groups] of listed) {
    const n = rowGroupCounts.get(key);
    if (n === undefined) continue;
    if (groups.length !== n || groups.some((g, i) => g !== i)) {
      problems.push(
        `${key}: row groups ${groups.join(', ')} copied, the source has ${n} (each once, in order)`,
      );
    }
  }
  return problems;
}
