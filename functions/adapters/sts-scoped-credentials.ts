// Per-table credentials from STS: AssumeRole of the deployment's data-access role with the table's session policy,
// cached per scope until shortly before they expire (within a Lambda environment's life, across its invocations).
import { AssumeRoleCommand, type AssumeRoleCommandOutput, type STSClient } from '@aws-sdk/client-sts';
import { scopeKey, sessionPolicyFor, type TableScope } from '../core/access/table-scope.js';
import { InvalidInputError, TransientStoreError } from '../core/errors.js';
import type { Clock } from '../ports/clock.js';
import type { ScopedCredentials, ScopedCredentialsProvider } from '../ports/scoped-credentials.js';

/**
 * An hour: the most a chained role session may last (the function's own role is itself a session), far longer than
 * any invocation (15 minutes at most), so one AssumeRole per table serves a warm environment for an hour.
 */
export const SESSION_SECONDS = 3600;

/** Credentials with less left than this are renewed before use (a request signed now may take minutes). */
export const RENEW_BEFORE_MS = 5 * 60_000;

export interface StsScopedCredentialsOptions {
  readonly sts: STSClient;
  /** The data-access role of this function (DATA_ACCESS_ROLE_ARN). */
  readonly roleArn: string;
  /** The function's region: the session policy names S3's endpoint there for KMS (`kms:ViaService`). */
  readonly region: string;
  /** The function's name or any label: it starts the session names CloudTrail shows. */
  readonly sessionLabel: string;
  readonly clock: Clock;
}

/** `arn:aws-cn:iam::…` → `aws-cn`. */
function partitionOf(roleArn: string): string {
  const partition = /^arn:(aws[a-z-]*):iam::\d{12}:role\//.exec(roleArn)?.[1];
  if (partition === undefined) {
    throw new InvalidInputError(
      `DATA_ACCESS_ROLE_ARN is ${JSON.stringify(roleArn)}, not an IAM role ARN (arn:aws:iam::<account>:role/<name>); the construct sets it: redeploy`,
    );
  }
  return partition;
}

/** A RoleSessionName (2-64 of `[\w+=,.@-]`) naming the function and the table, as CloudTrail shows it. */
export function sessionNameOf(label: string, scope: TableScope): string {
  const clean = (s: string) => s.replace(/[^\w+=,.@-]/g, '-');
  return clean(`${label}@${scope.table ?? 'work-root'}`)
    .slice(0, 64)
    .padEnd(2, '-');
}

export class StsScopedCredentials implements ScopedCredentialsProvider {
  private readonly partition: string;
  private readonly cache = new Map<string, Promise<ScopedCredentials>>();

  constructor(private readonly options: StsScopedCredentialsOptions) {
    this.partition = partitionOf(options.roleArn);
  }

  credentialsFor(scope: TableScope): Promise<ScopedCredentials> {
    const key = scopeKey(scope);
    const cached = this.cache.get(key);
    if (cached !== undefined) {
      return cached.then(
        (c) =>
          c.expiration.getTime() - this.options.clock.now() > RENEW_BEFORE_MS ? c : this.renew(key, scope),
        () => this.renew(key, scope),
      );
    }
    return this.renew(key, scope);
  }

  /** One AssumeRole for `scope`; concurrent callers share it, and a failure is not cached. */
  private renew(key: string, scope: TableScope): Promise<ScopedCredentials> {
    const pending = this.assume(scope);
    this.cache.set(key, pending);
    pending.catch(() => {
      if (this.cache.get(key) === pending) this.cache.delete(key);
    });
    return pending;
  }

  private async assume(scope: TableScope): Promise<ScopedCredentials> {
    const policy = sessionPolicyFor(scope, { region: this.options.region, partition: this.partition });
    let response: AssumeRoleCommandOutput;
    try {
      response = await this.options.sts.send(
        new AssumeRoleCommand({
          RoleArn: this.options.roleArn,
          RoleSessionName: sessionNameOf(this.options.sessionLabel, scope),
          Policy: policy,
          DurationSeconds: SESSION_SECONDS,
        }),
      );
    } catch (err) {
      const e = err as { name?: string; $metadata?: { httpStatusCode?: number }; message?: string };
      const status = e.$metadata?.httpStatusCode ?? 0;
      if (e.name === 'Throttling' || e.name === 'ThrottlingException' || status >= 500) {
        throw new TransientStoreError(
          `STS AssumeRole of ${this.options.roleArn} for table ${scope.table ?? '(work root)'} failed (${e.name}: ${e.message}); retry`,
          { cause: err },
        );
      }
      throw err;
    }
    const c = response.Credentials;
    if (!c?.AccessKeyId || !c.SecretAccessKey || !c.SessionToken || c.Expiration === undefined) {
      throw new TransientStoreError(
        `STS AssumeRole of ${this.options.roleArn} returned no credentials for table ${scope.table ?? '(work root)'}; retry`,
      );
    }
    return {
      accessKeyId: c.AccessKeyId,
      secretAccessKey: c.SecretAccessKey,
      sessionToken: c.SessionToken,
      expiration: new Date(c.Expiration),
    };
  }
}
