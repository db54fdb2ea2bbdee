// Apache Hudi's table settings (see formats/format-settings.ts): what a Hudi table's config must declare because the
// table does not record it — the lock its writers take (`hudiLock`), the index their upserts use (`hudiIndexType`)
// and, for a table minting instants in its writers' LOCAL zone, that zone (`hudiTimezone`). Declared here so the
// config schema, the construct's props and the registry's refusal of them on other formats take them from Hudi.
import { z } from 'zod';
import { UsageError } from '../../errors.js';
import { defineFormatSettings, type FormatCliOption, type SettingsValue } from '../format-settings.js';
import { HUDI_CLEANER_POLICIES } from './clean-plan.js';

/** The name Hudi is registered under (format.ts): its options are refused with any other `--format`. */
export const HUDI_FORMAT_NAME = 'hudi';

/**
 * How lake-compactor takes part in the table writers' concurrency control (HUDI-NOTES §7): the very lock they take
 * (`storage`: Hudi 1.1's `.hoodie/.locks/table_lock.json`; `dynamodb`: `DynamoDBBasedLockProvider`'s table and
 * partition key, Hudi's default key being the table name), or — only for a table with one writer whose table
 * services are off — no lock and a quiet window in which that writer does not commit, acknowledged explicitly.
 */
export const hudiLockSchema = z.discriminatedUnion('provider', [
  z.strictObject({ provider: z.literal('storage') }),
  z.strictObject({
    provider: z.literal('dynamodb'),
    /** `hoodie.write.lock.dynamodb.table`. */
    table: z.string().min(1),
    /** `hoodie.write.lock.dynamodb.region`; the deployment's region when omitted. */
    region: z.string().min(1).optional(),
    /** `hoodie.write.lock.dynamodb.partition_key`; Hudi's default, the table's `hoodie.table.name`, when omitted. */
    partitionKey: z.string().min(1).optional(),
  }),
  z.strictObject({
    provider: z.literal('none'),
    /** Minutes the timeline must show no other completed instant before lake-compactor plans or commits. */
    quietWindowMinutes: z.number().int().min(1),
    /** The operator's acknowledgement that the table has one writer, with its table services off. */
    singleWriterAcknowledged: z.literal(true, {
      error:
        'singleWriterAcknowledged must be true: without a lock, a writer committing to a file group being clustered, or an async table service, can make rows vanish or come back',
    }),
  }),
]);
export type HudiLockSetting = z.infer<typeof hudiLockSchema>;

/**
 * Opt-in cleaning by lake-compactor's vacuum (clean.ts): the cleaner policy of the table's writers
 * (`hoodie.cleaner.policy`), which the table does not record, and how much it retains
 * (`hoodie.cleaner.commits.retained`, `.hours.retained` or `.fileversions.retained`; Hudi's default when omitted).
 * Undeclared, the vacuum leaves cleaning to the table's own cleaner (Hudi's `hoodie.clean.automatic`, on by default).
 */
export const hudiCleanerSchema = z.strictObject({
  policy: z.enum(HUDI_CLEANER_POLICIES),
  retained: z.number().int().min(1).optional(),
});
export type HudiCleanerSetting = z.infer<typeof hudiCleanerSchema>;

/** Index types whose keys live in the files themselves (bloom filter and min/max keys, or the keys column). */
export const HUDI_SUPPORTED_INDEX_TYPES = ['BLOOM', 'SIMPLE', 'GLOBAL_BLOOM', 'GLOBAL_SIMPLE'] as const;
export type HudiIndexType = (typeof HUDI_SUPPORTED_INDEX_TYPES)[number];

/** Index types that map keys to file ids outside the files: clustering to new file ids breaks them (notes §10). */
const REFUSED_INDEX_TYPES: Readonly<Record<string, string>> = {
  BUCKET:
    "the bucket index derives each key's file group from its hash: file groups with new ids turn later upserts into duplicate inserts",
  HBASE: 'the HBase index keeps key → file id in HBase, which lake-compactor cannot update',
  FLINK_STATE: "Flink's state index keeps key → file id in Flink state, which lake-compactor cannot update",
  RECORD_INDEX: 'the record-level index lives in the metadata table, which lake-compactor does not write',
};

