// The Iceberg catalog clients a table's `catalog` setting may need (see `IcebergCatalogServices` in
// core/formats/iceberg/catalogs.ts), built where the AWS clients and the environment are: the CLI (and, once the
// per-table format binding is merged, the workflow's runtime). Core never builds an adapter; it is handed this
// factory and asks for the catalog a table's config names.
import { GlueClient } from '@aws-sdk/client-glue';
import type { AwsCredentialIdentityProvider } from '@smithy/types';
import { GlueIcebergCatalog } from '../adapters/glue-iceberg-catalog.js';
import { type RestAuth, RestIcebergCatalog } from '../adapters/rest-iceberg-catalog.js';
import { InvalidInputError } from '../core/errors.js';
import type { IcebergCatalogServices, RestCatalogSetting } from '../core/formats/iceberg/catalogs.js';
import { credentialsFromEnv, type Env } from './aws-env.js';

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

/**
 * The catalog clients for `env`: Glue clients by region (one each), and REST catalogs authenticated as their
 * setting says — SigV4 with the env's keys or the SDK's default chain (the function's role in Lambda), or the
 * bearer token in the environment variable the setting names.
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
        const name = auth.tokenEnv ?? DEFAULT_REST_TOKEN_ENV;
        return {
          type: 'bearer',
          token: async () => {
            const token = env[name];
            if (!token)
              throw new InvalidInputError(
                `The REST catalog at ${setting.uri} authenticates with a bearer token, and the environment variable ${name} is not set: set it to the catalog's OAuth2 access token`,
              );
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
