// Toy SQS consumer for the local-cloud test: one DynamoDB item per S3 notification record, keyed by
// the decoded object key; records whose key contains "poison" fail (partial batch failure).
import { DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import type { S3Event, SQSBatchResponse, SQSEvent } from 'aws-lambda';

// Read once at cold start, like the real handlers: proves each function got its own environment.
const tableName = process.env.TABLE_NAME ?? '';
const role = process.env.TOY_ROLE ?? '';
if (tableName === '' || role === '')
  throw new Error('recorder: TABLE_NAME and TOY_ROLE must be set at cold start');
const client = new DynamoDBClient({});

/** Writes `object#<bucket>/<decoded key>` / `<eventName>` per record; reports poison records as failures. */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const batchItemFailures: SQSBatchResponse['batchItemFailures'] = [];
  for (const message of event.Records) {
    try {
      const notification = JSON.parse(message.body) as S3Event;
      for (const record of notification.Records) {
        // S3 URL-encodes keys in notifications, with `+` for spaces.
        const key = decodeURIComponent(record.s3.object.key.replace(/\+/g, ' '));
        if (key.includes('poison')) throw new Error(`poison record ${key}`);
        await client.send(
          new PutItemCommand({
            TableName: tableName,
            Item: {
              pk: { S: `object#${record.s3.bucket.name}/${key}` },
              sk: { S: record.eventName },
              encodedKey: { S: record.s3.object.key },
              role: { S: role },
              receiveCount: { N: message.attributes.ApproximateReceiveCount },
            },
          }),
        );
      }
    } catch {
      batchItemFailures.push({ itemIdentifier: message.messageId });
    }
  }
  return { batchItemFailures };
}
