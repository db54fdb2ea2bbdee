// The ScopedCredentials port: credentials good only for one table's scope (its prefix and the work root), for the
// object store that serves that table. Implemented with STS AssumeRole and a session policy (adapters/).
import type { TableScope } from '../core/access/table-scope.js';

/** Temporary AWS credentials, as the SDK's credential providers return them. */
export interface ScopedCredentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
  /** When they stop working; the provider renews them before. */
  readonly expiration: Date;
}

export interface ScopedCredentialsProvider {
  /**
   * Credentials whose permissions are the caller's data-access role intersected with `scope`: the same ones while
   * they are valid for more than a few minutes, fresh ones after.
   */
  credentialsFor(scope: TableScope): Promise<ScopedCredentials>;
}