export const hudiIndexTypeSchema = z.string().transform((value, ctx): HudiIndexType => {
  const upper = value.trim().toUpperCase();
  if ((HUDI_SUPPORTED_INDEX_TYPES as readonly string[]).includes(upper)) return upper as HudiIndexType;
  const why = REFUSED_INDEX_TYPES[upper];
  ctx.addIssue({
    code: 'custom',
    message:
      why === undefined
        ? `"${value}" is not a Hudi index type lake-compactor knows; declare the table writers' hoodie.index.type, one of ${HUDI_SUPPORTED_INDEX_TYPES.join(', ')}`
        : `index type ${upper} is refused: ${why}; lake-compactor clusters tables whose hoodie.index.type is one of ${HUDI_SUPPORTED_INDEX_TYPES.join(', ')}`,
  });
  return z.NEVER;
});

/** An IANA zone name Intl knows. */
export const hudiTimezoneSchema = z.string().refine(
  (zone) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: zone });
      return true;
    } catch {
      return false;
    }
  },
  { error: 'not an IANA time zone (for example Europe/Paris or UTC)' },
);

/** What a table config or the CLI must declare for a Hudi table, said in one place. */
export const HUDI_UNDECLARED_LOCK =
  'declare how the table\'s writers are coordinated, as they are configured: hudiLock { "provider": "storage" } (Hudi >= 1.1 StorageBasedLockProvider), { "provider": "dynamodb", "table": …, "partitionKey"? } (DynamoDBBasedLockProvider), or — a single writer with its table services off — { "provider": "none", "quietWindowMinutes": N, "singleWriterAcknowledged": true } (on the CLI: --hudi-lock storage|dynamodb|none and its options)';
export const HUDI_UNDECLARED_INDEX =
  "declare the table writers' hoodie.index.type, which the table does not record: hudiIndexType BLOOM, SIMPLE, GLOBAL_BLOOM or GLOBAL_SIMPLE (on the CLI: --hudi-index-type)";

/** The options {@link HUDI_CLI_OPTIONS} add, as the CLI parses them. */
export interface HudiFlags {
  readonly hudiLock?: 'storage' | 'dynamodb' | 'none';
  readonly hudiLockTable?: string;
  readonly hudiLockRegion?: string;
  readonly hudiLockPartitionKey?: string;
  readonly hudiQuietMinutes?: number;
  readonly hudiSingleWriter?: boolean;
  readonly hudiIndexType?: string;
  readonly hudiTimezone?: string;
  readonly hudiCleanPolicy?: string;
  readonly hudiCleanRetained?: number;
  readonly hudiCompactionDeltaCommits?: number;
}

export const HUDI_CLI_OPTIONS: readonly FormatCliOption[] = [
  {
    flags: '--hudi-lock <provider>',
    description:
      "the lock the Hudi table's writers take, as the deployment's hudiLock declares it: storage (Hudi >= 1.1 StorageBasedLockProvider), dynamodb (DynamoDBBasedLockProvider: with --hudi-lock-table), none (one writer, table services off: with --hudi-quiet-minutes and --hudi-single-writer)",
    choices: ['storage', 'dynamodb', 'none'],
  },
  { flags: '--hudi-lock-table <name>', description: 'with dynamodb: hoodie.write.lock.dynamodb.table' },
  { flags: '--hudi-lock-region <region>', description: 'with dynamodb: hoodie.write.lock.dynamodb.region' },
  {
    flags: '--hudi-lock-partition-key <key>',
    description: 'with dynamodb: hoodie.write.lock.dynamodb.partition_key (default: the table name)',
  },
  {
    flags: '--hudi-quiet-minutes <n>',
    description:
      'with none: minutes the timeline must show no other completed instant before a plan or commit',
    parse: (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error('expected a whole number of minutes, 1 or more.');
      return n;
    },
  },
  {
    flags: '--hudi-single-writer',
    description:
      'with none: acknowledge that the table has a single writer whose table services are off (a commit inside the window can lose or resurrect rows)',
  },
  {
    flags: '--hudi-index-type <type>',
    description:
      "the Hudi table writers' hoodie.index.type (the table does not record it): BLOOM, SIMPLE, GLOBAL_BLOOM or GLOBAL_SIMPLE",
  },
  {
    flags: '--hudi-compaction-delta-commits <n>',
    description:
      "Merge-on-Read tables: compact every file slice with log files once this many delta commits completed since the last compaction (Hudi's hoodie.compact.inline.max.delta.commits; default 5)",
    parse: (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1)
        throw new Error('expected a whole number of delta commits, 1 or more.');
      return n;
    },
  },
  {
    flags: '--hudi-timezone <zone>',
    description:
      "the IANA zone the Hudi table's writers mint instants in, required when hoodie.table.timeline.timezone is LOCAL (its default)",
  },
  {
    flags: '--hudi-clean-policy <policy>',
    description:
      "vacuum cleans the Hudi table itself, through a clean instant, under its writers' hoodie.cleaner.policy: KEEP_LATEST_COMMITS, KEEP_LATEST_BY_HOURS or KEEP_LATEST_FILE_VERSIONS (without it, cleaning is left to the table's own cleaner)",
    choices: [...HUDI_CLEANER_POLICIES],
  },
  {
    flags: '--hudi-clean-retained <n>',
    description:
      "with --hudi-clean-policy: the commits, hours or file versions it retains (Hudi's default: 10, 24, 1)",
    parse: (value: string) => {
      const n = Number(value);
      if (!Number.isInteger(n) || n < 1) throw new Error('expected a whole number, 1 or more.');
      return n;
    },
  },
];

