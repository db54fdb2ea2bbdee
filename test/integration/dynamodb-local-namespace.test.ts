// Namespaces of one DynamoDB Local (openDynamoDbNamespace), which the test files share: each namespace is a
// database of its own that every client of it reaches, whatever its keys and region, as on a server of one's own.
import {
  CreateTableCommand,
  DynamoDBClient,
  GetItemCommand,
  ListTablesCommand,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DynamoDbLocalEndpoint,
  openDynamoDbNamespace,
  type RunningDynamoDbLocal,
  startDynamoDbLocal,
} from '../../infra/local/dynamodb-local.js';
import { sharedDynamoDb } from '../support/dynamodb-local.js';

let own: RunningDynamoDbLocal | undefined;
let server: string;
const opened: DynamoDbLocalEndpoint[] = [];

beforeAll(async () => {
  // The run's shared server when there is one (what the suite's files share), else one started like it.
  const shared = await sharedDynamoDb();
  if (shared === undefined)
    own = await startDynamoDbLocal({ databasePerCredentials: true, startTimeoutMs: 120_000 });
  server = shared ?? (own as RunningDynamoDbLocal).endpoint;
}, 180_000);

afterAll(async () => {
  for (const namespace of opened) await namespace.stop();
  await own?.stop();
});

async function open(): Promise<DynamoDbLocalEndpoint> {
  const namespace = await openDynamoDbNamespace(server);
  opened.push(namespace);
  return namespace;
}

function clientOf(endpoint: string, accessKeyId: string, region = 'us-east-1'): DynamoDBClient {
  return new DynamoDBClient({
    endpoint,
    region,
    credentials: { accessKeyId, secretAccessKey: accessKeyId },
    maxAttempts: 1,
  });
}

async function createTable(client: DynamoDBClient, name: string): Promise<void> {
  await client.send(
    new CreateTableCommand({
      TableName: name,
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
    }),
  );
}

async function tableNames(client: DynamoDBClient): Promise<string[]> {
  return (await client.send(new ListTablesCommand({}))).TableNames ?? [];
}

describe('a namespace of a shared DynamoDB Local', () => {
  it('holds its tables apart from another namespace and from the server itself, even under the same keys', async () => {
    // Prepare
    const [mine, theirs] = await Promise.all([open(), open()]);
    const theirClient = clientOf(theirs.endpoint, 'S3RVER');
    const direct = clientOf(server, 'S3RVER');
    await createTable(theirClient, 'state');
    await theirClient.send(new PutItemCommand({ TableName: 'state', Item: { pk: { S: 'theirs' } } }));

    // Act
    await createTable(clientOf(mine.endpoint, 'S3RVER'), 'state');
    const mineRead = await clientOf(mine.endpoint, 'S3RVER').send(
      new GetItemCommand({ TableName: 'state', Key: { pk: { S: 'theirs' } }, ConsistentRead: true }),
    );

    // Assess
    expect(mineRead.Item).toBeUndefined();
    expect(await tableNames(clientOf(mine.endpoint, 'S3RVER'))).toEqual(['state']);
    expect(await tableNames(direct)).not.toContain('state');
  });

  it('is one database to every client of it, whatever access key and region it signs with', async () => {
    // Prepare
    const namespace = await open();
    await createTable(namespace.client(), 'ledger');
    await namespace.client().send(new PutItemCommand({ TableName: 'ledger', Item: { pk: { S: 'a' } } }));

    // Act
    const reads = await Promise.all(
      [clientOf(namespace.endpoint, 'S3RVER'), clientOf(namespace.endpoint, 'other', 'eu-west-1')].map(
        (client) =>
          client.send(
            new GetItemCommand({ TableName: 'ledger', Key: { pk: { S: 'a' } }, ConsistentRead: true }),
          ),
      ),
    );

    // Assess
    expect(reads.map((read) => read.Item)).toEqual([{ pk: { S: 'a' } }, { pk: { S: 'a' } }]);
  });

  it('still refuses an access key DynamoDB Local refuses, as a server of its own does', async () => {
    // Prepare
    const namespace = await open();

    // Act
    const refused = tableNames(clientOf(namespace.endpoint, 'not-a-key!'));

    // Assess
    await expect(refused).rejects.toMatchObject({ name: 'UnrecognizedClientException' });
  });

  it('refuses an unsigned request, which no namespace could be told from', async () => {
    // Prepare
    const namespace = await open();

    // Act
    const response = await fetch(namespace.endpoint, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-amz-json-1.0',
        'x-amz-target': 'DynamoDB_20120810.ListTables',
      },
      body: '{}',
    });

    // Assess
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      __type: expect.stringContaining('MissingAuthenticationToken'),
    });
  });

  it('stop() closes its endpoint and leaves the server to the other namespaces', async () => {
    // Prepare
    const [stopped, other] = await Promise.all([open(), open()]);
    await createTable(other.client(), 'kept');

    // Act
    await stopped.stop();

    // Assess
    await expect(tableNames(clientOf(stopped.endpoint, 'local'))).rejects.toThrow();
    expect(await tableNames(other.client())).toEqual(['kept']);
  });
});
