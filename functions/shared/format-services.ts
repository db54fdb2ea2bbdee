// What the table formats' adapters have in common, and nothing of any one format: where a store's tables are, the
// clients every entry point builds once and hands every format, and the shape of a format's adapter. Each format's
// own I/O (its log store, its catalog clients) lives in its folder under adapters/formats/, and the registry there
// (adapters/formats/index.ts) composes the `FormatServices` core's formats take, so that adding a format touches
// neither this module nor the entry points that build the services.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TableFormatName } from '../core/formats/index.js';
import type { Clock } from '../ports/clock.js';
import type { Env } from './aws-env.js';

/**
 * Where the tables of one store are, as the other writers of a table spell its path: in an S3 bucket (the
 * path is `<scheme>://<bucket>/<tableRoot>`, the scheme being the table's `tablePathScheme`), or anywhere else
 * with a path of its own (a local folder: there are no other engines to agree with, only other runs).
 */
export type TableLocation =
  | { readonly bucket: string }
  | { readonly tablePath: (tableRoot: string) => string };

/**
 * The clients an entry point builds once and hands every format's adapter: what more than one format may use, so
 * none of them builds its own (a DynamoDB client per region, the clock).
 */
export interface FormatServicesContext {
  /**
   * The DynamoDB client for a table in `region` (a format's setting that names a DynamoDB table names its region);
   * undefined asks for the entry point's own client (kept for callers that still pass one).
   */
  readonly dynamodb: (region: string | undefined) => DynamoDBClient;
  /** The time a format's adapter stamps on what it writes (expiry times of commit entries). */
  readonly clock: Clock;
}

/**
 * One table format's adapters, as the adapter registry (adapters/formats/index.ts) composes them: the services its
 * `forTable` takes, built from the shared context, the format's own `Options` and the tables' location. The
 * format's own clients (`Options`) are built by the entry point once per cold start — by `clientsFromEnv`, or
 * handed in by a test — and are optional: a format whose clients were not built refuses the tables that need them.
 */
export interface FormatAdapter<Options extends object = object, Services extends object = object> {
  /** The format whose `forTable` takes these services, as the core registry (core/formats/index.ts) names it. */
  readonly format: TableFormatName;
  /** The format's own clients for an entry point running with `env`; absent for a format that needs none. */
  readonly clientsFromEnv?: (env: Env) => Options;
  /** The services for the tables at `location`, as the format's `forTable` takes them. */
  services(options: FormatServicesContext & Partial<Options>, location: TableLocation): Services;
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
