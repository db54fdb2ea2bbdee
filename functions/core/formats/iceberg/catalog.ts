// The path-based catalog (Hadoop tables, local folders, tests): finds a table's current metadata file under
// `<root>/metadata/` from `version-hint.text` or the highest-numbered metadata file, and loads it; it refuses a
// table whose metadata a metastore catalog names (`00012-<uuid>.metadata.json`) unless the config says otherwise.
import { gunzipSync } from 'node:zlib';
import type { ObjectStore } from '../../../ports/object-store.js';
import { MetadataTooLargeError, PreconditionFailedError } from '../../errors.js';
import {
  currentMemoryBudget,
  currentMetadataLimits,
  describeBytes,
  inflationLimit,
  readWithin,
} from '../../memory-budget.js';
import { IcebergCatalogMismatchError, IcebergMetadataError, IcebergUnsupportedError } from './errors.js';
import { parseTableMetadata, type TableMetadata } from './metadata.js';
import { PathResolver, relocationRefusal } from './paths.js';

/** `v12.metadata.json`, `v12.gz.metadata.json`, `00012-<uuid>.metadata.json`, `….metadata.json.gz`. */
const METADATA_NAME = /^(?:v(\d+)|(\d+)-[0-9a-fA-F-]+)(\.gz)?\.metadata\.json(\.gz)?$/;

/** Iceberg Java's HadoopTableOperations naming: `v12.metadata.json`, `v12.gz.metadata.json`, `v12.metadata.json.gz`. */
const HADOOP_NAME = /^v\d+(\.gz)?\.metadata\.json(\.gz)?$/;

/** Any metadata file, whoever named it. */
const ANY_METADATA_NAME = /\.metadata\.json(\.gz)?$/;

/**
 * How the metadata files of a table read through the path catalog are named, as its config asserts:
 * - `hadoop` (the default): `v<N>.metadata.json`, as Iceberg's Hadoop tables write them. A table holding any other
 *   metadata file (`00012-<uuid>.metadata.json` is how Glue, REST catalogs, Hive and S3 Tables name them), or no
 *   `v<N>` file at all, is refused: a metastore's readers follow its pointer, never a file written beside it.
 * - `uuid`: the operator states that no catalog points at this table although its files carry the metastore
 *   naming (a table copied out of a catalog, or written by a tool that names files that way without one); the
 *   highest-numbered file is current, and lake-compactor's own commits are still `v<N+1>.metadata.json`
 *   put-if-absent (a uuid name would make two writers' files of one version both succeed).
 */
export type PathMetadataNaming = 'hadoop' | 'uuid';

/** A table as loaded: where it lies, which metadata file is current, what that file says. */
export interface LoadedTable {
  /** How messages name the table (see {@link describeTable}). */
  readonly name: string;
  /** The table root as a key prefix of the store, without trailing slash. */
  readonly tableRoot: string;
  /** The store key of the metadata file read. */
  readonly metadataKey: string;
  /** The version the file name carries (`v3` / `00003-…` → 3). */
  readonly version: number;
  readonly metadata: TableMetadata;
  /** Maps the metadata's paths to keys of the store. */
  readonly paths: PathResolver;
}

/** How messages name a table: the store's description and the root below it (`s3://bucket/events`). */
export function describeTable(store: Pick<ObjectStore, 'description'>, tableRoot: string): string {
  const root = tableRoot.replace(/\/+$/, '');
  return store.description.endsWith('/') ? `${store.description}${root}` : `${store.description}/${root}`;
}

function join(root: string, rest: string): string {
  const r = root.replace(/\/+$/, '');
  return r === '' ? rest : `${r}/${rest}`;
}

function versionOf(name: string): number | undefined {
  const m = METADATA_NAME.exec(name);
  if (m === null) return undefined;
  return Number(m[1] ?? m[2]);
}

/**
 * Refuses a path-catalog table whose metadata files are not named as `naming` says (see {@link PathMetadataNaming}).
 * @param names the file names directly under `metadata/`.
 * @throws IcebergCatalogMismatchError
 */
export function checkPathMetadataNaming(
  table: string,
  names: readonly string[],
  naming: PathMetadataNaming,
): void {
  if (naming === 'uuid') return;
  const metadata = names.filter((n) => ANY_METADATA_NAME.test(n));
  const hadoop = metadata.filter((n) => HADOOP_NAME.test(n));
  const others = metadata.filter((n) => !HADOOP_NAME.test(n)).sort();
  // No metadata file at all is the reader's own error ("no metadata file under …"), not a catalog's sign.
  if (metadata.length === 0 || others.length === 0) return;
  const evidence = others.length <= 3 ? others : [others[0], '…', others[others.length - 1]];
  throw new IcebergCatalogMismatchError(table, evidence as string[], others.length, hadoop.length);
}

