// Tiering: moves a partition's data files to colder storage classes by the age of the partition's date
// value (never the object's, which compaction resets), only ever colder, never small files into IA classes.
//
// Mechanism: an in-place CopyObject onto the same key with the new StorageClass, conditioned on the ETag
// listed (a file replaced meanwhile is left alone). Decisions are data (`planTiering`), then executed
// (`executeTiering`); like vacuum, a call examines a bounded number of objects and returns a cursor. A foreign
// table (at, above or inside a configured root) is never tiered: its log owns those files. A table configured with
// a format that says tiering is not supported for it (TableMaintenance.tieringUnsupported) is skipped with the
// format's reason, never as a foreign table: a copy onto the same key keeps the bytes, but resets the object's
// modification time (which a format's VACUUM or remove_orphan_files reads to spare young files),
// adds a version on a versioned bucket, and such a partition is a set of values in the log or manifests, not a
// folder a date can be read from; S3 lifecycle rules on the prefix do the job.
import { z } from 'zod';
import type { Clock } from '../../ports/clock.js';
import type { ObjectInfo, ObjectStore } from '../../ports/object-store.js';
import { InvalidInputError, PreconditionFailedError } from '../errors.js';
import {
  aFormat,
  directoryOf,
  type ForeignTable,
  ForeignTableLedger,
  type FoundForeignTable,
  foreignFormatOfKey,
  foreignTableNote,
} from '../formats/foreign-tables.js';
import { TABLE_FORMATS } from '../formats/index.js';
import { keyRefusal } from '../keys.js';
import { classifyObject, parsePartition } from '../partition.js';
import { type PartitionDateFormat, partitionDateFromValues } from '../policy.js';
import type { TableConfig } from '../table-config.js';
import { mayBeWorkArea } from '../workflow/layout.js';

const DAY = 86_400_000;

/** Classes tiering can move to, warmest first. */
export const TIERING_STORAGE_CLASSES = [
  'INTELLIGENT_TIERING',
  'STANDARD_IA',
  'ONEZONE_IA',
  'GLACIER_IR',
  'GLACIER',
  'DEEP_ARCHIVE',
] as const;
export type TieringStorageClass = (typeof TIERING_STORAGE_CLASSES)[number];

/** How cold a class is; tiering only ever moves an object to a higher rank. Unknown classes rank as STANDARD. */
const CLASS_RANK: Readonly<Record<string, number>> = {
  STANDARD: 0,
  REDUCED_REDUNDANCY: 0,
  INTELLIGENT_TIERING: 1,
  STANDARD_IA: 2,
  ONEZONE_IA: 2,
  GLACIER_IR: 3,
  GLACIER: 4,
  DEEP_ARCHIVE: 5,
};

/**
 * Classes that bill every object as at least 128 KB (and INTELLIGENT_TIERING, which never moves objects
 * under 128 KB out of its frequent tier): a smaller object costs more there than in STANDARD.
 */
export const MIN_BILLABLE_128K_CLASSES: readonly string[] = [
  'STANDARD_IA',
  'ONEZONE_IA',
  'GLACIER_IR',
  'INTELLIGENT_TIERING',
];

/** 128 KiB: below this, objects stay out of the {@link MIN_BILLABLE_128K_CLASSES}. */
export const SMALL_OBJECT_BYTES = 128 * 1024;

export const tieringRuleSchema = z.strictObject({
  /** Partition age (days since the partition's date value) from which the rule applies. */
  afterDays: z.number().int().min(1),
  storageClass: z.enum(TIERING_STORAGE_CLASSES),
});
export type TieringRule = z.infer<typeof tieringRuleSchema>;

