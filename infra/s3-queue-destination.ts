// The profiler queue as an S3 notification destination whose queue policy admits S3 only for the configured
// buckets of this account: `aws:SourceArn` (the bucket) and `aws:SourceAccount` (the bucket owner).
//
// Why the account too: an S3 bucket ARN carries no account. If a configured bucket is ever deleted and its name
// registered in another account, the CDK default policy (`aws:SourceArn` alone) would let that account's bucket
// send forged object events to the profiler (confused deputy). AWS recommends both keys for service principals.
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import type * as sqs from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/**
 * Like `s3n.SqsDestination`, for a queue without a customer-managed key (the profiler's queues are SQS-managed), with
 * `StringEquals aws:SourceAccount` = the stack's account beside `ArnLike aws:SourceArn` = the bucket. The buckets
 * are this account's: the construct configures their notifications with this account's credentials.
 */
export class AccountBoundQueueDestination implements s3.IBucketNotificationDestination {
  constructor(private readonly queue: sqs.IQueue) {}

  public bind(scope: Construct, bucket: s3.IBucketRef): s3.BucketNotificationDestinationConfig {
    if (this.queue.encryptionMasterKey !== undefined) {
      throw new Error(
        'AccountBoundQueueDestination: the queue is encrypted with a customer-managed key, whose key policy S3 would need; use an SQS-managed queue',
      );
    }
    this.queue.grantSendMessages(
      new iam.ServicePrincipal('s3.amazonaws.com', {
        conditions: {
          ArnLike: { 'aws:SourceArn': bucket.bucketRef.bucketArn },
          StringEquals: { 'aws:SourceAccount': Stack.of(scope).account },
        },
      }),
    );
    return {
      arn: this.queue.queueArn,
      type: s3.BucketNotificationDestinationType.QUEUE,
      dependencies: [this.queue],
    };
  }
}
