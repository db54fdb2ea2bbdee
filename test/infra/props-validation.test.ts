// Strict props: an unknown key anywhere, a schedule EventBridge would refuse, a limit that changes behaviour
// silently, a versioned bucket no table lives in and overlapping or hidden table roots all fail synth — in one
// error that lists every problem with its key path.
import { App, Duration, Fn, RemovalPolicy } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as logs from 'aws-cdk-lib/aws-logs';
import { describe, expect, it } from 'vitest';
import { unsupportedFormatMessage } from '../../functions/core/formats/index.js';
import { LakeCompactorStack } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';
import { lakeCompactorPropsProblems } from '../../infra/props-schema.js';

const EVENTS = { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] };

/** Builds the stack from `props` as they would come from JSON (no type checking), returning the error. */
function synthError(props: unknown): string {
  try {
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    new LakeCompactorStack(app, 'Strict', { compactor: props as LakeCompactorProps });
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return '';
}

describe('LakeCompactor strict props', () => {
  it('refuses at synth a table whose format is not implemented, with the message naming what is supported', () => {
    // Prepare: a format no folder implements
    const props = {
      tables: [EVENTS, { name: 'orders', bucketName: 'lake', prefix: 'orders/', format: 'orc' }],
    };

    // Act
    const message = synthError(props);

    // Assess
    expect(message).toMatch(/^LakeCompactor: a problem in the props/);
    expect(message).toContain(`tables.1.format: ${unsupportedFormatMessage('orc')}`);
  });

  it('reports every problem of the props, at every level, in one synth-time error', () => {
    // Prepare: a config with one mistake of each kind
    const props = {
      tables: [
        EVENTS,
        { name: 'day', bucketName: 'lake', prefix: 'events/date=2024-01-15/' },
        { name: 'work', bucketName: 'lake', prefix: '_lake-compactor/tables/' },
        { name: 'owned', prefix: 'owned/', partitionColumn: ['date'], policy: { quietMinute: 5 } },
      ],
      trigger: { dryRun: true },
      dataBucket: { stagingExpirationDay: 7 },
      workflow: {
        inlineGroupLimit: -3,
        quietMaxRounds: 0,
        distributedMaxConcurrency: 0,
        versionedBuckets: ['lake', 'lakee'],
        inlineMaxConcurency: 5,
      },
      triggers: { dryrun: true },
      sweep: { schedule: 'rate(1 minutes)', reconcileSchedule: 'cron(0 3 * * SUN *)' },
      maintenance: {
        vacuum: { schedule: 'cron(0 4 * * ?)', retentionHour: 200 },
        tiering: { tableRules: { evnts: [{ afterDays: 30, storageClass: 'STANDARD_IA' }] } },
      },
    };

    // Act
    const message = synthError(props);

    // Assess: one error, every problem with its key path
    expect(message).toMatch(/^LakeCompactor: 17 problems in the props; fix them all, then synthesize again:/);
    const expected = [
      /- trigger: not a LakeCompactor prop; did you mean `triggers`\? Known: tables, removalPolicy,/,
      /- tables\.1\.prefix: "events\/date=2024-01-15" lies inside table "events" \(root "events"\)/,
      /- tables\.2\.prefix: "_lake-compactor\/tables" lies inside the work root _lake-compactor\//,
      /- tables\.3\.partitionColumn: not a key of tables\.3; did you mean `partitionColumns`\?/,
      /- tables\.3\.policy\.quietMinute: not a key of tables\.3\.policy; did you mean `quietMinutes`\?/,
      /- dataBucket\.stagingExpirationDay: not a key of dataBucket; did you mean `stagingExpirationDays`\?/,
      /- workflow\.inlineGroupLimit: -3 is not a whole number of at least 1/,
      /- workflow\.quietMaxRounds: 0 is not a whole number of at least 1/,
      /- workflow\.distributedMaxConcurrency: 0 is not a whole number from 1 to 10000; .* 0 would mean no limit/,
      /- workflow\.inlineMaxConcurency: not a key of workflow; did you mean `inlineMaxConcurrency`\?/,
      /- workflow\.versionedBuckets\.1: "lakee" holds none of the tables \(their buckets: lake\)/,
      /- triggers\.dryrun: not a key of triggers; did you mean `dryRun`\?/,
      /- sweep\.schedule: rate\(1 minutes\) must say "minute"/,
      /- sweep\.reconcileSchedule: cron\(0 3 \* \* SUN \*\) is not a valid EventBridge cron: one of day-of-month and day-of-week must be "\?"/,
      /- maintenance\.vacuum\.schedule: cron\(0 4 \* \* \?\) has 5 fields/,
      /- maintenance\.vacuum\.retentionHour: not a key of maintenance\.vacuum; did you mean `retentionHours`\?/,
      /- maintenance\.tiering\.tableRules\.evnts: no table is named "evnts"; did you mean `events`\?/,
    ];
    for (const line of expected) expect(message).toMatch(line);
  });

  it('catches `trigger` — a typo that would deploy with real compaction on — naming `triggers`', () => {
    // Prepare
    const props = { tables: [EVENTS], trigger: { dryRun: true } };
    // Act
    const message = synthError(props);
    // Assess
    expect(message).toMatch(/trigger: not a LakeCompactor prop; did you mean `triggers`\?/);
  });

  it('refuses an unknown key at every level, naming its full path', () => {
    // Prepare: one unknown key per nested props object
    const cases: [string, unknown][] = [
      ['tablez', { tables: [EVENTS], tablez: [] }],
      ['tables.0.bucket', { tables: [{ ...EVENTS, bucket: 'lake' }] }],
      ['tables.0.policy.cooldown', { tables: [{ ...EVENTS, policy: { cooldown: 5 } }] }],
      [
        'dataBucket.versioned',
        { tables: [{ name: 'owned', prefix: 'owned/' }], dataBucket: { versioned: true } },
      ],
      ['workflow.memory', { tables: [EVENTS], workflow: { memory: 1024 } }],
      ['triggers.enabled', { tables: [EVENTS], triggers: { enabled: false } }],
      ['sweep.reconcile', { tables: [EVENTS], sweep: { reconcile: 'rate(1 day)' } }],
      ['maintenance.vaccum', { tables: [EVENTS], maintenance: { vaccum: {} } }],
      ['maintenance.vacuum.dryrun', { tables: [EVENTS], maintenance: { vacuum: { dryrun: false } } }],
      ['maintenance.tiering.rule', { tables: [EVENTS], maintenance: { tiering: { rule: [] } } }],
    ];
    // Act
    const messages = cases.map(([path, props]) => [path, synthError(props)] as const);
    // Assess
    for (const [path, message] of messages) {
      expect(message, path).toContain(`- ${path}: not a`);
    }
  });

  it('refuses a schedule EventBridge would refuse, as a string or as an events.Schedule', () => {
    // Prepare
    const props = {
      tables: [EVENTS],
      sweep: { schedule: events.Schedule.expression('rate(15 minute)') },
      maintenance: { tiering: { schedule: 'cron(0 5 ? * SUN)' }, vacuum: { schedule: 'daily' } },
    };
    // Act
    const message = synthError(props);
    // Assess
    expect(message).toMatch(/sweep\.schedule: rate\(15 minute\) must say "minutes"/);
    expect(message).toMatch(/maintenance\.tiering\.schedule: cron\(0 5 \? \* SUN\) has 5 fields/);
    expect(message).toMatch(/maintenance\.vacuum\.schedule: "daily" is neither rate/);
  });

  it('refuses concurrency limits and rounds that would silently change behaviour', () => {
    // Prepare
    const props = {
      tables: [EVENTS],
      workflow: { inlineMaxConcurrency: 41, distributedMaxConcurrency: 10_001, inlineGroupLimit: 2.5 },
    };
    // Act
    const message = synthError(props);
    // Assess
    expect(message).toMatch(
      /workflow\.inlineMaxConcurrency: 41 is not a whole number from 1 to 40; an inline Map runs at most 40/,
    );
    expect(message).toMatch(
      /workflow\.distributedMaxConcurrency: 10001 is not a whole number from 1 to 10000/,
    );
    expect(message).toMatch(/workflow\.inlineGroupLimit: 2\.5 is not a whole number of at least 1/);
  });

  it('refuses a versioned bucket that holds no configured table', () => {
    // Prepare
    const props = { tables: [EVENTS], workflow: { versionedBuckets: ['lake', 'other-lake'] } };
    // Act
    const message = synthError(props);
    // Assess
    expect(message).toMatch(/^LakeCompactor: a problem in the props; fix it, then synthesize again:/);
    expect(message).toMatch(/workflow\.versionedBuckets\.1: "other-lake" holds none of the tables/);
  });

  it('refuses a table root nested in another table, in the work root, or under a hidden folder', () => {
    // Prepare
    const props = {
      tables: [
        EVENTS,
        { name: 'clicks', bucketName: 'lake', prefix: 'events/clicks/' },
        { name: 'staging', bucketName: 'lake', prefix: '_lake-compactor/' },
        { name: 'temp', bucketName: 'lake', prefix: 'spark/_temporary/x/' },
        { name: 'at-root', bucketName: 'other-lake', prefix: '' },
        { name: 'in-root', bucketName: 'other-lake', prefix: 'orders/' },
      ],
    };
    // Act
    const message = synthError(props);
    // Assess
    expect(message).toMatch(/tables\.1\.prefix: "events\/clicks" lies inside table "events"/);
    expect(message).toMatch(/tables\.2\.prefix: "_lake-compactor" lies inside the work root/);
    expect(message).toMatch(/tables\.3\.prefix: "spark\/_temporary\/x" has the folder "_temporary"/);
    expect(message).toMatch(/tables\.5\.prefix: "orders" lies inside table "at-root" \(root ""\)/);
  });

  it('accepts props from code: Schedule objects, constructs, enums and deploy-time values', () => {
    // Prepare
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'FromCode', {
      compactor: {
        tables: [
          { ...EVENTS, bucketName: Fn.importValue('LakeBucketName') },
          { name: 'owned', prefix: 'o/' },
        ],
        removalPolicy: RemovalPolicy.DESTROY,
        dataBucket: { removalPolicy: RemovalPolicy.DESTROY },
        workflow: {
          logRetention: logs.RetentionDays.ONE_WEEK,
          inlineMaxConcurrency: 40,
          distributedMaxConcurrency: 10_000,
          versionedBuckets: [Fn.importValue('LakeBucketName')],
        },
        sweep: {
          schedule: events.Schedule.rate(Duration.minutes(5)),
          reconcileSchedule: events.Schedule.cron({ weekDay: 'SAT', hour: '2', minute: '30' }),
        },
        maintenance: { vacuum: { schedule: 'rate(1 day)' }, tiering: { enabled: false } },
      },
    });
    // Act
    const template = Template.fromStack(stack);
    // Assess
    template.resourceCountIs('AWS::StepFunctions::StateMachine', 1);
  });

  it('refuses a construct-typed prop given as plain JSON, saying only code can pass it', () => {
    // Prepare
    const props = {
      tables: [EVENTS],
      workflow: { notificationTopic: 'arn:aws:sns:eu-west-1:111122223333:runs' },
    };
    // Act
    const problems = lakeCompactorPropsProblems(props);
    // Assess
    expect(problems).toEqual([
      'workflow.notificationTopic: must be an sns.ITopic, which only code can pass (the JSON config cannot hold one)',
    ]);
  });
});
