// The AWS Glue Data Catalog as an Iceberg catalog, committing the way Iceberg's GlueCatalog does so that Spark,
// Athena, Trino and EMR writers of the same table see our commits and we see theirs:
//
//   load    GetTable → Parameters.metadata_location (table_type must be ICEBERG) and the table's VersionId.
//   commit  write metadata/<N+1 as %05d>-<uuid>.metadata.json (put-if-absent: the name is ours alone), then
//           UpdateTable with the VersionId read at load (Glue's optimistic lock): metadata_location = the new file,
//           previous_metadata_location = the old one, every other parameter and the StorageDescriptor kept.
//           ConcurrentModificationException → `conflict` and our unreferenced file is deleted; any other failure
//           leaves the outcome unknown (Glue may have applied it) and the file stays. A GetTable without a
//           VersionId is refused before anything is written, as pyiceberg refuses it: an UpdateTable without one
//           is unconditional and would overwrite whatever another writer committed meanwhile.
//
// Not coordinated with: Iceberg Java writers configured with a Glue `lock-impl` (a lock manager), which send no
// VersionId and rely on their own lock plus a metadata_location re-check; their update can replace ours.
// Such writers must drop `lock-impl` (Glue's optimistic locking is Iceberg's default) before we commit beside them.
import { randomUUID } from 'node:crypto';
import {
  GetTableCommand,
  type GlueClient,
  type Table,
  type TableInput,
  UpdateTableCommand,
} from '@aws-sdk/client-glue';
import { InvalidInputError, TransientStoreError } from '../../../core/errors.js';
import type {
  CatalogCommitOutcome,
  IcebergCatalog,
  LoadedTable,
} from '../../../core/formats/iceberg/catalog.js';
import {
  describeSetting,
  type GlueCatalogSetting,
  IcebergCatalogError,
  loadFromMetadataLocation,
} from '../../../core/formats/iceberg/catalogs.js';
import type { ObjectStore } from '../../../ports/object-store.js';

/** Glue table parameters Iceberg's catalogs read and write (BaseMetastoreTableOperations). */
export const METADATA_LOCATION = 'metadata_location';
export const PREVIOUS_METADATA_LOCATION = 'previous_metadata_location';
export const TABLE_TYPE = 'table_type';
export const ICEBERG_TABLE_TYPE = 'ICEBERG';

/** What a load read from Glue and the commit must send back: the lock and the table as it was. */
interface GlueBase {
  readonly versionId: string | undefined;
  readonly metadataLocation: string;
  readonly glueTable: Table;
}

export interface GlueIcebergCatalogOptions {
  readonly client: GlueClient;
  readonly setting: GlueCatalogSetting;
  /** Where the metadata, manifests and data files are read and written. */
  readonly store: ObjectStore;
}

/** Shape of SDK service errors and Node network errors, read defensively. */
interface SdkErrorLike {
  readonly name?: string;
  readonly message?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
}

/**
 * One Glue table as an {@link IcebergCatalog}. `load(tableRoot)` takes the table root (key prefix of `store`) the
 * metadata location must lie under; the Glue table is the one the setting names.
 */
export class GlueIcebergCatalog implements IcebergCatalog {
  /** Glue's `metadata_location` makes a file current, not the file's existence (see {@link IcebergCatalog}). */
  readonly metastore = true;
  /**
   * What each load read, by the LoadedTable it returned. Why a WeakMap rather than a field of LoadedTable: the
   * commit loop hands back exactly the object `load` returned, and the port stays the same for every catalog.
   */
  private readonly bases = new WeakMap<LoadedTable, GlueBase>();
  private readonly name: string;

  constructor(private readonly options: GlueIcebergCatalogOptions) {
    this.name = describeSetting(options.setting);
  }

  async load(tableRoot: string): Promise<LoadedTable> {
    const glueTable = await this.getTable();
    const parameters = glueTable.Parameters ?? {};
    const type = parameters[TABLE_TYPE];
    if (type === undefined || type.toUpperCase() !== ICEBERG_TABLE_TYPE)
      throw new IcebergCatalogError(
        this.name,
        `the Glue table is not an Iceberg table (its ${TABLE_TYPE} parameter is ${type === undefined ? 'missing' : JSON.stringify(type)}, not "${ICEBERG_TABLE_TYPE}")`,
      );
    const metadataLocation = parameters[METADATA_LOCATION];
    if (metadataLocation === undefined || metadataLocation === '')
      throw new IcebergCatalogError(this.name, `the Glue table has no ${METADATA_LOCATION} parameter`);
    const loaded = await loadFromMetadataLocation(this.options.store, tableRoot, metadataLocation);
    this.bases.set(loaded, { versionId: glueTable.VersionId, metadataLocation, glueTable });
    return loaded;
  }