/** The Hudi table settings the CLI's options spell. */
export interface HudiSettingsOfFlags {
  hudiLock?: HudiLockSetting;
  hudiIndexType?: HudiIndexType;
  hudiTimezone?: string;
  hudiCleaner?: HudiCleanerSetting;
  hudiCompactionDeltaCommits?: number;
}

/**
 * The Hudi settings the options spell, checked as the config checks them; none for another format without Hudi
 * options.
 * @throws UsageError when Hudi options are given for another format, or contradict each other.
 */
export function hudiSettingsFromFlags(format: string, flags: HudiFlags): HudiSettingsOfFlags {
  const given = Object.entries(flags).filter(
    ([name, value]) => name.startsWith('hudi') && value !== undefined,
  );
  if (format !== HUDI_FORMAT_NAME) {
    if (given.length === 0) return {};
    throw new UsageError(
      `--hudi-* options are settings of Apache Hudi tables (--format hudi), and this command's format is "${format}": drop them, or pass --format hudi if the location is a Hudi table`,
    );
  }
  const out: {
    hudiLock?: HudiLockSetting;
    hudiIndexType?: HudiIndexType;
    hudiTimezone?: string;
    hudiCleaner?: HudiCleanerSetting;
    hudiCompactionDeltaCommits?: number;
  } = {};
  const problems: string[] = [];
  const lockOptions: [string, unknown, readonly string[]][] = [
    ['--hudi-lock-table', flags.hudiLockTable, ['dynamodb']],
    ['--hudi-lock-region', flags.hudiLockRegion, ['dynamodb']],
    ['--hudi-lock-partition-key', flags.hudiLockPartitionKey, ['dynamodb']],
    ['--hudi-quiet-minutes', flags.hudiQuietMinutes, ['none']],
    ['--hudi-single-writer', flags.hudiSingleWriter, ['none']],
  ];
  for (const [name, value, providers] of lockOptions)
    if (value !== undefined && (flags.hudiLock === undefined || !providers.includes(flags.hudiLock)))
      problems.push(`${name} applies only with --hudi-lock ${providers.join('|')}`);
  if (flags.hudiLock !== undefined) {
    const input =
      flags.hudiLock === 'storage'
        ? { provider: 'storage' }
        : flags.hudiLock === 'dynamodb'
          ? {
              provider: 'dynamodb',
              table: flags.hudiLockTable,
              ...(flags.hudiLockRegion === undefined ? {} : { region: flags.hudiLockRegion }),
              ...(flags.hudiLockPartitionKey === undefined
                ? {}
                : { partitionKey: flags.hudiLockPartitionKey }),
            }
          : {
              provider: 'none',
              quietWindowMinutes: flags.hudiQuietMinutes,
              singleWriterAcknowledged: flags.hudiSingleWriter === true ? true : undefined,
            };
    const parsed = hudiLockSchema.safeParse(input);
    if (parsed.success) out.hudiLock = parsed.data;
    else
      problems.push(
        ...parsed.error.issues.map(
          (i) =>
            `--hudi-lock ${flags.hudiLock}: ${i.path.join('.') || '(options)'}: ${i.message}${
              i.path[0] === 'table' ? ' (give --hudi-lock-table)' : ''
            }${i.path[0] === 'quietWindowMinutes' ? ' (give --hudi-quiet-minutes)' : ''}${
              i.path[0] === 'singleWriterAcknowledged' ? ' (give --hudi-single-writer)' : ''
            }`,
        ),
      );
  }
  if (flags.hudiIndexType !== undefined) {
    const parsed = hudiIndexTypeSchema.safeParse(flags.hudiIndexType);
    if (parsed.success) out.hudiIndexType = parsed.data;
    else problems.push(...parsed.error.issues.map((i) => `--hudi-index-type: ${i.message}`));
  }
  if (flags.hudiTimezone !== undefined) {
    const parsed = hudiTimezoneSchema.safeParse(flags.hudiTimezone);
    if (parsed.success) out.hudiTimezone = parsed.data;
    else problems.push(`--hudi-timezone: ${flags.hudiTimezone} is not an IANA time zone`);
  }
  if (flags.hudiCleanRetained !== undefined && flags.hudiCleanPolicy === undefined)
    problems.push('--hudi-clean-retained applies only with --hudi-clean-policy');
  if (flags.hudiCleanPolicy !== undefined) {
    const parsed = hudiCleanerSchema.safeParse({
      policy: flags.hudiCleanPolicy,
      ...(flags.hudiCleanRetained === undefined ? {} : { retained: flags.hudiCleanRetained }),
    });
    if (parsed.success) out.hudiCleaner = parsed.data;
    else problems.push(...parsed.error.issues.map((i) => `--hudi-clean-policy: ${i.message}`));
  }
  if (flags.hudiCompactionDeltaCommits !== undefined)
    out.hudiCompactionDeltaCommits = flags.hudiCompactionDeltaCommits;
  if (problems.length > 0) throw new UsageError('Invalid Hudi table options', problems);
  return out;
}

