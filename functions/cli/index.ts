// The operator CLI: the same core as the Lambdas, run directly against `s3://bucket/prefix` or a
// local folder. Exit code 0 on success, 1 on a reported error, 2 on a usage error.
//
// Start-up stays light: this module and the command definitions it registers load commander and the format
// registry only; each command's implementation (and with it the AWS SDK and the Parquet engine) is imported when
// that command runs, so --help, --version and usage errors answer at once.
import { existsSync, readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { DEFAULT_TABLE_FORMAT, type TableFormatName } from '../core/formats/index.js';
import type { TableSnapshot } from '../core/formats/table-format.js';
import { printable, printableLines } from '../core/keys.js';
import { withMemoryBudget } from '../core/memory-budget.js';
import type { PlanSet } from '../core/planning.js';
import { formatBytes } from '../core/stats.js';
import { plural } from '../core/words.js';
import { type Clock, systemClock } from '../ports/clock.js';
import { cliMemoryBudget, formatOption, memoryMbArgument, positiveNumber, workRootOption } from './args.js';
import { registerCompactCommand, rewriteOptionsOf } from './compact.js';
import { runOptionHelp } from './format-help.js';
import { addFormatOptions, type FormatCliOptions, formatSettingsOf } from './format-options.js';
import { registerHistoryCommand } from './history.js';
import type * as Impl from './plan-run.js';
import type { ProfileRow } from './plan-run.js';
import { addPlanningOptions, type PlanningFlags } from './planning-options.js';
import { registerQuarantineCommand } from './quarantine.js';
import { registerReconcileCommand } from './reconcile.js';
import type { LambdaPort } from './reconcile-run.js';
import { registerReportCommand } from './report.js';
import { registerRewriteCommand } from './rewrite.js';
import { registerSettleCommand } from './settle.js';
import type { CloudFormationPort } from './stack-outputs.js';
import { registerStatusCommand } from './status.js';
import { renderTable } from './table.js';
import { registerTierCommand } from './tier.js';
import { registerUndoCommand } from './undo.js';
import { registerVacuumCommand } from './vacuum.js';

const MiB = 1024 * 1024;

/** Where the CLI writes; injectable so tests can run it in-process. */
export interface CliIo {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * The AWS clients a command would otherwise make from `env`, for the services no local server stands in for:
   * tests inject recorded fakes (CloudFormation for `--stack`, Lambda for `reconcile`).
   */
  readonly aws?: CliAwsClients;
}

/** Injectable AWS clients of the CLI (see {@link CliIo.aws}). */
export interface CliAwsClients {
  readonly cloudFormation?: CloudFormationPort;
  readonly lambda?: LambdaPort;
}

const processIo: CliIo = {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
  clock: systemClock,
  env: process.env,
};

export type { ProfileRow } from './plan-run.js';

/** Profiles the table at `uri`, loading the implementation only when the command runs (see {@link Impl.profileTable}). */
export const profileTable: typeof Impl.profileTable = async (...args) =>
  (await import('./plan-run.js')).profileTable(...args);

/** Plans the table at `uri`, loading the implementation only when the command runs (see {@link Impl.planTable}). */
export const planTable: typeof Impl.planTable = async (...args) =>
  (await import('./plan-run.js')).planTable(...args);

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
 * The version of the installed package, so `--version` names what a bug report is about: its package.json is
 * beside `functions/` in the repository and beside `dist/` in the compiled, installed package.
 */
export function packageVersion(): string {
  for (const relative of ['../../package.json', '../../../package.json']) {
    const url = new URL(relative, import.meta.url);
    if (!existsSync(url)) continue;
    const manifest = JSON.parse(readFileSync(url, 'utf8')) as { name?: string; version: string };
    if (manifest.name === 'lake-compactor') return manifest.version;
  }
  throw new Error('lake-compactor: its package.json was not found above the CLI');
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
      runOptionHelp('rewriteDataFiles', 'a planner option of the format, repeatable'),
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--where <filter>', runOptionHelp('where', 'a partition filter of the format'))
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
            ...(opts.schemaEvolution === undefined ? {} : { schemaEvolution: opts.schemaEvolution }),
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
  registerRewriteCommand(program, io);
  registerSettleCommand(program, io);
  registerUndoCommand(program, io);
  registerHistoryCommand(program, io);
  registerReportCommand(program, io);
  registerQuarantineCommand(program, io);
  registerReconcileCommand(program, io);
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
    // Loaded only on failure: the classification names the AWS SDK's exception types.
    const { debugRequested, describeFailure, failureContext, stackOf } = await import('./errors.js');
    const failure = describeFailure(err, io.env, failureContext(argv, io.env));
    io.err(`error: ${failure.message}`);
    if (debugRequested(io.env) && failure.exitCode === 1) io.err(stackOf(err));
    return failure.exitCode;
  }
}
