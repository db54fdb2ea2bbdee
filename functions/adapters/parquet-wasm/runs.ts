// The schema runs of a group and how each is written: consecutive inputs of one output schema, their
// output count (rows balanced, never a tiny last file) and writer settings tuned from a sample of the run.

import { type Table, Type, tableFromIPC, tableToIPC } from 'apache-arrow';
import { InvalidInputError, MemoryBudgetExceededError } from '../../core/errors.js';
import { combineForDecode } from '../../core/parquet/combine.js';
import { columnsWithoutStatistics, type SampledColumn } from '../../core/parquet/statistics-policy.js';
import type { ColumnProjection } from '../../core/projection.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { RewriteGroup } from '../../ports/parquet-engine.js';
import { plainTypesOf } from './conform.js';
import type { CheckedInput, PreflightResult } from './preflight.js';
import { uuidColumnsOf } from './projection.js';
import type { RewriteSettings } from './settings.js';
import { type ColumnEncoding, columnPlan, pw, type WriterSettings, writerProperties } from './wasm.js';

/**
 * Consecutive inputs sharing one output schema (by `runKey`: key-value entries that are only a writer's stamp may
 * differ): they may share outputs, written with the first input's key-value metadata; runs never do.
 */
export interface Run {
  readonly inputs: readonly CheckedInput[];
  /** Rows the run keeps (its inputs' minus their deleted rows). */
  readonly rows: number;
  readonly bytes: number;
  /** Rows of each output of the run, in order (see `balancedQuotas`). */
  readonly quotas: readonly number[];
  /** Writer settings of every output of the run: its inputs' metadata and the sampled column plan. */
  readonly settings: WriterSettings;
}

/** What a sample of a run's first input says about writing the run. */
interface Sample {
  readonly dictionary: Record<string, boolean>;
  readonly encodings: Record<string, ColumnEncoding>;
  /** Columns the `auto` statistics policy writes without statistics (empty under `all`). */
  readonly noStatistics: readonly string[];
  /** Encoded output bytes per row, when the sample was large enough to measure it. */
  readonly bytesPerRow?: number;
  /** Whether the decisions come from a sample of enough rows (else they are the writer's defaults). */
  readonly tuned?: true;
}

/**
 * Splits `rows` into `parts` near-equal quotas (the first ones one row larger), so the last
 * output is never a tiny remainder.
 */
export function balancedQuotas(rows: number, parts: number): number[] {
  const n = Math.max(1, Math.min(parts, rows));
  const base = Math.floor(rows / n);
  const extra = rows - base * n;
  return Array.from({ length: n }, (_, i) => base + (i < extra ? 1 : 0));
}

/**
 * The group's runs, each with its quotas and writer settings. Refuses a sort whose runs would not fit
 * the budget decoded (from the footers) before anything is read; samples the runs one after another.
 */
export async function planRuns(
  source: ObjectStore,
  group: RewriteGroup,
  pre: PreflightResult,
  settings: RewriteSettings,
): Promise<Run[]> {
  const runs = groupIntoRuns(pre.inputs);
  const exact = settings.outputRows;
  if (exact !== undefined) {
    const asked = exact.reduce((n, r) => n + r, 0);
    if (runs.length !== 1 || runs[0]?.rows !== asked) {
      throw new InvalidInputError(
        `Group ${group.groupId} cannot be cut into outputs of ${exact.join(', ')} rows: it makes ${runs.length} schema run(s) of ${runs.map((r) => r.rows).join(', ')} rows; nothing was written`,
      );
    }
  }
  if (settings.sort !== undefined) {
    for (const run of runs) checkSortBudget(group.groupId, run, settings.sort.memoryBudgetBytes);
  }
  // The sample's bytes per row only size outputs the planner did not count (see `partsOf`).
  const sizesOutputs = exact === undefined && !(runs.length === 1 && group.expectedOutputFiles !== undefined);
  const samples: Sample[] = [];
  for (const run of runs) samples.push(await tunedSample(source, pre, run, settings, sizesOutputs));
  return runs.map((run, i) => {
    const sample = samples[i] as Sample;
    const plainTypes = plainTypesOf(run.inputs.map((input) => input.footer.keyValueMetadata));
    return {
      ...run,
      quotas: exact ?? balancedQuotas(run.rows, partsOf(run, runs.length, group, sample, settings)),
      settings: {
        codec: settings.codec,
        ...(settings.pageCompression === 'native' && { pageCompression: 'native' as const }),
        rowGroupRows: rowsPerRowGroup(run, settings),
        keyValueMetadata: run.inputs[0]?.footer.keyValueMetadata ?? {},
        dictionary: sample.dictionary,
        encodings: sample.encodings,
        ...(sample.noStatistics.length > 0 && { noStatistics: sample.noStatistics }),
        // One output schema per run: its inputs share the stored form of their decimals (see preflight.ts).
        ...(run.inputs[0]?.decimalForms !== undefined && { decimalForms: run.inputs[0].decimalForms }),
        // A projection's uuid columns get their annotation in the footer (one projection target per run).
        ...uuidSetting(run.inputs[0]?.file.projection),
        ...(plainTypes !== undefined && { plainTypes }),
      },
    };
  });
}

