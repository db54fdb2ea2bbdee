// What `lake-compactor report` does, loaded by report.ts only when the command runs (help, --version and usage errors
// never load it, nor the AWS SDK and Parquet engine it reaches).
// `lake-compactor report <uri> --html out.html`: gathers the table's live files (through its format's view), the
// stored plans, the quarantined files, the runs the CLI journaled in the location and (with a state table) the run
// history, and writes one self-contained HTML page; it reads only.

import { writeFile } from 'node:fs/promises';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import pLimit from 'p-limit';
import { openStore } from '../adapters/open-store.js';
import { InvalidInputError } from '../core/errors.js';
import { refuseForeignAmong } from '../core/formats/foreign-tables.js';
import {
  DEFAULT_TABLE_FORMAT,
  type TableFormatName,
  type TableFormatSettings,
} from '../core/formats/index.js';
import { printable } from '../core/keys.js';
import { DEFAULT_PLAN_OPTIONS, partitionPlanSchema } from '../core/planning.js';
import { matchQuarantine } from '../core/quarantine.js';
import { buildReportModel, type ReportModel, type ReportPlan, type ReportRun } from '../core/report/model.js';
import { renderReportHtml } from '../core/report/render.js';
import { plural } from '../core/words.js';
import { parsePlanKey, workFolder } from '../core/workflow/layout.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectInfo, ObjectStore } from '../ports/object-store.js';
import type { Quarantine } from '../ports/quarantine.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';
import { tableNameOf } from './args.js';
import { requireParquetFiles } from './errors.js';
import { readingFormat } from './format-services.js';
import { type HistoryRow, readHistory } from './history-run.js';
import { type JournalRun, readJournalRuns } from './journal-history.js';
import { openQuarantine } from './quarantine-run.js';
import { refuseEnclosingForeignTable } from './table-format-guard.js';

const MiB = 1024 * 1024;

