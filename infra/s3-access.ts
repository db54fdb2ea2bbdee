// Prefix-scoped S3 grants shared by the constructs: object ARNs per table prefix and work-root folder,
// and per-bucket ListBucket statements (no `s3:prefix` condition: S3 answers a missing key 404 only with it).
import * as iam from 'aws-cdk-lib/aws-iam';
import { type WorkFolder, workFolder } from '../functions/core/workflow/layout.js';

/** Where one table lives, for scoping grants. `bucketName` may be a CDK token (the owned data bucket). */
export interface TableLocation {
  readonly bucketName: string;
  /** Key prefix of the table root ('' = the whole bucket). */
  readonly prefix: string;
}

/** `events`, `/events/` → `events/`; '' stays '' (the whole bucket). */
export function normalizeTablePrefix(prefix: string): string {
  const trimmed = prefix.replace(/^\/+/, '').replace(/\/+$/, '');
  return trimmed === '' ? '' : `${trimmed}/`;
}

/** The distinct buckets of `locations`, in first-seen order. */
export function bucketNamesOf(locations: readonly TableLocation[]): string[] {
  return [...new Set(locations.map((l) => l.bucketName))];
}

/** `arn:aws:s3:::<bucket>` of every distinct bucket. */
export function bucketArns(locations: readonly TableLocation[]): string[] {
  return bucketNamesOf(locations).map((b) => `arn:aws:s3:::${b}`);
}

/** Object keys under every table root: `<bucket>/<prefix>*`, or `<bucket>/*` for a table at the bucket root. */
export function tableObjectArns(locations: readonly TableLocation[]): string[] {
  return [
    ...new Set(locations.map((l) => `arn:aws:s3:::${l.bucketName}/${normalizeTablePrefix(l.prefix)}*`)),
  ];
}

/**
 * Object keys under the deployment's work root of every bucket: one of its folders, or (no `folder`) all of it.
 */
export function workObjectArns(
  locations: readonly TableLocation[],
  workRoot: string,
  folder?: WorkFolder,
): string[] {
  const prefix = folder === undefined ? workRoot : workFolder(workRoot, folder);
  return bucketNamesOf(locations).map((b) => `arn:aws:s3:::${b}/${prefix}*`);
}

/**
 * What SSE-KMS needs for object reads, writes, copies and multipart uploads: no more (grantEncryptDecrypt
 * would add `kms:Encrypt`/`kms:ReEncrypt*`, which S3 never asks for on the caller's behalf).
 */
export const KMS_OBJECT_ACTIONS = ['kms:Decrypt', 'kms:GenerateDataKey'] as const;

/**
 * `s3:ListBucket` (or `actions`) on the buckets of `locations`, without an `s3:prefix` condition. Listing
 * shows key names, never content, and it is also what makes S3 answer 404 rather than 403 for a HEAD/GET of
 * a missing key — which the commit protocol, rollback and the journal depend on (a missing staged output or
 * retired input is a state, not an error). Whether S3 evaluates an `s3:prefix` condition for that implicit
 * check is not documented, and a 403 there would fail every run's recovery path, so listing is granted per
 * bucket; object access stays prefix-scoped.
 */
export function listStatements(
  locations: readonly TableLocation[],
  actions: readonly string[] = ['s3:ListBucket'],
): iam.PolicyStatement[] {
  return [new iam.PolicyStatement({ actions: [...actions], resources: bucketArns(locations) })];
}

/**
 * `s3:GetBucketVersioning` on the buckets: the plan step and the commit check that a bucket configured for
 * delete-mode retirement really keeps old versions (a delete on a suspended bucket cannot be undone).
 */
export function versioningStatements(locations: readonly TableLocation[]): iam.PolicyStatement[] {
  return [new iam.PolicyStatement({ actions: ['s3:GetBucketVersioning'], resources: bucketArns(locations) })];
}

/**
 * What settling a group through the commit protocol touches (commit, rollback, finalize, and the sweep,
 * which settles a dead run's groups): read, copy into and delete under the table prefixes, restore a
 * noncurrent version, copy from and delete `staging/`, move to, read and delete `trash/`, and the
 * journal's oversized file lists under `journal/`. Never lists or deletes versions (only vacuum does).
 */
export function publisherStatements(
  locations: readonly TableLocation[],
  workRoot: string,
): { actions: string[]; resources: string[] }[] {
  const work = (folder: WorkFolder) => workObjectArns(locations, workRoot, folder);
  return [
    {
      actions: ['s3:GetObject', 's3:GetObjectVersion', 's3:PutObject', 's3:DeleteObject'],
      resources: tableObjectArns(locations),
    },
    { actions: ['s3:GetObject', 's3:DeleteObject'], resources: work('staging') },
    // AbortMultipartUpload: a delete-rebuild undo writes re-created inputs to trash keys, in parts above
    // 8 MiB; a failed upload is aborted at once rather than left to vacuum's orphan-upload cleanup.
    {
      actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
      resources: work('trash'),
    },
    { actions: ['s3:GetObject', 's3:PutObject'], resources: work('journal') },
  ];
}