  async commit(base: LoadedTable, metadataText: string): Promise<CatalogCommitOutcome> {
    const read = this.bases.get(base);
    if (read === undefined)
      throw new InvalidInputError(`${this.name}: commit on a table this catalog did not load`);
    if (read.versionId === undefined || read.versionId === '')
      throw new IcebergCatalogError(
        this.name,
        "Glue returned the table without a VersionId, so an UpdateTable could not be conditioned on it and would overwrite whatever another writer committed meanwhile (refused as pyiceberg refuses it). Check that the caller may read the table's version (glue:GetTable) and that nothing proxies Glue's answer; retry once GetTable returns a VersionId",
      );
    const store = this.options.store;
    const name = `${String(base.version + 1).padStart(5, '0')}-${randomUUID()}.metadata.json`;
    const key = `${base.tableRoot === '' ? '' : `${base.tableRoot}/`}metadata/${name}`;
    const location = base.paths.path(key);
    await store.put(key, metadataText, { ifNoneMatch: '*', contentType: 'application/json' });
    try {
      await this.options.client.send(
        new UpdateTableCommand({
          ...this.ids(),
          // Glue otherwise archives a table version per commit, and a frequently compacted table would reach
          // the account's version quota (Iceberg's `glue.skip-archive`, default true).
          SkipArchive: true,
          VersionId: read.versionId,
          TableInput: tableInput(read.glueTable, {
            ...read.glueTable.Parameters,
            [TABLE_TYPE]: ICEBERG_TABLE_TYPE,
            [METADATA_LOCATION]: location,
            [PREVIOUS_METADATA_LOCATION]: read.metadataLocation,
          }),
        }),
      );
    } catch (err) {
      const e = (err ?? {}) as SdkErrorLike;
      if (e.name === 'ConcurrentModificationException') {
        // Glue refused the update as a whole: nothing points at our file, so it goes.
        await store.deleteMany([{ key }]);
        return { outcome: 'conflict' };
      }
      const failure = this.failure(err, 'UpdateTable', true);
      // A refusal (4xx: access, validation, a table gone) applied nothing: the file is ours alone to remove.
      if (failure instanceof IcebergCatalogError) await store.deleteMany([{ key }]);
      throw failure;
    }
    return { outcome: 'committed', metadataKey: key };
  }

  private ids(): { CatalogId?: string; DatabaseName: string } {
    const s = this.options.setting;
    return { ...(s.catalogId === undefined ? {} : { CatalogId: s.catalogId }), DatabaseName: s.database };
  }

  private async getTable(): Promise<Table> {
    try {
      const out = await this.options.client.send(
        new GetTableCommand({ ...this.ids(), Name: this.options.setting.table }),
      );
      if (out.Table === undefined) throw new IcebergCatalogError(this.name, 'GetTable returned no table');
      return out.Table;
    } catch (err) {
      if (err instanceof IcebergCatalogError) throw err;
      throw this.failure(err, 'GetTable', false);
    }
  }

  /**
   * A Glue failure as the error callers act on: throttling, 5xx and network faults are retryable (after an
   * UpdateTable, with the outcome unknown: a retry of the group finds its own snapshot if Glue applied it), a
   * missing table or denied access is the config's problem.
   */
  private failure(err: unknown, operation: string, afterWrite: boolean): Error {
    const e = (err ?? {}) as SdkErrorLike;
    const status = e.$metadata?.httpStatusCode;
    const code = e.name ?? 'Error';
    const unknown = afterWrite
      ? ' The commit state is unknown: the new metadata file was kept, since Glue may point at it now.'
      : '';
    const refused = afterWrite ? ' The new metadata file was removed.' : '';
    if (
      status === undefined ||
      status >= 500 ||
      /Throttl|TooManyRequests|Timeout|ECONN|EPIPE|ETIMEDOUT|InternalService|ServiceUnavailable/.test(code)
    )
      return new TransientStoreError(
        `Glue ${operation} on ${this.name} failed (${code}: ${e.message}).${unknown} Retry`,
      );
    return new IcebergCatalogError(
      this.name,
      `Glue ${operation} failed with ${code}: ${e.message}.${refused}`,
      {
        cause: err,
      },
    );
  }
}

/**
 * The TableInput of an update: the table as Glue holds it (owner, description, retention, partition keys,
 * storage descriptor with its columns and Location, which Iceberg writers keep in step with the schema and
 * location our commit does not change), with the new parameters. The Location is never taken from the metadata
 * file: that file is the table writers' text, and copying its `location` would let one of them repoint the Glue
 * table (what Lake Formation and other tools read) at another place.
 */
function tableInput(table: Table, parameters: Record<string, string>): TableInput {
  return {
    Name: table.Name,
    ...(table.Description === undefined ? {} : { Description: table.Description }),
    ...(table.Owner === undefined ? {} : { Owner: table.Owner }),
    ...(table.Retention === undefined ? {} : { Retention: table.Retention }),
    ...(table.PartitionKeys === undefined ? {} : { PartitionKeys: table.PartitionKeys }),
    TableType: table.TableType ?? 'EXTERNAL_TABLE',
    ...(table.StorageDescriptor === undefined ? {} : { StorageDescriptor: table.StorageDescriptor }),
    Parameters: parameters,
  };
}
