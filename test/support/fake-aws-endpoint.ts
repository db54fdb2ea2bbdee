// Local stand-ins for a broken AWS environment, on 127.0.0.1 only: an endpoint that answers every request with
// one canned answer (an S3 XML or DynamoDB JSON error), and the URL of a port nothing listens on.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the fake endpoint answers to every request. */
export interface CannedAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: string;
}

export interface FakeAwsEndpoint {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  /** Requests answered so far. */
  readonly requests: () => number;
  close(): Promise<void>;
}

/** S3's error document, as S3 sends it for `code` (e.g. AccessDenied, 403). */
export function s3Error(status: number, code: string, message: string): CannedAnswer {
  return {
    status,
    contentType: 'application/xml',
    body: `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>FAKE</RequestId></Error>`,
  };
}

/** DynamoDB's JSON error, as DynamoDB sends it for `type` (e.g. AccessDeniedException, 400). */
export function dynamoDbError(status: number, type: string, message: string): CannedAnswer {
  return {
    status,
    contentType: 'application/x-amz-json-1.0',
    body: JSON.stringify({ __type: `com.amazon.coral.service#${type}`, message }),
  };
}

/** Starts an HTTP server on 127.0.0.1 that answers every request with `answer`. */
export async function startFakeAwsEndpoint(answer: CannedAnswer): Promise<FakeAwsEndpoint> {
  let count = 0;
  const server: Server = createServer((req, res) => {
    count += 1;
    req.resume();
    req.on('end', () => {
      res.writeHead(answer.status, {
        'content-type': answer.contentType,
        'x-amzn-requestid': 'FAKE',
        'content-length': Buffer.byteLength(answer.body),
      });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests: () => count,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** `http://127.0.0.1:<port>` of a port that was free a moment ago and that nothing listens on. */
export async function closedEndpoint(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
