// Vacuum's s3:DeleteObjectVersion is granted only where a run can retire an input by a versioned delete: the
// Hive-style Parquet tables of the buckets in `versionedBuckets` (the owned bucket always), and the formats that
// list is built from are checked against each format's own vacuum rules, so the grant cannot drift from them.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { flattenCfnReference } from 'cdk-nag/lib/utils/flatten-cfn-reference.js';
import { describe, expect, it } from 'vitest';
import { TABLE_FORMATS } from '../../functions/core/formats/index.js';
import type { GroupJournalEntry } from '../../functions/ports/journal.js';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };
const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

// The per-step grants as each function's own role holds them (`tableIsolation: "none"`): with the default isolation
// they move, unchanged, to per-function data-access roles (test/infra/table-isolation.test.ts proves the move).
/** Every `role: resource` granted s3:DeleteObjectVersion in the stack. */
function versionDeletes(props: LakeCompactorProps, id: string): string[] {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const template = Template.fromStack(
    new LakeCompactorStack(app, id, { compactor: { tableIsolation: 'none', ...props } }),
  );
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  return Object.values(policies)
    .flatMap((p) =>
      p.Properties.PolicyDocument.Statement.filter((s) =>
        list(s.Action).includes('s3:DeleteObjectVersion'),
      ).flatMap((s) =>
        p.Properties.Roles.flatMap((r) =>
          list(s.Resource).map(
            (res) => `${r.Ref.replace(/ServiceRole[A-F0-9]+$/, '')}: ${flattenCfnReference(res)}`,
          ),
        ),
      ),
    )
    .sort();
}

describe("vacuum's DeleteObjectVersion", () => {
  it('covers only the Hive-style tables of versioned buckets and of the owned bucket, nothing else', () => {
    // Prepare: a versioned bucket with a Hive, a Delta and an Iceberg table; an unversioned bucket; the owned bucket
    const props: LakeCompactorProps = {
      tables: [
        { name: 'events', bucketName: 'lake', prefix: 'events/' },
        {
          name: 'sales',
          bucketName: 'lake',
          prefix: 'sales/',
          format: 'delta',
          deltaLogStore: { type: 's3-conditional' },
        },
        { name: 'orders', bucketName: 'lake', prefix: 'orders/', format: 'iceberg' },
        { name: 'logs', bucketName: 'plain-lake', prefix: 'logs/' },
        { name: 'clicks', prefix: 'clicks/' },
      ],
      workflow: { versionedBuckets: ['lake'] },
    };
    // Act
    const grants = versionDeletes(props, 'Versioned');
    // Assess
    expect(grants).toHaveLength(2);
    expect(grants[0]).toMatch(
      /^CompactorMaintenanceVacuum: arn:aws:s3:::<CompactorDataBucket[A-F0-9]+>\/clicks\/\*$/,
    );
    expect(grants[1]).toBe('CompactorMaintenanceVacuum: arn:aws:s3:::lake/events/*');
  });

  it('is not granted at all when no bucket retires by a versioned delete', () => {
    // Prepare / Act
    const grants = versionDeletes(
      { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
      'Unversioned',
    );
    // Assess
    expect(grants).toEqual([]);
  });

  it("is built from the formats whose vacuum rules name retired versions: each format's rules agree", () => {
    // Prepare: a settled delete-versioned group long past any retention, its input with a version id
    const entry = {
      runId: 'run-1',
      groupId: 'g0001',
      table: 't',
      partition: 'date=2024-01-01',
      state: 'done',
      retireMode: 'delete-versioned',
      retiredAt: 1_000,
      updatedAt: 1_000,
      inputs: [{ key: 't/date=2024-01-01/a.parquet', size: 1, etag: '"e"', versionId: 'v1' }],
      outputs: [],
    } as unknown as GroupJournalEntry;
    // Act
    const retiring = [...TABLE_FORMATS.values()]
      .filter((f) => f.vacuum.retiredInputs(entry, 10 ** 13, 0).due.length > 0)
      .map((f) => f.name);
    // Assess
    expect(retiring).toEqual(['parquet']);
    expect([...TABLE_FORMATS.values()].filter((f) => f.vacuum.retiresByVersion).map((f) => f.name)).toEqual(
      retiring,
    );
  });
});
