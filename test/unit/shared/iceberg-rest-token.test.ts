// A REST catalog's bearer token comes from the Secrets Manager secret, the SSM parameter or the environment variable
// its setting names, read with the AWS SDK from a loopback stand-in for those two services and sent to the catalog.
//
// No local Secrets Manager or SSM server is available here, so the stand-in below is a minimal server speaking their
// JSON protocol (X-Amz-Target GetSecretValue / GetParameter) on 127.0.0.1: the SDK clients are the real ones.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { icebergCatalogServices } from '../../../functions/adapters/formats/iceberg/catalog-services.js';
import { InvalidInputError } from '../../../functions/core/errors.js';
import type { RestCatalogSetting } from '../../../functions/core/formats/iceberg/catalogs.js';
import {
  buildCatalogTable,
  CATALOG_TABLE_NOW,
  type CatalogTable,
} from '../../support/iceberg-catalog-table.js';
import { type RestCatalogServer, startRestCatalogServer } from '../../support/rest-catalog-server.js';

const SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:lake/iceberg-token-AbC123';
const PARAMETER = '/lake/iceberg-rest-token';

interface Call {
  readonly target: string;
  readonly body: Record<string, unknown>;
}

/** Answers GetSecretValue and GetParameter from `values` (by SecretId / Name), 400 not-found as each service does. */
async function startSecretsStandIn(values: Record<string, string>) {
  const calls: Call[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const target = String(req.headers['x-amz-target'] ?? '');
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
    calls.push({ target, body });
    const id = String(body.SecretId ?? body.Name);
    const value = values[id];
    res.setHeader('content-type', 'application/x-amz-json-1.1');
    if (value === undefined) {
      res.writeHead(400);
      const type = target.startsWith('AmazonSSM.') ? 'ParameterNotFound' : 'ResourceNotFoundException';
      res.end(JSON.stringify({ __type: type, message: `${id} not found` }));
      return;
    }
    res.writeHead(200);
    res.end(
      JSON.stringify(
        target === 'secretsmanager.GetSecretValue'
          ? { ARN: id, Name: id, SecretString: value }
          : { Parameter: { Name: id, Type: 'SecureString', Value: value } },
      ),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let t: CatalogTable;
let catalogServer: RestCatalogServer;
let standIn: Awaited<ReturnType<typeof startSecretsStandIn>>;

beforeEach(async () => {
  t = await buildCatalogTable();
  catalogServer = await startRestCatalogServer({
    store: t.store,
    now: () => CATALOG_TABLE_NOW,
    prefix: 'wh1',
    bearerToken: 'tok-from-store',
  });
  await catalogServer.register('lake.web', 'events', t.root, t.metadataLocation);
  standIn = await startSecretsStandIn({ [SECRET_ARN]: 'tok-from-store\n', [PARAMETER]: 'tok-from-store' });
});

afterEach(async () => {
  await standIn.close();
  await catalogServer.close();
  await t.remove();
});

/** The REST catalog of `setting`, built as the CLI and handlers build it. */
function catalogOf(s: RestCatalogSetting) {
  const build = icebergCatalogServices(env()).icebergCatalog;
  if (build === undefined) throw new Error('icebergCatalogServices builds no catalogs');
  return build(s, t.store);
}

function setting(auth: Extract<RestCatalogSetting['auth'], { type: 'oauth2' }>): RestCatalogSetting {
  return { type: 'rest', uri: catalogServer.uri, namespace: 'lake.web', table: 'events', auth };
}

const env = () => ({
  AWS_ENDPOINT_URL_SECRETS_MANAGER: standIn.endpoint,
  AWS_ENDPOINT_URL_SSM: standIn.endpoint,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'AKIDTEST',
  AWS_SECRET_ACCESS_KEY: 'test-secret',
});

describe('REST catalog bearer token sources', () => {
  it('reads the token from the Secrets Manager secret and loads the table with it', async () => {
    // Act
    const catalog = catalogOf(setting({ type: 'oauth2', tokenSecretArn: SECRET_ARN }));
    const loaded = await catalog.load(t.root);
    await catalog.load(t.root);
    // Assess: the secret was asked for once (the catalog keeps the token), the catalog got it without the newline.
    expect(loaded.metadata.tableUuid).toBe(t.initial.metadata.tableUuid);
    expect(standIn.calls).toEqual([
      { target: 'secretsmanager.GetSecretValue', body: { SecretId: SECRET_ARN } },
    ]);
    expect(catalogServer.requests.every((r) => r.headers.authorization === 'Bearer tok-from-store')).toBe(
      true,
    );
  });

  it('reads the token from the SSM parameter, decrypted', async () => {
    // Act
    const loaded = await catalogOf(setting({ type: 'oauth2', tokenParameter: PARAMETER })).load(t.root);
    // Assess
    expect(loaded.metadata.tableUuid).toBe(t.initial.metadata.tableUuid);
    expect(standIn.calls).toEqual([
      { target: 'AmazonSSM.GetParameter', body: { Name: PARAMETER, WithDecryption: true } },
    ]);
  });

  it('fails before any catalog request when the parameter cannot be read, and when the env variable is unset', async () => {
    // Act
    const missingParameter = await catalogOf(setting({ type: 'oauth2', tokenParameter: '/lake/other' }))
      .load(t.root)
      .catch((err: unknown) => err);
    const missingEnv = await catalogOf(setting({ type: 'oauth2', tokenEnv: 'MY_TOKEN' }))
      .load(t.root)
      .catch((err: unknown) => err);
    // Assess
    expect(missingParameter).toBeInstanceOf(InvalidInputError);
    expect((missingParameter as Error).message).toMatch(
      /SSM parameter \/lake\/other cannot be read \(ParameterNotFound.*role may read it/,
    );
    expect(missingEnv).toBeInstanceOf(InvalidInputError);
    expect((missingEnv as Error).message).toMatch(/MY_TOKEN is not set.*tokenSecretArn.*tokenParameter/);
    expect(catalogServer.requests).toEqual([]);
  });
});
