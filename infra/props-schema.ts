// The one schema of LakeCompactorProps, which is also the JSON deployment config: strict objects at every
// level (an unknown key is an error naming its path and the keys it could have meant), checked all at once.
//
// The table fields, policy overrides, tiering rules and vacuum settings are the schemas the functions parse
// at cold start (functions/core), so synth refuses exactly what a function would. The checks that relate
// props to each other (overlapping tables, the data bucket's lifecycle against vacuum, versioned buckets,
// per-table tiering rules) run on whatever parsed, so one synth reports every problem of the props.
import { RemovalPolicy, Token } from 'aws-cdk-lib';
import * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import { z } from 'zod';
import { tieringRulesSchema } from '../functions/core/maintenance/tiering.js';
import { MIN_RETENTION_HOURS, vacuumInputSchema } from '../functions/core/maintenance/vacuum.js';
import { checkTableFields, crossTableIssues, tableFieldSchemas } from '../functions/core/table-config.js';
import { DEFAULT_WORK_ROOT, workRootProblem } from '../functions/core/workflow/layout.js';
import { FORMAT_RETENTION_PROPS, FORMAT_VACUUM_SHAPE, formatPropsProblems } from './formats/index.js';
import type {
  LakeCompactorAlarmProps,
  LakeCompactorDataBucketProps,
  LakeCompactorProps,
  LakeCompactorSweepProps,
  LakeCompactorTable,
  LakeCompactorTriggerProps,
} from './lake-compactor-props.js';
import type { TieringScheduleProps, VacuumScheduleProps } from './maintenance-props.js';
import { scheduleExpressionProblem } from './schedule-expression.js';
import { TABLE_ISOLATION_MODES } from './table-isolation.js';

/** A shape with one schema per prop of `T`: adding a prop to an interface without a schema fails typecheck. */
type ShapeOf<T> = { readonly [K in keyof Required<T>]: z.ZodType };

/**
 * `shape` unchanged, typed so that a key `T` does not declare fails typecheck: the converse of {@link ShapeOf}. A
 * shape spreading schemas shared with the functions (`tableFieldSchemas`) escapes `satisfies`' excess-key check, so a
 * field the JSON config accepts could otherwise be missing from the TypeScript props (as `schemaEvolution` was).
 */
function declaredIn<T>() {
  return <S extends { readonly [K in keyof S]: K extends keyof T ? z.ZodType : never }>(shape: S): S => shape;
}

/** A whole number in [min, max]; a deploy-time number (a CDK token) passes, it cannot be checked here. */
function wholeNumber(min: number, max: number | undefined, why: string) {
  const range = max === undefined ? `of at least ${min}` : `from ${min} to ${max}`;
  return z
    .number()
    .refine((n) => Token.isUnresolved(n) || (Number.isInteger(n) && n >= min && n <= (max ?? n)), {
      error: (issue) => `${String(issue.input)} is not a whole number ${range}; ${why}`,
    });
}

/** A construct-typed prop (a key, a bucket, a topic): JSON cannot hold one, code can. */
function construct<T>(what: string, is: (value: object) => boolean) {
  return z.custom<T>((value) => typeof value === 'object' && value !== null && is(value), {
    error: `must be ${what}, which only code can pass (the JSON config cannot hold one)`,
  });
}

/** An EventBridge schedule: an expression string (JSON-friendly) or an `events.Schedule`, checked as EventBridge would. */
const scheduleSchema = z
  .custom<events.Schedule | string>(
    (value) =>
      typeof value === 'string' ||
      value instanceof events.Schedule ||
      (typeof value === 'object' &&
        value !== null &&
        typeof Reflect.get(value, 'expressionString') === 'string'),
    { error: 'must be an EventBridge schedule expression, e.g. "rate(15 minutes)" or "cron(0 4 * * ? *)"' },
  )
  .superRefine((value, ctx) => {
    const expression = typeof value === 'string' ? value : value.expressionString;
    if (Token.isUnresolved(expression)) return;
    const problem = scheduleExpressionProblem(expression);
    if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
  });

/** An S3 bucket name as S3 requires it (a deploy-time name passes). */
const bucketNameSchema = z
  .string()
  .refine((name) => Token.isUnresolved(name) || /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name), {
    error: (issue) =>
      `${JSON.stringify(issue.input)} is not an S3 bucket name (3-63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit)`,
  });

