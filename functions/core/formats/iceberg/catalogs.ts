// Which catalog an Iceberg table's commits go through, as configured per table (`catalog`), and what the
// composition root must hand the format so it can honour that setting. All writers of a table must agree on its
// catalog (a commit the catalog does not see is a commit its readers never find, and is overwritten by the next
// one), so it is a property of the table, never of the deployment:
//
//   { type: "path" }                                   the default: metadata/v<N+1>.metadata.json put-if-absent
//   { type: "path", metadataNaming: "uuid" }           the same, on a table no catalog manages whose files are
//                                                      named 000NN-<uuid>.metadata.json (refused without it)
//   { type: "glue", database, table, ... }             AWS Glue Data Catalog (Iceberg's GlueCatalog)
//   { type: "rest", uri, namespace, table, auth, ... } an Iceberg REST catalog (Amazon S3 Tables, Glue's REST
//                                                      endpoint, Polaris, Nessie, …)
//
// The metastore catalogs are adapters (AWS SDK, HTTP), which core may not build: the handlers and the CLI pass a
// factory (`IcebergCatalogServices`), and this module only says what a setting means and how a catalog's pointer
// becomes a loaded table.
import { z } from 'zod';
import type { ObjectStore } from '../../../ports/object-store.js';
import { CompactorError, InvalidInputError } from '../../errors.js';
import {
  describeTable,
  type IcebergCatalog,
  type LoadedTable,
  PathCatalog,
  type PathMetadataNaming,
  readMetadataText,
  refuseRelocated,
} from './catalog.js';
import { IcebergMetadataError } from './errors.js';
import { parseTableMetadata } from './metadata.js';
import { PathResolver } from './paths.js';

/** An AWS region code (`eu-west-1`, `us-gov-west-1`, `cn-north-1`), not a display name. */
const AWS_REGION = /^[a-z]{2}(-[a-z]+)+-\d+$/;

/** Glue's rule for database and table names (lower-case in practice; Glue lower-cases them anyway). */
const GLUE_NAME = /^[\w-]{1,255}$/;

/**
 * A Secrets Manager secret's complete ARN: the name ends in the `-XXXXXX` suffix Secrets Manager appends, so an IAM
 * grant on it names this secret and no other whose name merely begins the same.
 */
const SECRET_ARN =
  /^arn:aws[a-z-]*:secretsmanager:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:secret:[\w/+=.@-]+-[A-Za-z0-9]{6}$/;

/** An SSM parameter's name (`/a/b`, `name`) or ARN, in SSM's alphabet. */
const SSM_PARAMETER =
  /^(arn:aws[a-z-]*:ssm:[a-z]{2}(-[a-z]+)+-\d+:\d{12}:parameter\/[\w./-]{1,2047}|\/?[\w.-]+(\/[\w.-]+)*)$/;

/**
 * The hosts a REST catalog may be reached on over plain `http://`: loopback only, for tests and local catalogs on
 * the same machine (nothing crosses a network there). Anywhere else a bearer token or a SigV4 session token would
 * travel in clear.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127(\.\d{1,3}){3}$/.test(host);
}

const region = z.string().regex(AWS_REGION, {
  error: (issue) => `${JSON.stringify(issue.input)} is not an AWS region code such as "eu-west-1"`,
});

/**
 * `catalog: { type: "path" }`: the table root's metadata/ folder is the catalog (Hadoop tables). A table whose
 * metadata files a metastore named (`00012-<uuid>.metadata.json`) is refused, since its readers follow the
 * metastore's pointer; `metadataNaming: "uuid"` is the operator's statement that no catalog manages it.
 */
const pathCatalogSchema = z.strictObject({
  type: z.literal('path'),
  /** @default "hadoop" (see PathMetadataNaming) */
  metadataNaming: z
    .enum(['hadoop', 'uuid'] satisfies PathMetadataNaming[], {
      error: (issue) =>
        `must be "hadoop" (v<N>.metadata.json, the default) or "uuid" (000NN-<uuid>.metadata.json on a table no catalog manages), not ${JSON.stringify(issue.input)}`,
    })
    .optional(),
});

