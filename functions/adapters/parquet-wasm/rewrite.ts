// Streaming rewrite of one planned file group: inputs in, a few large Parquet outputs out, rows kept
// in input order, schemas never mixed, memory bounded by the configured budgets — never by the group's size.

import { type Table, tableFromIPC, tableToIPC } from 'apache-arrow';
import { CorruptInputError, InvalidInputError, MemoryBudgetExceededError } from '../../core/errors.js';
import { MultisetHash, toGroupFingerprint } from '../../core/fingerprint/fingerprint.js';
import { assertParquetMagic } from '../../core/parquet/footer.js';
import {
  DEFAULT_CODEC,
  type RewriteGroup,
  type RewriteIo,
  type RewriteOptions,
  type RewriteResult,
  type WrittenOutput,
} from '../../ports/parquet-engine.js';
import { hashWasmBatch, wasmBatchToTable } from './batch-hash.js';
import { OrderedFetcher } from './fetch.js';
import { convertBatch, readInt96Micros } from './int96.js';
import { OutputWriter } from './output.js';
import { type OutputTask, type ParallelContext, runTasks } from './parallel.js';
import { type CheckedInput, preflight } from './preflight.js';
import { type BatchKeys, sortedSlices, sortKeysOf } from './sort.js';
import { columnPlan, decodeBatches, decodeError, pw, type WriterSettings, writerProperties } from './wasm.js';

const MiB = 1024 * 1024;

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

/** Consecutive inputs sharing one output schema: they may share outputs; runs never do. */
interface Run {
  readonly inputs: CheckedInput[];
  readonly rows: number;
  readonly bytes: number;
}

function runsOf(inputs: readonly CheckedInput[]): Run[] {
  const runs: { inputs: CheckedInput[]; rows: number; bytes: number }[] = [];
  for (const input of inputs) {
    const last = runs.at(-1);
    if (last !== undefined && last.inputs[0]?.schemaKey === input.schemaKey) {
      last.inputs.push(input);
      last.rows += input.footer.rows;
      last.bytes += input.file.size;
    } else runs.push({ inputs: [input], rows: input.footer.rows, bytes: input.file.size });
  }
  return runs;
}

function validate(group: RewriteGroup, options: RewriteOptions): void {
  const issues: string[] = [];
  if (group.files.length === 0) issues.push('the group has no files');
  const keys = new Set<string>();
  for (const f of group.files) {
    if (keys.has(f.key)) issues.push(`${f.key} appears twice`);
    keys.add(f.key);
    if (!Number.isSafeInteger(f.size) || f.size < 0) issues.push(`${f.key} has an invalid size ${f.size}`);
  }
  const positive = (name: string, v: number | undefined) => {
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0))
      issues.push(`${name} must be a positive integer, got ${v}`);
  };
  positive('expectedOutputFiles', group.expectedOutputFiles);
  positive('targetFileSizeBytes', options.targetFileSizeBytes);
  positive('rowGroupRows', options.rowGroupRows);
  positive('maxBytesInFlight', options.maxBytesInFlight);
  positive('maxRequestsInFlight', options.maxRequestsInFlight);
  positive('workers', options.workers);
  if (issues.length > 0) throw new InvalidInputError(`Invalid rewrite of group ${group.groupId}`, issues);
}

/**
 * Rewrites one group. Order of work: (1) pre-flight every footer and refuse bad inputs before
 * anything is written; (2) sample each schema run's first input (dictionary choice, encoded bytes
 * per row); (3) fetch inputs with bounded concurrency, decode each into batches, fingerprint every
 * batch, and stream batches into the current output; (4) roll over when the output's row quota is
 * reached or the schema changes.
 *
 * Roll-over and balancing: the rows of a run are known exactly from the footers, so instead of
 * filling outputs to the target and leaving a small remainder, the run is split into N outputs of
 * equal row counts (±1) — N is `expectedOutputFiles` when the planner gave it, else
 * ceil(rows × sampled encoded bytes per row / target), else ceil(input bytes / target). Outputs
 * therefore land near (and usually under) the target, never as a tiny last file.
 *
 * On any failure every output key written so far is deleted; inputs are only ever read.
 */
