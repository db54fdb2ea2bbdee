// A stand-in for AWS STS on 127.0.0.1: no local STS server exists (LocalStack and moto need Docker or Python,
// which the machine has neither of), so this one answers AssumeRole (the query protocol the SDK speaks) with
// credentials it makes up, records every request's parameters, and can be told to throttle.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One AssumeRole request as STS received it. */
export interface AssumeRoleRequest {
  readonly roleArn: string;
  readonly roleSessionName: string;
  readonly policy: string | undefined;
  readonly durationSeconds: number | undefined;
  /** The signing access key id of the caller (from the Authorization header). */
  readonly callerKeyId: string | undefined;
}

export interface FakeSts {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly requests: AssumeRoleRequest[];
  /** Credentials handed out: the access key id and secret (s3rver accepts only S3RVER), and their lifetime. */
  issue: { accessKeyId: string; secretAccessKey: string; lifetimeMs: number; now: () => number };
  /** Answer the next `n` requests with a Throttling error. */
  throttleNext(n: number): void;
  close(): Promise<void>;
}

export async function startFakeSts(): Promise<FakeSts> {
  const requests: AssumeRoleRequest[] = [];
  let throttle = 0;
  let issued = 0;
  const state: FakeSts['issue'] = {
    accessKeyId: 'ASIAFAKE',
    secretAccessKey: 'FAKESECRET',
    lifetimeMs: 3_600_000,
    now: () => Date.now(),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const form = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
      const send = (status: number, body: string) => {
        res.writeHead(status, { 'content-type': 'text/xml', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      };
      if (form.get('Action') !== 'AssumeRole') {
        send(400, errorXml('InvalidAction', `fake STS answers AssumeRole only, not ${form.get('Action')}`));
        return;
      }
      const duration = form.get('DurationSeconds');
      requests.push({
        roleArn: form.get('RoleArn') ?? '',
        roleSessionName: form.get('RoleSessionName') ?? '',
        policy: form.get('Policy') ?? undefined,
        durationSeconds: duration === null ? undefined : Number(duration),
        callerKeyId: /Credential=([^/]+)\//.exec(String(req.headers.authorization ?? ''))?.[1],
      });
      if (throttle > 0) {
        throttle -= 1;
        send(400, errorXml('Throttling', 'Rate exceeded'));
        return;
      }
      issued += 1;
      const expiration = new Date(state.now() + state.lifetimeMs).toISOString();
      send(
        200,
        `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials><AccessKeyId>${state.accessKeyId}</AccessKeyId><SecretAccessKey>${state.secretAccessKey}</SecretAccessKey><SessionToken>session-${issued}</SessionToken><Expiration>${expiration}</Expiration></Credentials><AssumedRoleUser><AssumedRoleId>AROAFAKE:${form.get('RoleSessionName')}</AssumedRoleId><Arn>arn:aws:sts::111122223333:assumed-role/data/${form.get('RoleSessionName')}</Arn></AssumedRoleUser></AssumeRoleResult><ResponseMetadata><RequestId>fake-${issued}</RequestId></ResponseMetadata></AssumeRoleResponse>`,
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    requests,
    issue: state,
    throttleNext: (n) => {
      throttle = n;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function errorXml(code: string, message: string): string {
  return `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>${code}</Code><Message>${message}</Message></Error><RequestId>fake</RequestId></ErrorResponse>`;
}
