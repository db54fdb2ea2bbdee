// Per-table isolation in the template (`tableIsolation: 'session-policy'`): each function that reaches table data gets
// a data-access role of its own, holding exactly the table-data grants the function had (its S3 actions, its KMS
// use through S3, the S3 Tables data actions), and the function's own role loses them. At run time the function
// assumes that role per table with a session policy naming only that table's prefix and the work root
// (functions/shared/table-stores.ts, core/access/table-scope.ts), so IAM grants the intersection: this step's
// actions, on this run's table.
//
// Why one data-access role per function, not one for all: a single role would hold the union of every step's
// table grants, so verify (which only reads staging) or the profiler (which parses writers' metadata, the most
// exposed input) could delete table objects of the table it serves. A role per function keeps the per-step least
// privilege of infra/s3-access.ts and adds the per-table bound on top; roles cost nothing.
//
// Why by rewriting the function's policy at synth, not at each grant: the table grants are made in many places
// (the workflow, maintenance, profiler, sweep and format-specific modules), by code that does not know about
// isolation. The split is lazy, so it sees every grant made before synthesis, wherever it was made.
import { type CfnResource, Lazy, Stack, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { Construct } from 'constructs';
import { type ScopedTable, sessionPolicyFor, tableScopeOf } from '../functions/core/access/table-scope.js';

/**
 * How each function's S3 access is bounded per run (`LakeCompactorProps.tableIsolation`):
 * - `session-policy`: per table, by an STS session policy on a data-access role (see this module).
 * - `none`: by the function's own role, which reaches every configured table its step may touch.
 */
export const TABLE_ISOLATION_MODES = ['session-policy', 'none'] as const;
export type TableIsolationMode = (typeof TABLE_ISOLATION_MODES)[number];

/** The default of `LakeCompactorProps.tableIsolation` (see its TSDoc for why). */
export const DEFAULT_TABLE_ISOLATION: TableIsolationMode = 'session-policy';

/** The variable naming a function's data-access role; read by functions/shared/table-stores.ts. */
export const DATA_ACCESS_ROLE_VARIABLE = 'DATA_ACCESS_ROLE_ARN';

/**
 * S3 Tables actions that authorise reading and writing a table's data through S3. They are copied to the data-access
 * role (its sessions read and write the table's objects) and also kept on the function's role: the REST catalog
 * client signs catalog calls with the function's own credentials, and S3 Tables' endpoint checks them there too.
 */
export const S3_TABLES_DATA_ACTIONS: ReadonlySet<string> = new Set([
  's3tables:GetTableData',
  's3tables:PutTableData',
]);

/**
 * The longest S3 bucket name (63 characters), standing in for a bucket whose name is a token until deploy (the
 * construct-owned one) in {@link sessionPolicyProblems}: whatever name it gets, the policy is no longer.
 */
const LONGEST_BUCKET = 'b'.repeat(63);
/** The longest partition and region names a session policy may be built for (their ARNs and endpoint names). */
const LONGEST_ENVIRONMENT = { partition: 'aws-us-gov', region: 'ap-southeast-7' } as const;

/**
 * Tables whose session policy STS would refuse, one problem each, found at synth instead of at each run's first
 * request (where the function fails with the same message): the policy names the table's prefix and the work root
 * (twice each: objects and KMS context), so a long prefix can pass every other check and still not fit in STS's
 * 2,048 characters. Measured for the worst case of what is a token until deploy (a 63-character bucket, the
 * longest partition and region), so a deployment that passes here never meets the limit at run time.
 */
export function sessionPolicyProblems(tables: readonly ScopedTable[], workRoot: string): string[] {
  return tables.flatMap((table) => {
    // A token, or the owned bucket's placeholder (props-schema's OWNED_BUCKET_PLACEHOLDER), is not a bucket name.
    const name = table.bucket ?? '';
    const literal = !Token.isUnresolved(name) && /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name);
    const bucket = literal ? name : LONGEST_BUCKET;
    try {
      sessionPolicyFor(tableScopeOf(table, bucket, workRoot), LONGEST_ENVIRONMENT);
      return [];
    } catch (err) {
      return [
        `table "${table.name}" cannot be isolated (\`tableIsolation: "session-policy"\`): ${err instanceof Error ? err.message : String(err)}.`,
      ];
    }
  });
}

/** A policy statement as the template holds it. */
export interface StatementJson {
  readonly Effect?: string;
  readonly Action?: string | string[];
  readonly Resource?: unknown;
  readonly Condition?: Record<string, Record<string, unknown>>;
  readonly [key: string]: unknown;
}

/** Where each statement of a function's policy goes when its table data moves to a data-access role. */
export interface SplitStatements {
  /** What the function's own role keeps. */
  readonly kept: StatementJson[];
  /** What the data-access role holds. */
  readonly moved: StatementJson[];
}

const actionsOf = (s: StatementJson): string[] =>
  s.Action === undefined ? [] : Array.isArray(s.Action) ? s.Action : [s.Action];

/** KMS through S3 only (infra/kms-access.ts): S3 asks KMS with the data session's permissions, so it moves too. */
function isKmsViaS3(s: StatementJson): boolean {
  const actions = actionsOf(s);
  return (
    actions.length > 0 &&
    actions.every((a) => a.startsWith('kms:')) &&
    s.Condition?.StringEquals?.['kms:ViaService'] !== undefined
  );
}