export async function rewriteGroup(
  io: RewriteIo,
  group: RewriteGroup,
  options: RewriteOptions,
): Promise<RewriteResult> {
  validate(group, options);
  const codec = options.codec ?? DEFAULT_CODEC;
  const target = options.targetFileSizeBytes ?? 128 * MiB;
  const maxRequestsInFlight = options.maxRequestsInFlight ?? 128;
  const maxBytesInFlight = options.maxBytesInFlight ?? 16 * MiB;
  const batchRows = options.batchRows ?? 65_536;
  const stallMs = options.stallTimeoutMs ?? 120_000;
  const workers = options.workers ?? 1;
  const rowGroupRows = options.rowGroupRows ?? 262_144;
  const rowGroupBytes = options.rowGroupBytes ?? 16 * MiB;
  const settings = { codec, rowGroupRows };

  const pre = await preflight(io.source, group.files, {
    maxRequestsInFlight,
    cacheBytes: Math.floor(maxBytesInFlight / 2),
    int96: options.int96 ?? 'refuse',
    settings,
    ...(options.signal !== undefined && { signal: options.signal }),
  });

  const runs = runsOf(pre.inputs);
  if (options.sort !== undefined) {
    for (const run of runs) {
      const decoded = run.inputs.reduce(
        (n, i) => n + i.footer.rowGroups.reduce((m, g) => m + g.totalByteSize, 0),
        0,
      );
      if (decoded > options.sort.memoryBudgetBytes) {
        throw new MemoryBudgetExceededError(
          `Sorting group ${group.groupId} needs about ${decoded} bytes decoded (from the input footers) but its memory budget is ${options.sort.memoryBudgetBytes} bytes. Nothing was written; raise sort.memoryBudgetBytes, plan smaller groups, or compact without sorting.`,
        );
      }
    }
  }
  /**
   * Per-run writer tuning, from the run's first input (decoded once; no extra GET when it is in the
   * pre-flight cache): dictionary decisions (ZSTD only) and, with `deltaEncoding`, DELTA_BINARY_PACKED
   * columns, per column by trial encoding (see `columnPlan`), and the output bytes per row, measured
   * by encoding the sample with the real settings, so the number of outputs is right from the first one.
   */
  const samples = new Map<
    Run,
    {
      dictionary: Record<string, boolean>;
      encodings: Record<string, 'DELTA_BINARY_PACKED'>;
      bytesPerRow?: number;
    }
  >();
  const sampleRun = async (run: Run): Promise<void> => {
    const first = run.inputs[0] as CheckedInput;
    let dictionary: Record<string, boolean> = {};
    let encodings: Record<string, 'DELTA_BINARY_PACKED'> = {};
    let bytesPerRow: number | undefined;
    try {
      const bytes = pre.cache.get(first.file.key) ?? (await io.source.get(first.file.key));
      const table = pw.readParquet(bytes, { batchSize: 65_536, limit: 65_536 });
      const batch = table.recordBatch(0);
      table.free();
      if (batch !== undefined && batch.numRows >= 1_000 && first.int96Columns.length === 0) {
        const rows = batch.numRows;
        const js = tableFromIPC(batch.intoIPCStream());
        // Snappy keeps the writer's default (dictionaries everywhere, except where a DELTA encoding
        // wins): its output grows a lot without them (ENGINE-NOTES: +42%), and a one-file sample
        // cannot see values that repeat only across files, which dictionaries catch within a row group.
        if (codec === 'zstd' || options.deltaEncoding === true) {
          const plan = columnPlan(js, settings, { delta: options.deltaEncoding === true });
          encodings = plan.encodings;
          dictionary =
            codec === 'zstd'
              ? plan.dictionary
              : Object.fromEntries(Object.keys(encodings).map((c) => [c, false]));
        }
        const trial = pw.writeParquet(
          pw.Table.fromIPCStream(tableToIPC(js, 'stream')),
          writerProperties({ ...settings, keyValueMetadata: {}, dictionary, encodings }),
        );
        const footer = new DataView(trial.buffer, trial.byteOffset, trial.byteLength).getUint32(
          trial.length - 8,
          true,
        );
        bytesPerRow = (trial.length - footer - 12) / rows;
      } else batch?.free();
    } catch {
      // The input is checked properly when its turn comes; a failed sample keeps the defaults.
    }
    samples.set(run, { dictionary, encodings, ...(bytesPerRow !== undefined && { bytesPerRow }) });
  };

  /**
   * Outputs for a run: the planner's count when given (single-schema groups), else the encoded
   * size estimated from the sample (or, without one, the input bytes) over the target size. With
   * several workers (and no planner count), the count is rounded up to a multiple of the workers
   * when every output still gets at least half the target: each worker encodes whole outputs, so
   * 3 outputs on 2 workers would leave one worker idle for a third of the time.
   */
  const partsOf = (run: Run): number => {
    if (runs.length === 1 && group.expectedOutputFiles !== undefined) return group.expectedOutputFiles;
    const bytesPerRow = samples.get(run)?.bytesPerRow;
    const estimate = bytesPerRow === undefined ? run.bytes : run.rows * bytesPerRow;
    const parts = Math.max(1, Math.ceil(estimate / target));
    if (workers > 1 && options.sort === undefined && parts > 1) {
      const balanced = Math.ceil(parts / workers) * workers;
      if (estimate / balanced >= target / 2) return balanced;
    }
    return parts;
  };

  for (const run of runs) await sampleRun(run);

  const fetcher = new OrderedFetcher(
    io.source,
    pre.inputs.map((i) => i.file),
    pre.cache,
    {
      maxRequestsInFlight,
      maxBytesInFlight,
      ...(options.signal !== undefined && { signal: options.signal }),
    },
  );
  const acc = new MultisetHash();
  const outputs: WrittenOutput[] = [];
  const startedKeys: string[] = [];
  let current: OutputWriter | undefined;

  const rowsPerRowGroup = (run: Run): number => {
    const uncompressed = run.inputs.reduce(
      (n, i) => n + i.footer.rowGroups.reduce((m, g) => m + g.totalByteSize, 0),
      0,
    );
    const perRow = uncompressed / Math.max(1, run.rows);
    return Math.max(1, Math.min(rowGroupRows, Math.floor(rowGroupBytes / Math.max(1, perRow))));
  };

  /** Writer settings of every output of `run`: its inputs' metadata and the sampled column plan. */
  const outputSettings = (run: Run): WriterSettings => ({
    ...settings,
    rowGroupRows: rowsPerRowGroup(run),
    keyValueMetadata: run.inputs[0]?.footer.keyValueMetadata ?? {},
    dictionary: samples.get(run)?.dictionary ?? {},
    encodings: samples.get(run)?.encodings ?? {},
  });

  const open = (run: Run): OutputWriter => {
    const key = options.outputKey(startedKeys.length);
    if (startedKeys.includes(key)) {
      throw new InvalidInputError(`outputKey(${startedKeys.length}) returned ${key}, which is already used`);
    }
    startedKeys.push(key);
    return new OutputWriter(io.target, key, outputSettings(run), stallMs);
  };

  const parallelContext: ParallelContext = {
    source: io.source,
    target: io.target,
    cache: pre.cache,
    workers,
    maxRequestsInFlight,
    maxBytesInFlight,
    batchRows,
    stallMs,
    started: startedKeys,
    ...(options.signal !== undefined && { signal: options.signal }),
  };

  /** One task per output of the run: its row range and the inputs that overlap it. */
  const tasksOf = (run: Run, quotas: readonly number[]): OutputTask[] => {
    const starts: number[] = [];
    let at = 0;
    for (const input of run.inputs) {
      starts.push(at);
      at += input.footer.rows;
    }
    const taskSettings = outputSettings(run);
    const base = startedKeys.length;
    let from = 0;
    return quotas.map((quota, j) => {
      const to = from + quota;
      const picked = run.inputs
        .map((input, i) => ({ input, start: starts[i] as number }))
        .filter(({ input, start }) => start < to && start + input.footer.rows > from);
      const key = options.outputKey(base + j);
      const task: OutputTask = {
        key,
        from,
        to,
        inputs: picked.map((p) => p.input),
        inputStarts: picked.map((p) => p.start),
        settings: taskSettings,
      };
      from = to;
      return task;
    });
  };

  /** Decodes one input into wasm batches (INT96 converted), fingerprinting each as it comes; `js` only when sorting. */
  async function* decode(
    input: CheckedInput,
  ): AsyncGenerator<{ batch: pw.RecordBatch; js: Table | undefined }> {
    const key = input.file.key;
    const bytes = await fetcher.take();
    let decodedRows = 0;
    try {
      assertParquetMagic(key, bytes);
      const micros =
        input.int96Columns.length > 0 ? await readInt96Micros(key, bytes, input.int96Columns) : undefined;
      for await (let batch of decodeBatches(key, bytes, batchRows, input.footer.rowGroups.length)) {
        const n = batch.numRows;
        let js: Table | undefined;
        try {
          if (micros !== undefined && n > 0) batch = convertBatch(batch, decodedRows, micros);
          hashWasmBatch(acc, batch);
          // Only sorting needs the rows in JS (for the sort keys); copying them costs time.
          if (options.sort !== undefined && n > 0) js = wasmBatchToTable(batch);
        } catch (err) {
          batch.free();
          throw decodeError(key, err);
        }
        decodedRows += n;
        yield { batch, js };
      }
    } finally {
      // The bytes stay counted against the fetch budget until the whole file is decoded.
      fetcher.release(input.file.size);
    }
    if (decodedRows !== input.footer.rows) {
      throw new CorruptInputError(
        key,
        `decoded ${decodedRows} rows where the footer says ${input.footer.rows}`,
      );
    }
  }

  try {
    for (const run of runs) {
      const quotas = balancedQuotas(run.rows, partsOf(run));
      let quotaIndex = 0;
      let inCurrent = 0;

      /**
       * Writes rows `start..start+length` of `batch` into the current output(s), rolling over at
       * quota boundaries. With `owned`, the batch is handed over (or freed) when done.
       */
      const emit = async (
        batch: pw.RecordBatch,
        start: number,
        length: number,
        key: string,
        owned: boolean,
      ) => {
        let offset = start;
        let handedOver = false;
        while (offset < start + length) {
          if (current === undefined) current = open(run);
          const quota = quotas[quotaIndex] ?? Number.POSITIVE_INFINITY;
          const take = Math.min(start + length - offset, quota - inCurrent);
          // The writer takes ownership of what it is given: the whole batch, or a slice of it.
          handedOver = owned && offset === 0 && take === batch.numRows;
          const piece = handedOver ? batch : batch.slice(offset, take);
          await current.write(piece, key);
          offset += take;
          inCurrent += take;
          if (inCurrent >= quota && quotaIndex < quotas.length - 1) {
            outputs.push(await current.close());
            current = undefined;
            quotaIndex++;
            inCurrent = 0;
          }
        }
        if (owned && !handedOver) batch.free();
      };

      // One output is encoded by one thread either way: a worker would only add copies.
      if (workers > 1 && options.sort === undefined && quotas.length > 1) {
        outputs.push(...(await runTasks(tasksOf(run, quotas), parallelContext, acc)));
      } else if (options.sort === undefined) {
        for (const input of run.inputs) {
          for await (const { batch } of decode(input))
            await emit(batch, 0, batch.numRows, input.file.key, true);
        }
      } else {
        // Sort: the whole run is held decoded (checked against the budget), then written in key order.
        const held: { batch: pw.RecordBatch; key: string }[] = [];
        const keys: BatchKeys[] = [];
        let heldBytes = 0;
        try {
          for (const input of run.inputs) {
            for await (const { batch, js } of decode(input)) {
              held.push({ batch, key: input.file.key });
              keys.push(
                js === undefined ? options.sort.columns.map(() => []) : sortKeysOf(js, options.sort.columns),
              );
              heldBytes += batch.getArrayMemorySize();
              if (heldBytes > options.sort.memoryBudgetBytes) {
                throw new MemoryBudgetExceededError(
                  `Sorting group ${group.groupId} needs more than its memory budget of ${options.sort.memoryBudgetBytes} bytes (decoded rows reached ${heldBytes} bytes). Nothing was published; raise sort.memoryBudgetBytes, plan smaller groups, or compact without sorting.`,
                );
              }
            }
          }
          for (const slice of sortedSlices(keys)) {
            const h = held[slice.batch] as { batch: pw.RecordBatch; key: string };
            await emit(h.batch, slice.start, slice.length, h.key, false);
          }
        } finally {
          for (const h of held) h.batch.free();
        }
      }
      if (current !== undefined) {
        outputs.push(await current.close());
        current = undefined;
      }
    }
  } catch (err) {
    await current?.abort(err instanceof Error ? err : new Error(String(err)));
    await io.target.deleteMany(startedKeys.map((key) => ({ key }))).catch(() => undefined);
    throw err;
  }

  const fingerprint = toGroupFingerprint(
    acc,
    pre.inputs.map((i) => i.schemaKey),
  );
  if (fingerprint.rows !== outputs.reduce((n, o) => n + o.rows, 0)) {
    await io.target.deleteMany(startedKeys.map((key) => ({ key }))).catch(() => undefined);
    throw new CorruptInputError(group.groupId, 'rows written differ from rows read');
  }
  return { outputs, fingerprint, bytesRead: fetcher.bytesRead + pre.bytesRead };
}