/** The `uuidColumns` writer setting of a run whose inputs are projected by `projection` (none when it writes none). */
function uuidSetting(projection: ColumnProjection | undefined): Pick<WriterSettings, 'uuidColumns'> {
  const uuids = projection === undefined ? [] : uuidColumnsOf(projection);
  return uuids.length > 0 ? { uuidColumns: uuids } : {};
}

type PlainRun = Omit<Run, 'quotas' | 'settings'>;

/**
 * Consecutive inputs of one output schema (`runKey`), counted in the rows they keep. An input whose every row is
 * deleted is in no run: it contributes no rows, and its schema must not split a run or need an output.
 */
function groupIntoRuns(inputs: readonly CheckedInput[]): PlainRun[] {
  const runs: { inputs: CheckedInput[]; rows: number; bytes: number }[] = [];
  for (const input of inputs) {
    if (input.liveRows === 0) continue;
    const last = runs.at(-1);
    if (last !== undefined && last.inputs[0]?.runKey === input.runKey) {
      last.inputs.push(input);
      last.rows += input.liveRows;
      last.bytes += input.file.size;
    } else runs.push({ inputs: [input], rows: input.liveRows, bytes: input.file.size });
  }
  return runs;
}

/** Uncompressed bytes of a run's inputs, from their footers: what the run holds decoded. */
function decodedBytes(run: PlainRun): number {
  return run.inputs.reduce((n, i) => n + i.footer.rowGroups.reduce((m, g) => m + g.totalByteSize, 0), 0);
}

function checkSortBudget(groupId: string, run: PlainRun, memoryBudgetBytes: number): void {
  const decoded = decodedBytes(run);
  if (decoded > memoryBudgetBytes) {
    throw new MemoryBudgetExceededError(
      `Sorting group ${groupId} needs about ${decoded} bytes decoded (from the input footers) but its memory budget is ${memoryBudgetBytes} bytes. Nothing was written; raise sort.memoryBudgetBytes, plan smaller groups, or compact without sorting.`,
    );
  }
}

/**
 * The run's writer tuning: from the caller's memo when an earlier run of the same output schema and settings was
 * sampled (and measured its bytes per row, when this run's output count needs them), else sampled and memoised.
 */
async function tunedSample(
  source: ObjectStore,
  pre: PreflightResult,
  run: PlainRun,
  settings: RewriteSettings,
  sizesOutputs: boolean,
): Promise<Sample> {
  const memo = settings.tuningMemo;
  const first = run.inputs[0] as CheckedInput;
  // Everything the sample's decisions depend on besides the data: the output schema and the writer settings.
  const key = JSON.stringify([
    first.runKey,
    settings.codec,
    settings.deltaEncoding,
    settings.statistics,
    settings.rowGroupRows,
  ]);
  const known = memo?.get(key) as Sample | undefined;
  if (known !== undefined && (!sizesOutputs || known.bytesPerRow !== undefined)) return known;
  const sample = await sampleRun(source, pre, run, settings, sizesOutputs);
  // Defaults (a sample too small, or one that failed to decode) are not a tuning: the next run samples for itself.
  if (sample.tuned === true) memo?.set(key, sample);
  return sample;
}

