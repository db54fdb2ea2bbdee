// cdk-nag acknowledgements that stay exact: each IAM wildcard finding is acknowledged on its own policy,
// by its own finding id, only when every statement using that resource matches a documented reason.
import { type IAspect, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import type { IConstruct } from 'constructs';

/** One kind of wildcard the design needs, and why. */
export interface WildcardGrant {
  /** Every action of a statement must match for the statement to be covered. */
  readonly actions: RegExp;
  /** The resource as cdk-nag flattens it (`arn:aws:s3:::lake/events/*`, `<StateTable.Arn>/index/*`). */
  readonly resource: RegExp;
  /** Why this wildcard is needed; shown in the validation report. */
  readonly reason: string;
}

type Statement = { Effect?: string; Action?: string | string[]; Resource?: unknown };

/**
 * Acknowledges `AwsSolutions-IAM5[Resource::…]` findings of the policies it visits, one finding id at a
 * time. cdk-nag 3 only accepts exact finding ids, and those embed logical ids and intrinsic functions, so
 * they are computed from the synthesized policy document instead of being written out by hand — a new
 * wildcard that no grant explains stays an error.
 */
export class AcknowledgeWildcards implements IAspect {
  constructor(private readonly grants: readonly WildcardGrant[]) {}

  public visit(node: IConstruct): void {
    if (!(node instanceof iam.CfnPolicy)) return;
    const document = Stack.of(node).resolve(node.policyDocument) as { Statement?: Statement[] };
    // A finding id names a resource, not a statement: acknowledge it only if every statement granting
    // on that resource is explained, so an unexplained action on the same resource still fails.
    const reasons = new Map<string, string[] | undefined>();
    for (const statement of document.Statement ?? []) {
      if (statement.Effect !== 'Allow') continue;
      const actions = toArray(statement.Action).map(String);
      for (const resource of toArray(statement.Resource).map(flattenCfnReference)) {
        if (!resource.includes('*')) continue;
        const grant = this.grants.find(
          (g) => g.resource.test(resource) && actions.every((a) => g.actions.test(a)),
        );
        const known = reasons.has(resource) ? reasons.get(resource) : [];
        reasons.set(
          resource,
          grant === undefined || known === undefined ? undefined : [...known, grant.reason],
        );
      }
    }
    for (const [resource, why] of reasons) {
      if (why === undefined) continue;
      Validations.of(node).acknowledge({
        id: `AwsSolutions-IAM5[Resource::${resource}]`,
        reason: [...new Set(why)].join(' '),
      });
    }
  }
}

function toArray(value: unknown): unknown[] {
  if (value === undefined) return [];
  return Array.isArray(value) ? value : [value];
}