/**
 * The store key of the table's current metadata file and its version.
 *
 * Like Iceberg's HadoopTableOperations: a numeric `version-hint.text` names `vN.metadata.json`, and versions
 * after it that exist win (the hint is written after the commit, so it can lag one behind); an empty, missing or
 * stale hint falls back to listing `metadata/` and taking the highest version — which is also how catalog-named
 * files (`00012-<uuid>.metadata.json`) are found.
 * @param options.metadataNaming when given, the naming the table must follow (the path catalog passes it; see
 *   {@link checkPathMetadataNaming}); when omitted nothing is judged, as a plain reader of the files needs.
 * @throws IcebergMetadataError when there is no metadata file, or two files claim the highest version.
 * @throws IcebergCatalogMismatchError when `metadataNaming` is given and the files are not named so.
 */
export async function findCurrentMetadata(
  store: ObjectStore,
  tableRoot: string,
  options: { readonly metadataNaming?: PathMetadataNaming } = {},
): Promise<{ key: string; version: number }> {
  const metadataDir = join(tableRoot, 'metadata/');
  const byVersion = new Map<number, string[]>();
  const names: string[] = [];
  for await (const object of store.listAll(metadataDir)) {
    const name = object.key.slice(metadataDir.length);
    if (name.includes('/')) continue;
    names.push(name);
    const version = versionOf(name);
    if (version === undefined) continue;
    byVersion.set(version, [...(byVersion.get(version) ?? []), object.key]);
  }
  if (options.metadataNaming !== undefined)
    checkPathMetadataNaming(describeTable(store, tableRoot), names, options.metadataNaming);
  const hintKey = join(tableRoot, 'metadata/version-hint.text');
  const hinted =
    (await store.head(hintKey)) === undefined
      ? ''
      : new TextDecoder().decode(await store.get(hintKey)).trim();
  let version: number | undefined;
  if (/^\d+$/.test(hinted) && byVersion.get(Number(hinted))?.some((k) => /\/v\d+\./.test(k))) {
    version = Number(hinted);
    while (byVersion.has(version + 1)) version++;
  } else if (byVersion.size > 0) version = Math.max(...byVersion.keys());
  if (version === undefined)
    throw new IcebergMetadataError(describeTable(store, tableRoot), `no metadata file under ${metadataDir}`);
  const keys = byVersion.get(version) ?? [];
  if (keys.length !== 1 || keys[0] === undefined)
    throw new IcebergMetadataError(
      describeTable(store, tableRoot),
      `${keys.length} metadata files claim version ${version} (${keys.join(', ')}); a path-based table has one per version`,
    );
  return { key: keys[0], version };
}

/**
 * The text of a metadata file, gunzipped when compressed. Read with at most the memory budget's file size, and
 * inflated to at most its inflation limit (200 times the file, never past the budget's absolute cap): a 1 MB gzip
 * of spaces would otherwise become a 1 GiB string.
 * @throws MetadataTooLargeError naming the file when it is larger or inflates further than that.
 */
export async function readMetadataText(store: ObjectStore, key: string): Promise<string> {
  const limits = currentMetadataLimits();
  const what = 'Iceberg metadata file';
  const remedy =
    "have the table's owner expire old snapshots (expire_snapshots) and lower write.metadata.previous-versions-max";
  let bytes = await readWithin(store, key, limits.fileBytes, what, remedy);
  if (key.includes('.gz.') || key.endsWith('.gz') || (bytes[0] === 0x1f && bytes[1] === 0x8b)) {
    const max = inflationLimit(bytes.length, limits.inflatedBytes);
    try {
      bytes = gunzipSync(bytes, { maxOutputLength: max });
    } catch (err) {
      if ((err as { code?: string }).code !== 'ERR_BUFFER_TOO_LARGE') throw err;
      throw new MetadataTooLargeError(
        key,
        what,
        `its ${describeBytes(bytes.length)} of gzip inflate to more than ${describeBytes(max)}`,
        currentMemoryBudget().advice,
        remedy,
        { cause: err },
      );
    }
  }
  return new TextDecoder().decode(bytes);
}

/**
 * Loads a table's newest metadata file as the path-based catalog finds it (or `metadataKey`, when the caller knows
 * which file a catalog points at), parsed and validated. A reader of the files: it judges nothing about who
 * commits to the table unless `metadataNaming` is given — {@link PathCatalog} is what commits and maintenance use.
 */
export async function loadTable(
  store: ObjectStore,
  tableRoot: string,
  options: { readonly metadataKey?: string; readonly metadataNaming?: PathMetadataNaming } = {},
): Promise<LoadedTable> {
  const root = tableRoot.replace(/\/+$/, '');
  const table = describeTable(store, root);
  const found =
    options.metadataKey === undefined
      ? await findCurrentMetadata(
          store,
          root,
          options.metadataNaming === undefined ? {} : { metadataNaming: options.metadataNaming },
        )
      : { key: options.metadataKey, version: versionOf(options.metadataKey.split('/').pop() ?? '') ?? 0 };
  const metadata = parseTableMetadata(await readMetadataText(store, found.key), table);
  refuseRelocated(store, root, metadata.location);
  return {
    name: table,
    tableRoot: root,
    metadataKey: found.key,
    version: found.version,
    metadata,
    paths: new PathResolver(table, metadata.location, root),
  };
}