const memorySchema = z.number(); // range checked with the legacy message in `memoryIssues`

const tableShape = {
  ...tableFieldSchemas,
  bucketName: bucketNameSchema.optional(),
  kmsKeyArn: z.string().optional(), // format checked in `kmsKeyIssues`
  eventSource: z.enum(['s3-notifications', 'eventbridge']).optional(),
} satisfies ShapeOf<LakeCompactorTable>;

const tableSchema = z
  .strictObject(declaredIn<LakeCompactorTable>()(tableShape))
  .superRefine(checkTableFields);

const dataBucketShape = {
  removalPolicy: z.enum(RemovalPolicy).optional(),
  noncurrentVersionExpirationDays: z.number().optional(),
  stagingExpirationDays: z.number().optional(),
  abortIncompleteMultipartUploadDays: z.number().optional(),
  encryptionKey: construct('a kms.IKey', (v) => 'keyArn' in v).optional(),
  serverAccessLogsBucket: construct('an s3.IBucket', (v) => 'bucketName' in v && 'bucketArn' in v).optional(),
  serverAccessLogsPrefix: z.string().optional(),
} satisfies ShapeOf<LakeCompactorDataBucketProps>;

const workflowShape = {
  versionedBuckets: z.array(z.string().min(1)).optional(),
  inlineGroupLimit: wholeNumber(
    1,
    undefined,
    'plans with more groups than this run in the Distributed Map',
  ).optional(),
  inlineMaxConcurrency: wholeNumber(
    1,
    40,
    'an inline Map runs at most 40 iterations at once (lower inlineGroupLimit to use the Distributed Map sooner)',
  ).optional(),
  distributedMaxConcurrency: wholeNumber(
    1,
    10_000,
    'the Distributed Map runs at most 10,000 children at once, and 0 would mean no limit at all',
  ).optional(),
  compactMemoryMb: memorySchema.optional(),
  quietMaxRounds: wholeNumber(
    1,
    undefined,
    'a run checks at least once that the partition is quiet',
  ).optional(),
  eventBus: construct('an events.IEventBus', (v) => 'eventBusArn' in v).optional(),
  notificationTopic: construct('an sns.ITopic', (v) => 'topicArn' in v).optional(),
  logRetention: z.enum(logs.RetentionDays).optional(),
  executionTimeoutHours: wholeNumber(
    1,
    8760,
    'a Standard execution runs at most one year (8760 h); the default 24 h bounds a stuck run',
  ).optional(),
} satisfies ShapeOf<NonNullable<LakeCompactorProps['workflow']>>;

// The caps' ranges and the table names of maxConcurrentRunsByTable are checked by `runCapIssues`.
const triggersShape = {
  dryRun: z.boolean().optional(),
  maxConcurrentRuns: z.number().optional(),
  maxConcurrentRunsPerTable: z.number().optional(),
  maxConcurrentRunsByTable: z.record(z.string(), z.number()).optional(),
} satisfies ShapeOf<LakeCompactorTriggerProps>;

const sweepShape = {
  schedule: scheduleSchema.optional(),
  reconcileSchedule: scheduleSchema.optional(),
} satisfies ShapeOf<LakeCompactorSweepProps>;

const maintenanceScheduleShape = {
  schedule: scheduleSchema.optional(),
  dryRun: z.boolean().optional(),
  enabled: z.boolean().optional(),
};

const vacuumShape = {
  ...maintenanceScheduleShape,
  retentionHours: vacuumInputSchema.shape.retentionHours.optional(),
  ...FORMAT_VACUUM_SHAPE,
  allowRetentionBelowMinimum: vacuumInputSchema.shape.allowRetentionBelowMinimum.optional(),
  debrisAgeHours: vacuumInputSchema.shape.debrisAgeHours.optional(),
  abandonedAfterHours: vacuumInputSchema.shape.abandonedAfterHours.optional(),
} satisfies ShapeOf<VacuumScheduleProps>;

const tieringShape = {
  ...maintenanceScheduleShape,
  rules: tieringRulesSchema.optional(),
  tableRules: z.record(z.string(), tieringRulesSchema).optional(),
} satisfies ShapeOf<TieringScheduleProps>;

