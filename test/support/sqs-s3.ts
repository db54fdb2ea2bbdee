// One SQS record carrying one S3 "ObjectCreated:Put" notification, as the profiler's queue delivers it: what the
// handler tests feed the profiler without a queue.
import type { SQSEvent } from 'aws-lambda';

/** The record `id` announcing `key` (900 bytes) in bucket `lake`, with the given sequencer, at `eventTime`. */
export function s3CreatedRecord(
  id: string,
  key: string,
  sequencer: string,
  eventTime: number,
): SQSEvent['Records'][number] {
  return {
    messageId: id,
    receiptHandle: 'r',
    body: JSON.stringify({
      Records: [
        {
          eventSource: 'aws:s3',
          eventName: 'ObjectCreated:Put',
          eventTime: new Date(eventTime).toISOString(),
          s3: { bucket: { name: 'lake' }, object: { key, size: 900, eTag: 'e', sequencer } },
        },
      ],
    }),
    attributes: {} as SQSEvent['Records'][number]['attributes'],
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: 'arn:aws:sqs:us-east-1:000000000000:q',
    awsRegion: 'us-east-1',
  };
}
