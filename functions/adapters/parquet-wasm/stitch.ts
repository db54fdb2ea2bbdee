// Row-group stitching in the rewrite: which inputs are copied row group by row group instead of re-encoded,
// how they are cut into outputs, and the writing of those outputs — never decoded: each output's fingerprint
// segment lists the source row groups it copies, which verify proves from the objects' bytes.

import pLimit from 'p-limit';
import { CorruptInputError, VerificationError } from '../../core/errors.js';
import type { StitchedSegment } from '../../core/fingerprint/stitched.js';
import { dictionaryPageRanges } from '../../core/parquet/decoded-size.js';
import { parseFooterWithMetadata } from '../../core/parquet/footer.js';
import {
  auxSpanOf,
  type FileRegion,
  firstDataPage,
  metadataBytesOf,
  pageTypeOf,
  StitchAssembler,
  type StitchSource,
  stitchKeyOf,
  stitchRefusal,
  stitchSourceOf,
} from '../../core/parquet/stitch.js';
import type { ComposedPiece, ObjectStore } from '../../ports/object-store.js';
import type { InputFile, RewriteGroup, RewriteIo } from '../../ports/parquet-engine.js';
import {
  type CheckedInput,
  checkDecodedSize,
  type PreflightResult,
  rowGroupDecodeBudget,
} from './preflight.js';
import type { InputReader } from './read.js';
import type { OutputSequence } from './roll-over.js';
import type { RewriteSettings } from './settings.js';

/** One input to copy, with its footer as read at planning. */
export interface StitchInput {
  readonly input: CheckedInput;
  readonly source: StitchSource;
  readonly metadata: Uint8Array;
}

/** One stitched output: whole inputs, consecutive in the group's order, sharing one stitch key. */
export interface StitchOutput {
  readonly inputs: readonly StitchInput[];
  readonly rows: number;
}

export interface StitchPlan {
  readonly outputs: readonly StitchOutput[];
  /** The stitched inputs, in the order they are read (output by output). */
  readonly inputs: readonly CheckedInput[];
  /** Why each candidate (an input whose row groups are all large) is re-encoded instead, by key. */
  readonly refused: ReadonlyMap<string, string>;
  /** Bytes read for the candidates' footers. */
  readonly bytesRead: number;
}

/** Bytes read for a page header: its statistics may hold long min/max values. */
const PAGE_HEADER_PROBE = 16 * 1024;

const NOTHING: StitchPlan = { outputs: [], inputs: [], refused: new Map(), bytesRead: 0 };

/**
 * The fields of an `InputFile` stitching knows. See `onlyKnownFields`. `footerDeferred` says only how the input was
 * planned (its footer read here rather than at planning): it changes nothing about the rows it gives.
 */
const KNOWN_FILE_FIELDS = new Set(['key', 'size', 'etag', 'rows', 'footerDeferred']);

/**
 * Whether an input file carries nothing but what stitching knows. Anything more (per-input deleted row
 * positions, say) may change which rows the output must hold, and a copied row group holds all of its
 * rows: such an input is re-encoded. A safe default for fields added later, not a guess at their meaning.
 */
function onlyKnownFields(file: InputFile): boolean {
  return Object.keys(file).every((k) => KNOWN_FILE_FIELDS.has(k));
}

/** The FileMetaData bytes of `key`, from the end of the object (one ranged GET, two for a large footer). */
async function footerBytes(store: ObjectStore, file: InputFile): Promise<Uint8Array> {
  const first = Math.min(file.size, 64 * 1024);
  let tail = await store.getRange(file.key, file.size - first, file.size - 1);
  const length = new DataView(tail.buffer, tail.byteOffset, tail.byteLength).getUint32(tail.length - 8, true);
  if (length + 8 > tail.length && length + 12 <= file.size) {
    tail = await store.getRange(file.key, file.size - 8 - length, file.size - 1);
  }
  return metadataBytesOf(file.key, tail).slice();
}

/**
 * The decoded-size check pre-flight left pending for a stitch candidate (a large file with a dictionary the footer
 * cannot clear), made from its dictionary pages alone (ranged GETs): a stitched input is never decoded by the
 * rewrite, but verify decodes every stitched output, so a dictionary bomb copied unchecked would stop verify (or
 * the function) instead of being quarantined. Returns the bytes read, or `undefined` when the pages are not where
 * a ranged read can bound them (past the row-group budget, or outside the file's data): the candidate is then
 * re-encoded, whose read checks the whole file before decoding it.
 * @throws UnsupportedInputError naming file, row group and column when a row group could decode past the budget.
 */
