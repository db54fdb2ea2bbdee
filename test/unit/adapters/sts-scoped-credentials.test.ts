// Per-table credentials from STS: one AssumeRole per table with that table's session policy, shared by concurrent
// callers and reused until five minutes before expiry, a throttled call retryable. No local STS server exists, so
// STS is a loopback fake (test/support/fake-sts.ts) that the real SDK client talks to.
import { STSClient } from '@aws-sdk/client-sts';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  SESSION_SECONDS,
  StsScopedCredentials,
  sessionNameOf,
} from '../../../functions/adapters/sts-scoped-credentials.js';
import {
  sessionPolicyFor,
  tableScopeOf,
  workRootScopeOf,
} from '../../../functions/core/access/table-scope.js';
import { InvalidInputError, TransientStoreError } from '../../../functions/core/errors.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import { type FakeSts, startFakeSts } from '../../support/fake-sts.js';

const ROLE = 'arn:aws:iam::111122223333:role/lake-PlanDataAccess';
const WORK_ROOT = '_lake-compactor/';
const events = tableScopeOf({ name: 'events', prefix: 'events' }, 'lake', WORK_ROOT);
const orders = tableScopeOf({ name: 'orders', prefix: 'sales/orders' }, 'lake', WORK_ROOT);

describe('StsScopedCredentials', () => {
  let sts: FakeSts;
  let clock: ManualClock;
  const provider = () =>
    new StsScopedCredentials({
      sts: new STSClient({
        endpoint: sts.endpoint,
        region: 'eu-west-1',
        credentials: { accessKeyId: 'FUNCTIONROLE', secretAccessKey: 'x', sessionToken: 'y' },
        maxAttempts: 1,
      }),
      roleArn: ROLE,
      region: 'eu-west-1',
      sessionLabel: 'lake-Plan',
      clock,
    });

  beforeAll(async () => {
    sts = await startFakeSts();
  });
  afterAll(async () => {
    await sts?.close();
  });
  beforeEach(() => {
    sts.requests.length = 0;
    clock = new ManualClock(Date.UTC(2024, 0, 1));
    sts.issue.now = () => clock.now();
  });

  it("assumes the data-access role with exactly the table's session policy, for an hour", async () => {
    // Act
    const credentials = await provider().credentialsFor(events);
    // Assess
    expect(sts.requests).toEqual([
      {
        roleArn: ROLE,
        roleSessionName: 'lake-Plan@events',
        policy: sessionPolicyFor(events, { region: 'eu-west-1' }),
        durationSeconds: SESSION_SECONDS,
        callerKeyId: 'FUNCTIONROLE',
      },
    ]);
    expect(credentials).toEqual({
      accessKeyId: 'ASIAFAKE',
      secretAccessKey: 'FAKESECRET',
      sessionToken: 'session-1',
      expiration: new Date(clock.now() + 3_600_000),
    });
  });

  it('asks once per table however many callers, reuses them, and renews them five minutes before expiry', async () => {
    // Prepare
    const credentials = provider();
    // Act
    const first = await Promise.all([
      credentials.credentialsFor(events),
      credentials.credentialsFor(events),
      credentials.credentialsFor(orders),
    ]);
    clock.advance(54 * 60_000);
    const reused = await credentials.credentialsFor(events);
    clock.advance(2 * 60_000);
    const renewed = await credentials.credentialsFor(events);
    // Assess
    expect(sts.requests.map((r) => r.roleSessionName)).toEqual([
      'lake-Plan@events',
      'lake-Plan@orders',
      'lake-Plan@events',
    ]);
    expect(first[0]).toBe(first[1]);
    expect(reused).toBe(first[0]);
    expect(renewed.sessionToken).not.toBe(first[0]?.sessionToken);
  });

  it('fails a throttled call as retryable and asks again on the next call instead of caching the failure', async () => {
    // Prepare
    const credentials = provider();
    sts.throttleNext(1);
    // Act
    const error = await credentials.credentialsFor(events).catch((err: unknown) => err);
    const next = await credentials.credentialsFor(events);
    // Assess
    expect(error).toBeInstanceOf(TransientStoreError);
    expect((error as Error).message).toMatch(/STS AssumeRole of .* for table events failed \(Throttling/);
    expect(next.sessionToken).toMatch(/^session-/);
    expect(sts.requests).toHaveLength(2);
  });

  it('names the work root in the session of work-root-only credentials, and refuses a role ARN that is none', () => {
    // Act / Assess
    expect(sessionNameOf('lake-Vacuum', workRootScopeOf('lake', WORK_ROOT))).toBe('lake-Vacuum@work-root');
    expect(sessionNameOf('fn', tableScopeOf({ name: 'a b/c', prefix: 'x' }, 'lake', WORK_ROOT))).toBe(
      'fn@a-b-c',
    );
    expect(
      () =>
        new StsScopedCredentials({
          sts: new STSClient({}),
          roleArn: 'lake-data',
          region: 'eu-west-1',
          sessionLabel: 'x',
          clock,
        }),
    ).toThrow(InvalidInputError);
  });
});
