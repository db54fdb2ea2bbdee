// The I/O the table formats may need to honour a table's settings (see `FormatServices` in
// core/formats/table-format.ts), built where the AWS clients are: the workflow's runtime, the sweep and the CLI.
// Core never builds an adapter; it is handed these factories and asks for what a table's config names.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDbDeltaLogStore, s3TablePath } from '../adapters/formats/delta/dynamodb-log-store.js';
import type { IcebergCatalogServices } from '../core/formats/iceberg/catalogs.js';
import type { FormatServices } from '../core/formats/index.js';
import type { Clock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';

/**
 * Where the tables of one store are, as the other writers of a table spell its path: in an S3 bucket (the
 * path is `<scheme>://<bucket>/<tableRoot>`, the scheme being the table's `tablePathScheme`), or anywhere else
 * with a path of its own (a local folder: there are no other engines to agree with, only other runs).
 */
export type TableLocation =
  | { readonly bucket: string }
  | { readonly tablePath: (tableRoot: string) => string };

export interface FormatServicesOptions {
  /**
   * The DynamoDB client for a table in `region` (a Delta setting always names one); undefined asks for the entry
   * point's own client (kept for callers that still pass one, never reached by a Delta setting).
   */
  readonly dynamodb: (region: string | undefined) => DynamoDBClient;
  /** Sets the commit entries' `expireTime`. */
  readonly clock: Clock;
  /** Iceberg catalog clients (Glue, REST) for tables configured with one; absent: such a table is refused. */
  readonly iceberg?: IcebergCatalogServices;
}

/**
 * The services for tables at `location`: a Delta table declared `deltaLogStore: { type: "dynamodb" }` commits
 * through Spark's S3DynamoDBLogStore protocol in that DynamoDB table (in the region the setting names), with the
 * table path its Spark writers use; one declared `s3-conditional` with `checkDynamoDbTable` reads that table for
 * entries of the table; an Iceberg table configured with a Glue or REST catalog through the client
 * `options.iceberg` builds.
 */
export function formatServices(options: FormatServicesOptions, location: TableLocation): FormatServices {
  const store = (
    table: {
      readonly tableName: string;
      readonly region: string;
      readonly tablePathScheme?: 's3' | 's3a' | undefined;
    },
    objects: ObjectStore,
  ) =>
    new DynamoDbDeltaLogStore({
      client: options.dynamodb(table.region),
      tableName: table.tableName,
      region: table.region,
      store: objects,
      tablePath:
        'bucket' in location
          ? s3TablePath(location.bucket, table.tablePathScheme ?? 's3')
          : location.tablePath,
      clock: options.clock,
    });
  return {
    ...options.iceberg,
    deltaLogStore: store,
    deltaCommitEntries: store,
  };
}

/**
 * DynamoDB clients by region, each built once per cold start: `base` (the entry point's own client, which tests
 * point at DynamoDB Local) where no region is named, `create(region)` for a region. The clients `create` builds by
 * default take their endpoint from the environment (AWS_ENDPOINT_URL_DYNAMODB), as `base` does.
 */
export function dynamoDbClientsByRegion(
  base: DynamoDBClient,
  create: (region: string) => DynamoDBClient = (region) => new DynamoDBClient({ region }),
): (region: string | undefined) => DynamoDBClient {
  const clients = new Map<string, DynamoDBClient>();
  return (region) => {
    if (region === undefined) return base;
    let client = clients.get(region);
    if (client === undefined) {
      client = create(region);
      clients.set(region, client);
    }
    return client;
  };
}
