// A bare pk/sk DynamoDB table, as the CLI tests use for a deployment's state table when they need no
// indexes (the tests that need the stack's exact table create it from the synthesized template instead).
import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';

/** Creates the on-demand table `name` keyed by string `pk` (hash) and `sk` (range). */
export async function createKeyValueTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
}