/** `catalog: { type: "glue", ... }`: the Glue table whose `metadata_location` parameter points at the metadata. */
const glueCatalogSchema = z.strictObject({
  type: z.literal('glue'),
  database: z.string().regex(GLUE_NAME, { error: 'must be a Glue database name' }),
  table: z.string().regex(GLUE_NAME, { error: 'must be a Glue table name' }),
  /** The account owning the Data Catalog (Iceberg's `glue.id`). @default the caller's account */
  catalogId: z
    .string()
    .regex(/^\d{12}$/, { error: 'must be a 12-digit AWS account id' })
    .optional(),
  /** @default the function's (the CLI's: AWS_REGION) */
  region: region.optional(),
});

/** How requests to a REST catalog are authenticated. */
const restAuthSchema = z.discriminatedUnion(
  'type',
  [
    /** AWS SigV4 (Amazon S3 Tables: signing name `s3tables`; Glue's Iceberg REST endpoint: `glue`). */
    z.strictObject({
      type: z.literal('sigv4'),
      signingName: z
        .string()
        .regex(/^[a-z0-9-]+$/, { error: 'must be a service signing name such as "s3tables"' }),
      region,
    }),
    /**
     * A bearer token (an OAuth2 access token the catalog issued), from one place, never from the table config (a
     * secret does not belong there): the Secrets Manager secret `tokenSecretArn` (its SecretString is the token),
     * the SSM parameter `tokenParameter` (a SecureString, read decrypted), or the environment variable `tokenEnv`
     * of the process that commits. A secret or parameter keeps the token out of the functions' configuration,
     * where anyone allowed to read it would read the token too. @default tokenEnv ICEBERG_REST_TOKEN
     */
    z
      .strictObject({
        type: z.literal('oauth2'),
        tokenEnv: z
          .string()
          .regex(/^[A-Z_][A-Z0-9_]*$/, { error: 'must be an environment variable name' })
          .optional(),
        tokenSecretArn: z
          .string()
          .regex(SECRET_ARN, {
            error:
              "must be a Secrets Manager secret's full ARN, arn:aws:secretsmanager:<region>:<account>:secret:<name>-<6 characters> (the complete ARN, so that the grant names this secret alone)",
          })
          .optional(),
        tokenParameter: z
          .string()
          .regex(SSM_PARAMETER, {
            error:
              'must be an SSM parameter name such as /lake/iceberg-rest-token, or its ARN arn:aws:ssm:<region>:<account>:parameter/<name>',
          })
          .optional(),
      })
      .refine(
        (a) => [a.tokenEnv, a.tokenSecretArn, a.tokenParameter].filter((v) => v !== undefined).length <= 1,
        { error: 'takes one token source: tokenSecretArn, tokenParameter or tokenEnv, not several' },
      ),
    z.strictObject({ type: z.literal('none') }),
  ],
  {
    error: 'must be { "type": "sigv4", "signingName", "region" }, { "type": "oauth2" } or { "type": "none" }',
  },
);

/** `catalog: { type: "rest", ... }`: an Iceberg REST catalog's table. */
const restCatalogSchema = z.strictObject({
  type: z.literal('rest'),
  /** The catalog's base URI, before `/v1` (S3 Tables: `https://s3tables.<region>.amazonaws.com/iceberg`). */
  uri: z
    .url({
      protocol: /^https?$/,
      error: 'must be an https URL such as https://s3tables.eu-west-1.amazonaws.com/iceberg',
    })
    .refine((uri) => new URL(uri).protocol === 'https:' || isLoopbackHost(new URL(uri).hostname), {
      error:
        'must be an https:// URL: over http:// the bearer token or SigV4 session token would cross the network in clear (http:// is taken only on a loopback host, 127.0.0.1, ::1 or localhost, for tests and a catalog on the same machine)',
    }),
  /** Sent as `GET /v1/config?warehouse=…` (S3 Tables: the table bucket's ARN). */
  warehouse: z.string().min(1).optional(),
  /** The namespace, levels separated by `.`. */
  namespace: z.string().regex(/^[^.]+(\.[^.]+)*$/, { error: 'must be a namespace, levels separated by "."' }),
  table: z.string().min(1),
  auth: restAuthSchema,
});

