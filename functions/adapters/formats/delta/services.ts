// The services Delta's `forTable` takes (`DeltaFormatServices`, core/formats/delta/coordination.ts), built over
// the DynamoDB clients every entry point hands the format adapters: what the adapter registry
// (adapters/formats/index.ts) composes for a Delta table.
import type { DeltaFormatServices } from '../../../core/formats/delta/coordination.js';
import type { ObjectStore } from '../../../ports/object-store.js';
import type { FormatAdapter, FormatServicesContext, TableLocation } from '../../../shared/format-services.js';
import { DynamoDbDeltaLogStore, s3TablePath } from './dynamodb-log-store.js';

/**
 * The services for Delta tables at `location`: a table declared `deltaLogStore: { type: "dynamodb" }` commits
 * through Spark's S3DynamoDBLogStore protocol in that DynamoDB table (in the region the setting names), with the
 * table path its Spark writers use; one declared `s3-conditional` with `checkDynamoDbTable` reads that table for
 * entries of the table. Both are the same adapter: a read-only view is the log store asked only to read.
 */
export function deltaFormatServices(
  context: FormatServicesContext,
  location: TableLocation,
): Required<DeltaFormatServices> {
  const store = (
    table: {
      readonly tableName: string;
      readonly region: string;
      readonly tablePathScheme?: 's3' | 's3a' | undefined;
    },
    objects: ObjectStore,
  ) =>
    new DynamoDbDeltaLogStore({
      client: context.dynamodb(table.region),
      tableName: table.tableName,
      region: table.region,
      store: objects,
      tablePath:
        'bucket' in location
          ? s3TablePath(location.bucket, table.tablePathScheme ?? 's3')
          : location.tablePath,
      clock: context.clock,
    });
  return { deltaLogStore: store, deltaCommitEntries: store };
}

/** Delta's adapters: no clients of its own (the shared DynamoDB clients suffice), its log stores per table. */
export const deltaAdapter: FormatAdapter<object, Required<DeltaFormatServices>> = {
  format: 'delta',
  services: deltaFormatServices,
};
