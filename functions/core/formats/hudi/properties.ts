// `.hoodie/hoodie.properties`: the table's identity (version, type, timeline layout), its keys and partitioning, and
// the features that decide whether lake-compactor may touch it. Hudi writes it with java.util.Properties (so `:` and
// `=` in values come escaped, as in `hoodie.table.create.schema`), and rewrites it on upgrade, so a commit re-reads
// it. Parsing is pure; reading it through the ObjectStore is table-state.ts's.
import {
  HudiBaseFileFormatError,
  HudiBootstrapError,
  HudiTableVersionError,
  HudiTimelineError,
  HudiVirtualKeysError,
} from './errors.js';

/**
 * Parses Java `.properties` text as `java.util.Properties.load` does: `#`/`!` comment lines, a key ending at the
 * first unescaped `=`, `:` or whitespace, a backslash at the end of a line continuing it (the next line's leading
 * whitespace dropped), and the escapes `\t \n \r \f \uXXXX` (any other escaped character stands for itself).
 * A later duplicate key wins, as in Java.
 */
export function parseJavaProperties(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const lines = text.split(/\r\n|\r|\n/);
  for (let i = 0; i < lines.length; i++) {
    let line = (lines[i] as string).replace(/^[ \t\f]+/, '');
    if (line === '' || line.startsWith('#') || line.startsWith('!')) continue;
    // Join continuation lines: an odd number of trailing backslashes continues the logical line.
    while (endsWithOddBackslashes(line) && i + 1 < lines.length) {
      i++;
      line = line.slice(0, -1) + (lines[i] as string).replace(/^[ \t\f]+/, '');
    }
    if (endsWithOddBackslashes(line)) line = line.slice(0, -1);
    let k = 0;
    while (k < line.length) {
      const c = line[k] as string;
      if (c === '\\') {
        k += 2;
        continue;
      }
      if (c === '=' || c === ':' || c === ' ' || c === '\t' || c === '\f') break;
      k++;
    }
    const key = line.slice(0, Math.min(k, line.length));
    let v = k;
    while (v < line.length && /[ \t\f]/.test(line[v] as string)) v++;
    if (v < line.length && (line[v] === '=' || line[v] === ':')) v++;
    while (v < line.length && /[ \t\f]/.test(line[v] as string)) v++;
    out.set(unescapeJava(key), unescapeJava(line.slice(v)));
  }
  return out;
}

function endsWithOddBackslashes(line: string): boolean {
  let n = 0;
  for (let i = line.length - 1; i >= 0 && line[i] === '\\'; i--) n++;
  return n % 2 === 1;
}

function unescapeJava(s: string): string {
  if (!s.includes('\\')) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i] as string;
    if (c !== '\\' || i + 1 >= s.length) {
      out += c;
      continue;
    }
    const e = s[++i] as string;
    if (e === 'u') {
      const hex = s.slice(i + 1, i + 5);
      if (!/^[0-9a-fA-F]{4}$/.test(hex)) throw new Error(`malformed \\uxxxx escape "\\u${hex}"`);
      out += String.fromCharCode(Number.parseInt(hex, 16));
      i += 4;
    } else out += ({ t: '\t', n: '\n', r: '\r', f: '\f' } as Record<string, string>)[e] ?? e;
  }
  return out;
}

/** Copy-on-Write (base files only) or Merge-on-Read (base files and log files). */
export type HudiTableType = 'COPY_ON_WRITE' | 'MERGE_ON_READ';

/** The zone instant times were minted in: UTC, or LOCAL (the writer JVM's zone, which only the deployment knows). */
export type HudiTimelineTimezone = 'UTC' | 'LOCAL';

