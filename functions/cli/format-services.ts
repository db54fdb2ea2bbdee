// The format a CLI command commits, settles or reads through, bound to the table settings format-options.ts parsed and
// to AWS clients from the CLI's environment. Apart from format-options.ts so that defining the options loads no AWS SDK.
import { resolve } from 'node:path';
import { formatClientsFromEnv, formatServices } from '../adapters/formats/index.js';
import { LocalObjectStore } from '../adapters/local-object-store.js';
import type { OpenedStore } from '../adapters/open-store.js';
import type { FormatServices, TableFormatSettings } from '../core/formats/index.js';
import { formatForTable, type TableFormatName, tableFormat } from '../core/formats/index.js';
import type { TableFormat } from '../core/formats/table-format.js';
import type { Clock } from '../ports/clock.js';
import { dynamoDbClientFromEnv, type Env } from '../shared/aws-env.js';
import type { TableLocation } from '../shared/format-services.js';

/** Every registered format's table-setting options, as commander parses them (see core/formats/index.ts). */
/**
 * The format a command on `opened` commits and settles through: `format` bound to the table's settings (as
 * {@link formatSettingsOf} parsed them, or a caller's), with the services of {@link cliFormatServices}.
 */
export function commandFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  settings: TableFormatSettings,
  io: { readonly env: Env; readonly clock: Clock },
): TableFormat {
  return formatForTable([{ ...settings, name: table, format }], table, cliFormatServices(opened, io));
}

/**
 * The format a command that only reads `opened` (profile, plan, a dry run) reads it through: bound, as
 * {@link commandFormat}, to the settings it reads through (`formatSettingsOf(…, 'read')`: e.g. a table's
 * catalog), or, given none, the registered format unbound — no client is built for a table read as its format's
 * defaults say.
 */
export function readingFormat(
  opened: OpenedStore,
  table: string,
  format: TableFormatName,
  settings: TableFormatSettings | undefined,
  io: { readonly env: Env; readonly clock: Clock },
): TableFormat {
  const given = settings !== undefined && Object.values(settings).some((value) => value !== undefined);
  return given ? commandFormat(opened, table, format, settings, io) : tableFormat(format);
}

/**
 * The format services of a CLI command on `opened`: Glue/REST catalog clients and DynamoDB clients from the CLI's
 * environment (AWS_ENDPOINT_URL_DYNAMODB, keys; the region a setting names). On S3 the commit entries'
 * table path is the bucket's, as Spark spells it; in a local folder it is the folder's `file://` path (no other
 * engine shares a local folder's entries, only other runs).
 */
export function cliFormatServices(
  opened: OpenedStore,
  io: { readonly env: Env; readonly clock: Clock },
): FormatServices {
  return formatServices(
    {
      dynamodb: (region) =>
        dynamoDbClientFromEnv(
          region === undefined ? io.env : { ...io.env, AWS_REGION: region, AWS_DEFAULT_REGION: region },
        ),
      clock: io.clock,
      ...formatClientsFromEnv(io.env),
    },
    tableLocationOf(opened),
  );
}

function tableLocationOf(opened: OpenedStore): TableLocation {
  const bucket = /^s3a?:\/\/([^/]+)/i.exec(opened.uri.trim())?.[1];
  if (bucket !== undefined) return { bucket };
  const root = opened.store instanceof LocalObjectStore ? opened.store.root : resolve(opened.uri);
  return {
    tablePath: (tableRoot) => `file://${resolve(root, tableRoot).replace(/\/+$/, '') || '/'}`,
  };
}