export interface ReportIo {
  readonly out: (text: string) => void;
  readonly clock: Clock;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export interface ReportOptions {
  /** Where to write the page. */
  readonly html: string;
  /** DynamoDB state table with the runs' history; else env LAKE_COMPACTOR_TABLE; else no history. */
  readonly stateTable?: string;
  /** Table name the history is recorded under. @default the URI's last path segment */
  readonly table?: string;
  /** Target file size, MiB: a file is small below 0.75 × this (the planner's rule). @default the newest plan's, else 128 */
  readonly targetMb?: number;
  /** Newest stored plans read. @default 1000 */
  readonly maxPlans?: number;
  /** Newest history items read. @default 500 */
  readonly limit?: number;
  /** The work root the stored plans, the CLI's journal (and the store's quarantine) are in. @default `_lake-compactor/` */
  readonly workRoot?: string;
  /** The location's table format: "now" is its live files, as its log or metadata says. @default DEFAULT_TABLE_FORMAT */
  readonly format?: TableFormatName;
  /** The settings the table is read through (`formatSettingsOf(…, 'read')`). @default the format's defaults */
  readonly formatSettings?: TableFormatSettings;
}

/** Reads the history items of `partitions` of `table`, newest first, at most `limit`. */
export type HistorySource = (
  table: string,
  partitions: readonly string[],
  limit: number,
) => Promise<readonly HistoryRow[]>;

export interface ReportResult {
  readonly model: ReportModel;
  readonly htmlPath: string;
  readonly bytes: number;
}

/**
 * Builds and writes the report. The "before" of each partition is reconstructed from its latest
 * carried-out run's stored plan (see buildReportModel); history comes from the state table only when one
 * is named, and the page says so when it is not.
 *
 * Quarantined files come from the same place `quarantine` reads them: the state table when one is named
 * (the deployed workflow's), else the store's `_lake-compactor/quarantine/` (the CLI's `compact`).
 *
 * @param history replaces the DynamoDB reader (tests).
 * @param quarantine replaces the quarantine the options name (tests).
 */
export async function runReport(
  uri: string,
  options: ReportOptions,
  io: ReportIo,
  history?: HistorySource,
  quarantine?: Quarantine,
): Promise<ReportResult> {
  const opened = openStore(uri, { env: io.env, workRoot: options.workRoot });
  const { store, prefix } = opened;
  const now = io.clock.now();
  const table = options.table ?? tableNameOf(uri);
  // The table's live files as its format sees them (as plan and compact read it): for a format that keeps a log or
  // metadata, what that says, never its listing, whose removed-but-not-yet-vacuumed files are not the table. A location that
  // is or holds such a table read as plain Parquet is refused, as plan refuses it.
  const format = readingFormat(
    opened,
    table,
    options.format ?? DEFAULT_TABLE_FORMAT,
    options.formatSettings,
    io,
  );
  await refuseEnclosingForeignTable(opened, { includeLocation: false });
  const inventory = await format.snapshot(store, prefix, { now });
  refuseForeignAmong(store, prefix, inventory.foreignTables);
  requireParquetFiles(inventory, uri, 'report');
  const notes: string[] = [];
  const plans = await readPlans(store, opened.workRoot, options.maxPlans ?? 1000, notes);
  const stateTable = options.stateTable ?? io.env.LAKE_COMPACTOR_TABLE;
  const partitions = inventory.partitions.map((p) => p.partition);
  let runs: ReportRun[] | undefined;
  if (history !== undefined || stateTable) {
    const source = history ?? dynamoHistory(stateTable as string, io.env);
    const limit = options.limit ?? 500;
    const rows = await source(table, partitions, limit);
    runs = rows.map(toReportRun);
    if (rows.length >= limit) notes.push(`Only the newest ${limit} runs were read (--limit).`);
  }
  // The runs the CLI made here: its journal records what a state table's history would (none is kept for them).
  const journal = (await readJournalRuns(opened, { name: table, root: prefix }, options.limit ?? 500)).map(
    journalReportRun,
  );
  const quarantineSource = quarantine ?? openQuarantine(opened, options.stateTable, io.env);
  const records = await quarantineSource.listTable(table);
  const { active } = matchQuarantine(
    records,
    inventory.partitions.flatMap((p) => p.files),
  );
  const held = new Set(active);
  const model = buildReportModel({
    table,
    location: uri,
    tableRoot: prefix,
    generatedAt: now,
    targetFileSizeBytes:
      options.targetMb !== undefined
        ? Math.round(options.targetMb * MiB)
        : // The target this table's newest plan used, so "small" means what it meant to the compactor.
          (plans
            .filter((p) => (p.groupFiles[0]?.key ?? p.skippedKeys[0] ?? '').startsWith(prefix))
            .sort((a, b) => b.listedAt - a.listedAt)[0]?.targetFileSizeBytes ?? 128 * MiB),
    smallFileRatio: DEFAULT_PLAN_OPTIONS.smallFileRatio,
    listing: inventory.partitions.map((p) => ({
      partition: p.partition,
      files: p.files.map((f) => ({ key: f.key, size: f.size })),
    })),
    plans,
    ...(runs === undefined ? {} : { history: runs }),
    journal,
    notes,
    quarantine: {
      source: quarantineSource.description,
      files: records.map((r) => ({ ...r, held: held.has(r) })),
    },
  });
  const html = renderReportHtml(model);
  try {
    await writeFile(options.html, html, 'utf8');
  } catch (err) {
    throw new InvalidInputError(
      `Cannot write the report to ${options.html} (${(err as Error).message}); pass --html with a path in an existing, writable folder`,
    );
  }
  const s = model.summary;
  io.out(
    `wrote ${options.html}: ${plural(s.partitions, 'partition')}, ${plural(s.filesNow, 'data file')} now` +
      (s.filesBefore === undefined
        ? ''
        : ` (${s.filesBefore} before → ${s.filesNowInCompared ?? 0} now in ${plural(s.partitionsWithBefore, 'compacted partition')})`) +
      `, ${plural(s.runs, 'run')}`,
  );
  for (const note of model.notes) io.out(`note: ${printable(note)}`);
  return { model, htmlPath: options.html, bytes: Buffer.byteLength(html) };
}

/** The stored plans (`<work root>plans/<runId>.json` at the store's root), newest `max` by write time. */
async function readPlans(
  store: ObjectStore,
  workRoot: string,
  max: number,
  notes: string[],
): Promise<ReportPlan[]> {
  const found: ObjectInfo[] = [];
  for await (const object of store.listAll(workFolder(workRoot, 'plans'))) {
    if (parsePlanKey(workRoot, object.key) !== undefined) found.push(object);
  }
  found.sort((a, b) => b.lastModified.getTime() - a.lastModified.getTime());
  if (found.length > max)
    notes.push(`Only the newest ${max} of ${found.length} stored plans were read (--max-plans).`);
  const limit = pLimit(16);
  let unreadable = 0;
  const plans = await Promise.all(
    found.slice(0, max).map((object) =>
      limit(async (): Promise<ReportPlan | undefined> => {
        const runId = object.key.slice(object.key.lastIndexOf('/') + 1, -'.json'.length);
        let parsed: ReturnType<typeof partitionPlanSchema.safeParse>;
        try {
          parsed = partitionPlanSchema.safeParse(
            JSON.parse(new TextDecoder().decode(await store.get(object.key))),
          );
        } catch {
          unreadable += 1;
          return undefined;
        }
        if (!parsed.success) {
          unreadable += 1;
          return undefined;
        }
        const plan = parsed.data;
        return {
          runId,
          partition: plan.partition,
          listedAt: plan.snapshot.listedAt,
          inputFiles: plan.summary.inputFiles,
          inputBytes: plan.summary.inputBytes,
          groupFiles: plan.groups.flatMap((g) => g.files.map((f) => ({ key: f.key, size: f.size }))),
          skippedKeys: plan.skipped.map((s) => s.key),
          groups: plan.groups.length,
          targetFileSizeBytes: plan.options.targetFileSizeBytes,
        };
      }),
    ),
  );
  if (unreadable > 0)
    notes.push(
      `${unreadable} stored plan${unreadable === 1 ? ' was' : 's were'} not valid plan JSON and were left out.`,
    );
  return plans.filter((p): p is ReportPlan => p !== undefined);
}

function dynamoHistory(tableName: string, env: ReportIo['env']): HistorySource {
  return (table, partitions, limit) =>
    readHistory(
      DynamoDBDocumentClient.from(dynamoDbClientFromEnv(env)),
      tableName,
      partitions.map((partition) => ({ table, partition })),
      limit,
    );
}

function num(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) ? value : undefined;
}

