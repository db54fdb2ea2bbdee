// A stand-in for the AWS Glue Data Catalog, because no local Glue server exists: an in-memory HTTP server on
// 127.0.0.1 speaking Glue's JSON protocol (awsJson1_1: POST / with `X-Amz-Target: AWSGlue.<Operation>`) for the
// two operations an Iceberg catalog needs, driven by the real SDK client. It keeps Glue's optimistic lock: every
// table has a VersionId, UpdateTable with a VersionId that is not the current one fails with
// ConcurrentModificationException, and a successful update makes a new VersionId. `beforeUpdate` lets a test run
// another writer's commit between a client's GetTable and its UpdateTable (the race the lock exists for).
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GlueClient } from '@aws-sdk/client-glue';

/** A Glue table as the fake keeps it (the JSON shape of Glue's `Table`, without the computed fields). */
export interface FakeGlueTable {
  Name: string;
  TableType?: string;
  Description?: string;
  Owner?: string;
  Parameters?: Record<string, string>;
  StorageDescriptor?: Record<string, unknown>;
  [field: string]: unknown;
}

interface Stored {
  table: FakeGlueTable;
  version: number;
}

export interface FakeGlue {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** A real Glue SDK client pointed at the fake, with dummy credentials. */
  client(): GlueClient;
  /** Creates (or replaces) a table, as CreateTable would; its VersionId starts at 1. */
  putTable(database: string, table: FakeGlueTable): void;
  /** The table as a GetTable would return it now (a copy). */
  table(database: string, name: string): (FakeGlueTable & { VersionId: string }) | undefined;
  /** Every request so far: operation and JSON body. */
  readonly requests: { operation: string; body: Record<string, unknown> }[];
  /** Called once before the next UpdateTable is applied (then cleared): another writer's turn. */
  beforeUpdate(hook: () => Promise<void>): void;
  /**
   * From now on GetTable answers without a VersionId (as a proxy or an old endpoint might), and UpdateTable
   * without one is applied unconditionally — Glue's behaviour, which lets such an update overwrite any other.
   */
  omitVersionId(): void;
  /** The next UpdateTable fails with this HTTP status and error type instead of being applied (then cleared). */
  failNextUpdate(status: number, type: string): void;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Starts the fake Glue endpoint on 127.0.0.1. */
export async function startFakeGlue(): Promise<FakeGlue> {
  const tables = new Map<string, Stored>();
  const requests: { operation: string; body: Record<string, unknown> }[] = [];
  let hook: (() => Promise<void>) | undefined;
  let failure: { status: number; type: string } | undefined;
  let withoutVersionId = false;
  const keyOf = (database: unknown, name: unknown) => `${String(database)}.${String(name)}`;

  const server: Server = createServer((req, res) => {
    const send = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/x-amz-json-1.1',
        'x-amzn-requestid': 'FAKE-GLUE',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    const error = (status: number, type: string, message: string) =>
      send(status, { __type: type, Message: message });
    void (async () => {
      const target = String(req.headers['x-amz-target'] ?? '');
      const operation = target.replace(/^AWSGlue\./, '');
      const body = JSON.parse((await bodyOf(req)) || '{}') as Record<string, unknown>;
      requests.push({ operation, body });
      if (operation === 'GetTable') {
        const stored = tables.get(keyOf(body.DatabaseName, body.Name));
        if (stored === undefined)
          return error(400, 'EntityNotFoundException', `Table ${String(body.Name)} not found.`);
        return send(200, {
          Table: {
            ...stored.table,
            DatabaseName: body.DatabaseName,
            ...(withoutVersionId ? {} : { VersionId: String(stored.version) }),
          },
        });
      }
      if (operation === 'UpdateTable') {
        const input = body.TableInput as FakeGlueTable;
        const key = keyOf(body.DatabaseName, input.Name);
        if (hook !== undefined) {
          const run = hook;
          hook = undefined;
          await run();
        }
        if (failure !== undefined) {
          const f = failure;
          failure = undefined;
          return error(f.status, f.type, 'injected by the test');
        }
        const stored = tables.get(key);
        if (stored === undefined)
          return error(400, 'EntityNotFoundException', `Table ${input.Name} not found.`);
        if (body.VersionId !== undefined && body.VersionId !== String(stored.version))
          return error(
            400,
            'ConcurrentModificationException',
            `Update table failed due to concurrent modifications (version ${String(body.VersionId)} is not ${stored.version}).`,
          );
        tables.set(key, { table: structuredClone(input), version: stored.version + 1 });
        return send(200, {});
      }
      return error(400, 'UnknownOperationException', `The fake Glue does not implement ${operation}`);
    })().catch((err: unknown) => error(500, 'InternalServiceException', String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const endpoint = `http://127.0.0.1:${port}`;
  return {
    endpoint,
    client: () =>
      new GlueClient({
        endpoint,
        region: 'eu-west-1',
        credentials: { accessKeyId: 'AKIDFAKE', secretAccessKey: 'fake-secret' },
        maxAttempts: 1,
      }),
    putTable: (database, table) =>
      tables.set(keyOf(database, table.Name), { table: structuredClone(table), version: 1 }),
    table: (database, name) => {
      const stored = tables.get(keyOf(database, name));
      return stored === undefined
        ? undefined
        : { ...structuredClone(stored.table), VersionId: String(stored.version) };
    },
    requests,
    beforeUpdate: (h) => {
      hook = h;
    },
    omitVersionId: () => {
      withoutVersionId = true;
    },
    failNextUpdate: (status, type) => {
      failure = { status, type };
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