/**
 * Per-run writer tuning, from the run's first input (decoded once; no extra GET when it is in the
 * pre-flight cache; its first inputs together where they are small, see `sampleBytes`): dictionary decisions (ZSTD only) and, with `deltaEncoding`, DELTA_BINARY_PACKED
 * columns, per column by trial encoding (see `columnPlan`), and — when `sizesOutputs` — the output bytes per row,
 * measured by encoding the sample with the real settings, so the number of outputs is right from the first one.
 */
async function sampleRun(
  source: ObjectStore,
  pre: PreflightResult,
  run: PlainRun,
  settings: RewriteSettings,
  sizesOutputs: boolean,
): Promise<Sample> {
  const first = run.inputs[0] as CheckedInput;
  // A projected run's inputs have other columns than its outputs (renamed, widened, added): their sample would tune
  // columns the outputs do not have, so the run keeps the writer's defaults.
  if (first.file.projection !== undefined) return { dictionary: {}, encodings: {}, noStatistics: [] };
  const { codec, deltaEncoding } = settings;
  const writer = { codec, rowGroupRows: settings.rowGroupRows };
  let dictionary: Record<string, boolean> = {};
  let encodings: Record<string, ColumnEncoding> = {};
  let noStatistics: string[] = [];
  let bytesPerRow: number | undefined;
  let tuned = false;
  try {
    const bytes = await sampleBytes(source, pre, run);
    const table = pw.readParquet(bytes, { batchSize: 65_536, limit: 65_536 });
    const batch = table.recordBatch(0);
    table.free();
    if (batch !== undefined && batch.numRows >= 1_000 && first.int96Columns.length === 0) {
      const rows = batch.numRows;
      const js = tableFromIPC(batch.intoIPCStream());
      if (settings.statistics.mode === 'auto')
        noStatistics = columnsWithoutStatistics(sampledColumns(js), settings.statistics.keep);
      // Snappy keeps the writer's default (dictionaries everywhere, except where a DELTA encoding
      // wins): its output grows a lot without them, and a one-file sample cannot see values that
      // repeat only across files, which dictionaries catch within a row group.
      if (codec === 'zstd' || deltaEncoding) {
        const plan = columnPlan(js, writer, { delta: deltaEncoding });
        encodings = plan.encodings;
        dictionary =
          codec === 'zstd'
            ? plan.dictionary
            : Object.fromEntries(Object.keys(encodings).map((c) => [c, false]));
      }
      // A whole encode of the sample: only where the output count is estimated from it.
      if (sizesOutputs) {
        const trial = pw.writeParquet(
          pw.Table.fromIPCStream(tableToIPC(js, 'stream')),
          writerProperties({ ...writer, keyValueMetadata: {}, dictionary, encodings, noStatistics }),
        );
        const footer = new DataView(trial.buffer, trial.byteOffset, trial.byteLength).getUint32(
          trial.length - 8,
          true,
        );
        bytesPerRow = (trial.length - footer - 12) / rows;
      }
      tuned = true;
    } else batch?.free();
  } catch {
    // The input is checked properly when its turn comes; a failed sample keeps the defaults.
  }
  return {
    dictionary,
    encodings,
    noStatistics,
    ...(bytesPerRow !== undefined && { bytesPerRow }),
    ...(tuned && { tuned: true as const }),
  };
}

/** Types whose statistics the policy may drop: Parquet BYTE_ARRAY strings and binaries. */
const STRING_LIKE = new Set([Type.Utf8, Type.LargeUtf8, Type.Binary, Type.LargeBinary]);

/**
 * The sample's top-level columns as the statistics rule reads them: strings and binaries with their values
 * (binaries as latin1, one code unit per byte, so their order is Parquet's byte order), others by name only.
 */
