// Turns an operator's location (`s3://bucket/prefix`, a folder path, `file://`) into an ObjectStore and
// a normalised key prefix; anything else fails early with a UsageError saying what is expected.

import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { InvalidInputError, UsageError } from '../core/errors.js';
import { DEFAULT_WORK_ROOT, workRootProblem } from '../core/workflow/layout.js';
import type { ObjectStore } from '../ports/object-store.js';
import { credentialsFromEnv } from '../shared/aws-env.js';
import { LocalObjectStore } from './local-object-store.js';
import { S3ObjectStore } from './s3-object-store.js';

export interface OpenStoreOptions {
  /** Client to use for `s3://` URIs; a default one is built from `env` when omitted. */
  readonly s3Client?: S3Client;
  /** Environment to read endpoint overrides from; `process.env` when omitted (pass it in tests). */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /**
   * The work root in the store (the bucket, or the folder): where the CLI keeps plans, staging, trash, its
   * journal, quarantine and a folder's temp files. Beside a deployment it must be the deployment's.
   * @default DEFAULT_WORK_ROOT
   */
  readonly workRoot?: string;
}

export interface OpenedStore {
  readonly store: ObjectStore;
  /** Key prefix inside the store: `''` or ending with `/`. */
  readonly prefix: string;
  /** The URI as given. */
  readonly uri: string;
  /** The work root in the store (see OpenStoreOptions.workRoot). */
  readonly workRoot: string;
}

/** S3 bucket names: 3–63 of lowercase letters, digits, dots and hyphens (legacy names aside). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

const EXPECTED = 'expected s3://bucket[/prefix], file:///path or a local folder path';

/**
 * Opens `uri`: `s3://bucket/some/prefix` → S3ObjectStore on `bucket` with prefix `some/prefix/`;
 * a local path (absolute, relative to the working directory, or `file://`) that is an existing
 * folder → LocalObjectStore rooted there with prefix `''`.
 * @throws UsageError for a location that is malformed whatever the world holds (the CLI exits 2);
 * InvalidInputError for a local path that does not exist or is not a folder (exit 1).
 */
export function openStore(uri: string, options: OpenStoreOptions = {}): OpenedStore {
  const workRoot = options.workRoot ?? DEFAULT_WORK_ROOT;
  const problem = workRootProblem(workRoot);
  if (problem !== undefined) throw new UsageError(`Invalid work root: ${problem}`);
  const trimmed = uri.trim();
  if (trimmed === '') throw new UsageError(`Empty store location: ${EXPECTED}`);
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(trimmed)?.[1]?.toLowerCase();

  if (scheme === 's3' || scheme === 's3a') {
    const rest = trimmed.slice(scheme.length + 3);
    const slash = rest.indexOf('/');
    const bucket = slash === -1 ? rest : rest.slice(0, slash);
    if (!BUCKET_NAME.test(bucket)) {
      throw new UsageError(
        `Invalid S3 location "${uri}": "${bucket}" is not a bucket name (3-63 lowercase letters, digits, dots, hyphens); ${EXPECTED}`,
      );
    }
    const rawPrefix = slash === -1 ? '' : rest.slice(slash + 1).replace(/^\/+/, '');
    const prefix = rawPrefix === '' || rawPrefix.endsWith('/') ? rawPrefix : `${rawPrefix}/`;
    const client = options.s3Client ?? createDefaultS3Client(options.env ?? process.env);
    return { store: new S3ObjectStore({ client, bucket }), prefix, uri, workRoot };
  }

  let folder: string;
  if (scheme === 'file') {
    try {
      folder = fileURLToPath(trimmed);
    } catch (error) {
      throw new UsageError(`Invalid file URI "${uri}" (${(error as Error).message}); ${EXPECTED}`);
    }
  } else if (scheme !== undefined) {
    throw new UsageError(
      `Unsupported store location "${uri}": scheme ${scheme}:// is not supported; ${EXPECTED}`,
    );
  } else {
    folder = resolve(trimmed);
  }
  let isFolder = false;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    throw new InvalidInputError(
      `Local folder ${folder} (from "${uri}") does not exist; create it or fix the path`,
    );
  }
  if (!isFolder) {
    throw new InvalidInputError(
      `Local path ${folder} (from "${uri}") is not a folder; point at the table's folder`,
    );
  }
  return { store: new LocalObjectStore(folder, { workRoot }), prefix: '', uri, workRoot };
}

/**
 * The default client: standard credential and region chain (the region of `env` first). When an endpoint
 * override is set (`AWS_ENDPOINT_URL_S3`, else `AWS_ENDPOINT_URL`) the target is a local server (s3rver, MinIO):
 * path-style addressing, and checksums only when required, because s3rver stores the aws-chunked
 * framing of streamed checksummed bodies inside the object; the region falls back to us-east-1.
 *
 * Always `cacheMiddleware`: the SDK otherwise rebuilds and sorts the client's middleware stack on every
 * request. The client's CPU per request is the per-file cost of a streaming writer's tiny files on S3 (a GET
 * at planning, one at pre-flight, a HEAD at commit) — ~800 µs per ranged GET of an 8 KB object measured on
 * loopback here, ~15 % less with the cache (docs/engine.md, "Tiny files"). The cache is per command class;
 * nothing here adds middleware to a command or to the client after its first request, which it would miss.
 */
export function createDefaultS3Client(env: Readonly<Record<string, string | undefined>>): S3Client {
  return new S3Client(defaultS3ClientConfig(env));
}

/** The configuration {@link createDefaultS3Client} uses (exposed so it can be tested without a client). */
export function defaultS3ClientConfig(env: Readonly<Record<string, string | undefined>>): S3ClientConfig {
  const endpoint = env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL;
  // Keys from the given env, not only the process's, so an in-process caller's env is honoured.
  const credentials = credentialsFromEnv(env);
  // The region from the given env too, and AWS_DEFAULT_REGION as the AWS CLI (and the state table's
  // client) reads it: the SDK alone reads only the process's AWS_REGION.
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
  if (!endpoint) {
    return { cacheMiddleware: true, ...(credentials ? { credentials } : {}), ...(region ? { region } : {}) };
  }
  return {
    cacheMiddleware: true,
    ...(credentials ? { credentials } : {}),
    endpoint,
    // Local servers ignore the region, but the SDK refuses to sign without one.
    region: region || 'us-east-1',
    forcePathStyle: true,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  };
}
