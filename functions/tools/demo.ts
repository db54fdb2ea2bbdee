// `npm run demo [--format parquet|delta|iceberg|hudi] [--hudi-table-type cow|mor] [--days 30] [--batches 20] [--keep]
// [--json]`: the whole system on the embedded local cloud, ending in checks; exits 0 only if every check held, 1 with
// what failed otherwise, 2 on a usage error.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MultiBar, Presets } from 'cli-progress';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { formatDeltaDemoReport, runDeltaDemo } from './demo-delta.js';
import { formatHudiDemoReport, HUDI_DEMO_DEFAULTS, runHudiDemo } from './demo-hudi.js';
import { formatHudiMorDemoReport, runHudiMorDemo } from './demo-hudi-mor.js';
import { formatIcebergDemoReport, ICEBERG_DEMO_DEFAULTS, runIcebergDemo } from './demo-iceberg.js';
import { formatDemoReport } from './demo-report.js';
import { type DemoProgress, runDemo } from './demo-run.js';

/** Where the demo writes: stdout for the report (or JSON), stderr for progress in JSON mode. */
export interface DemoIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** Draw progress bars (a terminal); otherwise progress is printed as lines. */
  readonly tty: boolean;
}

const processIo: DemoIo = {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  tty: process.stdout.isTTY === true,
};

function positiveInt(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new InvalidArgumentError('expected a positive integer');
  return n;
}

/** The table formats the demo can run on (each has its own run and report). */
const DEMO_FORMATS = ['parquet', 'delta', 'iceberg', 'hudi'] as const;
type DemoFormat = (typeof DEMO_FORMATS)[number];

function demoFormat(value: string): DemoFormat {
  const format = DEMO_FORMATS.find((f) => f === value);
  if (format === undefined) throw new InvalidArgumentError(`expected one of ${DEMO_FORMATS.join(', ')}`);
  return format;
}

/** The Hudi demo's table types: Copy-on-Write (clustering) or Merge-on-Read (compaction of log files). */
const HUDI_TABLE_TYPES = ['cow', 'mor'] as const;
type HudiTableTypeFlag = (typeof HUDI_TABLE_TYPES)[number];

function hudiTableType(value: string): HudiTableTypeFlag {
  const type = HUDI_TABLE_TYPES.find((t) => t === value);
  if (type === undefined) throw new InvalidArgumentError(`expected one of ${HUDI_TABLE_TYPES.join(', ')}`);
  return type;
}

/** Parses `argv` (without node and script), runs the demo and reports; returns the exit code. */
export async function main(argv: readonly string[], io: DemoIo = processIo): Promise<number> {
  const command = new Command('demo')
    .description('Compaction end to end on the embedded local cloud, with checks')
    .option(
      '--format <name>',
      `table format of the demo table: ${DEMO_FORMATS.join(', ')} (iceberg: 3 days × 10 batches, hudi: 3 partitions × 8 commits, unless given)`,
      demoFormat,
      'parquet',
    )
    .option(
      '--hudi-table-type <type>',
      `with --format hudi: ${HUDI_TABLE_TYPES.join(' or ')} (Copy-on-Write: inserts clustered; Merge-on-Read: inserts and updates in log files, compacted)`,
      hudiTableType,
      'cow',
    )
    .option('--days <n>', 'days (partitions) of the sample lake, ending today', positiveInt, 30)
    .option('--batches <n>', 'micro-batch files per day', positiveInt, 20)
    .option('--keep', 'keep copies of the lake before and after, and print where they are')
    .option('--json', 'print a machine-readable summary instead of the report (progress goes to stderr)')
    .exitOverride()
    .configureOutput({ writeOut: io.out, writeErr: io.err });
  let opts: {
    format: DemoFormat;
    hudiTableType: HudiTableTypeFlag;
    days: number;
    batches: number;
    keep?: boolean;
    json?: boolean;
  };
  try {
    opts = command.parse([...argv], { from: 'user' }).opts();
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  const smallDefaults =
    opts.format === 'iceberg'
      ? ICEBERG_DEMO_DEFAULTS
      : opts.format === 'hudi'
        ? HUDI_DEMO_DEFAULTS
        : undefined;
  if (smallDefaults !== undefined) {
    for (const name of ['days', 'batches'] as const)
      if (command.getOptionValueSource(name) === 'default') opts[name] = smallDefaults[name];
  }

  const progress = makeProgress(io, opts.json === true, opts.days * opts.batches, opts.days);
  try {
    const options = { days: opts.days, batches: opts.batches, keep: opts.keep === true };
    const result = await (opts.format === 'delta'
      ? runDeltaDemo
      : opts.format === 'iceberg'
        ? runIcebergDemo
        : opts.format === 'hudi'
          ? opts.hudiTableType === 'mor'
            ? runHudiMorDemo
            : runHudiDemo
          : runDemo)(options, progress.sink);
    progress.stop();
    if (opts.json) io.out(`${JSON.stringify(result, null, 2)}\n`);
    else if (!('format' in result)) io.out(formatDemoReport(result));
    else if (result.format === 'iceberg') io.out(formatIcebergDemoReport(result));
    else if (result.format === 'hudi')
      io.out('tableType' in result ? formatHudiMorDemoReport(result) : formatHudiDemoReport(result));
    else io.out(formatDeltaDemoReport(result));
    if (!result.ok) {
      io.err(
        `demo failed: ${result.checks
          .filter((c) => !c.ok)
          .map((c) => `${c.name} (${c.detail})`)
          .join('; ')}\n`,
      );
    }
    return result.ok ? 0 : 1;
  } catch (error) {
    progress.stop();
    io.err(
      `demo could not run: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}\n`,
    );
    return 1;
  }
}

/** Progress bars on a terminal (lines logged above them), plain lines otherwise. */
function makeProgress(
  io: DemoIo,
  json: boolean,
  files: number,
  partitions: number,
): { sink: DemoProgress; stop(): void } {
  const started = performance.now();
  const stamp = () => `[${((performance.now() - started) / 1000).toFixed(1).padStart(5)} s]`;
  if (json || !io.tty) {
    const write = json ? io.err : io.out;
    return { sink: { line: (text) => write(`${stamp()} ${text}\n`) }, stop: () => undefined };
  }
  const bars = new MultiBar(
    {
      format: ' {label} |{bar}| {value}/{total} {detail}',
      hideCursor: true,
      clearOnComplete: false,
      stopOnComplete: false,
    },
    Presets.shades_classic,
  );
  const written = bars.create(files, 0, { label: 'files written       ', detail: '' });
  const compacted = bars.create(partitions, 0, { label: 'partitions compacted', detail: '' });
  return {
    sink: {
      line: (text) => bars.log(`${stamp()} ${text}\n`),
      written: (done, total) => {
        written.setTotal(total);
        written.update(done);
      },
      compacted: (done, total, running) => {
        compacted.setTotal(total);
        compacted.update(done, { detail: running > 0 ? `(${running} running)` : '' });
      },
    },
    stop: () => bars.stop(),
  };
}

const isMain =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) process.exitCode = await main(process.argv.slice(2));