/** Rules in ascending `afterDays`, each to a strictly colder class than the one before. */
export const tieringRulesSchema = z
  .array(tieringRuleSchema)
  .min(1)
  .superRefine((rules, ctx) => {
    rules.forEach((rule, i) => {
      const previous = rules[i - 1];
      if (previous === undefined) return;
      if (rule.afterDays <= previous.afterDays) {
        ctx.addIssue({
          code: 'custom',
          path: [i, 'afterDays'],
          message: 'rules must be in ascending afterDays',
        });
      }
      if ((CLASS_RANK[rule.storageClass] ?? 0) <= (CLASS_RANK[previous.storageClass] ?? 0)) {
        ctx.addIssue({
          code: 'custom',
          path: [i, 'storageClass'],
          message: `${rule.storageClass} is not colder than ${previous.storageClass}`,
        });
      }
    });
  });

/**
 * Defaults: IA after 30 days, Glacier Instant Retrieval after 90. No DEEP_ARCHIVE by default: query
 * engines cannot read it without a restore, so that step must be an explicit decision per table.
 */
export const DEFAULT_TIERING_RULES: readonly TieringRule[] = [
  { afterDays: 30, storageClass: 'STANDARD_IA' },
  { afterDays: 90, storageClass: 'GLACIER_IR' },
];

export const tieringInputSchema = z.strictObject({
  /** Table names; every configured table with a date column when omitted. */
  tables: z.array(z.string().min(1)).min(1).optional(),
  /** Report the moves, make none. Defaults to true: moving data between classes has costs. */
  dryRun: z.boolean().default(true),
  /** Rules for every table without its own entry in `tableRules`. */
  rules: tieringRulesSchema.optional(),
  /** Rules by table name. */
  tableRules: z.record(z.string(), tieringRulesSchema).optional(),
  /** Objects below this stay out of 128 KB-minimum classes. */
  minObjectBytes: z.number().int().min(0).default(SMALL_OBJECT_BYTES),
  /** Objects examined by one call before it returns a cursor. */
  maxObjects: z.number().int().positive().max(10_000_000).default(100_000),
  cursor: z.string().min(1).optional(),
});
export type TieringInput = z.input<typeof tieringInputSchema>;
export type TieringRequest = z.output<typeof tieringInputSchema>;

