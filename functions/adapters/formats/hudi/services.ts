// The services Hudi's `forTable` takes (`HudiFormatServices`, core/formats/hudi/format.ts), built over the DynamoDB
// clients every entry point hands the format adapters: the DynamoDBBasedLockProvider lock of a table declaring
// `hudiLock: { provider: "dynamodb" }`. The storage-based lock needs no service (it is a file beside the table).
import type { HudiFormatServices } from '../../../core/formats/hudi/format.js';
import type { FormatAdapter, FormatServicesContext } from '../../../shared/format-services.js';
import { DynamoDbHudiLock } from './dynamodb-lock.js';

export function hudiFormatServices(context: FormatServicesContext): Required<HudiFormatServices> {
  return {
    hudiDynamoDbLock: (setting) =>
      new DynamoDbHudiLock({
        client: context.dynamodb(setting.region),
        tableName: setting.table,
        ...(setting.region === undefined ? {} : { region: setting.region }),
        partitionKey: setting.partitionKey,
        clock: context.clock,
      }),
  };
}

/** Hudi's adapters: no clients of its own (the shared DynamoDB clients suffice), its DynamoDB lock per table. */
export const hudiAdapter: FormatAdapter<object, Required<HudiFormatServices>> = {
  format: 'hudi',
  services: hudiFormatServices,
};
