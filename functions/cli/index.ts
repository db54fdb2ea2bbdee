// The operator CLI: the same core as the Lambdas, run directly against `s3://bucket/prefix` or a
// local folder. Exit code 0 on success, 1 on a reported error, 2 on a usage error.
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { openStore } from '../adapters/open-store.js';
import { StoreQuarantine } from '../adapters/store-quarantine.js';
import { refuseForeignAmong } from '../core/formats/foreign-tables.js';
import {
  checkFormatRunInput,
  DEFAULT_TABLE_FORMAT,
  type FormatRunInput,
  formatRunOptions,
  type TableFormatName,
  type TableFormatSettings,
} from '../core/formats/index.js';
import type { TableSnapshot } from '../core/formats/table-format.js';
import { printable, printableLines } from '../core/keys.js';
import { withMemoryBudget } from '../core/memory-budget.js';
import { type PlanSet, planPartitions } from '../core/planning.js';
import { matchQuarantine } from '../core/quarantine.js';
import { buildRunContext } from '../core/run-input.js';
import { formatBytes, type PartitionProfile, profilePartition } from '../core/stats.js';
import { plural } from '../core/words.js';
import { binpackOptionsOf } from '../core/workflow/plan.js';
import { type Clock, systemClock } from '../ports/clock.js';
import {
  cliMemoryBudget,
  formatOption,
  memoryMbArgument,
  positiveNumber,
  tableNameOf,
  workRootOption,
} from './args.js';
import { checkRewriteChoices, registerCompactCommand, rewriteOptionsOf } from './compact.js';
import { debugRequested, describeFailure, failureContext, requireParquetFiles, stackOf } from './errors.js';
import {
  addFormatOptions,
  type FormatCliOptions,
  formatSettingsOf,
  readingFormat,
} from './format-options.js';
import { registerHistoryCommand } from './history.js';
import { quietSdkNodeWarning } from './node-support.js';
import { addPlanningOptions, type PlanningFlags, planningChoicesOf } from './planning-options.js';
import { registerQuarantineCommand } from './quarantine.js';
import { registerReportCommand } from './report.js';
import { registerSettleCommand } from './settle.js';
import { registerStatusCommand } from './status.js';
import { renderTable } from './table.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';
import { registerTierCommand } from './tier.js';
import { registerVacuumCommand } from './vacuum.js';

const MiB = 1024 * 1024;

/** Where the CLI writes; injectable so tests can run it in-process. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

const processIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  clock: systemClock,
  env: process.env,
};

export interface ProfileRow extends PartitionProfile {
  readonly partition: string;
}

/**
 * Profiles every partition of the table at `uri` (listing only; no object is read).
 * @throws TableFormatNotSupportedError, before anything is listed, when `format` is not an implemented format.
 * @throws UnsupportedTableFormatError when the location is, lies in or holds a Delta or Iceberg table.
 * @throws InvalidInputError when the location holds no Parquet file.
 */
export async function profileTable(
  uri: string,
  options: {
    targetFileSizeBytes: number;
    format?: TableFormatName;
    /**
     * The settings the table is read through, as its format's options spell them (`formatSettingsOf(…, 'read')`:
     * an Iceberg table's catalog). @default none: the format's defaults (Iceberg: the path catalog)
     */
    formatSettings?: TableFormatSettings;
  },
  io: Pick<CliIo, 'clock' | 'env'>,
): Promise<{ inventory: TableSnapshot; rows: ProfileRow[] }> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const opened = openStore(uri, { env: io.env });
  const format = readingFormat(opened, tableNameOf(uri), formatName, options.formatSettings, io);
  const { store, prefix } = opened;
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const inventory = await format.snapshot(store, prefix, { now: io.clock.now() });
  refuseForeignAmong(store, prefix, inventory.foreignTables);
  requireParquetFiles(inventory, uri, 'profile');
  const rows = inventory.partitions.map((p) => ({
    partition: p.partition === '' ? '(root)' : p.partition,
    ...profilePartition(p.files, { targetFileSizeBytes: options.targetFileSizeBytes }),
  }));
  return { inventory, rows };
}