function sampledColumns(sample: Table): SampledColumn[] {
  return sample.schema.fields.map((field) => {
    if (!STRING_LIKE.has(field.type.typeId)) return { name: field.name, kind: 'other', values: [] };
    const vector = sample.getChild(field.name);
    const values: (string | null)[] = [];
    if (vector !== null)
      for (const v of vector) {
        if (v === null || v === undefined) values.push(null);
        else values.push(typeof v === 'string' ? v : Buffer.from(v as Uint8Array).toString('latin1'));
      }
    return { name: field.name, kind: 'string', values };
  });
}

/** Rows a run's sample is made of at least, where its first inputs are small (see `sampleBytes`). */
const SAMPLE_ROWS = 16_384;
/** At most this many inputs, and bytes, make a sample. */
const SAMPLE_INPUTS = 256;
const SAMPLE_BYTES = 4 * 1024 * 1024;

/**
 * The bytes a run is sampled from: its first input, or — where that holds fewer than `SAMPLE_ROWS` rows, as
 * the tiny files of streaming writers do — its first inputs combined into one file (`combineForDecode`), so
 * the writer is tuned from enough rows: a sample under 1,000 rows tuned nothing, and tiny files were encoded
 * with the defaults (on the bench's set C, ~24 % slower and ~14 % larger than tuned). Inputs come from the
 * pre-flight cache where it holds them; the combiner refusing (footers that differ) keeps the first input alone.
 */
async function sampleBytes(source: ObjectStore, pre: PreflightResult, run: PlainRun): Promise<Uint8Array> {
  const bytesOf = async (input: CheckedInput) =>
    pre.cache.get(input.file.key) ?? (await source.get(input.file.key));
  const first = run.inputs[0] as CheckedInput;
  const picked: CheckedInput[] = [];
  let rows = 0;
  let size = 0;
  for (const input of run.inputs) {
    if (rows >= SAMPLE_ROWS || picked.length >= SAMPLE_INPUTS || size + input.file.size > SAMPLE_BYTES) break;
    if (input.int96Columns.length > 0) break;
    picked.push(input);
    rows += input.footer.rows;
    size += input.file.size;
  }
  if (picked.length < 2) return bytesOf(first);
  const files = await Promise.all(
    picked.map(async (input) => ({ key: input.file.key, bytes: await bytesOf(input) })),
  );
  const combined = combineForDecode(files);
  return combined.refused === undefined ? combined.bytes : (files[0] as { bytes: Uint8Array }).bytes;
}

/**
 * Outputs for a run: the planner's count when given (single-schema groups), else the encoded
 * size estimated from the sample (or, without one, the input bytes) over the target size. With
 * several workers (and no planner count), the count is rounded up to a multiple of the workers
 * when every output still gets at least half the target: each worker encodes whole outputs, so
 * 3 outputs on 2 workers would leave one worker idle for a third of the time.
 */
function partsOf(
  run: PlainRun,
  runCount: number,
  group: RewriteGroup,
  sample: Sample,
  settings: RewriteSettings,
): number {
  if (runCount === 1 && group.expectedOutputFiles !== undefined) return group.expectedOutputFiles;
  const target = settings.targetFileSizeBytes;
  const estimate = sample.bytesPerRow === undefined ? run.bytes : run.rows * sample.bytesPerRow;
  const parts = Math.max(1, Math.ceil(estimate / target));
  if (settings.workers > 1 && settings.sort === undefined && parts > 1) {
    const balanced = Math.ceil(parts / settings.workers) * settings.workers;
    if (estimate / balanced >= target / 2) return balanced;
  }
  return parts;
}

/**
 * Rows per output row group: the configured rows, fewer for wide rows so a row group stays within
 * `rowGroupBytes` uncompressed (per-row size from the inputs' footers). The writer holds a whole row
 * group encoded in wasm memory until it is flushed, and parquet-wasm ignores its own byte limit when
 * streaming, so this is what bounds the writer's buffer.
 */
function rowsPerRowGroup(run: PlainRun, settings: RewriteSettings): number {
  const perRow = decodedBytes(run) / Math.max(1, run.rows);
  return Math.max(
    1,
    Math.min(settings.rowGroupRows, Math.floor(settings.rowGroupBytes / Math.max(1, perRow))),
  );
}
