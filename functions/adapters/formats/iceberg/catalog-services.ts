// The Iceberg catalog clients a table's `catalog` setting may need (see `IcebergCatalogServices` in
// core/formats/iceberg/catalogs.ts), built where the AWS clients and the environment are: the CLI, the workflow's
// runtime, the sweep, the profiler and vacuum, through Iceberg's entry in the adapter registry
// (adapters/formats/index.ts). Core never builds an adapter; it is handed this factory and asks for the catalog a
// table's config names.
import { GlueClient } from '@aws-sdk/client-glue';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { GetParameterCommand, SSMClient } from '@aws-sdk/client-ssm';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { InvalidInputError } from '../../../core/errors.js';
import type { IcebergCatalogServices, RestCatalogSetting } from '../../../core/formats/iceberg/catalogs.js';
import { credentialsFromEnv, type Env } from '../../../shared/aws-env.js';
import type { FormatAdapter } from '../../../shared/format-services.js';
import { GlueIcebergCatalog } from './glue-catalog.js';
import { type RestAuth, RestIcebergCatalog } from './rest-catalog.js';

/** The environment variable holding a REST catalog's bearer token when the setting names none. */
export const DEFAULT_REST_TOKEN_ENV = 'ICEBERG_REST_TOKEN';

/**
 * A Glue client honouring `AWS_ENDPOINT_URL_GLUE` / `AWS_ENDPOINT_URL`, the region (`region`, else the env's)
 * and the keys of `env` (else the SDK's default chain).
 */
export function glueClientFromEnv(env: Env, region?: string): GlueClient {
  const endpoint = env.AWS_ENDPOINT_URL_GLUE || env.AWS_ENDPOINT_URL;
  const resolved = region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION);
  const credentials = credentialsFromEnv(env);
  return new GlueClient({
    ...(endpoint ? { endpoint } : {}),
    ...(resolved ? { region: resolved } : endpoint ? { region: 'us-east-1' } : {}),
    ...(credentials ? { credentials } : {}),
  });
}

/** The client settings of `env` for a service whose endpoint variable is `endpointVar`, in `region` if given. */
function clientConfig(env: Env, endpointVar: string, region: string | undefined) {
  const endpoint = env[endpointVar] || env.AWS_ENDPOINT_URL;
  const resolved = region ?? (env.AWS_REGION || env.AWS_DEFAULT_REGION);
  const credentials = credentialsFromEnv(env);
  return {
    ...(endpoint ? { endpoint } : {}),
    ...(resolved ? { region: resolved } : endpoint ? { region: 'us-east-1' } : {}),
    ...(credentials ? { credentials } : {}),
  };
}

/** The SDK errors saying a token's secret or parameter is missing or not readable, not that a call failed. */
const CONFIG_ERRORS = new Set([
  'ResourceNotFoundException',
  'ParameterNotFound',
  'ParameterVersionNotFound',
  'AccessDeniedException',
  'InvalidKeyId',
  'DecryptionFailure',
]);

/** The region an ARN names (its fourth field), or undefined for a plain name. */
function arnRegion(nameOrArn: string): string | undefined {
  return nameOrArn.startsWith('arn:') ? nameOrArn.split(':')[3] : undefined;
}

/**
 * Reads a REST catalog's bearer token from where its setting says: the Secrets Manager secret (its SecretString),
 * the SSM parameter (decrypted), else the environment variable. A token that cannot be had is an
 * {@link InvalidInputError} naming the source and what to set, before any request is sent.
 */
