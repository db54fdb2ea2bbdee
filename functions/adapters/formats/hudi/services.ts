// The services Hudi's `forTable` takes (`HudiFormatServices`, core/formats/hudi/format.ts), built over the DynamoDB
// clients every entry point hands the format adapters: the DynamoDBBasedLockProvider lock of a table declaring
// `hudiLock: { provider: "dynamodb" }` (the storage-based lock needs no service: it is a file beside the table), and
// the decoded instants a warm function keeps across invocations, built once per cold start with the other clients.
import type { HudiFormatServices } from '../../../core/formats/hudi/format.js';
import { DEFAULT_INSTANT_CACHE_BYTES, HudiInstantCache } from '../../../core/formats/hudi/instant-cache.js';
import type { Env } from '../../../shared/aws-env.js';
import type { FormatAdapter, FormatServicesContext } from '../../../shared/format-services.js';
import { DynamoDbHudiLock } from './dynamodb-lock.js';

/** Hudi's own clients: the instant cache an entry point keeps for as long as it runs. */
export interface HudiClients {
  readonly hudiInstantCache: HudiInstantCache;
}

export function hudiFormatServices(
  context: FormatServicesContext & Partial<HudiClients>,
): HudiFormatServices & Pick<Required<HudiFormatServices>, 'hudiDynamoDbLock'> {
  return {
    hudiDynamoDbLock: (setting) =>
      new DynamoDbHudiLock({
        client: context.dynamodb(setting.region),
        tableName: setting.table,
        ...(setting.region === undefined ? {} : { region: setting.region }),
        partitionKey: setting.partitionKey,
        clock: context.clock,
      }),
    // Without one (a test that builds no clients), every read decodes the active timeline afresh.
    ...(context.hudiInstantCache === undefined ? {} : { hudiInstantCache: context.hudiInstantCache }),
  };
}

/**
 * The instant cache's bound for a function of the environment's memory: 1/64 of it in instant-file bytes (8 MiB for
 * the profiler's 512 MB), since decoded metadata takes several times its file's size in the heap; the default bound
 * where no function memory is set (the CLI). The table being read holds its instants decoded anyway; the bound caps
 * what other tables and archived instants keep.
 */
export function instantCacheBytes(env: Env): number {
  const mb = Number(env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE);
  return Number.isFinite(mb) && mb > 0 ? Math.floor((mb * 1024 * 1024) / 64) : DEFAULT_INSTANT_CACHE_BYTES;
}

/** Hudi's adapters: its instant cache (its one client of its own), its DynamoDB lock per table. */
export const hudiAdapter: FormatAdapter<HudiClients, HudiFormatServices> = {
  format: 'hudi',
  clientsFromEnv: (env) => ({ hudiInstantCache: new HudiInstantCache(instantCacheBytes(env)) }),
  services: hudiFormatServices,
};
