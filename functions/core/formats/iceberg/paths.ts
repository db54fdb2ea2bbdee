// Maps the paths an Iceberg writer recorded (`s3://bucket/t/data/x.parquet`, `hdfs://…`, relative `t/data/…`) to
// keys of the store the table is read from: a path resolves only below the table's recorded location, in its bucket,
// and to a key the core confinement rule (core/keys.ts) accepts under the table root.
import { KeyOutsideTableError, keyRefusal, keyUnderRoot } from '../../keys.js';
import { IcebergUnsupportedError } from './errors.js';

const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]*/;

function normalise(location: string): string {
  return location.replace(/^\.\//, '').replace(/\/+$/, '');
}

/**
 * `s3a://b`, `s3n://b`, `S3://b` → `s3://b`; other schemes lower-cased: one spelling per bucket (or filesystem) of a
 * URI's `scheme://authority`, undefined for a path without one. Hadoop writers record `s3a://` for what others
 * call `s3://`; the bucket is what matters.
 */
function authorityOf(path: string): string | undefined {
  const found = SCHEME.exec(path)?.[0];
  if (found === undefined) return undefined;
  const [scheme = '', authority = ''] = found.split('://');
  const family = /^s3[an]?$/i.test(scheme) ? 's3' : scheme.toLowerCase();
  return `${family}://${authority}`;
}

/**
 * Why an Iceberg table configured at `configured` (`s3://bucket/prefix`) may not be read and committed with metadata
 * whose `location` is `location`, or undefined when it may (they name the same place, `s3a://` and `s3://` alike).
 *
 * Why refused: Iceberg records absolute paths, and every reader resolves them from the recorded location. A table
 * whose metadata names another bucket or prefix was copied (or is read through another name); rewriting it here
 * would replace files its readers never read and record new files at the recorded location, where they do not exist.
 * The same for the Glue table's `StorageDescriptor.Location`, which a commit must never take from such metadata.
 */
export function relocationRefusal(location: string, configured: string): string | undefined {
  const spell = (uri: string) => {
    const n = normalise(uri);
    const authority = authorityOf(n);
    return authority === undefined ? n : `${authority}${n.replace(SCHEME, '')}`;
  };
  if (spell(location) === spell(configured)) return undefined;
  return `the table location ${location} while it is configured at ${configured}: its readers resolve its files at the recorded location, so a rewrite here would replace files they do not read and record new files where they do not exist. Configure the table where its metadata says it lies (an S3 access point alias works as a bucket name), or move it with an Iceberg engine so its metadata names its new location`;
}

/**
 * Resolves writer paths to store keys. Why relocate instead of parsing URIs: the metadata holds the writer's
 * absolute paths (a table copied to a folder keeps them), and the only safe anchor is the table location the
 * metadata itself records; the part below it is the same wherever the table lies. What is never relocated: a path
 * naming another bucket (or filesystem) than the location does, which is another table's file whatever its path.
 */
export class PathResolver {
  private readonly location: string;
  private readonly locationPath: string;
  private readonly authority: string | undefined;
  private readonly root: string;

  /**
   * @param table the table as the caller names it, for messages.
   * @param location the `location` recorded in the table metadata.
   * @param tableRoot the key prefix of the table root in the store ('' for the store's root).
   */
  constructor(
    private readonly table: string,
    location: string,
    tableRoot: string,
  ) {
    this.location = normalise(location);
    this.locationPath = this.location.replace(SCHEME, '');
    this.authority = authorityOf(this.location);
    this.root = tableRoot.replace(/\/+$/, '');
  }

  /**
   * The store key of a path the metadata names (`source` says where, for messages).
   * @throws IcebergUnsupportedError when the path lies outside the table location (`write.data.path` elsewhere) or
   *   in another bucket or filesystem than the location's.
   * @throws KeyOutsideTableError when the path leaves the table root below the location (`..`, encoded traversal,
   *   control characters): the table's metadata names another table's files.
   */
  key(path: string, source = 'its metadata'): string {
    const p = path.replace(/^\.\//, '');
    let rest: string | undefined;
    if (p.startsWith(`${this.location}/`)) rest = p.slice(this.location.length + 1);
    else {
      const authority = authorityOf(p);
      if (authority !== undefined && this.authority !== undefined && authority !== this.authority)
        throw new IcebergUnsupportedError(
          this.table,
          `a file in another bucket or filesystem (${authority}) than the table location ${this.location} (${path})`,
        );
      const bare = p.replace(SCHEME, '');
      if (this.locationPath !== '' && bare.startsWith(`${this.locationPath}/`))
        rest = bare.slice(this.locationPath.length + 1);
    }
    if (rest === undefined)
      throw new IcebergUnsupportedError(
        this.table,
        `a file outside the table location ${this.location} (${path})`,
      );
    const built = keyUnderRoot(this.root, rest);
    if ('refused' in built) throw new KeyOutsideTableError(this.table, path, built.refused, source);
    return built.key;
  }

  /**
   * The path the metadata records for a store key below the table root (the inverse of {@link key}): the table
   * location followed by the key's part below the root, so files we write are named the way the writer of the
   * table names its own.
   * @throws IcebergUnsupportedError when the key lies outside the table root; KeyOutsideTableError when it is
   *   under it but not a key the confinement rule accepts (it would be recorded for every reader to resolve).
   */
  path(key: string): string {
    const prefix = this.root === '' ? '' : `${this.root}/`;
    if (!key.startsWith(prefix) || key.length === prefix.length)
      throw new IcebergUnsupportedError(this.table, `a file outside the table root ${this.root} (${key})`);
    const refused = keyRefusal(this.root, key);
    if (refused !== undefined)
      throw new KeyOutsideTableError(this.table, key, refused, 'a file this rewrite would record');
    return `${this.location}/${key.slice(prefix.length)}`;
  }
}
