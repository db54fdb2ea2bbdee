// The state table's per-function access: every function reads it, and writes only the item collections its step
// writes, by partition key (dynamodb:LeadingKeys) — the profiler, which parses writers' metadata, never the workflow
// journal vacuum trusts. The key spaces the conditions name are checked against the adapters' own key builders.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { fenceKey, journalKey } from '../../functions/adapters/dynamodb-journal.js';
import { statsKeys } from '../../functions/adapters/dynamodb-keys.js';
import { historyKey } from '../../functions/adapters/dynamodb-partition-lease.js';
import { quarantineKey } from '../../functions/adapters/dynamodb-quarantine.js';
import { runCountKeys } from '../../functions/adapters/dynamodb-run-counts.js';
import { LakeCompactorStack } from '../../infra/app.js';
import {
  leadingKeyPatterns,
  STATE_KEY_SPACES,
  STATE_WRITE_ACTIONS,
  type StateKeySpace,
} from '../../infra/state-table-access.js';

type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };
type Policy = { Properties: { PolicyDocument: { Statement: Statement[] }; Roles: { Ref: string }[] } };
const list = <T>(value: T | T[]): T[] => (Array.isArray(value) ? value : [value]);

/** IAM's StringLike: `*` any run of characters, `?` one, everything else literal. */
function likeMatches(pattern: string, value: string): boolean {
  const source = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${source}$`).test(value);
}

/** The key space whose patterns match `pk` (exactly one must). */
function spaceOf(pk: string): StateKeySpace[] {
  return (Object.keys(STATE_KEY_SPACES) as StateKeySpace[]).filter((s) =>
    STATE_KEY_SPACES[s].some((p) => likeMatches(p, pk)),
  );
}

const ref = { table: 'events', partition: 'date=2024-01-01' };

describe('state table key spaces', () => {
  it("match every partition key the adapters build, each in exactly its collection's space", () => {
    // Prepare: one key of every item kind the functions write
    const keys: [string, StateKeySpace][] = [
      [statsKeys.partition(ref).pk, 'partitions'],
      [statsKeys.decision(ref, 0, 'id').pk, 'partitions'],
      [fenceKey(ref, { runId: 'r', groupId: 'g' }).pk, 'partitions'],
      [quarantineKey(ref, 'events/date=2024-01-01/a.parquet').pk, 'partitions'],
      [historyKey(ref, 0, 'r').pk, 'partitions'],
      [statsKeys.file('lake/events/date=2024-01-01/a.parquet').pk, 'files'],
      [statsKeys.foreignFormat('events', 'sub/').pk, 'tables'],
      [statsKeys.changeCursor('events').pk, 'tables'],
      [journalKey('run-1', 'g0001').pk, 'journal'],
      [runCountKeys.total.pk, 'runCounts'],
      [runCountKeys.table('events').pk, 'runCounts'],
      [runCountKeys.slot(ref).pk, 'runCounts'],
    ];
    // Act / Assess
    for (const [pk, space] of keys) expect(spaceOf(pk), pk).toEqual([space]);
    // A journal key is not a run-count key, nor the reverse (RUN#… against RUNS#…).
    expect(likeMatches('RUN#*', runCountKeys.slot(ref).pk)).toBe(false);
    expect(leadingKeyPatterns(['runCounts']).some((p) => likeMatches(p, journalKey('r', 'g').pk))).toBe(
      false,
    );
  });
});

describe('state table grants in a stack', () => {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'StateAccess', {
    compactor: { tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/' }] },
  });
  const template = Template.fromStack(stack);
  const stateTable = Object.keys(template.findResources('AWS::DynamoDB::Table'))[0] ?? '';
  const policies = template.findResources('AWS::IAM::Policy') as Record<string, Policy>;
  /** The state-table write statements of the role whose logical id starts with `role`. */
  const writesOf = (role: string) =>
    Object.values(policies)
      .filter((p) => p.Properties.Roles.some((r) => r.Ref.startsWith(role)))
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s) => JSON.stringify(s.Resource).includes(stateTable))
      .filter((s) => list(s.Action).some((a) => /Put|Update|Delete|BatchWrite|PartiQL/.test(a)));
  const patternsOf = (role: string) =>
    writesOf(role).flatMap((s) =>
      list(
        (s.Condition as { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': string | string[] } })[
          'ForAllValues:StringLike'
        ]['dynamodb:LeadingKeys'],
      ),
    );

  it('lets no function write an item of the state table without a LeadingKeys condition', () => {
    // Act
    const writes = Object.values(policies)
      .flatMap((p) => p.Properties.PolicyDocument.Statement)
      .filter((s) => JSON.stringify(s.Resource).includes(stateTable))
      .filter((s) => list(s.Action).some((a) => /Put|Update|Delete|BatchWrite|PartiQL/.test(a)));
    // Assess
    expect(writes.length).toBeGreaterThan(0);
    for (const statement of writes) {
      expect(list(statement.Action)).toEqual([...STATE_WRITE_ACTIONS]);
      expect(Object.keys(statement.Condition as object)).toEqual(['ForAllValues:StringLike']);
    }
  });

  it('lets the profiler write statistics, file items, markers, run counts and its own turns, never a journal entry', () => {
    // Act
    const patterns = patternsOf('CompactorProfilerServiceRole');
    // Assess
    expect(patterns).toEqual(['PART#*', 'FILE#*', 'TABLE#*', 'RUNS', 'RUNS#*', 'HEALTH#profiler']);
    expect(patterns.some((p) => likeMatches(p, 'HEALTH#sweep'))).toBe(false);
    expect(patterns.some((p) => likeMatches(p, journalKey('forged-run', 'g0001').pk))).toBe(false);
  });

  it('gives each workflow step, the sweep and the vacuum only the collections its step writes', () => {
    // Act
    const byRole = Object.fromEntries(
      ['Validate', 'Lease', 'Plan', 'Compact', 'Verify', 'Commit', 'Rollback', 'Finalize'].map((step) => [
        step,
        patternsOf(`CompactorWorkflow${step}ServiceRole`),
      ]),
    );
    // Assess
    expect(byRole).toEqual({
      Validate: [],
      Lease: ['PART#*', 'RUNS', 'RUNS#*'],
      Plan: ['RUN#*', 'PART#*'],
      Compact: ['RUN#*', 'PART#*'],
      Verify: ['RUN#*', 'PART#*'],
      Commit: ['RUN#*', 'PART#*'],
      Rollback: ['RUN#*', 'PART#*'],
      Finalize: ['RUN#*', 'PART#*', 'FILE#*', 'RUNS', 'RUNS#*'],
    });
    expect(patternsOf('CompactorSweepServiceRole')).toEqual([
      'RUN#*',
      'PART#*',
      'FILE#*',
      'TABLE#*',
      'RUNS',
      'RUNS#*',
      'HEALTH#sweep',
      'HEALTH#reconcile',
    ]);
    expect(patternsOf('CompactorMaintenanceVacuumServiceRole')).toEqual([]);
  });
});
