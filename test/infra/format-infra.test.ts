// The infra-side format registry: a format's grants reach exactly the functions they name at their stage (and a
// grant staged before its function exists is refused by name), and the shared infra files name no format, so a
// new format's infrastructure is its own module in infra/formats/ plus one registration line.
import { readdirSync, readFileSync } from 'node:fs';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import type { StagedGrant } from '../../infra/formats/format-infra.js';
import { addFormatGrants, formatWildcardGrants } from '../../infra/formats/index.js';

const INFRA = new URL('../../infra/', import.meta.url);

/** A stand-in function that records the statements added to its role. */
function recordingFunction(): lambda.IFunction & { added: iam.PolicyStatement[] } {
  const added: iam.PolicyStatement[] = [];
  return {
    added,
    addToRolePolicy: (statement: iam.PolicyStatement) => added.push(statement),
  } as unknown as lambda.IFunction & { added: iam.PolicyStatement[] };
}

const statement = (action: string) => new iam.PolicyStatement({ actions: [action], resources: ['*'] });

describe('addFormatGrants', () => {
  it("adds a stage's statements to each function the grant names, in order, and skips other stages", () => {
    // Prepare
    const vacuum = recordingFunction();
    const sweep = recordingFunction();
    const grants: StagedGrant[] = [
      { stage: 'log', to: ['vacuum', 'sweep'], statements: [statement('a:One'), statement('a:Two')] },
      { stage: 'catalog', to: ['vacuum'], statements: [statement('b:Other')] },
      { stage: 'log', to: ['vacuum'], statements: [statement('c:Three')] },
    ];
    // Act
    addFormatGrants(grants, 'log', { vacuum, sweep });
    // Assess
    expect(vacuum.added.map((s) => s.actions[0])).toEqual(['a:One', 'a:Two', 'c:Three']);
    expect(sweep.added.map((s) => s.actions[0])).toEqual(['a:One', 'a:Two']);
  });

  it('refuses a grant to a function that does not exist yet at its stage, naming the function and the stage', () => {
    // Prepare
    const grants: StagedGrant[] = [{ stage: 'profiler', to: ['vacuum'], statements: [statement('a:One')] }];
    // Act
    const add = () => addFormatGrants(grants, 'profiler', { profiler: recordingFunction() });
    // Assess
    expect(add).toThrow(/grants to the vacuum function at the "profiler" stage, where it does not exist yet/);
  });
});

describe('the infra format registry', () => {
  it("acknowledges the formats' own cdk-nag wildcards, each with a reason", () => {
    // Act
    const grants = formatWildcardGrants();
    // Assess
    expect(grants.length).toBeGreaterThan(0);
    for (const grant of grants) expect(grant.reason).not.toBe('');
  });

  it('leaves no shared infra file naming a format in its code or importing a format folder', () => {
    // Prepare: every shared file's code (a format's own are in infra/formats/), comments dropped (prose may
    // mention formats; alarm texts do)
    const shared = readdirSync(INFRA).filter((f) => f.endsWith('.ts'));
    // Act
    const offenders = shared.filter((file) => {
      const code = readFileSync(new URL(file, INFRA), 'utf8')
        .replace(/^\s*\/\*[\s\S]*?\*\//gm, '')
        .replace(/^\s*\/\/.*$/gm, '');
      return /['"](delta|iceberg)['"]|core\/formats\/(delta|iceberg)\//.test(code);
    });
    // Assess
    expect(shared).toContain('lake-compactor.ts');
    expect(offenders).toEqual([]);
  });
});
