// Profiler Lambda entry: adapts an SQS batch of S3 notifications to the profiler core.
// Placeholder until the profiler issue lands: it only parses and acknowledges the batch.
import type { SQSBatchResponse, SQSEvent } from 'aws-lambda';

/**
 * Acknowledges every record. The real profiler (exact per-file accounting in DynamoDB and the
 * trigger policy) replaces this body; the handler's contract — SQS batch in, partial batch
 * failures out — is already the final one so the CDK wiring does not change.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const record of event.Records) {
    try {
      JSON.parse(record.body);
    } catch {
      batchItemFailures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures };
}