/** The vacuum schedule's props, also checked by the Maintenance construct on its own. */
export const vacuumPropsSchema = z.strictObject(vacuumShape).superRefine((vacuum, ctx) => {
  if (vacuum.allowRetentionBelowMinimum === true) return;
  // The shared retention, then each format's own (declared in infra/formats/<name>/props.ts), held to the same minimum.
  for (const path of ['retentionHours', ...FORMAT_RETENTION_PROPS]) {
    const hours = (vacuum as Readonly<Record<string, unknown>>)[path];
    if (typeof hours === 'number' && hours < MIN_RETENTION_HOURS) {
      ctx.addIssue({
        code: 'custom',
        path: [path],
        message: `${hours} is below the minimum of ${MIN_RETENTION_HOURS} h; use ${MIN_RETENTION_HOURS} or more, or set allowRetentionBelowMinimum: true deliberately`,
      });
    }
  }
});

/** The tiering schedule's props, also checked by the Maintenance construct on its own. */
export const tieringPropsSchema = z.strictObject(tieringShape);

const maintenanceShape = {
  vacuum: vacuumPropsSchema.optional(),
  tiering: tieringPropsSchema.optional(),
} satisfies ShapeOf<NonNullable<LakeCompactorProps['maintenance']>>;

const maintenanceSchema = z.strictObject(maintenanceShape);

/** Every problem of the Maintenance construct's schedule props (`vacuum`, `tiering`), one line each. */
export function maintenancePropsProblems(props: unknown): string[] {
  const parsed = maintenanceSchema.safeParse(props);
  return parsed.success
    ? []
    : parsed.error.issues.flatMap((issue) => describeIssue(issue, maintenanceSchema));
}

const alarmShape = {
  emails: z
    .array(z.email({ error: (issue) => `${JSON.stringify(issue.input)} is not an e-mail address` }))
    .optional(),
  topicArn: z
    .string()
    .refine(
      (arn) =>
        Token.isUnresolved(arn) || /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/.test(arn),
      {
        error: (issue) =>
          `${JSON.stringify(issue.input)} is not an SNS topic ARN (arn:aws:sns:<region>:<account>:<name>)`,
      },
    )
    .optional(),
  httpsEndpoints: z
    .array(
      z.url({
        protocol: /^https$/,
        error: (issue) => `${JSON.stringify(issue.input)} is not an https:// URL (SNS posts alarms to it)`,
      }),
    )
    .optional(),
} satisfies ShapeOf<LakeCompactorAlarmProps>;

const propsShape = {
  tables: z.array(tableSchema).min(1, { error: 'must name at least one table to compact' }),
  removalPolicy: z.enum(RemovalPolicy).optional(),
  profilerMemoryMb: memorySchema.optional(),
  sweepMemoryMb: memorySchema.optional(),
  // Its range is checked with the other guardrails (`reservedConcurrencyIssues` in lake-compactor.ts).
  profilerReservedConcurrency: z.union([z.number(), z.literal(false)]).optional(),
  dataBucket: z.strictObject(dataBucketShape).optional(),
  workflow: z.strictObject(workflowShape).optional(),
  triggers: z.strictObject(triggersShape).optional(),
  sweep: z.strictObject(sweepShape).optional(),
  maintenance: maintenanceSchema.optional(),
  workRoot: z
    .string()
    .superRefine((root, ctx) => {
      const problem = workRootProblem(root);
      if (problem !== undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `${problem}. (Each deployment on a bucket needs its own work root; the default is "${DEFAULT_WORK_ROOT}".)`,
        });
      }
    })
    .optional(),
  tableIsolation: z.enum(TABLE_ISOLATION_MODES).optional(),
  alarms: z.strictObject(alarmShape).optional(),
} satisfies ShapeOf<LakeCompactorProps>;

/** LakeCompactorProps, field by field (see `lakeCompactorPropsProblems` for the checks across fields). */
export const lakeCompactorPropsSchema = z.strictObject(propsShape);

/** Stands in for the owned bucket's name while checking tables (its real name is a token until deploy). */
export const OWNED_BUCKET_PLACEHOLDER = '(the construct-owned data bucket)';

/**
 * Every problem of `props` (anything: a JSON config or code), one line each, saying where and what to do;
 * [] when they are valid. Field problems come from `lakeCompactorPropsSchema`, then the checks across
 * fields, each run on whatever parts have the right shape.
 */