/**
 * Plans every partition of the table at `uri`, reading each candidate's footer. Files `compact` quarantined
 * (and that are unchanged since) are skipped as `compact` would skip them.
 * @throws TableFormatNotSupportedError, before anything is listed, when `format` is not an implemented format.
 * @throws UnsupportedTableFormatError when the location is, lies in or holds a Delta or Iceberg table.
 * @throws InvalidInputError when the location holds no Parquet file.
 * @throws UsageError, before anything is listed, naming each planning flag out of range (as `compact` does).
 */
export async function planTable(
  uri: string,
  options: PlanningFlags & {
    table?: string;
    workRoot?: string;
    format?: TableFormatName;
    /** Iceberg only: `rewrite_data_files` options. */
    rewriteDataFiles?: FormatRunInput['rewriteDataFiles'];
    /** Iceberg only: plan only the partitions this filter passes. */
    where?: string;
    /** The settings the table is read through (see {@link profileTable}). @default none */
    formatSettings?: TableFormatSettings;
  },
  io: Pick<CliIo, 'clock' | 'env'>,
): Promise<PlanSet> {
  const formatName = options.format ?? DEFAULT_TABLE_FORMAT;
  const choices = planningChoicesOf(options);
  const where = checkRewriteChoices(options, formatName);
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const format = readingFormat(
    opened,
    options.table ?? tableNameOf(uri),
    formatName,
    options.formatSettings,
    io,
  );
  const { store, prefix } = opened;
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const inventory = await format.snapshot(store, prefix, { now: io.clock.now(), readFooters: true });
  refuseForeignAmong(store, prefix, inventory.foreignTables);
  // As compact refuses them: options that cannot hold for this table (Iceberg's sizes against its target).
  checkFormatRunInput(formatName, options, { properties: inventory.properties });
  requireParquetFiles(inventory, uri, 'plan');
  const table = options.table ?? tableNameOf(uri);
  const quarantined = await new StoreQuarantine(store, { workRoot: opened.workRoot }).listTable(table);
  const inputs = format.planInputs(inventory, table).map((input) => {
    const { active } = matchQuarantine(
      quarantined.filter((q) => q.partition === input.partition),
      input.files,
    );
    return active.length === 0 ? input : { ...input, quarantined: active };
  });
  // The run compact would start with these choices (the same defaults, resolved in the same place), so the plan
  // below is planned with exactly the options compact's plan step uses (binpackOptionsOf, formatRunOptions).
  const run = buildRunContext(
    {
      name: table,
      prefix: prefix.replace(/\/$/, ''),
      bucket: /^s3a?:\/\/([^/]+)/i.exec(uri.trim())?.[1] ?? 'local',
      format: formatName,
    },
    '',
    {
      ...choices,
      ...(options.rewriteDataFiles === undefined ? {} : { rewriteDataFiles: options.rewriteDataFiles }),
      ...(where === undefined ? {} : { where: where.text }),
      dryRun: true,
    },
    { executionName: 'plan', startedAt: io.clock.now() },
  );
  const binpack = binpackOptionsOf(run);
  const planPartition = format.planPartition;
  if (planPartition === undefined) return planPartitions(inputs, binpack);
  // A format with its own rules (Iceberg's rewrite_data_files) plans as `compact` would: the same options, where
  // --target-mb stands in for target-file-size-bytes and --min-input-files for min-input-files.
  if (where !== undefined)
    where.checkFields([...new Set(inventory.partitions.flatMap((p) => p.values.map((v) => v.name)))]);
  // The format reads its own run options back from the run context, as the plan step hands them.
  const runOptions = formatRunOptions(format.name, run);
  const valuesOf = new Map(inventory.partitions.map((p) => [p.partition, p.values]));
  const partitions = inputs.map((input) =>
    planPartition(input, {
      binpack,
      // The format reads its own run options back from `options`, as the plan step hands them (formatRunOptions).
      ...(Object.keys(runOptions).length === 0 ? {} : { options: runOptions }),
      ...(where === undefined ? {} : { where: where.text }),
      values: valuesOf.get(input.partition) ?? [],
      ...(inventory.properties === undefined ? {} : { properties: inventory.properties }),
    }),
  );
  return {
    partitions: partitions.sort((a, b) =>
      a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : 0,
    ),
  };
}

const priorityRank = { HIGH: 0, MEDIUM: 1, LOW: 2 } as const;