async function checkPendingDecodedSize(
  store: ObjectStore,
  input: CheckedInput,
  metadata: Uint8Array,
): Promise<number | undefined> {
  if (input.decodeCheckPending !== true) return 0;
  const { key, size } = input.file;
  const tail = new Uint8Array(metadata.length + 8);
  tail.set(metadata);
  new DataView(tail.buffer).setUint32(metadata.length, metadata.length, true);
  tail.set(PARQUET_MAGIC, metadata.length + 4);
  const { footer, metadata: meta } = parseFooterWithMetadata(key, size, tail);
  const budget = rowGroupDecodeBudget();
  const ranges = dictionaryPageRanges(meta, footer.columns, budget);
  const dataEnd = size - 8 - metadata.length;
  const total = ranges.reduce((n, r) => n + r.length, 0);
  if (total > budget || ranges.some((r) => r.offset < 4 || r.length <= 0 || r.offset + r.length > dataEnd))
    return undefined;
  const pages = new Map<number, Uint8Array>();
  for (const r of ranges) pages.set(r.offset, await store.getRange(key, r.offset, r.offset + r.length - 1));
  return checkDecodedSize(key, meta, footer, pages) ? undefined : total;
}

const PARQUET_MAGIC = new TextEncoder().encode('PAR1');

/**
 * Decides which inputs are stitched and into which outputs. Candidates: every row group at or above the
 * thresholds (from the footers pre-flight read), no INT96 column nor any other physical form rewritten
 * (schema fidelity `logical`), rows kept in order (no sort), nothing
 * but known fields on the input. A candidate whose footer then shows another codec, an encoding the target
 * does not write, version-2 pages or unusable offsets is re-encoded (`refused` says why), and so is one whose
 * pending decoded-size check its dictionary pages cannot settle; one they prove a dictionary bomb is refused by name
 * (see `checkPendingDecodedSize`).
 *
 * Outputs: consecutive stitched inputs with one stitch key, balanced like the re-encoded outputs — the
 * fewest outputs of at most the target size (by input bytes; copied bytes do not shrink), inputs whole.
 */
export async function planStitching(
  store: ObjectStore,
  pre: PreflightResult,
  settings: RewriteSettings,
): Promise<StitchPlan> {
  const thresholds = settings.stitch;
  if (thresholds === undefined || settings.sort !== undefined) return NOTHING;
  const candidates = pre.inputs.filter(
    (i) =>
      i.int96Columns.length === 0 &&
      !i.reshaped &&
      onlyKnownFields(i.file) &&
      i.footer.rowGroups.every(
        (g) => g.rows >= thresholds.minRowGroupRows || g.compressedBytes >= thresholds.minRowGroupBytes,
      ),
  );
  if (candidates.length === 0) return NOTHING;
  const limit = pLimit(settings.maxRequestsInFlight);
  let bytesRead = 0;
  const refused = new Map<string, string>();
  const read = await Promise.all(
    candidates.map((input) =>
      limit(async () => {
        const metadata = await footerBytes(store, input.file);
        bytesRead += metadata.length + 8;
        const source = stitchSourceOf(input.file.key, metadata, input.file.size - 8 - metadata.length);
        const target = { codec: settings.codec, deltaEncoding: settings.deltaEncoding, ...thresholds };
        let refusal = stitchRefusal(source, target);
        const page = firstDataPage(source);
        if (refusal !== undefined && page !== undefined && stitchRefusal(source, target, 0) === undefined) {
          // Only the data page version is unknown (no encoding statistics, as DuckDB writes): read it.
          const header = await store.getRange(
            input.file.key,
            page,
            Math.min(page + PAGE_HEADER_PROBE, input.file.size) - 1,
          );
          bytesRead += header.length;
          refusal = stitchRefusal(source, target, pageTypeOf(header));
        }
        if (refusal === undefined) {
          const checked = await checkPendingDecodedSize(store, input, metadata);
          if (checked === undefined)
            refusal =
              'its decoded size cannot be bounded from its dictionary pages alone (checked when it is read whole)';
          else bytesRead += checked;
        }
        if (refusal !== undefined) refused.set(input.file.key, refusal);
        return { input, source, metadata };
      }),
    ),
  );
  const eligible = read.filter((c) => !refused.has(c.input.file.key));
  const outputs: StitchOutput[] = [];
  for (const run of byStitchKey(eligible)) outputs.push(...balanced(run, settings.targetFileSizeBytes));
  return { outputs, inputs: outputs.flatMap((o) => o.inputs.map((s) => s.input)), refused, bytesRead };
}