export function lakeCompactorPropsProblems(props: unknown): string[] {
  const parsed = lakeCompactorPropsSchema.safeParse(props);
  const fieldProblems = parsed.success
    ? []
    : parsed.error.issues.flatMap((issue) => describeIssue(issue, lakeCompactorPropsSchema));
  const value = typeof props === 'object' && props !== null ? (props as Record<string, unknown>) : {};
  return [...fieldProblems, ...crossFieldProblems(value)];
}

/** An issue as `path: message`; an unknown key as its own path with the keys known there. */
function describeIssue(issue: z.core.$ZodIssue, root: z.core.$ZodType): string[] {
  const where = (path: readonly PropertyKey[]) => path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const known = knownKeysAt(root, issue.path) ?? [];
    return issue.keys.map((key) => {
      const guess = closest(key, known);
      const owner = issue.path.length === 0 ? 'a LakeCompactor prop' : `a key of ${where(issue.path)}`;
      return `${where([...issue.path, key])}: not ${owner}${guess === undefined ? '' : `; did you mean \`${guess}\`?`} Known: ${known.join(', ')}.`;
    });
  }
  return [`${where(issue.path) || '(props)'}: ${issue.message}`];
}

/** The keys of the object schema at `path` inside `schema` (through arrays, optionals, records, pipes). */
function knownKeysAt(schema: z.core.$ZodType, path: readonly PropertyKey[]): string[] | undefined {
  let current: z.core.$ZodType | undefined = schema;
  let remaining = [...path];
  for (;;) {
    const def = current?._zod.def as unknown as Record<string, unknown> & { type: string };
    if (def === undefined) return undefined;
    if (def.type === 'optional' || def.type === 'default' || def.type === 'nullable') {
      current = def.innerType as z.core.$ZodType;
    } else if (def.type === 'pipe') {
      current = def.in as z.core.$ZodType;
    } else if (remaining.length === 0) {
      return def.type === 'object' ? Object.keys(def.shape as object) : undefined;
    } else if (def.type === 'object') {
      current = (def.shape as Record<string, z.core.$ZodType>)[String(remaining[0])];
      remaining = remaining.slice(1);
    } else if (def.type === 'array') {
      current = def.element as z.core.$ZodType;
      remaining = remaining.slice(1);
    } else if (def.type === 'record') {
      current = def.valueType as z.core.$ZodType;
      remaining = remaining.slice(1);
    } else {
      return undefined;
    }
  }
}

/** The known key `key` is most likely a typo of: same letters ignoring case, or at most 2 edits away. */
function closest(key: string, known: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of known) {
    const distance = name.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, name);
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  return best !== undefined && best.distance <= Math.min(2, Math.floor(key.length / 3))
    ? best.name
    : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const substitution = (previous[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      row.push(Math.min((previous[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1, substitution));
    }
    previous = row;
  }
  return previous[b.length] ?? 0;
}

function record(value: unknown): Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : {};
}

function number(value: unknown): number | undefined {
  return typeof value === 'number' && !Token.isUnresolved(value) ? value : undefined;
}

/** The checks across fields, on whatever parts of `props` have the right shape (the schema reports the rest). */
function crossFieldProblems(props: Record<string, unknown>): string[] {
  const tables = (Array.isArray(props.tables) ? props.tables : []).map(record);
  const workflow = record(props.workflow);
  const maintenance = record(props.maintenance);
  return [
    ...tableOverlapProblems(tables),
    ...workRootTableProblems(props.workRoot, tables),
    ...dataBucketIssues(props, tables),
    ...kmsKeyIssues(tables),
    ...formatPropsProblems(tables),
    ...memoryIssues({
      profilerMemoryMb: props.profilerMemoryMb,
      sweepMemoryMb: props.sweepMemoryMb,
      'workflow.compactMemoryMb': workflow.compactMemoryMb,
    }),
    ...versionedBucketProblems(workflow.versionedBuckets, tables),
    ...tableRulesProblems(record(record(maintenance.tiering).tableRules), tables),
    ...(record(props.alarms).topicArn !== undefined && workflow.notificationTopic !== undefined
      ? [
          'alarms.topicArn and workflow.notificationTopic both name the topic alarms and run notifications go to; keep one',
        ]
      : []),
  ];
}

/** Tables sharing a root or nested in one another, among those whose own fields are valid. */
function tableOverlapProblems(tables: readonly Record<string, unknown>[]): string[] {
  const valid = tables.flatMap((table, index) => {
    const parsed = tableSchema.safeParse(table);
    if (!parsed.success) return [];
    const bucket = parsed.data.bucketName ?? OWNED_BUCKET_PLACEHOLDER;
    return [{ index, table: { ...parsed.data, bucket } }];
  });
  return crossTableIssues(valid.map((v) => v.table)).map((issue) => {
    const index = valid[issue.index]?.index ?? issue.index;
    // Entry numbers in the messages are positions among the valid tables: name them by props index.
    const message = issue.message.replace(/\(entry (\d+)\)|entry (\d+)/g, (text, a?: string, b?: string) => {
      const original = valid[Number(a ?? b)]?.index;
      return original === undefined ? text : text.replace(/\d+/, String(original));
    });
    return `tables.${index}.${issue.field}: ${message}`;
  });
}

/**
 * A work root inside a table root: the table's readers and planner would meet the compactor's objects. (The
 * other way round needs no check of its own: a table root inside the work root has a hidden first folder,
 * which every table root is refused for. A table at a bucket root holds every work root of its bucket; the
 * work root's hidden first folder is what keeps them apart.)
 */
function workRootTableProblems(workRoot: unknown, tables: readonly Record<string, unknown>[]): string[] {
  if (typeof workRoot !== 'string') return [];
  return tables.flatMap((table, index) => {
    if (typeof table.prefix !== 'string') return [];
    const prefix = table.prefix.replace(/^\/+/, '').replace(/\/+$/, '');
    if (prefix === '' || !workRoot.startsWith(`${prefix}/`)) return [];
    return [
      `workRoot: ${JSON.stringify(workRoot)} lies inside table ${JSON.stringify(String(table.name))} (tables.${index}, root ${JSON.stringify(prefix)}), whose readers and planner would meet the compactor's objects; choose a work root outside every table, at the bucket's top level`,
    ];
  });
}

/** Literal bucket names of the tables (deploy-time names cannot be compared at synth). */
function literalBuckets(tables: readonly Record<string, unknown>[]): string[] {
  return [
    ...new Set(
      tables.flatMap((t) =>
        typeof t.bucketName === 'string' && !Token.isUnresolved(t.bucketName) ? [t.bucketName] : [],
      ),
    ),
  ];
}

/** `workflow.versionedBuckets` names buckets of the tables: any other name is a typo or a stale entry. */
function versionedBucketProblems(buckets: unknown, tables: readonly Record<string, unknown>[]): string[] {
  if (!Array.isArray(buckets)) return [];
  const known = literalBuckets(tables);
  return buckets.flatMap((bucket, i) =>
    typeof bucket !== 'string' || Token.isUnresolved(bucket) || known.includes(bucket)
      ? []
      : [
          `workflow.versionedBuckets.${i}: ${JSON.stringify(bucket)} holds none of the tables (their buckets: ${known.join(', ') || 'only the construct-owned one'}); list only buckets of configured tables with versioning on (the construct-owned data bucket is always treated as versioned).`,
        ],
  );
}

/** `maintenance.tiering.tableRules` is keyed by table name: an unknown name would silently never apply. */
function tableRulesProblems(
  tableRules: Record<string, unknown>,
  tables: readonly Record<string, unknown>[],
): string[] {
  const names = tables.flatMap((t) => (typeof t.name === 'string' ? [t.name] : []));
  return Object.keys(tableRules)
    .filter((name) => !names.includes(name))
    .map((name) => {
      const guess = closest(name, names);
      return `maintenance.tiering.tableRules.${name}: no table is named ${JSON.stringify(name)}${guess === undefined ? '' : `; did you mean \`${guess}\`?`} Tables: ${names.join(', ')}.`;
    });
}

/** Lambda accepts 128–10,240 MB in whole MB; a wrong size is reported with the others at synth time. */
function memoryIssues(sizes: Readonly<Record<string, unknown>>): string[] {
  return Object.entries(sizes)
    .flatMap(([field, value]) => {
      const mb = number(value);
      return mb !== undefined && (!Number.isInteger(mb) || mb < 128 || mb > 10_240)
        ? [[field, mb] as const]
        : [];
    })
    .map(([field, mb]) => `\`${field}\` is ${mb}; Lambda memory is a whole number of MB from 128 to 10240.`);
}

