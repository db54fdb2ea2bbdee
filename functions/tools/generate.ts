// `npm run generate`: writes the deterministic `events` sample lake to a local folder or S3, one file at
// a time, prints a one-line summary, and exits non-zero with a clear message on bad options.
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { type OpenedStore, openStore } from '../adapters/open-store.js';
import { InvalidInputError } from '../core/errors.js';
import { type SampleLakeOptions, type SampleLakeSink, writeSampleLake } from './sample-lake.js';

/** Where the CLI writes its summary and errors; injectable so tests need no child process. */
export interface GenerateIo {
  readonly out: (line: string) => void;
  readonly err: (line: string) => void;
  /** Opens `s3://` targets; tests pass one bound to a local S3 server's client. */
  readonly openStore?: (uri: string) => OpenedStore;
}

const processIo: GenerateIo = {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
};

function integer(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a non-negative whole number.');
  return Number(value);
}

/** A sink that writes each file under `root`, creating partition folders as needed (mkdir -p). */
export function localFolderSink(root: string): SampleLakeSink {
  const made = new Set<string>();
  return async (key, bytes) => {
    const path = join(root, key);
    const folder = dirname(path);
    if (!made.has(folder)) {
      await mkdir(folder, { recursive: true });
      made.add(folder);
    }
    await writeFile(path, bytes);
  };
}

/**
 * A local path (or `file://` URI) gets a folder sink that creates the folder, because a fresh
 * target usually does not exist yet; `s3://bucket/prefix` goes through openStore's S3 store, one
 * PUT per file (endpoint overrides such as AWS_ENDPOINT_URL_S3 are honoured there).
 */
function sinkFor(out: string, open: (uri: string) => OpenedStore): { sink: SampleLakeSink; where: string } {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(out)?.[1]?.toLowerCase();
  if (scheme === undefined || scheme === 'file') {
    let root: string;
    try {
      root = scheme === 'file' ? fileURLToPath(out) : resolve(out);
    } catch (err) {
      throw new InvalidInputError(`--out ${out}: not a usable file URI (${(err as Error).message})`);
    }
    return { sink: localFolderSink(root), where: root };
  }
  if (scheme !== 's3' && scheme !== 's3a') {
    throw new InvalidInputError(`--out ${out}: use a local folder, file:///path or s3://bucket/prefix`);
  }
  const { store, prefix } = open(out);
  return {
    sink: async (key, bytes) => {
      await store.put(`${prefix}${key}`, bytes, { contentType: 'application/vnd.apache.parquet' });
    },
    where: out.replace(/\/+$/, ''),
  };
}

function buildProgram(): Command {
  return new Command()
    .name('generate')
    .description(
      'Write the deterministic, fragmented `events` sample lake (snappy Parquet, date partitions).',
    )
    .requiredOption('--out <dir|s3://bucket/prefix>', 'where to write the table folder')
    .option('--table <name>', 'table folder name', 'events')
    .option('--days <n>', 'daily partitions (default 30)', integer)
    .option('--batches <n>', 'files per partition, layout mode (default 20)', integer)
    .option('--seed <n>', 'random seed; same seed, same bytes (default 42)', integer)
    .option('--start <YYYY-MM-DD>', 'first partition date (default 2024-01-01)')
    .option('--min-rows <n>', 'fewest rows per file, layout mode (default 500)', integer)
    .option('--max-rows <n>', 'most rows per file, layout mode (default 2000)', integer)
    .option('--files <n>', 'benchmark mode: number of files (needs --rows)', integer)
    .option('--rows <n>', 'benchmark mode: rows per file (needs --files)', integer)
    .option('--single-partition', 'benchmark mode: put every file into the first day')
    .exitOverride()
    .configureOutput({ writeOut: () => {}, writeErr: () => {} });
}

/**
 * Runs the CLI with `argv` (without the node and script paths) and returns the exit code:
 * 0 on success, 2 for bad options, 1 when writing failed.
 */
export async function runGenerate(argv: readonly string[], io: GenerateIo = processIo): Promise<number> {
  const program = buildProgram();
  try {
    program.parse([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.help') {
        io.out(program.helpInformation());
        return 0;
      }
      io.err(`generate: ${err.message.replace(/^error: /, '')} (see --help)`);
      return 2;
    }
    throw err;
  }
  const flags = program.opts<{
    out: string;
    table: string;
    days?: number;
    batches?: number;
    seed?: number;
    start?: string;
    minRows?: number;
    maxRows?: number;
    files?: number;
    rows?: number;
    singlePartition?: boolean;
  }>();
  const options: SampleLakeOptions = {
    table: flags.table,
    ...(flags.days !== undefined && { days: flags.days }),
    ...(flags.batches !== undefined && { batches: flags.batches }),
    ...(flags.seed !== undefined && { seed: flags.seed }),
    ...(flags.start !== undefined && { startDate: flags.start }),
    ...(flags.minRows !== undefined && { minRows: flags.minRows }),
    ...(flags.maxRows !== undefined && { maxRows: flags.maxRows }),
    ...(flags.files !== undefined && { files: flags.files }),
    ...(flags.rows !== undefined && { rows: flags.rows }),
    ...(flags.singlePartition === true && { partitions: 'single' as const }),
  };

  const started = performance.now();
  try {
    const { sink, where } = sinkFor(flags.out, io.openStore ?? ((uri) => openStore(uri)));
    const summary = await writeSampleLake(sink, options);
    const seconds = (performance.now() - started) / 1000;
    io.out(
      `generated ${summary.files} files, ${summary.rows} rows, ${(summary.bytes / 1e6).toFixed(1)} MB in ${Object.keys(summary.partitions).length} partitions in ${seconds.toFixed(1)} s → ${where}/${summary.table}`,
    );
    return 0;
  } catch (err) {
    if (err instanceof InvalidInputError) {
      io.err(`generate: ${err.message}`);
      return 2;
    }
    io.err(`generate: failed: ${err instanceof Error ? err.message : String(err)}`);
    return 1;
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  process.exitCode = await runGenerate(process.argv.slice(2));
}