/** A run of the CLI's journal as the report shows it: the run's own inputs → outputs, bytes, cost and duration. */
export function journalReportRun(run: JournalRun): ReportRun {
  const outcome = run.undoneAt === undefined ? run.state : `${run.state}, undone`;
  return {
    runId: run.runId,
    partition: run.partition,
    outcome,
    status: run.state === 'open' ? 'OPEN' : run.firstError === undefined ? 'SUCCEEDED' : 'FAILED',
    startedAt: run.startedAt,
    // An open run has not finished: status OPEN, and the runs table shows no duration for it.
    finishedAt: run.finishedAt ?? run.startedAt,
    groupsDone: run.groupsDone,
    filesBefore: run.inputFiles,
    filesAfter: run.outputFiles,
    bytesBefore: run.bytesBefore,
    bytesAfter: run.bytesAfter,
    bytesRewritten: run.bytesBefore,
    estimatedCostUsd: run.estimatedCostUsd,
  };
}

/** The fields of a history item the report uses; anything missing stays missing. */
export function toReportRun(row: HistoryRow): ReportRun {
  const cost = row.estimatedCost as { usd?: unknown } | undefined;
  const fields: Record<string, number | undefined> = {
    groupsDone: num(row.groupsDone),
    filesBefore: num(row.filesBefore),
    filesAfter: num(row.filesAfter),
    bytesBefore: num(row.bytesBefore),
    bytesAfter: num(row.bytesAfter),
    bytesRewritten: num(row.bytesRewritten),
    estimatedCostUsd: num(cost?.usd),
  };
  return {
    runId: row.runId,
    partition: row.partition,
    outcome: row.outcome,
    status: row.status,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
    ...(row.dryRun === true ? { dryRun: true } : {}),
    ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)),
  };
}