/**
 * Refuses metadata whose `location` is not where the table is configured, for a table on S3 (see
 * {@link relocationRefusal}). A table in a local folder or in memory is a copy for local work, whose writer paths are
 * relocated below its root.
 * @throws IcebergUnsupportedError
 */
export function refuseRelocated(
  store: Pick<ObjectStore, 'description'>,
  tableRoot: string,
  location: string,
): void {
  if (!store.description.startsWith('s3://')) return;
  const configured = describeTable(store, tableRoot);
  const refused = relocationRefusal(location, configured);
  if (refused !== undefined) throw new IcebergUnsupportedError(configured, refused);
}

/** The outcome of handing a catalog a new metadata file. */
export type CatalogCommitOutcome =
  | { readonly outcome: 'committed'; readonly metadataKey: string }
  | { readonly outcome: 'conflict' };

/**
 * Where a table's current metadata is found and how a new version is made current. The commit must be atomic
 * against every other writer: exactly one of two commits on the same base wins, the other gets `conflict`.
 */
export interface IcebergCatalog {
  /**
   * True when a metastore's pointer (Glue's `metadata_location`, a REST catalog's table) makes a metadata file
   * current, false or absent when writing the file is the commit (the path catalog). Why maintenance asks: under a
   * metastore a metadata file the pointer never reached — a writer that lost the race, or crashed before its swap —
   * is an orphan like any other unreferenced file once past the grace period, whereas under the path catalog a
   * `v<N+1>.metadata.json` that exists *is* version N+1 and must never be taken for one.
   */
  readonly metastore?: boolean;
  load(tableRoot: string): Promise<LoadedTable>;
  /**
   * Makes `metadataText` the version after `base`. `conflict` when another writer made a version after `base`
   * first; any thrown error leaves the outcome unknown (the caller must not clean up as if it had failed).
   */
  commit(base: LoadedTable, metadataText: string): Promise<CatalogCommitOutcome>;
}

/**
 * The path-based (Hadoop) catalog over the ObjectStore port: a commit is the put-if-absent of
 * `metadata/v<N+1>.metadata.json`, then `version-hint.text` set to N+1.
 *
 * Why put-if-absent of a name derived from the version: two writers on the same base try the same key and the
 * store lets exactly one create it (S3 conditional writes; the other gets PreconditionFailedError → `conflict`).
 * That makes it exclusive against other lake-compactor runs and against writers that also put-if-absent — not
 * against Iceberg Java's Hadoop tables, which check `exists()` and then rename under a lock of their own (on S3 a
 * copy that overwrites): beside such writers, use a metastore catalog.
 *
 * A table whose files are named `000NN-<uuid>.metadata.json` (a metastore catalog's naming) is refused at load
 * and again at commit ({@link checkPathMetadataNaming}) unless the config says `metadataNaming: "uuid"`; such a
 * table then gets `vNN+1` too, and before writing any file already claiming that version counts as a conflict,
 * so at worst a writer using the other naming at the same instant produces two files of one version, which the
 * reader refuses loudly. The hint is written after the commit and may lag (a failed hint write is ignored):
 * readers look past it.
 */
export class PathCatalog implements IcebergCatalog {
  /** Writing `v<N+1>.metadata.json` is the commit: no pointer beside the files. */
  readonly metastore = false;
  private readonly metadataNaming: PathMetadataNaming;
  constructor(
    private readonly store: ObjectStore,
    options: { readonly metadataNaming?: PathMetadataNaming } = {},
  ) {
    this.metadataNaming = options.metadataNaming ?? 'hadoop';
  }

  load(tableRoot: string): Promise<LoadedTable> {
    return loadTable(this.store, tableRoot, { metadataNaming: this.metadataNaming });
  }

  async commit(base: LoadedTable, metadataText: string): Promise<CatalogCommitOutcome> {
    const version = base.version + 1;
    const metadataDir = join(base.tableRoot, 'metadata/');
    const names: string[] = [];
    for await (const object of this.store.listAll(metadataDir)) {
      const name = object.key.slice(metadataDir.length);
      if (!name.includes('/')) names.push(name);
    }
    // A catalog's writer may have taken the table over since it was loaded: never commit beside its pointer.
    checkPathMetadataNaming(base.name, names, this.metadataNaming);
    if (names.some((name) => (versionOf(name) ?? -1) >= version)) return { outcome: 'conflict' };
    const key = join(base.tableRoot, `metadata/v${version}.metadata.json`);
    try {
      await this.store.put(key, metadataText, { ifNoneMatch: '*', contentType: 'application/json' });
    } catch (err) {
      if (err instanceof PreconditionFailedError) return { outcome: 'conflict' };
      throw err;
    }
    try {
      await this.store.put(join(base.tableRoot, 'metadata/version-hint.text'), String(version));
    } catch {
      // The commit is done; a stale hint only costs readers a look past it.
    }
    return { outcome: 'committed', metadataKey: key };
  }
}
