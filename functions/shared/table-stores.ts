// The object stores of a function, one per bucket — or, with per-table isolation on (DATA_ACCESS_ROLE_ARN, set by
// the construct's `tableIsolation`), one per table: each on credentials scoped to that table by an STS session
// policy and behind an in-process check of the same scope, built when a table is first asked for.
//
// Locally there is no STS: the local cloud sets DATA_ACCESS_CREDENTIALS=caller, and each table's store uses the
// caller's credentials with the in-process check alone, so every local run still proves the scoping of its keys.
import { S3Client } from '@aws-sdk/client-s3';
import { STSClient } from '@aws-sdk/client-sts';
import { createDefaultS3Client, defaultS3ClientConfig } from '../adapters/open-store.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import { ScopedObjectStore } from '../adapters/scoped-object-store.js';
import { StsScopedCredentials } from '../adapters/sts-scoped-credentials.js';
import { type TableScope, tableScopeOf, workRootScopeOf } from '../core/access/table-scope.js';
import { InvalidInputError } from '../core/errors.js';
import type { TableConfig } from '../core/table-config.js';
import { type Clock, systemClock } from '../ports/clock.js';
import type { ObjectStore } from '../ports/object-store.js';
import type { ScopedCredentialsProvider } from '../ports/scoped-credentials.js';
import { credentialsFromEnv } from './aws-env.js';

/**
 * `storeFor(bucket, table)`: the store to touch `table`'s objects (and the work root) in `bucket`; without `table`,
 * the work root alone. With isolation off, one store per bucket whatever the table.
 */
export type StoreFor = (bucket: string, table?: string) => ObjectStore;

export interface TableStoresOptions {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly tables: readonly TableConfig[];
  /** The deployment's work root (WORK_ROOT). */
  readonly workRoot: string;
  /** The caller-credentials client (tests inject one); built from `env` when absent. */
  readonly s3?: S3Client;
  /** Per-table credentials (tests inject one); STS AssumeRole when absent and isolation is on. */
  readonly credentials?: ScopedCredentialsProvider;
  readonly clock?: Clock;
  /** Wraps every store (fault injection in tests). */
  readonly wrapStore?: (store: ObjectStore, bucket: string) => ObjectStore;
}

/** Whether per-table isolation is on for this environment, and with which credentials. */
export function isolationOf(
  env: Readonly<Record<string, string | undefined>>,
): { readonly roleArn: string; readonly callerCredentials: boolean } | undefined {
  const roleArn = env.DATA_ACCESS_ROLE_ARN;
  if (roleArn === undefined || roleArn === '') return undefined;
  return { roleArn, callerCredentials: env.DATA_ACCESS_CREDENTIALS === 'caller' };
}

/** Builds the function's `storeFor`; clients and stores are made once per bucket (or table) and reused. */
export function tableStores(options: TableStoresOptions): StoreFor {
  const { env, wrapStore } = options;
  let shared: S3Client | undefined = options.s3;
  const caller = () => {
    shared ??= createDefaultS3Client(env);
    return shared;
  };
  const stores = new Map<string, ObjectStore>();
  const wrap = (store: ObjectStore, bucket: string) =>
    wrapStore === undefined ? store : wrapStore(store, bucket);
  const isolation = isolationOf(env);
  if (isolation === undefined) {
    return (bucket) => {
      let store = stores.get(bucket);
      if (store === undefined) {
        store = wrap(new S3ObjectStore({ client: caller(), bucket }), bucket);
        stores.set(bucket, store);
      }
      return store;
    };
  }
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
  let provider = options.credentials;
  const credentialsProvider = (): ScopedCredentialsProvider => {
    provider ??= new StsScopedCredentials({
      sts: new STSClient({
        region,
        ...(env.AWS_ENDPOINT_URL_STS ? { endpoint: env.AWS_ENDPOINT_URL_STS } : {}),
        ...(credentialsFromEnv(env) === undefined ? {} : { credentials: credentialsFromEnv(env) }),
      }),
      roleArn: isolation.roleArn,
      region,
      sessionLabel: env.AWS_LAMBDA_FUNCTION_NAME || 'lake-compactor',
      clock: options.clock ?? systemClock,
    });
    return provider;
  };
  const scopeOf = (bucket: string, table: string | undefined): TableScope => {
    if (table === undefined) return workRootScopeOf(bucket, options.workRoot);
    const config = options.tables.find((t) => t.name === table);
    if (config === undefined) {
      throw new InvalidInputError(
        `No configured table named ${JSON.stringify(table)}: its objects cannot be reached (per-table isolation); configured: ${options.tables.map((t) => t.name).join(', ')}`,
      );
    }
    return tableScopeOf(config, bucket, options.workRoot);
  };
  return (bucket, table) => {
    const key = `${bucket}\u0000${table ?? ''}`;
    let store = stores.get(key);
    if (store === undefined) {
      const scope = scopeOf(bucket, table);
      const client = isolation.callerCredentials
        ? caller()
        : new S3Client({
            ...withoutCredentials(defaultS3ClientConfig(env)),
            credentials: () => credentialsProvider().credentialsFor(scope),
          });
      store = wrap(new ScopedObjectStore(new S3ObjectStore({ client, bucket }), scope), bucket);
      stores.set(key, store);
    }
    return store;
  };
}

/** The config without static keys: a table's client signs with its scoped session only. */
function withoutCredentials<T extends { credentials?: unknown }>(config: T): Omit<T, 'credentials'> {
  const { credentials: _credentials, ...rest } = config;
  return rest;
}
