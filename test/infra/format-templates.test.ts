// Whole-template snapshots of one deployment per table-format configuration: Hive-style Parquet, Delta with each
// commit coordination (`deltaLogStore`), Iceberg with each catalog, a KMS-encrypted deployment with a versioned
// bucket, and one stack mixing them all (the order in which the formats' grants reach a shared role shows there).
// They pin what each format contributes to the construct (IAM, environment, cdk-nag acknowledgements) so that
// moving that contribution around in infra/ is checked to leave every template byte-identical. Accept an intended
// change with `npx vitest run test/infra/format-templates.test.ts --update`, and review the diff.
import { App, Stack, Validations } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kms from 'aws-cdk-lib/aws-kms';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps, LakeCompactorTable } from '../../infra/lake-compactor.js';

/** Props, or props built in the app (a key the owned bucket is encrypted with is a construct). */
type Configuration = LakeCompactorProps | ((app: App) => LakeCompactorProps);

/** The template as CloudFormation receives it, with asset hashes (they follow the bundled code) masked. */
function templateOf(configuration: Configuration): string {
  // No bundling: the templates are about resources, and esbuild per function would take minutes.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const props = typeof configuration === 'function' ? configuration(app) : configuration;
  const stack = new LakeCompactorStack(app, 'LakeCompactor', { compactor: props });
  const json = Template.fromStack(stack).toJSON();
  return `${JSON.stringify(
    json,
    (_key, value: unknown) =>
      typeof value === 'string' ? value.replace(/\b[0-9a-f]{64}\b/g, '<asset-hash>') : value,
    2,
  )}\n`;
}

const TABLE_BUCKET = 'arn:aws:s3tables:eu-west-1:111122223333:bucket/lake';
const TOKEN_SECRET = 'arn:aws:secretsmanager:eu-west-1:111122223333:secret:lake/rest-token-AbC123';
const KEY = 'arn:aws:kms:eu-west-1:111122223333:key/1a2b3c4d-0000-1111-2222-333344445555';
const BUCKET_KEY = 'arn:aws:kms:eu-west-1:111122223333:key/9f8e7d6c-0000-1111-2222-333344445555';

const hive: LakeCompactorTable = {
  name: 'events',
  bucketName: 'lake',
  prefix: 'events/',
  partitionColumns: ['date'],
  dateColumn: 'date',
  dateFormat: 'yyyy-MM-dd',
};

const delta = (name: string, deltaLogStore: LakeCompactorTable['deltaLogStore']): LakeCompactorTable => ({
  name,
  bucketName: 'lake',
  prefix: `${name}/`,
  format: 'delta',
  ...(deltaLogStore === undefined ? {} : { deltaLogStore }),
});

const iceberg = (name: string, catalog: LakeCompactorTable['catalog']): LakeCompactorTable => ({
  name,
  bucketName: 'lake',
  prefix: `${name}/`,
  format: 'iceberg',
  ...(catalog === undefined ? {} : { catalog }),
});

const restCatalog = (table: string, auth: Record<string, string>) =>
  ({
    type: 'rest',
    uri: 'https://polaris.example/api/catalog',
    namespace: 'web',
    table,
    auth: { type: 'oauth2', ...auth },
  }) as LakeCompactorTable['catalog'];

/** A key of another stack (imported by ARN: the stack stays empty, and says why that is fine). */
function bucketKey(app: App): kms.IKey {
  const keys = new Stack(app, 'Keys');
  Validations.of(keys).acknowledge({
    id: 'CloudFormation-Validate::F0001',
    reason: 'Only holds the imported key the data bucket is encrypted with; never deployed.',
  });
  return kms.Key.fromKeyArn(keys, 'BucketKey', BUCKET_KEY);
}

/** Every format configuration the construct treats differently, by snapshot name. */
const CONFIGURATIONS: Readonly<Record<string, Configuration>> = {
  'hive-parquet': { tables: [hive] },
  'delta-s3-conditional': {
    tables: [
      delta('sales', {
        type: 's3-conditional',
        checkDynamoDbTable: { tableName: 'org_delta_log', region: 'us-west-2' },
      }),
    ],
  },
  'delta-dynamodb': {
    tables: [delta('orders', { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' })],
  },
  'delta-quiet-window': {
    tables: [
      delta('refunds', {
        type: 'quiet-window',
        windows: ['02:00-05:00'],
        quietMinutes: 30,
        acceptUncoordinatedWriters: true,
      }),
    ],
  },
  'iceberg-path': { tables: [iceberg('clicks', { type: 'path' })] },
  'iceberg-glue': {
    tables: [iceberg('clicks', { type: 'glue', database: 'lake', table: 'clicks', region: 'eu-west-1' })],
  },
  'iceberg-rest-s3tables': {
    tables: [
      iceberg('clicks', {
        type: 'rest',
        uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
        warehouse: TABLE_BUCKET,
        namespace: 'web',
        table: 'clicks',
        auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
      }),
    ],
  },
  'iceberg-rest-oauth2-secret': {
    tables: [iceberg('clicks', restCatalog('clicks', { tokenSecretArn: TOKEN_SECRET }))],
  },
  'iceberg-rest-oauth2-parameter': {
    tables: [iceberg('clicks', restCatalog('clicks', { tokenParameter: '/lake/rest-token' }))],
  },
  'kms-versioned': (app) => ({
    tables: [
      { ...hive, kmsKeyArn: KEY },
      {
        ...delta('orders', { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' }),
        kmsKeyArn: KEY,
      },
      { ...iceberg('clicks', { type: 'path' }), kmsKeyArn: KEY },
      { name: 'owned', prefix: 'owned/', format: 'delta', deltaLogStore: { type: 's3-conditional' } },
    ],
    dataBucket: { encryptionKey: bucketKey(app) },
    workflow: { versionedBuckets: ['lake'] },
  }),
  mixed: {
    tables: [
      hive,
      delta('orders', { type: 'dynamodb', tableName: 'delta_log', region: 'us-east-1' }),
      delta('sales', {
        type: 's3-conditional',
        checkDynamoDbTable: { tableName: 'org_delta_log', region: 'us-west-2' },
      }),
      iceberg('clicks', { type: 'glue', database: 'lake', table: 'clicks' }),
      iceberg('views', {
        type: 'rest',
        uri: 'https://s3tables.eu-west-1.amazonaws.com/iceberg',
        warehouse: TABLE_BUCKET,
        namespace: 'web',
        table: 'views',
        auth: { type: 'sigv4', signingName: 's3tables', region: 'eu-west-1' },
      }),
      iceberg('carts', restCatalog('carts', { tokenParameter: '/lake/rest-token' })),
      iceberg('pages', { type: 'path' }),
    ],
  },
};

describe('LakeCompactor template per table-format configuration', () => {
  for (const [name, configuration] of Object.entries(CONFIGURATIONS)) {
    it(`synthesizes the ${name} configuration to exactly the reviewed template`, async () => {
      // Prepare: the configuration above
      // Act
      const template = templateOf(configuration);
      // Assess
      expect(template).toContain('"AWS::StepFunctions::StateMachine"');
      await expect(template).toMatchFileSnapshot(`__snapshots__/format-${name}.template.json`);
    });
  }
});
