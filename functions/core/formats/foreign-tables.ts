// Recognises the tables lake-compactor must never treat as plain Parquet — Delta Lake (a `_delta_log/` folder),
// Apache Iceberg (`metadata/` holding `*.metadata.json` or `version-hint.text`) and Apache Hudi (a `.hoodie/`
// folder, `.hoodie/hoodie.properties` its evidence) — above, at or below a location.
//
// Why a listing cannot be trusted there: such a table's log, metadata or timeline says which files are live. Files a
// DELETE or OPTIMIZE removed (Hudi: older file slices, replaced file groups) stay on storage until the table's own
// vacuum or cleaner, so compacting "what is listed" duplicates and resurrects rows, and moving the live files away
// leaves the log pointing at nothing.
import type { ObjectStore } from '../../ports/object-store.js';
import { UnsupportedTableFormatError } from '../errors.js';
import { aFormat, FOREIGN_FORMATS, FORMAT_NAMES, type ForeignFormat } from './foreign-formats.js';

/**
 * Every table format recognised by its own metadata (each declared in its folder: see foreign-formats.ts). Delta and
 * Iceberg are also registered formats (a table configured as one is compacted through its log or metadata); Hudi is
 * recognised only, and refused everywhere, until it is implemented.
 */
export { aFormat, FOREIGN_FORMATS, FORMAT_NAMES, type ForeignFormat } from './foreign-formats.js';

/** True for a recognised format's name (e.g. a marker read back from storage). */
export function isForeignFormat(value: unknown): value is ForeignFormat {
  return typeof value === 'string' && (FOREIGN_FORMATS as readonly string[]).includes(value);
}

/** A key that belongs to a foreign table's log or metadata. */
export interface ForeignFormatMatch {
  readonly format: ForeignFormat;
  /** The foreign table's root, relative to the same base as the key: '' or ending with `/`. */
  readonly root: string;
}

/** A foreign table found in a store. */
export interface ForeignTable extends ForeignFormatMatch {
  /** The object that gave it away (a log entry, a metadata file or the version hint), relative to the store root. */
  readonly evidenceKey: string;
}

/** The folder of a Hudi table's timeline and properties, directly in the table's base path. */
const HUDI_META_FOLDER = '.hoodie';
/**
 * A Hudi table's properties file, relative to its base path: what a Hudi reader opens first, so the evidence a
 * message names. (`hoodie.properties.backup` stands in for it while Hudi upgrades or repairs the table.)
 */
export const HUDI_PROPERTIES = `${HUDI_META_FOLDER}/hoodie.properties`;

/** The version hint of a path-based ("Hadoop") Iceberg table. */
const ICEBERG_VERSION_HINT = 'version-hint.text';
/** Iceberg table metadata: `v3.metadata.json`, `00003-<uuid>.metadata.json`, `….gz.metadata.json`, `….metadata.json.gz`. */
const ICEBERG_METADATA_FILE = /\.metadata\.json(?:\.gz)?$/;

/** True for the file names that make a `metadata/` folder an Iceberg table's (manifests and snapshots alone do not). */
export function isIcebergMetadataName(name: string): boolean {
  return name === ICEBERG_VERSION_HINT || (ICEBERG_METADATA_FILE.test(name) && !name.includes('/'));
}

/**
 * Recognises a Delta log key (any `_delta_log/` directory segment: commits, checkpoints, `.tmp/`, a folder
 * marker), an Iceberg metadata key (`…/metadata/<x>.metadata.json`, `…/metadata/version-hint.text`) or a Hudi
 * metadata key (any `.hoodie/` directory segment: `hoodie.properties`, timeline instants, `.temp/` markers, the
 * metadata table under `.hoodie/metadata/`) and says whose table it is. The outermost such folder wins: a Hudi
 * metadata table's own `.hoodie/` lies inside its data table's. Pure: the key is matched by name only, relative
 * to any base.
 */
export function foreignFormatOfKey(relativeKey: string): ForeignFormatMatch | undefined {
  const segments = relativeKey.split('/');
  const last = segments.length - 1;
  const log = segments.indexOf('_delta_log');
  const hoodie = segments.indexOf(HUDI_META_FOLDER);
  if (log >= 0 && log < last && (hoodie < 0 || hoodie >= last || log < hoodie))
    return { format: 'delta', root: joinRoot(segments, log) };
  if (hoodie >= 0 && hoodie < last) return { format: 'hudi', root: joinRoot(segments, hoodie) };
  if (last >= 1 && segments[last - 1] === 'metadata' && isIcebergMetadataName(segments[last] ?? '')) {
    return { format: 'iceberg', root: joinRoot(segments, last - 1) };
  }
  return undefined;
}