/** The `catalog` field of an Iceberg table's config. */
export const icebergCatalogSchema = z.discriminatedUnion(
  'type',
  [pathCatalogSchema, glueCatalogSchema, restCatalogSchema],
  {
    error: (issue) => {
      if (issue.code !== 'invalid_union')
        return 'must be an object such as { "type": "path" }, { "type": "glue", "database", "table" } or { "type": "rest", "uri", "namespace", "table", "auth" }';
      const type = (issue.input as { type?: unknown } | undefined)?.type;
      return `must be "path" (the default), "glue" or "rest", ${type === undefined ? 'and is missing' : `not ${JSON.stringify(type)}`}`;
    },
  },
);

export type IcebergCatalogSetting = z.output<typeof icebergCatalogSchema>;
export type GlueCatalogSetting = Extract<IcebergCatalogSetting, { type: 'glue' }>;
export type RestCatalogSetting = Extract<IcebergCatalogSetting, { type: 'rest' }>;
/** A setting naming a catalog other than the table root's own metadata folder. */
export type MetastoreCatalogSetting = GlueCatalogSetting | RestCatalogSetting;

/**
 * Why a table of `format` may not carry `catalog`, or undefined when it may. A catalog on a Hive or Delta table
 * would be silently ignored (their logs and listings are their catalogs), so it is refused.
 */
export function misplacedCatalogMessage(format: string, catalog: unknown): string | undefined {
  if (catalog === undefined || format === 'iceberg') return undefined;
  return `catalog is a setting of Apache Iceberg tables (format "iceberg"), and this table's format is "${format}": remove it, or set format to "iceberg" if that is what the table is`;
}

/** The catalog of a table whose config names none. */
export const DEFAULT_ICEBERG_CATALOG = { type: 'path' } as const;

/**
 * What the Iceberg format needs from the composition root to honour a table's `catalog`: the catalog client
 * for `setting`, over `store` (where the metadata and manifest files are read and written).
 */
export interface IcebergCatalogServices {
  readonly icebergCatalog?: (setting: MetastoreCatalogSetting, store: ObjectStore) => IcebergCatalog;
}

/**
 * The table is configured with a metastore catalog but this entry point was built without catalog clients.
 * Refused rather than committed through the path catalog: a `vN.metadata.json` the metastore does not point at is
 * a commit no reader sees, and the next real commit silently drops it.
 */
export function catalogUnavailable(setting: MetastoreCatalogSetting): InvalidInputError {
  return new InvalidInputError(
    `This Iceberg table's catalog is ${describeSetting(setting)}, but this entry point was started without Iceberg catalog clients; nothing was committed. Run it where catalogs are wired (the deployment's functions, or the CLI with --catalog ${setting.type})`,
  );
}

/**
 * The catalog a table configured with `setting` is read and committed through, over `store`: the path catalog for
 * `{ type: "path" }` (or no setting), else the client `services` builds. Maintenance (expire_snapshots,
 * remove_orphan_files) asks for it exactly as compaction does, so both see the same current metadata and swap
 * the same pointer.
 * @throws InvalidInputError ({@link catalogUnavailable}) when the setting names a metastore catalog and `services`
 * cannot build its client: never silently fall back to the path catalog, whose commits that metastore's readers
 * would never see.
 */