function printProfile(io: CliIo, rows: readonly ProfileRow[], inventory: TableSnapshot): void {
  const sorted = [...rows].sort(
    (a, b) => priorityRank[a.priority] - priorityRank[b.priority] || a.partition.localeCompare(b.partition),
  );
  io.out(
    renderTable(
      [
        { header: 'partition', value: (r) => r.partition },
        { header: 'files', value: (r) => r.count, align: 'right' },
        { header: 'total', value: (r) => formatBytes(r.totalBytes), align: 'right' },
        { header: 'avg', value: (r) => formatBytes(Math.round(r.avgBytes)), align: 'right' },
        { header: 'p95', value: (r) => formatBytes(r.p95Bytes), align: 'right' },
        { header: 'small', value: (r) => `${(r.smallFileRatio * 100).toFixed(0)}%`, align: 'right' },
        { header: 'priority', value: (r) => r.priority },
      ],
      sorted,
    ),
  );
  const files = rows.reduce((n, r) => n + r.count, 0);
  const bytes = rows.reduce((n, r) => n + r.totalBytes, 0);
  io.out(
    `\n${plural(rows.length, 'partition')}, ${plural(files, 'data file')}, ${formatBytes(bytes)}; ${plural(inventory.ignored.length, 'non-data object')} ignored`,
  );
}

function printPlan(io: CliIo, plan: PlanSet): void {
  io.out(
    renderTable(
      [
        { header: 'partition', value: (p) => p.partition || '(root)' },
        { header: 'files', value: (p) => p.summary.inputFiles, align: 'right' },
        { header: 'planned', value: (p) => p.summary.plannedFiles, align: 'right' },
        { header: 'bytes', value: (p) => formatBytes(p.summary.plannedBytes), align: 'right' },
        { header: 'groups', value: (p) => p.summary.groups, align: 'right' },
        { header: 'outputs', value: (p) => p.summary.expectedOutputFiles, align: 'right' },
        { header: 'note', value: (p) => p.reason ?? '' },
      ],
      plan.partitions,
    ),
  );
  const groups = plan.partitions.reduce((n, p) => n + p.summary.groups, 0);
  const files = plan.partitions.reduce((n, p) => n + p.summary.plannedFiles, 0);
  const outputs = plan.partitions.reduce((n, p) => n + p.summary.expectedOutputFiles, 0);
  io.out(`\n${plural(groups, 'group')}: ${plural(files, 'file')} → ${plural(outputs, 'file')}`);
  const skipped = plan.partitions.flatMap((p) => p.skipped);
  if (skipped.length > 0) {
    const reasons = new Map<string, number>();
    for (const s of skipped) reasons.set(s.reason, (reasons.get(s.reason) ?? 0) + 1);
    io.out(`${plural(skipped.length, 'file')} left alone:`);
    for (const [reason, n] of [...reasons].sort((a, b) => b[1] - a[1]).slice(0, 10))
      io.out(`  ${n} × ${printable(reason)}`);
  }
}

/**
 * The version of the installed package (package.json beside `functions/`), so `--version` names what a
 * bug report is about, whether run from the repository or an installed package.
 */