/** A KMS key ARN, in any partition (aliases are refused: IAM grants match the key itself). */
const KMS_KEY_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:key\/[A-Za-z0-9-]+$/;

function kmsKeyIssues(tables: readonly Record<string, unknown>[]): string[] {
  const issues: string[] = [];
  for (const t of tables) {
    const arn = t.kmsKeyArn;
    if (typeof arn !== 'string' || Token.isUnresolved(arn)) continue;
    const name = String(t.name);
    if (t.bucketName === undefined) {
      issues.push(
        `table ${name}: \`kmsKeyArn\` applies to tables in an existing bucket; this table lives in the construct's own bucket, whose key is \`dataBucket.encryptionKey\`.`,
      );
    } else if (!KMS_KEY_ARN.test(arn)) {
      issues.push(
        `table ${name}: \`kmsKeyArn\` is ${JSON.stringify(arn)}; give the key's ARN, arn:aws:kms:<region>:<account>:key/<key id> (an alias ARN does not match the key in IAM grants: \`aws kms describe-key --key-id alias/<name>\` prints the key ARN).`,
      );
    }
  }
  return issues;
}

/** The owned bucket's least lifecycle periods, in days, given the vacuum settings. */
export function minimumDataBucketDays(
  vacuum: Pick<VacuumScheduleProps, 'retentionHours' | 'abandonedAfterHours'>,
): {
  noncurrent: number;
  staging: number;
  abortUploads: number;
} {
  return {
    // Never expire a version vacuum's retention still promises to keep.
    noncurrent: Math.max(1, Math.ceil((vacuum.retentionHours ?? MIN_RETENTION_HOURS) / 24)),
    // Outlive vacuum's own abandonment threshold, so vacuum (which reads the journal) decides first.
    staging: Math.max(2, Math.floor((vacuum.abandonedAfterHours ?? 24) / 24) + 1),
    abortUploads: 1,
  };
}