/** Maximal runs of consecutive inputs sharing a stitch key (and so a footer template). */
function byStitchKey(inputs: readonly StitchInput[]): StitchInput[][] {
  const runs: { key: string; inputs: StitchInput[] }[] = [];
  for (const s of inputs) {
    const key = `${s.input.runKey}/${stitchKeyOf(s.source)}`;
    const last = runs.at(-1);
    if (last?.key === key) last.inputs.push(s);
    else runs.push({ key, inputs: [s] });
  }
  return runs.map((r) => r.inputs);
}

/** Cuts a run into ceil(bytes / target) outputs of near-equal bytes, inputs whole and in order. */
function balanced(run: readonly StitchInput[], target: number): StitchOutput[] {
  const total = run.reduce((n, s) => n + s.input.file.size, 0);
  const parts = Math.max(1, Math.min(run.length, Math.ceil(total / target)));
  const outputs: StitchInput[][] = Array.from({ length: parts }, () => []);
  let before = 0;
  for (const s of run) {
    const middle = before + s.input.file.size / 2;
    const part = Math.min(parts - 1, Math.floor((middle * parts) / total));
    // Never back: a part may only stay or move on, so inputs stay in order.
    const at = Math.max(
      part,
      outputs.findLastIndex((o) => o.length > 0),
    );
    outputs[at]?.push(s);
    before += s.input.file.size;
  }
  return outputs
    .filter((o) => o.length > 0)
    .map((inputs) => ({ inputs, rows: inputs.reduce((n, s) => n + s.source.rows, 0) }));
}

/** The group and pre-flight the re-encoding stages see: without the stitched inputs, and without the planner's output count (it was for all of them). */
export function withoutStitched(
  group: RewriteGroup,
  pre: PreflightResult,
  plan: StitchPlan,
): { group: RewriteGroup; pre: PreflightResult } {
  if (plan.outputs.length === 0) return { group, pre };
  const stitched = new Set(plan.inputs.map((i) => i.file.key));
  const { expectedOutputFiles: _, ...rest } = group;
  return {
    group: rest,
    pre: { ...pre, inputs: pre.inputs.filter((i) => !stitched.has(i.file.key)) },
  };
}

/**
 * Whether the stitched outputs are composed by the store from ranges of the inputs (`putComposed`: on S3,
 * UploadPartCopy) instead of downloaded and re-uploaded. Only when the target store has the method and the
 * inputs are in it: the ranges name keys of the store that writes, and the engine knows they do only when
 * the source and target are one store object — as compaction passes them (core/workflow/compact.ts). Two
 * store objects, even of one bucket, keep the bytes path: a false "no" costs only the copy's savings, a
 * false "yes" would copy the wrong objects. The stitched inputs are then not fetched by the reader.
 */
export function composesInStore(io: RewriteIo): boolean {
  return io.source === io.target && io.target.putComposed !== undefined;
}

/**
 * Writes the stitched outputs, after the re-encoded ones, and returns the bytes it read for them outside
 * `reader`. Inputs are not decoded: each output's fingerprint is
 * a `stitched-v1` segment — the source row groups it copies (key, planned ETag, index, rows), in output order —
 * and verify proves it from the output and the sources as stored (byte ranges and column metadata equal, offsets
 * moved consistently), then decodes the output. Decoding the inputs here only to hash rows whose pages are
 * copied unchanged cost about what DuckDB's whole COPY of them does.
 *
 * The bytes copied are those the plan (and the segment) describe. Downloaded through `reader`, each input's
 * footer is checked against the one planned from. Composed in the store (`composesInStore`), the pages are
 * never downloaded: every range is copied or read on the condition that its object still has the planned ETag
 * (If-Match), which is what the footer comparison proves for downloaded bytes, and more (it covers the pages
 * too); the page indexes and bloom filters, which the footer rebuild needs, are read in one range that ends
 * with the footer, which is compared with the planned one as on the bytes path.
 */
