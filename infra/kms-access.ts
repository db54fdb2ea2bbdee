// KMS grants for SSE-KMS objects: usable only through S3 (`kms:ViaService`) and only for objects of the configured
// tables and work roots (`kms:EncryptionContext:aws:s3:arn`), so a role can never use a table key directly.
//
// Why both conditions: S3 calls KMS on the caller's behalf with the caller's permissions, and passes the object's
// ARN as encryption context — or the bucket's ARN when the bucket uses an S3 Bucket Key (the owned bucket does; an
// existing bucket may). Without `kms:ViaService`, a role holding `kms:Decrypt` on the key could decrypt any
// ciphertext made with it by calling KMS itself; without the context condition, S3 would decrypt for it the
// objects of any bucket or prefix that key encrypts. Both keys are documented by AWS for exactly this use.
import { Aws } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import { bucketArns, type TableLocation } from './s3-access.js';

/** The `kms:ViaService` value of S3 in the stack's region (the functions' own, where the buckets are). */
export const S3_VIA_SERVICE = `s3.${Aws.REGION}.amazonaws.com`;

/**
 * The `kms:EncryptionContext:aws:s3:arn` values S3 sends for `objectArns` (`arn:aws:s3:::<bucket>/<prefix>*`):
 * those object ARNs themselves, and the ARN of each bucket of `locations`, which is the context of every object
 * in a bucket with an S3 Bucket Key (whether an existing bucket uses one cannot be known at synth).
 */
export function s3EncryptionContexts(
  locations: readonly TableLocation[],
  objectArns: readonly string[],
): string[] {
  return [...new Set([...bucketArns(locations), ...objectArns])];
}

/**
 * One statement allowing `actions` on `keys` only when S3 asks for it (`kms:ViaService`) for an object whose ARN
 * (or its bucket's, with a Bucket Key) is among `contexts`; undefined when there is no key, so a deployment with
 * S3-managed keys gets no KMS statement at all.
 */
export function kmsViaS3Statement(
  keys: readonly kms.IKey[],
  actions: readonly string[],
  contexts: readonly string[],
): iam.PolicyStatement | undefined {
  const arns = [...new Set(keys.map((k) => k.keyArn))];
  if (arns.length === 0) return undefined;
  return new iam.PolicyStatement({
    actions: [...actions],
    resources: arns,
    conditions: {
      StringEquals: { 'kms:ViaService': S3_VIA_SERVICE },
      StringLike: { 'kms:EncryptionContext:aws:s3:arn': [...contexts] },
    },
  });
}

/** Adds {@link kmsViaS3Statement} to `grantee`'s policy when there is a key. */
export function grantKmsViaS3(
  grantee: iam.IGrantable,
  keys: readonly kms.IKey[],
  actions: readonly string[],
  contexts: readonly string[],
): void {
  const statement = kmsViaS3Statement(keys, actions, contexts);
  if (statement !== undefined) grantee.grantPrincipal.addToPrincipalPolicy(statement);
}