/**
 * Splits a function's statements: every S3 action moves (with isolation on, all the function's object stores —
 * the work root's too — sign with the data-access sessions), KMS grants through S3 move, S3 Tables data actions
 * are copied, everything else (DynamoDB, STS, Step Functions, catalogs, logs) stays. A statement with both kinds
 * of actions is split in two with the same resources and conditions. Deny statements stay where they are.
 */
export function splitTableDataStatements(statements: readonly StatementJson[]): SplitStatements {
  const kept: StatementJson[] = [];
  const moved: StatementJson[] = [];
  const withActions = (s: StatementJson, actions: string[]): StatementJson => ({
    ...s,
    Action: actions.length === 1 ? (actions[0] as string) : actions,
  });
  for (const s of statements) {
    if (s.Effect !== 'Allow') {
      kept.push(s);
      continue;
    }
    if (isKmsViaS3(s)) {
      moved.push(s);
      continue;
    }
    const actions = actionsOf(s);
    if (actions.length === 0) {
      kept.push(s); // NotAction: never one of this construct's grants; left as it is
      continue;
    }
    const toData = actions.filter((a) => a.startsWith('s3:') || S3_TABLES_DATA_ACTIONS.has(a));
    const toFunction = actions.filter((a) => !a.startsWith('s3:'));
    if (toData.length > 0) moved.push(withActions(s, toData));
    if (toFunction.length > 0) kept.push(withActions(s, toFunction));
  }
  return { kept, moved };
}

/** The allow statements of `fn`'s role's default policy, resolved as the template will hold them. */
function defaultPolicyOf(fn: lambda.Function): iam.Policy | undefined {
  return fn.role?.node.tryFindChild('DefaultPolicy') as iam.Policy | undefined;
}

function resolvedStatements(scope: Construct, document: unknown): StatementJson[] {
  const resolved = Stack.of(scope).resolve(document) as { Statement?: StatementJson[] } | undefined;
  return resolved?.Statement ?? [];
}

/** True when `fn`'s role reaches table data now (an S3 or KMS-through-S3 grant): it serves tables. */
export function servesTableData(scope: Construct, fn: lambda.Function): boolean {
  const policy = defaultPolicyOf(fn);
  if (policy === undefined || policy.document.isEmpty) return false;
  return splitTableDataStatements(resolvedStatements(scope, policy.document)).moved.length > 0;
}

export interface TableIsolationProps {
  /** The functions that may serve tables, by a name used in the roles' ids (e.g. `Commit`, `Vacuum`). */
  readonly functions: Readonly<Record<string, lambda.Function | undefined>>;
}

/**
 * The data-access roles of the functions that serve tables (those of `functions` whose role holds an S3 or
 * KMS-through-S3 grant when this is built: build it after the grants, as the last step of the construct).
 */
export class TableIsolation extends Construct {
  /** Each serving function's data-access role, by the name it was given in `functions`. */
  public readonly dataAccessRoles: Readonly<Record<string, iam.Role>>;

  constructor(scope: Construct, id: string, props: TableIsolationProps) {
    super(scope, id);
    const roles: Record<string, iam.Role> = {};
    for (const [name, fn] of Object.entries(props.functions)) {
      if (fn === undefined || !servesTableData(this, fn)) continue;
      roles[name] = this.isolate(name, fn);
    }
    this.dataAccessRoles = roles;
  }

  private isolate(name: string, fn: lambda.Function): iam.Role {
    const functionRole = fn.role as iam.Role;
    const policy = defaultPolicyOf(fn) as iam.Policy;
    // Only this function's role may assume it (by role ARN), and only with AssumeRole: the runtime passes no
    // session tags nor source identity, so sts:TagSession is neither trusted nor granted.
    const role = new iam.Role(this, `${name}DataAccess`, {
      assumedBy: new iam.ArnPrincipal(functionRole.roleArn),
      description: `lake-compactor ${name}: its table-data grants, assumed per table with a session policy naming that table only`,
    });
    const original = policy.document;
    const split = () => splitTableDataStatements(resolvedStatements(this, original));
    const dataPolicy = new iam.CfnPolicy(this, `${name}DataAccessPolicy`, {
      policyName: `${name}DataAccess`,
      roles: [role.roleName],
      policyDocument: Lazy.any({ produce: () => ({ Version: '2012-10-17', Statement: split().moved }) }),
    });
    // The function's own policy keeps everything but the table data; it may assume its data-access role alone.
    functionRole.addToPrincipalPolicy(
      new iam.PolicyStatement({ actions: ['sts:AssumeRole'], resources: [role.roleArn] }),
    );
    const cfnPolicy = policy.node.defaultChild as iam.CfnPolicy;
    cfnPolicy.policyDocument = Lazy.any({
      produce: () => ({ Version: '2012-10-17', Statement: split().kept }),
    });
    fn.addEnvironment(DATA_ACCESS_ROLE_VARIABLE, role.roleArn);
    // The function must not run before its data-access role can do what its own role no longer does.
    // (The function resource only: its service role is a child of `fn` and is what the data-access role trusts.)
    (fn.node.defaultChild as CfnResource).addResourceDependency(dataPolicy);
    return role;
  }
}
