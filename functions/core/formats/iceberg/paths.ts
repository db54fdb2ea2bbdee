// Maps the paths an Iceberg writer recorded (`s3://bucket/t/data/x.parquet`, `hdfs://…`, relative `t/data/…`) to
// keys of the store the table is read from: a path resolves only below the table's recorded location.
import { IcebergUnsupportedError } from './errors.js';

const SCHEME = /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^/]*/;

function normalise(location: string): string {
  return location.replace(/^\.\//, '').replace(/\/+$/, '');
}

/**
 * Resolves writer paths to store keys. Why relocate instead of parsing URIs: the metadata holds the writer's
 * absolute paths (a table copied, or read through another bucket alias, keeps them), and the only safe anchor is
 * the table location the metadata itself records; the part below it is the same wherever the table lies.
 */
export class PathResolver {
  private readonly location: string;
  private readonly locationPath: string;
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
    this.root = tableRoot.replace(/\/+$/, '');
  }

  /**
   * The store key of a path the metadata names.
   * @throws IcebergUnsupportedError when the path lies outside the table location (`write.data.path` elsewhere).
   */
  key(path: string): string {
    const p = path.replace(/^\.\//, '');
    let rest: string | undefined;
    if (p.startsWith(`${this.location}/`)) rest = p.slice(this.location.length + 1);
    else {
      const bare = p.replace(SCHEME, '');
      if (this.locationPath !== '' && bare.startsWith(`${this.locationPath}/`))
        rest = bare.slice(this.locationPath.length + 1);
    }
    if (rest === undefined)
      throw new IcebergUnsupportedError(
        this.table,
        `a file outside the table location ${this.location} (${path})`,
      );
    return this.root === '' ? rest : `${this.root}/${rest}`;
  }

  /**
   * The path the metadata records for a store key below the table root (the inverse of {@link key}): the table
   * location followed by the key's part below the root, so files we write are named the way the writer of the
   * table names its own.
   * @throws IcebergUnsupportedError when the key lies outside the table root.
   */
  path(key: string): string {
    const prefix = this.root === '' ? '' : `${this.root}/`;
    if (!key.startsWith(prefix) || key.length === prefix.length)
      throw new IcebergUnsupportedError(this.table, `a file outside the table root ${this.root} (${key})`);
    return `${this.location}/${key.slice(prefix.length)}`;
  }
}
