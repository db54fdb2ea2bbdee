// Apache Iceberg's command-line options (see formats/format-settings.ts): the CLI's spelling of a table's `catalog`
// setting (catalogs.ts) for commands that read or commit to an Iceberg table — `--catalog glue --glue-database D
// --glue-table T`, `--catalog rest --rest-uri U --rest-namespace N --rest-table T [--rest-auth sigv4
// --rest-signing-name s3tables --rest-region R]`, or `--catalog path --path-metadata-naming uuid`. The flags build
// the same object a table config holds and are checked by the same schema, so both refuse the same things; kept
// with the format so the CLI names no Iceberg setting: settings.ts declares them as the format's `cli`, and the CLI
// registers every format's (cli/format-options.ts).
import { UsageError } from '../../errors.js';
import type { FormatCliOption } from '../format-settings.js';
import { type IcebergCatalogSetting, icebergCatalogSchema } from './catalogs.js';

/** The name Iceberg is registered under (format.ts): `--catalog` is refused with any other `--format`. */
const ICEBERG_FORMAT_NAME = 'iceberg';

/** The flags as commander parses them. */
export interface CatalogFlags {
  readonly catalog?: 'path' | 'glue' | 'rest';
  readonly pathMetadataNaming?: string;
  readonly glueDatabase?: string;
  readonly glueTable?: string;
  readonly glueCatalogId?: string;
  readonly glueRegion?: string;
  readonly restUri?: string;
  readonly restWarehouse?: string;
  readonly restNamespace?: string;
  readonly restTable?: string;
  readonly restAuth?: 'none' | 'sigv4' | 'oauth2';
  readonly restSigningName?: string;
  readonly restRegion?: string;
  readonly restTokenEnv?: string;
  readonly restTokenSecretArn?: string;
  readonly restTokenParameter?: string;
}

/** The catalog flags, in help order. */
export const ICEBERG_CATALOG_CLI_OPTIONS: readonly FormatCliOption[] = [
  {
    flags: '--catalog <type>',
    description: 'Iceberg only: the catalog the table commits through (default: path)',
    choices: ['path', 'glue', 'rest'],
  },
  {
    flags: '--path-metadata-naming <naming>',
    description:
      '--catalog path: "uuid" when no catalog manages the table although its metadata files are named 000NN-<uuid>.metadata.json (default: hadoop, v<N>.metadata.json)',
  },
  { flags: '--glue-database <name>', description: '--catalog glue: the Glue database' },
  { flags: '--glue-table <name>', description: '--catalog glue: the Glue table' },
  {
    flags: '--glue-catalog-id <account>',
    description: '--catalog glue: the Data Catalog owner (default: your account)',
  },
  { flags: '--glue-region <region>', description: '--catalog glue: the Glue region (default: AWS_REGION)' },
  {
    flags: '--rest-uri <url>',
    description: '--catalog rest: base URI, e.g. https://s3tables.eu-west-1.amazonaws.com/iceberg',
  },
  {
    flags: '--rest-warehouse <name>',
    description: '--catalog rest: the warehouse (S3 Tables: the table bucket ARN)',
  },
  { flags: '--rest-namespace <ns>', description: '--catalog rest: the namespace, levels separated by "."' },
  { flags: '--rest-table <name>', description: '--catalog rest: the table' },
  {
    flags: '--rest-auth <type>',
    description: '--catalog rest: request authentication',
    choices: ['none', 'sigv4', 'oauth2'],
    defaultValue: 'none',
  },
  {
    flags: '--rest-signing-name <name>',
    description: '--rest-auth sigv4: the signing name (s3tables, glue)',
  },
  { flags: '--rest-region <region>', description: '--rest-auth sigv4: the signing region' },
  {
    flags: '--rest-token-env <name>',
    description: '--rest-auth oauth2: the variable holding the token (default ICEBERG_REST_TOKEN)',
  },
  {
    flags: '--rest-token-secret-arn <arn>',
    description: '--rest-auth oauth2: the Secrets Manager secret (full ARN) whose string is the token',
  },
  {
    flags: '--rest-token-parameter <name>',
    description: '--rest-auth oauth2: the SSM SecureString parameter (name or ARN) holding the token',
  },
];

const defined = <T extends Record<string, unknown>>(o: T) =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));

/**
 * The catalog setting the flags spell, or undefined without `--catalog`.
 * @throws UsageError when `--catalog` is given for a format other than Iceberg, or the flags are incomplete.
 */
export function catalogFromFlags(flags: CatalogFlags, format: string): IcebergCatalogSetting | undefined {
  if (flags.pathMetadataNaming !== undefined && flags.catalog !== undefined && flags.catalog !== 'path')
    throw new UsageError(
      `--path-metadata-naming is an option of --catalog path, not of --catalog ${flags.catalog}: remove it`,
    );
  // The path catalog is the default: its one option implies it.
  const catalog = flags.catalog ?? (flags.pathMetadataNaming === undefined ? undefined : 'path');
  if (catalog === undefined) return undefined;
  if (format !== ICEBERG_FORMAT_NAME)
    throw new UsageError(
      `--catalog is a setting of Iceberg tables (--format iceberg), not of format "${format}"`,
    );
  const raw =
    catalog === 'path'
      ? defined({ type: 'path', metadataNaming: flags.pathMetadataNaming })
      : catalog === 'glue'
        ? defined({
            type: 'glue',
            database: flags.glueDatabase,
            table: flags.glueTable,
            catalogId: flags.glueCatalogId,
            region: flags.glueRegion,
          })
        : defined({
            type: 'rest',
            uri: flags.restUri,
            warehouse: flags.restWarehouse,
            namespace: flags.restNamespace,
            table: flags.restTable,
            auth: defined({
              type: flags.restAuth ?? 'none',
              ...(flags.restAuth === 'sigv4'
                ? { signingName: flags.restSigningName, region: flags.restRegion }
                : {}),
              ...(flags.restAuth === 'oauth2'
                ? {
                    tokenEnv: flags.restTokenEnv,
                    tokenSecretArn: flags.restTokenSecretArn,
                    tokenParameter: flags.restTokenParameter,
                  }
                : {}),
            }),
          });
  const parsed = icebergCatalogSchema.safeParse(raw);
  if (!parsed.success)
    throw new UsageError(
      `--catalog ${catalog}: ${parsed.error.issues
        .map((i) => `${i.path.length === 0 ? '' : `${flagOf(catalog, i.path)} `}${i.message}`)
        .join('; ')}`,
    );
  return parsed.data;
}

/** The flag that sets a field of the setting (`database` → `--glue-database`). */
function flagOf(catalog: string, path: readonly PropertyKey[]): string {
  const field = String(path[path.length - 1]);
  const kebab = field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
  if (path[0] === 'auth') return field === 'type' ? '--rest-auth' : `--rest-${kebab}`;
  return `--${catalog}-${kebab}`;
}