export function icebergCatalogFor(
  setting: IcebergCatalogSetting | undefined,
  services: IcebergCatalogServices,
  store: ObjectStore,
): IcebergCatalog {
  const catalog = setting ?? DEFAULT_ICEBERG_CATALOG;
  if (catalog.type === 'path') return pathCatalogOf(catalog, store);
  const build = services.icebergCatalog;
  if (build === undefined) throw catalogUnavailable(catalog);
  return build(catalog, store);
}

/** The path catalog over `store` as `setting` configures it. */
export function pathCatalogOf(
  setting: Extract<IcebergCatalogSetting, { type: 'path' }>,
  store: ObjectStore,
): PathCatalog {
  return new PathCatalog(
    store,
    setting.metadataNaming === undefined ? {} : { metadataNaming: setting.metadataNaming },
  );
}

/** How messages name a configured catalog. */
export function describeSetting(setting: IcebergCatalogSetting): string {
  switch (setting.type) {
    case 'path':
      return setting.metadataNaming === 'uuid'
        ? 'the table root (path catalog, metadata named <NNNNN>-<uuid>.metadata.json)'
        : 'the table root (path catalog)';
    case 'glue':
      return `the Glue table ${setting.database}.${setting.table}${setting.catalogId === undefined ? '' : ` of catalog ${setting.catalogId}`}`;
    case 'rest':
      return `the REST catalog table ${setting.namespace}.${setting.table} at ${setting.uri}`;
  }
}

/**
 * The catalog cannot serve the table: it does not exist there, it is not an Iceberg table, access is denied, or
 * the catalog answered something the protocol does not allow. Never retried: only a change of the table, the
 * catalog or the config fixes it.
 */
export class IcebergCatalogError extends CompactorError {
  constructor(
    /** The catalog's table as {@link describeSetting} names it. */
    readonly catalog: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(`Iceberg catalog ${catalog}: ${reason}. Nothing was committed`, options);
  }
}

/** The file name of a metadata location (`s3://b/t/metadata/00003-<uuid>.metadata.json` → `00003-<uuid>…`). */
function fileName(location: string): string {
  return location.slice(location.lastIndexOf('/') + 1);
}

/** `00012-<uuid>.metadata.json` / `v12.metadata.json` → 12; 0 for a name carrying no version. */
export function metadataVersion(location: string): number {
  const m = /^(?:v(\d+)|(\d+)-[0-9a-fA-F-]+)(\.gz)?\.metadata\.json(\.gz)?$/.exec(fileName(location));
  return m === null ? 0 : Number(m[1] ?? m[2]);
}

/**
 * Loads the table a metastore points at: `metadataLocation` (the writer's absolute path) read from the table root
 * `tableRoot` of `store`, where it must lie under `metadata/` as every catalog writes it (a `write.metadata.path`
 * elsewhere is refused, as the paths of data files outside the location are).
 * @throws IcebergMetadataError when the file is missing, malformed or not the table root's.
 */
export async function loadFromMetadataLocation(
  store: ObjectStore,
  tableRoot: string,
  metadataLocation: string,
): Promise<LoadedTable> {
  const root = tableRoot.replace(/\/+$/, '');
  const table = describeTable(store, root);
  const at = metadataLocation.lastIndexOf('/metadata/');
  if (at < 0)
    throw new IcebergMetadataError(
      table,
      `the catalog's metadata location ${metadataLocation} is not in a metadata/ folder of the table`,
    );
  const key = `${root === '' ? '' : `${root}/`}${metadataLocation.slice(at + 1)}`;
  const metadata = parseTableMetadata(await readMetadataText(store, key), table);
  refuseRelocated(store, root, metadata.location);
  const paths = new PathResolver(table, metadata.location, root);
  if (paths.key(metadataLocation) !== key)
    throw new IcebergMetadataError(
      table,
      `the catalog's metadata location ${metadataLocation} is not under the table location ${metadata.location}`,
    );
  return { name: table, tableRoot: root, metadataKey: key, version: metadataVersion(key), metadata, paths };
}