/**
 * True when `key` is the best evidence of its table a listing can give, so it replaces an earlier marker of the
 * same table: a Hudi table's `hoodie.properties` (its timeline instants and `.aux/` sort before it).
 */
function isPreferredEvidence(match: ForeignFormatMatch, key: string): boolean {
  return match.format === 'hudi' && key.startsWith(`${match.root}${HUDI_PROPERTIES}`);
}

/**
 * Records `key` (a marker `match` of a listing) in `found`, one table per root: the first marker seen, unless a
 * later one is the table's preferred evidence (see `isPreferredEvidence`).
 */
export function noteForeignMarker(
  found: Map<string, ForeignTable>,
  match: ForeignFormatMatch,
  key: string,
): void {
  const seen = found.get(match.root);
  if (
    seen === undefined ||
    (seen.format === match.format &&
      isPreferredEvidence(match, key) &&
      !isPreferredEvidence(seen, seen.evidenceKey))
  )
    found.set(match.root, { ...match, evidenceKey: key });
}

function joinRoot(segments: readonly string[], end: number): string {
  return end === 0 ? '' : `${segments.slice(0, end).join('/')}/`;
}

/**
 * The foreign tables whose markers are among `keys`, one per root (the first marker seen, or a Hudi table's
 * `hoodie.properties` when listed), in the order their first markers come.
 */
export function foreignTablesAmong(keys: Iterable<string>): ForeignTable[] {
  const found = new Map<string, ForeignTable>();
  for (const key of keys) {
    const match = foreignFormatOfKey(key);
    if (match !== undefined) noteForeignMarker(found, match, key);
  }
  return [...found.values()];
}

/** `a/b/c.parquet` → `a/b/`, `a/b/` → `a/b/`, `c.parquet` → ''. */
export function directoryOf(key: string): string {
  return key.slice(0, key.lastIndexOf('/') + 1);
}

/**
 * The directories from the store root down to `location` (a key prefix, with or without trailing `/`):
 * `a/b` → `['', 'a/', 'a/b/']`; without `includeLocation` the last one is left out.
 */
export function directoriesDownTo(location: string, includeLocation: boolean): string[] {
  const trimmed = location.replace(/\/+$/, '');
  const segments = trimmed === '' ? [] : trimmed.split('/');
  const dirs = [''];
  for (let i = 1; i <= segments.length; i++) dirs.push(`${segments.slice(0, i).join('/')}/`);
  return includeLocation ? dirs : dirs.slice(0, -1);
}

/**
 * Looks for foreign tables directly in directories of one store, with cheap exact-prefix listings, and
 * remembers every answer (a maintenance pass asks about the same parents over and over).
 */
export class ForeignTableProbe {
  private readonly answers = new Map<string, Promise<ForeignTable | undefined>>();

  constructor(private readonly store: ObjectStore) {}

  /**
   * The Delta, Iceberg or Hudi table whose root is `dir` ('' = the store root, else ending with `/`), if any.
   * Delta: one `list(dir/_delta_log/, maxKeys 1)`. Iceberg: the `dir/metadata/` listing, page by page, until
   * a metadata file or version hint shows up (one request when there is no `metadata/` folder). Hudi: one
   * `list(dir/.hoodie/, maxKeys 1)`, and when that finds anything one more for `hoodie.properties` to name it
   * as the evidence.
   */
  at(dir: string): Promise<ForeignTable | undefined> {
    let answer = this.answers.get(dir);
    if (answer === undefined) {
      answer = this.look(dir);
      this.answers.set(dir, answer);
      // A failed request is not an answer: the next caller asks again.
      answer.catch(() => this.answers.delete(dir));
    }
    return answer;
  }