export function packageVersion(): string {
  const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/** Builds the commander program; `run` wraps it with error handling and exit codes. */
export function buildProgram(io: CliIo): Command {
  const program = new Command('lake-compactor')
    .description('Small-file compaction and storage maintenance for Parquet data lakes on S3')
    .version(packageVersion(), '-V, --version', 'print the version of lake-compactor')
    .exitOverride()
    .configureOutput({ writeOut: (s) => io.out(s.trimEnd()), writeErr: (s) => io.err(s.trimEnd()) })
    // Read before commander runs (see cliMemoryBudget); declared here so it is documented and validated.
    .option(
      '--memory-mb <n>',
      "memory the command may use, in MB (default: this machine's, at most Node's heap limit); table metadata larger than it allows is refused by name",
      memoryMbArgument,
    );

  addFormatOptions(
    program
      .command('profile')
      .description('Show per-partition file statistics and compaction priority')
      .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
      .option('--target-mb <n>', 'target file size in MiB', positiveNumber, 128)
      .option('--json', 'print JSON instead of a table')
      .addOption(formatOption()),
    'read',
  ).action(
    async (
      uri: string,
      opts: FormatCliOptions & { targetMb: number; json?: boolean; format: TableFormatName },
    ) => {
      const formatSettings = formatSettingsOf(uri, opts.format ?? DEFAULT_TABLE_FORMAT, opts, 'read');
      const { inventory, rows } = await profileTable(
        uri,
        { targetFileSizeBytes: Math.round(opts.targetMb * MiB), format: opts.format, formatSettings },
        io,
      );
      if (opts.json) io.out(JSON.stringify({ partitions: rows, ignored: inventory.ignored }, null, 2));
      else printProfile(io, rows, inventory);
    },
  );

  const planCommand = addFormatOptions(program.command('plan'), 'read')
    .description('Show what compaction would do (reads footers; changes nothing)')
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder');
  addPlanningOptions(planCommand)
    .option(
      '--rewrite-option <name=value>',
      'Iceberg: a rewrite_data_files option, repeatable (as for compact)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--where <filter>', 'Iceberg: plan only partitions passing this filter over partition fields')
    .option('--table <name>', 'table name recorded in the plan (default: last segment of the URI)')
    .option('--json', 'print the plan as JSON (replayable)')
    .addOption(workRootOption())
    .addOption(formatOption())
    .action(
      async (
        uri: string,
        opts: PlanningFlags & {
          table?: string;
          json?: boolean;
          workRoot?: string;
          format: TableFormatName;
          rewriteOption?: string[];
          where?: string;
        } & FormatCliOptions,
      ) => {
        const formatSettings = formatSettingsOf(uri, opts.format ?? DEFAULT_TABLE_FORMAT, opts, 'read');
        const plan = await planTable(
          uri,
          {
            ...(opts.targetMb === undefined ? {} : { targetMb: opts.targetMb }),
            ...(opts.rewriteOption === undefined
              ? {}
              : { rewriteDataFiles: rewriteOptionsOf(opts.rewriteOption) }),
            ...(opts.where === undefined ? {} : { where: opts.where }),
            ...(opts.minInputFiles === undefined ? {} : { minInputFiles: opts.minInputFiles }),
            ...(opts.maxGroupMb === undefined ? {} : { maxGroupMb: opts.maxGroupMb }),
            ...(opts.table === undefined ? {} : { table: opts.table }),
            ...(opts.workRoot === undefined ? {} : { workRoot: opts.workRoot }),
            formatSettings,
            format: opts.format,
          },
          io,
        );
        if (opts.json) io.out(JSON.stringify(plan, null, 2));
        else printPlan(io, plan);
      },
    );
  registerStatusCommand(program, io);
  registerCompactCommand(program, io);
  registerSettleCommand(program, io);
  registerHistoryCommand(program, io);
  registerReportCommand(program, io);
  registerQuarantineCommand(program, io);
  registerVacuumCommand(program, io);
  registerTierCommand(program, io);
  return program;
}

/**
 * Runs the CLI on `argv` (user arguments only) and returns the exit code: 0 success, 1 failure (one line
 * saying what is wrong and what to do), 2 usage error — the same for every command. Why one place: an
 * operator meets the same missing region or denied bucket in any command, and should read the same fix.
 * With LAKE_COMPACTOR_DEBUG=1 the stack follows the line.
 */
export async function run(argv: readonly string[], given: CliIo = processIo): Promise<number> {
  // Every line any command writes passes printableLines: values are escaped where they are printed, and this is
  // the backstop for any that were not (a key inside an error message, a reason quoting metadata).
  const io: CliIo = {
    ...given,
    out: (text) => given.out(printableLines(text)),
    err: (text) => given.err(printableLines(text)),
  };
  const program = buildProgram(io);
  try {
    // Every decoder of the table's metadata checks its limits against this command's memory budget.
    await withMemoryBudget(cliMemoryBudget(argv), () => program.parseAsync([...argv], { from: 'user' }));
    return 0;
  } catch (err) {
    // Commander has printed its own message (or the help, or the version, which exit 0).
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2;
    const failure = describeFailure(err, io.env, failureContext(argv, io.env));
    io.err(`error: ${failure.message}`);
    if (debugRequested(io.env) && failure.exitCode === 1) io.err(stackOf(err));
    return failure.exitCode;
  }
}

const invokedDirectly =
  process.argv[1] !== undefined &&
  /(?:^|[\\/])(?:cli[\\/]index\.ts|lake-compactor(?:\.js)?)$/.test(process.argv[1]);
if (invokedDirectly) {
  quietSdkNodeWarning(process.env, process.versions.node);
  process.exitCode = await run(process.argv.slice(2));
}