export async function readRestToken(
  env: Env,
  auth: Extract<RestCatalogSetting['auth'], { type: 'oauth2' }>,
  uri: string,
): Promise<string> {
  const missing = (where: string, fix: string) =>
    new InvalidInputError(
      `The REST catalog at ${uri} authenticates with a bearer token, and ${where}: ${fix}`,
    );
  // A source that is not there or not readable is the configuration's problem; anything else (throttling, the
  // network) is left as the SDK raised it, for the caller's retry.
  const unreadable = (source: string, err: unknown) =>
    err instanceof Error && CONFIG_ERRORS.has(err.name)
      ? missing(
          `${source} cannot be read (${err.name}: ${err.message})`,
          "check that it exists in the region named and that the function's role may read it (the stack grants read on the secret or parameter the catalog setting names)",
        )
      : err;
  if (auth.tokenSecretArn !== undefined) {
    const client = new SecretsManagerClient(
      clientConfig(env, 'AWS_ENDPOINT_URL_SECRETS_MANAGER', arnRegion(auth.tokenSecretArn)),
    );
    try {
      const out = await client
        .send(new GetSecretValueCommand({ SecretId: auth.tokenSecretArn }))
        .catch((err: unknown) => {
          throw unreadable(`the secret ${auth.tokenSecretArn}`, err);
        });
      if (!out.SecretString)
        throw missing(
          `the secret ${auth.tokenSecretArn} holds no SecretString`,
          "store the catalog's OAuth2 access token as the secret's string value",
        );
      return out.SecretString.trim();
    } finally {
      client.destroy();
    }
  }
  if (auth.tokenParameter !== undefined) {
    const client = new SSMClient(clientConfig(env, 'AWS_ENDPOINT_URL_SSM', arnRegion(auth.tokenParameter)));
    try {
      const out = await client
        .send(new GetParameterCommand({ Name: auth.tokenParameter, WithDecryption: true }))
        .catch((err: unknown) => {
          throw unreadable(`the SSM parameter ${auth.tokenParameter}`, err);
        });
      if (!out.Parameter?.Value)
        throw missing(
          `the SSM parameter ${auth.tokenParameter} has no value`,
          "store the catalog's OAuth2 access token in it as a SecureString",
        );
      return out.Parameter.Value.trim();
    } finally {
      client.destroy();
    }
  }
  const name = auth.tokenEnv ?? DEFAULT_REST_TOKEN_ENV;
  const token = env[name];
  if (!token)
    throw missing(
      `the environment variable ${name} is not set`,
      "set it to the catalog's OAuth2 access token, or name a secret (tokenSecretArn) or SSM parameter (tokenParameter) holding it",
    );
  return token;
}

/**
 * The catalog clients for `env`: Glue clients by region (one each), and REST catalogs authenticated as their
 * setting says — SigV4 with the env's keys or the SDK's default chain (the function's role in Lambda), or the
 * bearer token from the secret, SSM parameter or environment variable the setting names (read once per catalog
 * client, so a rotated token is picked up by the next invocation).
 */
export function icebergCatalogServices(env: Env): IcebergCatalogServices {
  const clients = new Map<string, GlueClient>();
  const glue = (region: string | undefined): GlueClient => {
    const key = region ?? '';
    let client = clients.get(key);
    if (client === undefined) {
      client = glueClientFromEnv(env, region);
      clients.set(key, client);
    }
    return client;
  };
  const restAuth = (setting: RestCatalogSetting): RestAuth => {
    const auth = setting.auth;
    switch (auth.type) {
      case 'none':
        return { type: 'none' };
      case 'oauth2': {
        let token: Promise<string> | undefined;
        return {
          type: 'bearer',
          token: () => {
            token ??= readRestToken(env, auth, setting.uri).catch((err: unknown) => {
              token = undefined;
              throw err;
            });
            return token;
          },
        };
      }
      case 'sigv4': {
        const fixed = credentialsFromEnv(env);
        // The Glue client's resolved provider is the SDK's default chain (env, SSO, profile, container, role).
        const credentials: AwsCredentialIdentityProvider =
          fixed === undefined ? glue(auth.region).config.credentials : async () => fixed;
        return { type: 'sigv4', signingName: auth.signingName, region: auth.region, credentials };
      }
    }
  };
  return {
    icebergCatalog: (setting, store) =>
      setting.type === 'glue'
        ? new GlueIcebergCatalog({ client: glue(setting.region), setting, store })
        : new RestIcebergCatalog({ setting, store, auth: restAuth(setting) }),
  };
}

/**
 * The Iceberg clients an entry point builds once per cold start and hands the adapter registry: the catalog
 * clients. Absent, a table configured with a Glue or REST catalog is refused (`catalogUnavailable`) rather than
 * committed through the path catalog.
 */
export interface IcebergClients {
  readonly iceberg?: IcebergCatalogServices;
}

/**
 * Iceberg's adapters: its catalog clients from the environment, and for a table the catalog services those
 * clients give (the same for every location: a catalog names its own table).
 */
export const icebergAdapter: FormatAdapter<IcebergClients, IcebergCatalogServices> = {
  format: 'iceberg',
  clientsFromEnv: (env) => ({ iceberg: icebergCatalogServices(env) }),
  services: (options) => ({ ...options.iceberg }),
};