/** Every problem of `dataBucket`, each saying what to do; [] when it is fine or absent. */
function dataBucketIssues(
  props: Record<string, unknown>,
  tables: readonly Record<string, unknown>[],
): string[] {
  if (props.dataBucket === undefined) return [];
  const settings = record(props.dataBucket);
  const issues: string[] = [];
  if (tables.length > 0 && tables.every((t) => t.bucketName !== undefined)) {
    issues.push(
      '`dataBucket` is set, but every table names its `bucketName`, so no bucket would be created: drop `dataBucket`, or omit `bucketName` on the tables that should live in it.',
    );
  }
  const vacuum = record(record(props.maintenance).vacuum);
  const min = minimumDataBucketDays({
    retentionHours: number(vacuum.retentionHours),
    abandonedAfterHours: number(vacuum.abandonedAfterHours),
  });
  const checkDays = (field: string, least: number, why: string) => {
    const value = number(settings[field]);
    if (value !== undefined && (!Number.isInteger(value) || value < least)) {
      issues.push(
        `dataBucket.${field} is ${value}; use a whole number of days of at least ${least} (${why}).`,
      );
    }
  };
  checkDays(
    'noncurrentVersionExpirationDays',
    min.noncurrent,
    'the vacuum retention: previous versions are what a failed commit is undone from',
  );
  checkDays(
    'stagingExpirationDays',
    min.staging,
    'more than vacuum.abandonedAfterHours, so no live run loses its staged outputs',
  );
  checkDays('abortIncompleteMultipartUploadDays', min.abortUploads, 'S3 lifecycle counts whole days');
  if (settings.serverAccessLogsPrefix !== undefined && settings.serverAccessLogsBucket === undefined) {
    issues.push(
      'dataBucket.serverAccessLogsPrefix is set without dataBucket.serverAccessLogsBucket; name the log bucket too, or drop the prefix.',
    );
  }
  if (settings.removalPolicy === RemovalPolicy.SNAPSHOT) {
    issues.push(
      'dataBucket.removalPolicy "snapshot" is not supported for a bucket; use "retain" or "destroy".',
    );
  }
  return issues;
}