export async function writeStitched(
  plan: StitchPlan,
  reader: InputReader,
  outputs: OutputSequence,
  io: RewriteIo,
): Promise<{ bytesRead: number }> {
  let bytesRead = 0;
  const composed = composesInStore(io);
  for (const planned of plan.outputs) {
    const [key] = outputs.nextKeys(1) as [string];
    outputs.started.push(key);
    const assembler = new StitchAssembler();
    let written: { etag: string; size: number };
    if (composed && io.target.putComposed !== undefined) {
      const pieces: ComposedPiece[] = assembler.start().map((bytes) => ({ kind: 'bytes', bytes }));
      for (const s of planned.inputs) {
        const aux = await auxAndFooter(io.source, s);
        bytesRead += aux.bytes.length;
        pieces.push(...assembler.appendRanges(s.source, s.input.file, aux));
      }
      pieces.push(...assembler.finish().map((bytes): ComposedPiece => ({ kind: 'bytes', bytes })));
      written = await io.target.putComposed(key, pieces, { contentType: PARQUET_CONTENT_TYPE });
    } else {
      async function* body(): AsyncGenerator<Uint8Array> {
        yield* assembler.start();
        for (const s of planned.inputs) {
          yield* reader.undecoded(s.input, (file) => {
            checkFooter(s, metadataBytesOf(s.input.file.key, file));
            return assembler.append(file, s.source);
          });
        }
        yield* assembler.finish();
      }
      written = await io.target.putStream(key, body(), { contentType: PARQUET_CONTENT_TYPE });
    }
    const { etag, size } = written;
    if (size !== assembler.bytes || assembler.rows !== planned.rows) {
      throw new VerificationError(`stitched output ${key} holds ${assembler.rows} rows in ${size} bytes`, {
        key,
        rowsPlanned: planned.rows,
        rowsCopied: assembler.rows,
        bytesProduced: assembler.bytes,
        bytesStored: size,
      });
    }
    reader.fingerprint.addStitched(stitchedSegmentOf(planned));
    outputs.add([{ key, size, etag, rows: assembler.rows }]);
  }
  return { bytesRead };
}

const PARQUET_CONTENT_TYPE = 'application/vnd.apache.parquet';

/** Refuses an input whose footer is not the one planned from: its bytes are not those the plan describes. */
function checkFooter(s: StitchInput, metadata: Uint8Array): void {
  if (!sameBytes(metadata, s.metadata)) {
    throw new CorruptInputError(s.input.file.key, 'its footer changed since it was planned for stitching');
  }
}

/**
 * An input's page indexes and bloom filters (`auxSpanOf`) through its footer, in one ranged read, the footer
 * checked against the planned one: the bytes the footer rebuild takes from the input besides its pages.
 */
async function auxAndFooter(store: ObjectStore, s: StitchInput): Promise<FileRegion> {
  const { size } = s.input.file;
  const dataEnd = size - 8 - s.metadata.length;
  const span = auxSpanOf(s.source, dataEnd);
  const offset = Math.min(span?.offset ?? dataEnd, dataEnd);
  const bytes = await store.getRange(s.input.file.key, offset, size - 1);
  const tail = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  // The range holds the footer but not the whole file: its length field must be the planned footer's too.
  const length = bytes.length >= 8 ? tail.getUint32(bytes.length - 8, true) : -1;
  checkFooter(s, length === s.metadata.length ? bytes.subarray(dataEnd - offset, bytes.length - 8) : bytes);
  return { offset, bytes };
}

/** What a stitched output promises: every row group of its inputs, in order, as the plan saw them. */
function stitchedSegmentOf(planned: StitchOutput): StitchedSegment {
  return {
    kind: 'stitched-v1',
    rows: planned.rows,
    sources: planned.inputs.flatMap((s) =>
      s.source.rowGroups.map((g, rowGroup) => ({
        key: s.input.file.key,
        etag: s.input.file.etag,
        rowGroup,
        rows: g.rows,
      })),
    ),
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