  /**
   * The outermost foreign table at any directory from the store root down to `location` (the location itself
   * only with `includeLocation`: leave it out when a listing of everything below it will be checked anyway).
   */
  async around(
    location: string,
    options: { readonly includeLocation: boolean },
  ): Promise<ForeignTable | undefined> {
    for (const dir of directoriesDownTo(location, options.includeLocation)) {
      const found = await this.at(dir);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  private async look(dir: string): Promise<ForeignTable | undefined> {
    const log = await this.store.list(`${dir}_delta_log/`, { maxKeys: 1 });
    const entry = log.objects[0];
    if (entry !== undefined) return { format: 'delta', root: dir, evidenceKey: entry.key };
    const metadata = `${dir}metadata/`;
    let token: string | undefined;
    do {
      const page = await this.store.list(
        metadata,
        token === undefined ? { maxKeys: 1000 } : { maxKeys: 1000, token },
      );
      const hit = page.objects.find((o) => isIcebergMetadataName(o.key.slice(metadata.length)));
      if (hit !== undefined) return { format: 'iceberg', root: dir, evidenceKey: hit.key };
      token = page.nextToken;
    } while (token !== undefined);
    const hoodie = (await this.store.list(`${dir}${HUDI_META_FOLDER}/`, { maxKeys: 1 })).objects[0];
    if (hoodie === undefined) return undefined;
    const properties = (await this.store.list(`${dir}${HUDI_PROPERTIES}`, { maxKeys: 1 })).objects[0];
    return { format: 'hudi', root: dir, evidenceKey: (properties ?? hoodie).key };
  }
}

/** `key` as a location a person can find: `s3://bucket/key`, `/folder/key`, `memory://key`. */
export function locationOf(store: Pick<ObjectStore, 'description'>, key: string): string {
  return store.description.endsWith('/') ? `${store.description}${key}` : `${store.description}/${key}`;
}

/** Why a foreign table's files are left alone, in one line (maintenance notes and decision reasons). */
function definesLiveFiles(format: ForeignFormat): string {
  return format === 'delta'
    ? 'its transaction log, not the file listing, defines which files are live'
    : format === 'hudi'
      ? 'its timeline, not the file listing, defines which file slices are live (older slices and replaced file groups stay on storage until its cleaner runs)'
      : 'its metadata and snapshots, not the file listing, define which files are live';
}

/** What tiering says about a Delta table, configured as one or met inside a Parquet table. */
export const DELTA_TIERING_UNSUPPORTED =
  'tiering is not supported for Delta tables yet; use S3 lifecycle rules on the table prefix';

/**
 * What tiering says about an Iceberg table configured as one: an in-place copy resets the modification time that
 * remove_orphan_files reads, adds a version on a versioned bucket, and an Iceberg partition is a tuple in the
 * manifests (object-store layouts put no date in the path at all), so lifecycle rules are the honest tool.
 */
export const ICEBERG_TIERING_UNSUPPORTED =
  "tiering is not supported for Iceberg tables yet; use S3 lifecycle rules on the table's data/ prefix";

/**
 * What `tier` says about a foreign table it met: a table of a format with a log or metadata is never tiered, and
 * configuring it as one would not make it tierable. Undefined for Hudi: its refusal already says it is not tiered
 * (nor anything else) yet, and what to use instead.
 */
export function tieringUnsupportedAdvice(format: ForeignFormat): string | undefined {
  return format === 'delta'
    ? DELTA_TIERING_UNSUPPORTED
    : format === 'iceberg'
      ? ICEBERG_TIERING_UNSUPPORTED
      : undefined;
}

/**
 * What to do about a Hudi table met where another table is configured: Hudi is a registered format (clustering
 * through its timeline; its cleaner, not lake-compactor, removes replaced file groups), so the way out is to
 * configure it as one at its own root. `root` as the message should name it; `nested`: it lies below a configured
 * table's root (which must then not contain it), else it is the configured table.
 */
export function hudiAdvice(root: string, nested: boolean): string {
  return nested
    ? `everything under ${root} is left alone and the rest of the configured table is still maintained; to have it clustered through its timeline, configure ${root} as a table of its own with format: "hudi", hudiLock and hudiIndexType (no configured root may contain another)`
    : `to have it clustered through its timeline, configure the table with format: "hudi", hudiLock and hudiIndexType and prefix ${root}; Hudi's own cleaner removes the file groups it replaces`;
}

/**
 * What to do about an Iceberg table met where a Hive-style Parquet table is configured: Iceberg is a registered
 * format, so, as for Delta, the way out is to configure it as one at its own root.
 */
export function configureAsIcebergAdvice(root: string, nested: boolean): string {
  return nested
    ? `to have it compacted and maintained through its metadata, configure ${root} as a table of its own with format: "iceberg" (no configured root may contain another, so this table's root must then not contain it)`
    : `to have it compacted and maintained through its metadata, configure the table with format: "iceberg" and prefix ${root}`;
}

/**
 * What to do about a Delta table met where a Hive-style Parquet table is configured: Delta is a registered format,
 * so the way out is to configure the Delta table as one (at its own root; `root` as the message should name it).
 * A nested one cannot simply be added: no configured root may contain another.
 */
export function configureAsDeltaAdvice(root: string, nested: boolean): string {
  return nested
    ? `to have it compacted and vacuumed through its log, configure ${root} as a table of its own with format: "delta" (no configured root may contain another, so this table's root must then not contain it)`
    : `to have it compacted and vacuumed through its log, configure the table with format: "delta" and prefix ${root}`;
}

/**
 * A maintenance note about a foreign table it left alone: `<what> left alone: <Format> table at <root> (found
 * <evidence>): <why>; <what to do>`. What to do about a Delta or Iceberg table is to configure it as one (and, for
 * tiering, that tiering does not support it yet); about a Hudi table, to leave it to Hudi. A table configured as
 * one never gets this note: its own maintenance step handles it.
 */
export function foreignTableNote(
  store: Pick<ObjectStore, 'description'>,
  what: string,
  found: ForeignTable,
  options: { readonly nested: boolean; readonly tiering?: boolean },
): string {
  const root = `"${found.root.replace(/\/+$/, '')}"`;
  const advice =
    found.format === 'delta'
      ? `${configureAsDeltaAdvice(root, options.nested)}${options.tiering ? ` (${DELTA_TIERING_UNSUPPORTED})` : ''}`
      : found.format === 'hudi'
        ? hudiAdvice(root, options.nested)
        : `${configureAsIcebergAdvice(root, options.nested)}${options.tiering ? ` (${ICEBERG_TIERING_UNSUPPORTED})` : ''}`;
  return `${what} left alone: ${FORMAT_NAMES[found.format]} table at ${locationOf(store, found.root)} (found ${locationOf(store, found.evidenceKey)}): ${definesLiveFiles(found.format)}, so none of its objects is treated as plain Parquet; ${advice}`;
}

/** The typed refusal of `location` (a key prefix of `store`) because of `found`. */
export function unsupportedFormat(
  store: Pick<ObjectStore, 'description'>,
  location: string,
  found: ForeignTable,
): UnsupportedTableFormatError {
  return new UnsupportedTableFormatError(
    found.format,
    locationOf(store, found.root),
    locationOf(store, found.evidenceKey),
    locationOf(store, location),
  );
}

/**
 * Refuses `location` when a directory from the store root down to it holds a Delta log, Iceberg metadata or a
 * Hudi `.hoodie/` folder.
 * @throws UnsupportedTableFormatError naming the outermost such table.
 */
export async function refuseForeignAround(
  store: ObjectStore,
  location: string,
  options: { readonly includeLocation: boolean; readonly probe?: ForeignTableProbe },
): Promise<void> {
  const found = await (options.probe ?? new ForeignTableProbe(store)).around(location, options);
  if (found !== undefined) throw unsupportedFormat(store, location, found);
}

/**
 * Refuses `location` when a listing of it found a foreign table's markers (`found`, e.g. an inventory's
 * `foreignTables`): the location is one, or holds one somewhere below.
 * @throws UnsupportedTableFormatError naming the first.
 */
export function refuseForeignAmong(
  store: Pick<ObjectStore, 'description'>,
  location: string,
  found: readonly ForeignTable[],
): void {
  const first = found[0];
  if (first !== undefined) throw unsupportedFormat(store, location, first);
}

// ---------------------------------------------------------------------------------------------------------
// The profiler's durable record: a foreign table seen inside a configured Parquet table
// ---------------------------------------------------------------------------------------------------------

/** A Delta log, Iceberg metadata or Hudi timeline write seen inside a configured (Parquet) table; kept by the StatsStore. */
export interface ForeignFormatMarker {
  readonly format: ForeignFormat;
  /** The foreign table's root relative to the configured table's root: '' = the whole table, else ending with `/`. */
  readonly root: string;
  /** The bucket key of the first log or metadata write seen. */
  readonly evidenceKey: string;
  /** When that write happened, epoch ms. */
  readonly seenAt: number;
}

/** True when `partition` (a raw partition path of the configured table) lies in the marker's foreign table. */
export function markerCovers(marker: Pick<ForeignFormatMarker, 'root'>, partition: string): boolean {
  return marker.root === '' || `${partition}/`.startsWith(marker.root);
}

/** The decision reason of a partition the marker blocks (one line, as every decision reason). */
export function foreignFormatReason(marker: ForeignFormatMarker): string {
  const where = marker.root === '' ? 'the whole table' : `everything under ${marker.root}`;
  const advice = foreignMarkerAdvice(marker);
  return `inside ${aFormat(marker.format)} table (${where}; found ${marker.evidenceKey}): ${definesLiveFiles(marker.format)}, so it is never compacted as plain Parquet; ${advice}`;
}

/**
 * What to do about a Delta table the profiler met inside a configured Parquet table: the marker's root is relative
 * to the configured root, so the Delta table's own root is named by the evidence key (everything before its log).
 */
export function deltaMarkerAdvice(marker: Pick<ForeignFormatMarker, 'root' | 'evidenceKey'>): string {
  const root = foreignFormatOfKey(marker.evidenceKey)?.root ?? marker.root;
  return configureAsDeltaAdvice(`"${root.replace(/\/+$/, '')}"`, marker.root !== '');
}

/**
 * What to do about a Hudi table the profiler met inside a configured Parquet table, its own root named by the
 * evidence key (everything before its `.hoodie/`), as for Delta.
 */
export function hudiMarkerAdvice(marker: Pick<ForeignFormatMarker, 'root' | 'evidenceKey'>): string {
  const root = foreignFormatOfKey(marker.evidenceKey)?.root ?? marker.root;
  return hudiAdvice(`"${root.replace(/\/+$/, '')}"`, marker.root !== '');
}

/** What to do about an Iceberg table the profiler met inside a configured Parquet table (see deltaMarkerAdvice). */
export function icebergMarkerAdvice(marker: Pick<ForeignFormatMarker, 'root' | 'evidenceKey'>): string {
  const root = foreignFormatOfKey(marker.evidenceKey)?.root ?? marker.root;
  return configureAsIcebergAdvice(`"${root.replace(/\/+$/, '')}"`, marker.root !== '');
}

/** What to do about a foreign table of any recognised format the profiler met inside a configured Parquet table. */
export function foreignMarkerAdvice(
  marker: Pick<ForeignFormatMarker, 'format' | 'root' | 'evidenceKey'>,
): string {
  const adviceOf = {
    delta: deltaMarkerAdvice,
    iceberg: icebergMarkerAdvice,
    hudi: hudiMarkerAdvice,
  } as const;
  return adviceOf[marker.format](marker);
}

/** A foreign table a maintenance call met, with the bucket and configured table it was found under. */
export type FoundForeignTable = ForeignTable & { readonly bucket: string; readonly table: string };

/**
 * What one maintenance call (vacuum, tiering) knows about foreign tables: a probe per bucket (its answers
 * cached for the call) and every table found, each recorded once however many keys point at it.
 */
export class ForeignTableLedger {
  readonly found: FoundForeignTable[] = [];
  private readonly probes = new Map<string, ForeignTableProbe>();

  constructor(private readonly storeFor: (bucket: string) => ObjectStore) {}

  probe(bucket: string): ForeignTableProbe {
    let probe = this.probes.get(bucket);
    if (probe === undefined) {
      probe = new ForeignTableProbe(this.storeFor(bucket));
      this.probes.set(bucket, probe);
    }
    return probe;
  }

  /**
   * Records `found` under `table`; false when that table root was recorded already in this call (its evidence is
   * then only replaced by a better one, see `noteForeignMarker`).
   */
  record(bucket: string, table: string, found: ForeignTable): boolean {
    const at = this.found.findIndex((f) => f.bucket === bucket && f.root === found.root);
    if (at >= 0) {
      const seen = new Map([[found.root, this.found[at] as ForeignTable]]);
      noteForeignMarker(seen, found, found.evidenceKey);
      this.found[at] = { ...(this.found[at] as FoundForeignTable), ...seen.get(found.root) };
      return false;
    }
    this.found.push({ ...found, bucket, table });
    return true;
  }
}
