// The `workRoot` prop: it reaches every function that uses it as WORK_ROOT, every grant, the owned bucket's
// staging lifecycle rule and the Distributed Map's items read follow it, and an invalid or clashing one fails synth.
import { App, type PolicyValidationPluginReport } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { AwsSolutionsChecks } from 'cdk-nag';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };
type LambdaFunction = { Properties: { Environment?: { Variables?: Record<string, unknown> } } };

/** Tables in an existing bucket and in the construct's own one, so every grant and the lifecycle rule exist. */
const PROPS: LakeCompactorProps = {
  tables: [
    { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
    { name: 'clicks', prefix: 'clicks/' },
  ],
};

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
function synth(
  props: LakeCompactorProps,
  id = 'WorkRoot',
): { stack: LakeCompactorStack; template: Template } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } });
  return { stack, template: Template.fromStack(stack) };
}

/** Builds the stacks in one app; the error message, or '' when synthesis succeeds. */
function synthError(...stacks: LakeCompactorProps[]): string {
  try {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    stacks.forEach((props, i) => {
      new LakeCompactorStack(app, `Deployment${i}`, { compactor: props });
    });
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return '';
}

const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** Every S3 grant as `policy: action resource`, resources flattened as cdk-nag prints them, sorted. */
function s3Grants(template: Template): string[] {
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.entries(policies)
    .flatMap(([id, p]) =>
      p.Properties.PolicyDocument.Statement.filter((s) => s.Effect === 'Allow').flatMap((s) =>
        list(s.Action)
          .filter((a) => a.startsWith('s3:'))
          .flatMap((a) => list(s.Resource).map((r) => `${id}: ${a} ${flattenCfnReference(r)}`)),
      ),
    )
    .sort();
}

/** The WORK_ROOT variable of every function that has one, by logical id. */
function workRootVariables(template: Template): Record<string, unknown> {
  const functions = template.findResources('AWS::Lambda::Function') as Record<string, LambdaFunction>;
  return Object.fromEntries(
    Object.entries(functions).flatMap(([id, f]) => {
      const value = f.Properties.Environment?.Variables?.WORK_ROOT;
      return value === undefined ? [] : [[id, value]];
    }),
  );
}

function errorsOf(report: PolicyValidationPluginReport): string[] {
  return report.violations
    .filter((v) => v.severity === 'error')
    .flatMap((v) =>
      v.violatingResources.map((r) => `${v.ruleName} @ ${r.constructPath ?? r.resourceLogicalId}`),
    );
}

describe('LakeCompactor with its own work root', () => {
  const custom = synth({ ...PROPS, workRoot: '_lake-compactor-b/' });
  const standard = synth(PROPS);

  it('grants exactly what the default deployment grants, with every work-area key under the configured root', () => {
    // Prepare (the stacks above) / Act
    const grants = s3Grants(custom.template);
    const expected = s3Grants(standard.template).map((g) =>
      g.replaceAll('/_lake-compactor/', '/_lake-compactor-b/'),
    );
    // Assess
    expect(grants).toEqual(expected);
    expect(grants.filter((g) => g.includes('_lake-compactor/'))).toEqual([]);
    for (const folder of ['plans', 'previews', 'staging', 'trash', 'journal', 'maintenance']) {
      expect(grants.some((g) => g.endsWith(`arn:aws:s3:::lake/_lake-compactor-b/${folder}/*`))).toBe(true);
    }
  });

  it('lets the state machine read the Distributed Map items file only under the configured root', () => {
    // Prepare / Act
    const machine = s3Grants(custom.template).filter((g) =>
      g.startsWith('CompactorWorkflowStateMachineRole'),
    );
    // Assess
    expect(machine.map((g) => g.slice(g.indexOf(': ') + 2))).toEqual([
      expect.stringMatching(
        /^s3:GetObject arn:aws:s3:::<CompactorDataBucket[0-9A-F]+>\/_lake-compactor-b\/plans\/\*$/,
      ),
      's3:GetObject arn:aws:s3:::lake/_lake-compactor-b/plans/*',
    ]);
  });

  it('lets vacuum delete in the configured work root and no other', () => {
    // Prepare / Act
    const vacuum = s3Grants(custom.template).filter(
      (g) => g.startsWith('CompactorMaintenanceVacuum') && g.includes(' s3:DeleteObject '),
    );
    // Assess
    expect(vacuum.map((g) => g.slice(g.indexOf(': ') + 2))).toEqual(
      expect.arrayContaining(['s3:DeleteObject arn:aws:s3:::lake/_lake-compactor-b/*']),
    );
    expect(vacuum.filter((g) => g.includes('_lake-compactor/'))).toEqual([]);
  });

  it('expires staging leftovers of the owned bucket under the configured root', () => {
    // Prepare / Act
    const rules = custom.template.findResources('AWS::S3::Bucket');
    const staging = Object.values(rules).flatMap(
      (b) =>
        (b as { Properties: { LifecycleConfiguration?: { Rules: { Id: string; Prefix?: string }[] } } })
          .Properties.LifecycleConfiguration?.Rules ?? [],
    );
    // Assess
    expect(staging.find((r) => r.Id === 'StagingLeftovers')?.Prefix).toBe('_lake-compactor-b/staging/');
  });

  it('hands the configured root to every function that uses it: the workflow steps, sweep, vacuum and tiering', () => {
    // Prepare / Act
    const variables = workRootVariables(custom.template);
    const defaults = workRootVariables(standard.template);
    // Assess
    const ids = Object.keys(variables).sort();
    expect(ids.map((id) => id.replace(/[0-9A-F]{8}$/, ''))).toEqual([
      'CompactorMaintenanceTiering',
      'CompactorMaintenanceVacuum',
      'CompactorSweep',
      'CompactorWorkflowCommit',
      'CompactorWorkflowCompact',
      'CompactorWorkflowFinalize',
      'CompactorWorkflowLease',
      'CompactorWorkflowPlan',
      'CompactorWorkflowRollback',
      'CompactorWorkflowValidate',
      'CompactorWorkflowVerify',
    ]);
    expect(new Set(Object.values(variables))).toEqual(new Set(['_lake-compactor-b/']));
    expect(new Set(Object.values(defaults))).toEqual(new Set(['_lake-compactor/']));
    expect(Object.keys(defaults).sort()).toEqual(ids);
  });

  it('passes cdk-nag: the work-root wildcards are the documented ones', () => {
    // Prepare / Act
    const report = new AwsSolutionsChecks().validateScope(custom.stack);
    // Assess
    expect(errorsOf(report)).toEqual([]);
  });
});

describe('workRoot validation at synth', () => {
  it.each([
    [
      'lake-compactor-b/',
      /workRoot: "lake-compactor-b\/" must start with a folder whose name starts with "_"/,
    ],
    ['_lake-compactor-b', /workRoot: "_lake-compactor-b" does not end with "\/"; write it as a folder/],
    ['/_lake-compactor-b/', /workRoot: "\/_lake-compactor-b\/" starts with "\/"/],
    ['s3://lake/_work/', /workRoot: "s3:\/\/lake\/_work\/" is a URI/],
    ['_work/*/', /workRoot: "_work\/\*\/" has the folder "\*"/],
    ['_temporary/', /workRoot: "_temporary\/" starts with "_temporary\/", which belongs to writers/],
  ])(
    'refuses %j, saying what to use and that each deployment on a bucket needs its own',
    (workRoot, message) => {
      // Act
      const error = synthError({ ...PROPS, workRoot });
      // Assess
      expect(error).toMatch(/^LakeCompactor: a problem in the props/);
      expect(error).toMatch(message);
      expect(error).toMatch(/Each deployment on a bucket needs its own work root/);
    },
  );

  it('refuses a work root inside a table root, and a table root inside the work root', () => {
    // Prepare
    const props = {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/' },
        { name: 'hidden', bucketName: 'lake', prefix: '_compactors/tables/' },
      ],
    };
    // Act
    const inTable = synthError({ ...props, workRoot: 'events/_work/' });
    const holdsTable = synthError({ ...props, workRoot: '_compactors/' });
    // Assess
    expect(inTable).toMatch(
      /workRoot: "events\/_work\/" lies inside table "events" \(tables\.0, root "events"\)/,
    );
    expect(holdsTable).toMatch(/tables\.1\.prefix: "_compactors\/tables" has the folder "_compactors"/);
  });

  it('accepts any valid root, and a bucket-root table (which holds every work root of its bucket)', () => {
    // Act
    const error = synthError({
      tables: [{ name: 'all', bucketName: 'lake', prefix: '' }],
      workRoot: '_compactors/team-a/',
    });
    // Assess
    expect(error).toBe('');
  });

  it('refuses two LakeCompactors of one app on one bucket with the same or nested work roots, naming the other', () => {
    // Prepare
    const a = { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] };
    const b = { tables: [{ name: 'clicks', bucketName: 'lake', prefix: 'clicks/' }] };

    // Act
    const same = synthError(a, b);
    const nested = synthError({ ...a, workRoot: '_lc/' }, { ...b, workRoot: '_lc/b/' });
    const distinct = synthError(a, { ...b, workRoot: '_lake-compactor-b/' });
    const otherBucket = synthError(a, { tables: [{ name: 'clicks', bucketName: 'other', prefix: 'c/' }] });

    // Assess
    expect(same).toMatch(
      /workRoot: "_lake-compactor\/" is also the work root of the LakeCompactor at Deployment0\/Compactor, which uses bucket "lake" too\. Two deployments on one bucket must use different work roots, neither inside the other/,
    );
    expect(nested).toMatch(
      /workRoot: "_lc\/b\/" overlaps the work root of the LakeCompactor at Deployment0\/Compactor \("_lc\/"\)/,
    );
    expect(distinct).toBe('');
    expect(otherBucket).toBe('');
  });
});
