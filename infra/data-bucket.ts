// The data bucket LakeCompactor creates for the tables without `bucketName`: versioned, private, TLS-only,
// encrypted, retained by default, and with lifecycle rules that never expire what vacuum's retention keeps.
import { Duration, RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type { Construct } from 'constructs';
import { workFolder } from '../functions/core/workflow/layout.js';
import type { LakeCompactorProps } from './lake-compactor-props.js';
import { minimumDataBucketDays } from './props-schema.js';

/**
 * The owned data bucket (see LakeCompactorDataBucketProps) as `DataBucket` in `scope`: versioned, lifecycle
 * rules for noncurrent versions, staging leftovers (under `workRoot`) and unfinished uploads, all public access
 * blocked, TLS only, encrypted.
 */
export function createDataBucket(scope: Construct, props: LakeCompactorProps, workRoot: string): s3.Bucket {
  const settings = props.dataBucket ?? {};
  const days = dataBucketDays(props);
  const bucket = new s3.Bucket(scope, 'DataBucket', {
    versioned: true,
    blockPublicAccess: s3.BlockPublicAccess.BLOCK_ALL,
    enforceSSL: true,
    ...(settings.encryptionKey === undefined
      ? { encryption: s3.BucketEncryption.S3_MANAGED }
      : {
          encryption: s3.BucketEncryption.KMS,
          encryptionKey: settings.encryptionKey,
          bucketKeyEnabled: true,
        }),
    // A table fed by EventBridge needs the bucket to send its events there.
    eventBridgeEnabled: props.tables.some(
      (t) => t.bucketName === undefined && t.eventSource === 'eventbridge',
    ),
    removalPolicy: settings.removalPolicy ?? RemovalPolicy.RETAIN,
    ...(settings.serverAccessLogsBucket === undefined
      ? {}
      : {
          serverAccessLogsBucket: settings.serverAccessLogsBucket,
          ...(settings.serverAccessLogsPrefix === undefined
            ? {}
            : { serverAccessLogsPrefix: settings.serverAccessLogsPrefix }),
        }),
    lifecycleRules: [
      {
        id: 'NoncurrentVersions',
        noncurrentVersionExpiration: Duration.days(days.noncurrent),
        expiredObjectDeleteMarker: true,
      },
      {
        id: 'StagingLeftovers',
        prefix: workFolder(workRoot, 'staging'),
        expiration: Duration.days(days.staging),
        // A staged output is worthless once published or rolled back: S3 applies the earliest
        // expiration due, so its noncurrent copy goes after a day instead of the full retention.
        noncurrentVersionExpiration: Duration.days(1),
      },
      {
        // A rewrite dry run's preview holds table rows: read once by the operator, then gone with staging leftovers.
        id: 'DryRunPreviews',
        prefix: workFolder(workRoot, 'previews'),
        expiration: Duration.days(days.staging),
        noncurrentVersionExpiration: Duration.days(1),
      },
      {
        id: 'IncompleteMultipartUploads',
        abortIncompleteMultipartUploadAfter: Duration.days(days.abortUploads),
      },
    ],
  });
  if (settings.serverAccessLogsBucket === undefined) {
    Validations.of(bucket).acknowledge({
      id: 'AwsSolutions-S1',
      reason:
        'Server access logs are optional (LakeCompactorDataBucketProps.serverAccessLogsBucket): a log bucket per deployment would itself need logging, and CloudTrail S3 data events are the recommended, queryable audit trail for a data lake.',
    });
  }
  return bucket;
}

/** Default days staging leftovers are kept (see LakeCompactorDataBucketProps.stagingExpirationDays). */
const DEFAULT_STAGING_DAYS = 7;

/** The owned bucket's lifecycle periods, in days, and the least each may be. */
function dataBucketDays(props: LakeCompactorProps): {
  noncurrent: number;
  staging: number;
  abortUploads: number;
  min: { noncurrent: number; staging: number; abortUploads: number };
} {
  const vacuum = props.maintenance?.vacuum ?? {};
  const settings = props.dataBucket ?? {};
  const min = minimumDataBucketDays(vacuum);
  return {
    noncurrent: settings.noncurrentVersionExpirationDays ?? min.noncurrent,
    staging: settings.stagingExpirationDays ?? Math.max(DEFAULT_STAGING_DAYS, min.staging),
    abortUploads:
      settings.abortIncompleteMultipartUploadDays ??
      Math.max(1, Math.ceil((vacuum.debrisAgeHours ?? 72) / 24)),
    min,
  };
}