/** @throws InvalidInputError listing every invalid field. */
export function parseTieringRequest(input: unknown): TieringRequest {
  const parsed = tieringInputSchema.safeParse(input ?? {});
  if (!parsed.success) {
    throw new InvalidInputError(
      'The tiering input is invalid; fix these fields',
      parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  return parsed.data;
}

/** Whole days from the partition's date to `now` (a partition dated today is 0 days old). */
export function partitionAgeDays(partitionDate: number, now: number): number {
  return Math.floor((now - partitionDate) / DAY);
}

/** The rule that applies at this age: the one with the largest `afterDays` not above it. */
export function ruleForAge(ageDays: number, rules: readonly TieringRule[]): TieringRule | undefined {
  let chosen: TieringRule | undefined;
  for (const rule of rules) if (ageDays >= rule.afterDays) chosen = rule;
  return chosen;
}

export type TieringDecision =
  | { readonly action: 'move'; readonly to: TieringStorageClass; readonly reason: string }
  | { readonly action: 'keep'; readonly reason: string };

/** Decides over one data object of a partition of known age. */
export function decideTiering(
  object: Pick<ObjectInfo, 'size' | 'storageClass'>,
  ageDays: number,
  rules: readonly TieringRule[],
  minObjectBytes: number,
): TieringDecision {
  const current = (object.storageClass ?? 'STANDARD').toUpperCase();
  const rule = ruleForAge(ageDays, rules);
  if (rule === undefined)
    return { action: 'keep', reason: `partition is ${ageDays} days old: no rule applies yet` };
  const to = rule.storageClass;
  if (current === to) return { action: 'keep', reason: `already in ${to}` };
  if ((CLASS_RANK[current] ?? 0) > (CLASS_RANK[to] ?? 0)) {
    return { action: 'keep', reason: `in ${current}, colder than ${to}: tiering never warms data up` };
  }
  if (MIN_BILLABLE_128K_CLASSES.includes(to) && object.size < minObjectBytes) {
    return {
      action: 'keep',
      reason: `${object.size} bytes is under ${minObjectBytes}: ${to} bills at least 128 KB per object, so moving it would cost more (compact the partition first)`,
    };
  }
  return {
    action: 'move',
    to,
    reason: `partition is ${ageDays} days old (rule: after ${rule.afterDays} days → ${to})`,
  };
}

export interface TieringMove {
  readonly bucket: string;
  readonly key: string;
  readonly table: string;
  readonly partition: string;
  readonly size: number;
  readonly etag: string;
  readonly from: string;
  readonly to: TieringStorageClass;
  readonly reason: string;
}

export interface TieringPlan {
  readonly dryRun: boolean;
  readonly moves: readonly TieringMove[];
  /** How many objects were kept, by reason (reasons without per-object numbers). */
  readonly kept: Readonly<Record<string, number>>;
  /** Tables that cannot be tiered, with why. */
  readonly skippedTables: readonly { readonly table: string; readonly reason: string }[];
  readonly examined: number;
  /** Foreign tables found below a configured root and left alone, one line each. */
  readonly notes?: readonly string[];
  /**
   * Foreign tables met: a configured table that is (or lies in) one was skipped (see
   * `skippedTables`), one found below a configured root was left alone (see `notes`).
   */
  readonly foreignTables?: readonly FoundForeignTable[];
  readonly cursor?: string;
}

export interface TieringDeps {
  readonly tables: readonly TableConfig[];
  /** The store of `table`'s objects in `bucket` (with per-table isolation, it reaches nothing of another table). */
  readonly storeFor: (bucket: string, table?: string) => ObjectStore;
  readonly clock: Clock;
  readonly shouldStop?: () => boolean;
}

interface Cursor {
  readonly table: string;
  readonly token?: string;
}

export interface PlanTieringOptions {
  /**
   * Stop where the current table's listing ends, with the cursor of the next table: one call covers one table, so
   * an entry point can give each table its own turn and time budget (shared/maintenance-runtime.ts). The pass's
   * order is `deps.tables`' order.
   */
  readonly unit?: boolean;
}

/** The tables a request tiers, in `all`'s order, and the ones it cannot tier with why. */
function tieredTables(
  all: readonly TableConfig[],
  named: readonly string[] | undefined,
): { tables: TableConfig[]; skippedTables: { table: string; reason: string }[] } {
  const unknown = (named ?? []).filter((n) => !all.some((t) => t.name === n));
  if (unknown.length > 0) {
    throw new InvalidInputError(
      `Unknown table(s) ${unknown.join(', ')}; configured tables: ${all.map((t) => t.name).join(', ')}`,
    );
  }
  const skippedTables: { table: string; reason: string }[] = [];
  const tables: TableConfig[] = [];
  for (const table of all) {
    if (named !== undefined && !named.includes(table.name)) continue;
    // A format whose log or metadata reads the files' modification times says why it is never tiered.
    const unsupported = tieringUnsupportedFor(table.format);
    if (unsupported !== undefined) {
      skippedTables.push({ table: table.name, reason: unsupported });
      continue;
    }
    if (table.dateFormat === undefined || table.bucket === undefined) {
      skippedTables.push({
        table: table.name,
        reason:
          table.bucket === undefined
            ? 'no bucket configured'
            : 'no dateColumn/dateFormat configured: tiering goes by the partition date, never the object age',
      });
      continue;
    }
    tables.push(table);
  }
  return { tables, skippedTables };
}

/**
 * The table a call from tiering `cursor` (undefined: the pass's start) works on, over `all` in their order, selected
 * by `request`; undefined when there is none to tier.
 */
export function tieringUnitAt(
  all: readonly TableConfig[],
  request: Pick<TieringRequest, 'tables'>,
  cursor: string | undefined,
): string | undefined {
  return cursor === undefined
    ? tieredTables(all, request.tables).tables[0]?.name
    : decodeCursor(cursor).table;
}

/**
 * The cursor of the table after `table` (over `all` in their order, selected by `request`): where a pass goes on
 * when that table's turn is given up. Undefined when nothing comes after it (the pass is complete).
 */
export function tieringCursorAfter(
  all: readonly TableConfig[],
  request: Pick<TieringRequest, 'tables'>,
  table: string | undefined,
): string | undefined {
  const { tables } = tieredTables(all, request.tables);
  const index = tables.findIndex((t) => t.name === table);
  const next = index === -1 ? undefined : tables[index + 1];
  return next === undefined ? undefined : encodeCursor({ table: next.name });
}

/** Lists what should move where, up to the request's budget. Reads only. */
export async function planTiering(
  deps: TieringDeps,
  request: TieringRequest,
  options: PlanTieringOptions = {},
): Promise<TieringPlan> {
  const now = deps.clock.now();
  const { tables, skippedTables } = tieredTables(deps.tables, request.tables);
  const moves: TieringMove[] = [];
  const kept: Record<string, number> = {};
  const keep = (reason: string): void => {
    kept[reason] = (kept[reason] ?? 0) + 1;
  };
  const notes: string[] = [];
  const ledger = new ForeignTableLedger(deps.storeFor);
  const foreignTables = ledger.found;
  /** Records a foreign table once per call; a nested one also gets a note. */
  const foreign = (table: TableConfig, found: ForeignTable, nested: boolean): void => {
    const bucket = table.bucket as string;
    if (!ledger.record(bucket, table.name, found)) return;
    if (nested) {
      notes.push(
        `${table.name}: ${foreignTableNote(deps.storeFor(bucket), `everything under ${found.root}`, found, { nested: true, tiering: true })}`,
      );
    }
  };
  let index = 0;
  let token: string | undefined;
  if (request.cursor !== undefined) {
    const cursor = decodeCursor(request.cursor);
    index = tables.findIndex((t) => t.name === cursor.table);
    if (index === -1) {
      throw new InvalidInputError(
        `The tiering cursor names table "${cursor.table}", which this call does not tier; pass the same tables as the call that returned it, or omit the cursor`,
      );
    }
    token = cursor.token;
  }
  let examined = 0;
  const unit = tables[index]?.name;
  while (index < tables.length) {
    const table = tables[index] as TableConfig;
    if (
      (options.unit === true && table.name !== unit) ||
      examined >= request.maxObjects ||
      deps.shouldStop?.() === true
    ) {
      return result(encodeCursor(token === undefined ? { table: table.name } : { table: table.name, token }));
    }
    const rules = request.tableRules?.[table.name] ?? request.rules ?? DEFAULT_TIERING_RULES;
    const bucket = table.bucket as string;
    const root = table.prefix === '' ? '' : `${table.prefix}/`;
    const probe = ledger.probe(bucket);
    const around = await probe.around(root, { includeLocation: true });
    if (around !== undefined) {
      // The table is (or lies in) a foreign table: none of its files is ours to move.
      skippedTables.push({
        table: table.name,
        reason: foreignTableNote(deps.storeFor(bucket), 'the whole table', around, {
          nested: false,
          tiering: true,
        }),
      });
      foreign(table, around, false);
      index++;
      token = undefined;
      continue;
    }
    const page = await deps
      .storeFor(bucket, table.name)
      .list(root, { token, maxKeys: Math.min(1000, request.maxObjects - examined) });
    examined += page.objects.length;
    for (const object of page.objects) {
      // A deployment's work area (ours or another's) in a bucket-root table holds no table data.
      if (table.prefix === '' && mayBeWorkArea(object.key)) continue;
      const marker = foreignFormatOfKey(object.key);
      if (marker !== undefined) foreign(table, { ...marker, evidenceKey: object.key }, true);
      if (classifyObject({ key: object.key, size: object.size, tableRoot: table.prefix }).kind !== 'data') {
        keep('not a data file');
        continue;
      }
      const parsed = parsePartition(object.key, table.prefix);
      const date =
        parsed === undefined
          ? undefined
          : partitionDateFromValues(parsed.values, {
              ...(table.dateColumn === undefined ? {} : { column: table.dateColumn }),
              format: table.dateFormat as PartitionDateFormat,
            });
      if (parsed === undefined || date === undefined) {
        keep('partition has no readable date value');
        continue;
      }
      const decision = decideTiering(object, partitionAgeDays(date, now), rules, request.minObjectBytes);
      if (decision.action === 'keep') {
        keep(decision.reason.replace(/\d+ (bytes|days)/g, 'N $1'));
        continue;
      }
      // A data file inside a foreign table below the root (its log or metadata may be on a later
      // page, or in a later call): asked of the folders, once per folder.
      const inside = await probe.around(directoryOf(object.key), { includeLocation: true });
      if (inside !== undefined) {
        foreign(table, inside, true);
        keep(`inside ${aFormat(inside.format)} table: its log or metadata, not the listing, owns the file`);
        continue;
      }
      moves.push({
        bucket,
        key: object.key,
        table: table.name,
        partition: parsed.partitionPath,
        size: object.size,
        etag: object.etag,
        from: object.storageClass ?? 'STANDARD',
        to: decision.to,
        reason: decision.reason,
      });
    }
    if (page.nextToken === undefined) {
      index++;
      token = undefined;
    } else {
      token = page.nextToken;
    }
  }
  return result(undefined);

  function result(cursor: string | undefined): TieringPlan {
    return {
      dryRun: request.dryRun,
      moves,
      kept,
      skippedTables,
      examined,
      ...(notes.length === 0 ? {} : { notes }),
      ...(foreignTables.length === 0 ? {} : { foreignTables }),
      ...(cursor === undefined ? {} : { cursor }),
    };
  }
}

export interface TieringReport {
  readonly dryRun: boolean;
  readonly examined: number;
  /** Objects and bytes moved (dry-run: that would move), by target class. */
  readonly moved: Readonly<Record<string, { count: number; bytes: number }>>;
  /** Up to `listLimit` of the moves, with reasons. */
  readonly moves: readonly TieringMove[];
  readonly kept: Readonly<Record<string, number>>;
  readonly skippedTables: readonly { readonly table: string; readonly reason: string }[];
  /** Foreign tables found below a configured root and left alone, one line each. */
  readonly notes?: readonly string[];
  /** Objects replaced since they were listed: left alone. */
  readonly changed: readonly string[];
  readonly failed: readonly { readonly key: string; readonly message: string }[];
  readonly cursor?: string;
}

/**
 * Why tiering may not move `move`, or undefined: its key must be one the confinement rule accepts under its table's
 * root (any root, when the tables are not given). The last line before the copy, whoever planned it.
 */
export function tieringRefusal(
  move: Pick<TieringMove, 'key' | 'table'>,
  tables: TieringDeps['tables'] | undefined,
): string | undefined {
  const table = tables?.find((t) => t.name === move.table);
  const refused = keyRefusal(table?.prefix ?? '', move.key);
  return refused === undefined ? undefined : `not moved: the key ${refused}`;
}

/**
 * Carries out a plan: one in-place copy per object with the new class, conditioned on the listed ETag.
 * A dry-run copies nothing. Copies run a few at a time (`concurrency`). A move whose key the confinement rule
 * refuses ({@link tieringRefusal}) fails without a request.
 */
export async function executeTiering(
  deps: Pick<TieringDeps, 'storeFor'> & { readonly tables?: TieringDeps['tables'] },
  plan: TieringPlan,
  options: { readonly listLimit?: number; readonly concurrency?: number } = {},
): Promise<TieringReport> {
  const moved: Record<string, { count: number; bytes: number }> = {};
  const changed: string[] = [];
  const failed: { key: string; message: string }[] = [];
  const done: TieringMove[] = [];
  const queue = [...plan.moves];
  const worker = async (): Promise<void> => {
    for (let move = queue.shift(); move !== undefined; move = queue.shift()) {
      if (plan.dryRun) {
        done.push(move);
        continue;
      }
      const refused = tieringRefusal(move, deps.tables);
      if (refused !== undefined) {
        failed.push({ key: move.key, message: refused });
        continue;
      }
      try {
        await deps
          .storeFor(move.bucket, move.table)
          .copy(move.key, move.key, { ifMatch: move.etag, storageClass: move.to });
        done.push(move);
      } catch (err) {
        if (err instanceof PreconditionFailedError) changed.push(move.key);
        else failed.push({ key: move.key, message: (err as Error).message });
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency ?? 8 }, worker));
  done.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  for (const move of done) {
    const tally = moved[move.to] ?? { count: 0, bytes: 0 };
    tally.count++;
    tally.bytes += move.size;
    moved[move.to] = tally;
  }
  return {
    dryRun: plan.dryRun,
    examined: plan.examined,
    moved,
    moves: done.slice(0, options.listLimit ?? 1000),
    kept: plan.kept,
    skippedTables: plan.skippedTables,
    ...(plan.notes === undefined ? {} : { notes: plan.notes }),
    changed,
    failed,
    ...(plan.cursor === undefined ? {} : { cursor: plan.cursor }),
  };
}

/** Plans and executes one call's share of the work (with `unit`: one table's, see PlanTieringOptions). */
export async function tier(
  deps: TieringDeps,
  request: TieringRequest,
  options: { readonly listLimit?: number; readonly concurrency?: number } & PlanTieringOptions = {},
): Promise<TieringReport> {
  return executeTiering(deps, await planTiering(deps, request, options), options);
}

/** One report of several calls' (an isolated pass's units), as if one call had made them; cursor: the last's. */
export function mergeTieringReports(
  reports: readonly TieringReport[],
  dryRun: boolean,
  listLimit = 1000,
): TieringReport {
  const moved: Record<string, { count: number; bytes: number }> = {};
  const kept: Record<string, number> = {};
  const skipped = new Map<string, { table: string; reason: string }>();
  for (const r of reports) {
    for (const [to, t] of Object.entries(r.moved)) {
      const sum = moved[to] ?? { count: 0, bytes: 0 };
      moved[to] = { count: sum.count + t.count, bytes: sum.bytes + t.bytes };
    }
    for (const [reason, n] of Object.entries(r.kept)) kept[reason] = (kept[reason] ?? 0) + n;
    for (const s of r.skippedTables) skipped.set(s.table, s);
  }
  const notes = [...new Set(reports.flatMap((r) => r.notes ?? []))];
  const cursor = reports.at(-1)?.cursor;
  return {
    dryRun,
    examined: reports.reduce((n, r) => n + r.examined, 0),
    moved,
    moves: reports.flatMap((r) => r.moves).slice(0, listLimit),
    kept,
    skippedTables: [...skipped.values()],
    ...(notes.length === 0 ? {} : { notes }),
    changed: reports.flatMap((r) => r.changed),
    failed: reports.flatMap((r) => r.failed),
    ...(cursor === undefined ? {} : { cursor }),
  };
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify(cursor)).toString('base64url');
}

function decodeCursor(raw: string): Cursor {
  try {
    const cursor = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as Cursor;
    if (typeof cursor.table === 'string') return cursor;
  } catch {
    // fall through
  }
  throw new InvalidInputError(
    'The tiering cursor is not one this function returned; pass the `cursor` of the previous result unchanged, or omit it to start over',
  );
}

/**
 * Why tables of `format` are never tiered: its maintenance's own reason, or — for a format whose log or timeline
 * owns every file under its root but that has no maintenance of its own to say so — that its live files are its
 * timeline's to say, so moving one to an archive class would break its readers. Undefined: tiered by listing.
 */
export function tieringUnsupportedFor(format: string): string | undefined {
  const registered = TABLE_FORMATS.get(format);
  if (registered === undefined) return undefined;
  if (registered.maintenance?.tieringUnsupported !== undefined)
    return registered.maintenance.tieringUnsupported;
  return registered.ownsEverythingUnderRoot && registered.maintenance === undefined
    ? `tiering is not supported for ${registered.title} tables yet; use S3 lifecycle rules on the table prefix`
    : undefined;
}