/** What `hoodie.properties` says, typed: the settings lake-compactor reads or refuses by. */
export interface HudiTableConfig {
  readonly name?: string;
  /** `hoodie.table.version`: 6, 8 and 9 are read (see {@link checkTableConfig}). */
  readonly version: number;
  readonly type: HudiTableType;
  /** `hoodie.timeline.layout.version`: 1 (instants in `.hoodie/`) or 2 (`.hoodie/timeline/`, completion times). */
  readonly layoutVersion: number;
  /** The active timeline's folder relative to the table root, ending with `/`: `.hoodie/` or `.hoodie/timeline/`. */
  readonly timelinePath: string;
  readonly recordKeyFields: readonly string[];
  /** Partition fields, without a CustomKeyGenerator's `:SIMPLE`/`:TIMESTAMP` suffix; empty when unpartitioned. */
  readonly partitionFields: readonly string[];
  /** `hoodie.table.keygenerator.class` (v6) or `.type` (v8+). */
  readonly keyGenerator?: string;
  readonly hiveStylePartitioning: boolean;
  readonly urlEncodePartitioning: boolean;
  readonly dropPartitionColumns: boolean;
  /** `hoodie.table.ordering.fields` (v9), else `hoodie.table.precombine.field`; empty when neither. */
  readonly orderingFields: readonly string[];
  /** `hoodie.compaction.payload.class` (v6, v8) or `hoodie.table.legacy.payload.class` (v9). */
  readonly payloadClass?: string;
  /** `hoodie.record.merge.mode` (v8+): COMMIT_TIME_ORDERING, EVENT_TIME_ORDERING or CUSTOM. */
  readonly mergeMode?: string;
  readonly mergeStrategyId?: string;
  /** `hoodie.populate.meta.fields`; absent means true. */
  readonly populateMetaFields: boolean;
  /** `hoodie.table.base.file.format`, upper case; absent means PARQUET. */
  readonly baseFileFormat: string;
  readonly multipleBaseFileFormats: boolean;
  /** `hoodie.table.metadata.partitions` (completed) and `…partitions.inflight`: non-empty means a metadata table. */
  readonly metadataPartitions: readonly string[];
  readonly metadataPartitionsInflight: readonly string[];
  readonly cdcEnabled: boolean;
  readonly bootstrapBasePath?: string;
  /** `hoodie.table.timeline.timezone`; absent means LOCAL, as Hudi defaults. */
  readonly timelineTimezone: HudiTimelineTimezone;
  /** Every property as read. */
  readonly properties: ReadonlyMap<string, string>;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function flag(value: string | undefined, fallback: boolean): boolean {
  if (value === undefined || value.trim() === '') return fallback;
  return value.trim().toLowerCase() === 'true';
}

/**
 * The typed config of a `hoodie.properties` text. Checks only what the reader cannot do without (a version, a
 * table type): features are refused by {@link checkTableConfig}, so a caller can read a refused table's config
 * to describe it.
 * @throws HudiTimelineError when the version or table type is missing or not what Hudi writes.
 */
export function parseTableConfig(table: string, text: string): HudiTableConfig {
  let p: Map<string, string>;
  try {
    p = parseJavaProperties(text);
  } catch (err) {
    throw new HudiTimelineError(table, `.hoodie/hoodie.properties: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const get = (key: string): string | undefined => {
    const v = p.get(key)?.trim();
    return v === undefined || v === '' ? undefined : v;
  };
  const versionText = get('hoodie.table.version');
  if (versionText === undefined || !/^\d{1,3}$/.test(versionText))
    throw new HudiTimelineError(
      table,
      `.hoodie/hoodie.properties has no valid hoodie.table.version (${JSON.stringify(versionText ?? null)})`,
    );
  const version = Number(versionText);
  const type = get('hoodie.table.type') ?? 'COPY_ON_WRITE';
  if (type !== 'COPY_ON_WRITE' && type !== 'MERGE_ON_READ')
    throw new HudiTimelineError(table, `.hoodie/hoodie.properties names table type ${JSON.stringify(type)}`);
  const layoutText = get('hoodie.timeline.layout.version');
  const layoutVersion = layoutText !== undefined ? Number(layoutText) : version >= 8 ? 2 : 1;
  if (!Number.isInteger(layoutVersion))
    throw new HudiTimelineError(
      table,
      `hoodie.timeline.layout.version ${JSON.stringify(layoutText)} is not a number`,
    );
  const timelineFolder = get('hoodie.timeline.path') ?? 'timeline';
  if (!/^[^/]+(?:\/[^/]+)*$/.test(timelineFolder) || timelineFolder.split('/').includes('..'))
    throw new HudiTimelineError(
      table,
      `hoodie.timeline.path ${JSON.stringify(timelineFolder)} is not a folder under .hoodie/`,
    );
  const timezone = (get('hoodie.table.timeline.timezone') ?? 'LOCAL').toUpperCase();
  if (timezone !== 'UTC' && timezone !== 'LOCAL')
    throw new HudiTimelineError(
      table,
      `hoodie.table.timeline.timezone ${JSON.stringify(timezone)} is neither UTC nor LOCAL`,
    );
  const ordering = get('hoodie.table.ordering.fields') ?? get('hoodie.table.precombine.field');
  return {
    ...optional('name', get('hoodie.table.name')),
    version,
    type,
    layoutVersion,
    timelinePath: layoutVersion >= 2 ? `.hoodie/${timelineFolder}/` : '.hoodie/',
    recordKeyFields: list(get('hoodie.table.recordkey.fields')),
    partitionFields: list(get('hoodie.table.partition.fields')).map((f) => f.split(':')[0] as string),
    ...optional(
      'keyGenerator',
      get('hoodie.table.keygenerator.class') ?? get('hoodie.table.keygenerator.type'),
    ),
    hiveStylePartitioning: flag(get('hoodie.datasource.write.hive_style_partitioning'), false),
    urlEncodePartitioning: flag(get('hoodie.datasource.write.partitionpath.urlencode'), false),
    dropPartitionColumns: flag(get('hoodie.datasource.write.drop.partition.columns'), false),
    orderingFields: list(ordering),
    ...optional(
      'payloadClass',
      get('hoodie.compaction.payload.class') ?? get('hoodie.table.legacy.payload.class'),
    ),
    ...optional('mergeMode', get('hoodie.record.merge.mode')),
    ...optional(
      'mergeStrategyId',
      get('hoodie.record.merge.strategy.id') ?? get('hoodie.compaction.record.merger.strategy'),
    ),
    populateMetaFields: flag(get('hoodie.populate.meta.fields'), true),
    baseFileFormat: (get('hoodie.table.base.file.format') ?? 'PARQUET').toUpperCase(),
    multipleBaseFileFormats: flag(get('hoodie.table.multiple.base.file.formats.enable'), false),
    metadataPartitions: list(get('hoodie.table.metadata.partitions')),
    metadataPartitionsInflight: list(get('hoodie.table.metadata.partitions.inflight')),
    cdcEnabled: flag(get('hoodie.table.cdc.enabled'), false),
    ...optional('bootstrapBasePath', get('hoodie.bootstrap.base.path')),
    timelineTimezone: timezone,
    properties: p,
  };
}

function optional<K extends string>(key: K, value: string | undefined): { [P in K]?: string } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
}

/** The table versions this reader reads: 6 (Hudi 0.14/0.15, layout 1), 8 (1.0) and 9 (1.1), both layout 2. */
export const SUPPORTED_TABLE_VERSIONS: readonly number[] = [6, 8, 9];

/**
 * Refuses, by name, what `hoodie.properties` alone shows lake-compactor cannot handle: another table version (or a
 * layout that does not belong to it), non-Parquet or mixed base files, virtual keys and bootstrap. The metadata
 * table needs the listing too (table-state.ts checks both).
 * @throws HudiUnsupportedError (a subclass per feature).
 */
export function checkTableConfig(table: string, config: HudiTableConfig): void {
  if (
    !SUPPORTED_TABLE_VERSIONS.includes(config.version) ||
    config.layoutVersion !== (config.version >= 8 ? 2 : 1)
  )
    throw new HudiTableVersionError(
      table,
      config.layoutVersion === (config.version >= 8 ? 2 : 1)
        ? String(config.version)
        : `${config.version} with timeline layout ${config.layoutVersion}`,
    );
  if (config.multipleBaseFileFormats)
    throw new HudiBaseFileFormatError(table, 'several (hoodie.table.multiple.base.file.formats.enable=true)');
  if (config.baseFileFormat !== 'PARQUET') throw new HudiBaseFileFormatError(table, config.baseFileFormat);
  if (!config.populateMetaFields) throw new HudiVirtualKeysError(table);
  if (config.bootstrapBasePath !== undefined)
    throw new HudiBootstrapError(table, `hoodie.bootstrap.base.path=${config.bootstrapBasePath}`);
}
