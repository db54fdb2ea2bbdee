// The outputs of one rewrite, in order: rows are cut into outputs at each run's quotas (roll-over), every
// output key is new, and on failure every output whose upload started is deleted.

import { InvalidInputError } from '../../core/errors.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { DerivedColumn, OutputFooterEntries, WrittenOutput } from '../../ports/parquet-engine.js';
import { OutputWriter } from './output.js';
import { PerOutput } from './per-output.js';
import type { Run } from './runs.js';
import type { pw } from './wasm.js';

/**
 * Writes a group's runs one after another into numbered outputs (`outputKey(0)`, `outputKey(1)`, …).
 * Within a run, an output is closed when its quota of rows is reached and the next one is opened by the
 * next row; the last output of a run takes whatever is left, so a miscounted quota can never drop rows.
 */
export class OutputSequence {
  /** Outputs finished so far, in order. */
  readonly outputs: WrittenOutput[] = [];
  /**
   * Keys whose upload started — by this sequence or by the parallel tasks it handed keys to
   * (see `nextKeys`): everything `discard` deletes.
   */
  readonly started: string[] = [];
  private current: OutputWriter | undefined;
  /** The current output's derived values and footer accumulator, when the rewrite sets any. */
  private perOutput: PerOutput | undefined;
  private run: Run | undefined;
  private quotaIndex = 0;
  private inCurrent = 0;

  constructor(
    private readonly target: ObjectStore,
    private readonly outputKey: (index: number) => string,
    private readonly stallMs: number,
    private readonly computed: {
      readonly derivedColumns: readonly DerivedColumn[];
      readonly footerEntries: OutputFooterEntries | undefined;
    } = { derivedColumns: [], footerEntries: undefined },
  ) {}

  /** Starts writing `run`: the next rows go into a new output, cut at the run's quotas. */
  startRun(run: Run): void {
    this.run = run;
    this.quotaIndex = 0;
    this.inCurrent = 0;
  }

  /**
   * Writes rows `start..start+length` of `batch` into the current output(s), rolling over at
   * quota boundaries. With `owned`, the batch is handed over (or freed) when done.
   */
  async write(batch: pw.RecordBatch, start: number, length: number, sourceKey: string, owned: boolean) {
    const quotas = this.run?.quotas ?? [];
    let offset = start;
    let handedOver = false;
    while (offset < start + length) {
      this.current ??= this.open();
      const quota = quotas[this.quotaIndex] ?? Number.POSITIVE_INFINITY;
      const take = Math.min(start + length - offset, quota - this.inCurrent);
      // The writer takes ownership of what it is given: the whole batch, or a slice of it.
      handedOver = owned && offset === 0 && take === batch.numRows;
      const piece = handedOver ? batch : batch.slice(offset, take);
      await this.current.write(
        this.perOutput === undefined ? piece : this.perOutput.apply(piece, sourceKey),
        sourceKey,
      );
      offset += take;
      this.inCurrent += take;
      if (this.inCurrent >= quota && this.quotaIndex < quotas.length - 1) {
        this.outputs.push(await this.current.close());
        this.current = undefined;
        this.perOutput = undefined;
        this.quotaIndex++;
        this.inCurrent = 0;
      }
    }
    if (owned && !handedOver) batch.free();
  }

  /** Finishes the run's last output: runs never share an output. */
  async endRun(): Promise<void> {
    if (this.current !== undefined) {
      this.outputs.push(await this.current.close());
      this.current = undefined;
      this.perOutput = undefined;
    }
    this.run = undefined;
  }

  /**
   * Keys for the next `count` outputs, for writers outside this sequence (the parallel tasks): they
   * record each key in `started` when its upload starts, and their outputs are added with `add`.
   */
  nextKeys(count: number): string[] {
    const base = this.started.length;
    return Array.from({ length: count }, (_, j) => this.outputKey(base + j));
  }

  /** Outputs written outside this sequence (see `nextKeys`), in order. */
  add(outputs: readonly WrittenOutput[]): void {
    this.outputs.push(...outputs);
  }

  /** Stops the output being written and deletes every output started; never throws the deletion's error. */
  async discard(reason: unknown): Promise<void> {
    await this.current?.abort(reason instanceof Error ? reason : new Error(String(reason)));
    await this.deleteStarted();
  }

  /** Deletes every output whose upload started (they are not to be published); best effort. */
  async deleteStarted(): Promise<void> {
    await this.target.deleteMany(this.started.map((key) => ({ key }))).catch(() => undefined);
  }

  private open(): OutputWriter {
    const index = this.started.length;
    const key = this.outputKey(index);
    if (this.started.includes(key)) {
      throw new InvalidInputError(`outputKey(${index}) returned ${key}, which is already used`);
    }
    this.started.push(key);
    const { derivedColumns, footerEntries } = this.computed;
    if (derivedColumns.length === 0 && footerEntries === undefined) {
      return new OutputWriter(this.target, key, (this.run as Run).settings, this.stallMs);
    }
    const perOutput = new PerOutput(key, derivedColumns, footerEntries);
    this.perOutput = perOutput;
    const accumulator = perOutput.accumulator;
    return new OutputWriter(
      this.target,
      key,
      (this.run as Run).settings,
      this.stallMs,
      accumulator === undefined || footerEntries === undefined
        ? undefined
        : { entries: () => accumulator.finish(), drop: footerEntries.keys },
    );
  }
}