/** What a Hudi table's config may say of the format. */
export const hudiSettings = defineFormatSettings({
  tableFields: {
    /** Required on a Hudi table: the lock its writers take (see {@link hudiLockSchema}). */
    hudiLock: hudiLockSchema.optional(),
    /** Required on a Hudi table: its writers' `hoodie.index.type` (see {@link hudiIndexTypeSchema}). */
    hudiIndexType: hudiIndexTypeSchema.optional(),
    /** The IANA zone instants are minted in, for a table whose timeline timezone is LOCAL (Hudi's default). */
    hudiTimezone: hudiTimezoneSchema.optional(),
    /** Opt-in: vacuum cleans the table itself under this cleaner policy (see {@link hudiCleanerSchema}). */
    hudiCleaner: hudiCleanerSchema.optional(),
    /**
     * Merge-on-Read compaction's trigger (Hudi's NUM_COMMITS, `hoodie.compact.inline.max.delta.commits`): delta
     * commits since the last compaction; default 5, Hudi's.
     */
    hudiCompactionDeltaCommits: z.number().int().min(1).optional(),
  },
  // Neither is recorded by the table, and guessing either wrong loses rows: declared, never assumed.
  tableIssues: (settings) => [
    ...(settings.hudiLock === undefined
      ? [{ path: 'hudiLock', message: `is required for a Hudi table: ${HUDI_UNDECLARED_LOCK}` }]
      : []),
    ...(settings.hudiIndexType === undefined
      ? [{ path: 'hudiIndexType', message: `is required for a Hudi table: ${HUDI_UNDECLARED_INDEX}` }]
      : []),
  ],
  // A plan reads the table only, but takes the options too, so a plan refuses what a compact would (the index type).
  cli: {
    options: HUDI_CLI_OPTIONS,
    forReading: true,
    settingsOf: (flags: HudiFlags, command) => hudiSettingsFromFlags(command.format, flags),
  },
});

/** A Hudi table's settings, as the format reads them. */
export type HudiTableSettings = SettingsValue<typeof hudiSettings>;
