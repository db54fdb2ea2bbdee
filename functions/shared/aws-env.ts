// SDK client settings read from an explicit environment (the CLI's io, a test's map) rather than
// the process's, so commands can be driven in-process against local servers with their own keys.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

export type Env = Readonly<Record<string, string | undefined>>;

export interface StaticCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken?: string;
}

/** Static credentials when the environment names both keys; undefined keeps the SDK's default chain. */
export function credentialsFromEnv(env: Env): StaticCredentials | undefined {
  if (!env.AWS_ACCESS_KEY_ID || !env.AWS_SECRET_ACCESS_KEY) return undefined;
  return {
    accessKeyId: env.AWS_ACCESS_KEY_ID,
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
    ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
  };
}

/** A DynamoDB client honouring `AWS_ENDPOINT_URL_DYNAMODB` / `AWS_ENDPOINT_URL`, region and keys of `env`. */
export function dynamoDbClientFromEnv(env: Env): DynamoDBClient {
  return new DynamoDBClient(clientConfigFromEnv(env, env.AWS_ENDPOINT_URL_DYNAMODB));
}

/**
 * The settings of any SDK client from `env`: the service's own endpoint variable (`serviceEndpoint`, e.g.
 * `AWS_ENDPOINT_URL_LAMBDA`), else `AWS_ENDPOINT_URL`; the region; static keys when both are set.
 */
export function clientConfigFromEnv(
  env: Env,
  serviceEndpoint: string | undefined,
): { endpoint?: string; region?: string; credentials?: StaticCredentials } {
  const endpoint = serviceEndpoint || env.AWS_ENDPOINT_URL;
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  const credentials = credentialsFromEnv(env);
  return {
    ...(endpoint ? { endpoint } : {}),
    // Local servers ignore the region, but the SDK refuses to sign without one.
    ...(region ? { region } : endpoint ? { region: 'us-east-1' } : {}),
    ...(credentials ? { credentials } : {}),
  };
}
