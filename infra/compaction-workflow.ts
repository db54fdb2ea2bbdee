// The CompactionWorkflow construct: the compaction state machine (JSONPath, one execution per partition
// run) and its Lambdas, with logging, X-Ray, retries by error name and a rollback on every group failure.
import { ArnFormat, Aws, Duration, RemovalPolicy, Stack } from 'aws-cdk-lib';
import type * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sns from 'aws-cdk-lib/aws-sns';
import * as sfn from 'aws-cdk-lib/aws-stepfunctions';
import * as tasks from 'aws-cdk-lib/aws-stepfunctions-tasks';
import { Construct } from 'constructs';
import { PERMANENT_ERROR_NAMES, RETRYABLE_ERROR_NAMES } from '../functions/core/errors.js';
import { DIMENSION, METRIC, METRICS_NAMESPACE, METRICS_SERVICE } from '../functions/core/metrics.js';
import { DEFAULT_WORK_ROOT, type WorkFolder, workRootProblem } from '../functions/core/workflow/layout.js';
import { addFormatWorkflowGrants, type FormatWorkflowProps } from './formats/index.js';
import { grantKmsViaS3, s3EncryptionContexts } from './kms-access.js';
import { projectFunction } from './node-function.js';
import {
  KMS_OBJECT_ACTIONS,
  listStatements,
  publisherStatements,
  type TableLocation,
  tableObjectArns,
  versioningStatements,
  workObjectArns,
} from './s3-access.js';
import { grantStateTableAccess } from './state-table-access.js';
import { tableConfigDelivery } from './table-config-file.js';

/**
 * Errors a later attempt can fix, retried with backoff: our own error classes flagged `retryable` (throttling,
 * lost races; computed from the classes, so a new retryable class is retried without editing this list),
 * then the Lambda service's hiccups.
 */
export const TRANSIENT_ERRORS: readonly string[] = [
  ...RETRYABLE_ERROR_NAMES,
  'Lambda.TooManyRequestsException',
  'Lambda.ServiceException',
  'Lambda.AWSLambdaException',
  'Lambda.SdkClientException',
  'Lambda.ClientExecutionTimeoutException',
];

/** Errors no retry can fix (every error class not flagged `retryable`); never listed in a Retry. */
export const PERMANENT_ERRORS: readonly string[] = PERMANENT_ERROR_NAMES;

/**
 * The workflow's props. What the steps need for a table format beyond the shared grants comes with that format's
 * props (`FormatWorkflowProps`, declared by each format in infra/formats/; the LakeCompactor fills them in).
 */
export interface CompactionWorkflowProps extends FormatWorkflowProps {
  /** The single table (partition items, journal, history). */
  readonly stateTable: dynamodb.ITable;
  /**
   * The TABLES JSON every handler parses (see `parseTableConfigs`); it reaches them as a file in their code
   * (see `tableConfigDelivery`), not in their environment.
   */
  readonly tablesJson: string;
  /**
   * Where the tables live. Each function is granted only the table prefixes and work-root folders its step
   * touches (see `CompactionWorkflow.grantObjectAccess`); a table at a bucket root ('') means the whole bucket.
   */
  readonly tables: readonly TableLocation[];
  /**
   * The work root in every bucket where runs keep their plans, items files, staging and trash (a relative key
   * prefix ending with `/` whose first folder starts with `_`; see `LakeCompactorProps.workRoot`). It reaches
   * the functions as WORK_ROOT, each run's context carries it, and the grants are scoped to it.
   * @default '_lake-compactor/'
   */
  readonly workRoot?: string;
  /**
   * KMS keys encrypting the data buckets (SSE-KMS): the object-touching functions may encrypt and decrypt
   * with them, the state machine may decrypt (the Distributed Map reads its items file).
   * @default [] — the buckets use S3-managed keys, which need no grant
   */
  readonly encryptionKeys?: readonly kms.IKey[];
  /**
   * Buckets with versioning on: inputs are retired by delete (old versions stay until vacuum). Others
   * move inputs to the work root's `trash/`.
   * @default [] — every bucket uses trash mode, which is safe on both kinds
   */
  readonly versionedBuckets?: readonly string[];
  /**
   * Plans with at most this many groups run in an inline Map; larger ones in a Distributed Map that
   * reads its items from S3 (the execution history stays small either way).
   * @default 40
   */
  readonly inlineGroupLimit?: number;
  /** Groups compacted at once in the inline Map. @default 10 */
  readonly inlineMaxConcurrency?: number;
  /** Groups compacted at once in the Distributed Map. @default 50 */
  readonly distributedMaxConcurrency?: number;
  /** Memory of the compact and verify functions, MB (more memory = more CPU). @default 3008 */
  readonly compactMemoryMb?: number;
  /** Quiet-partition checks before giving up. @default 6 */
  readonly quietMaxRounds?: number;
  /** Event bus for completion events. @default the account's default bus */
  readonly eventBus?: events.IEventBus;
  /** Topic for run notifications. @default a new topic */
  readonly notificationTopic?: sns.ITopic;
  /** Retention of the functions' and the state machine's logs. @default one month */
  readonly logRetention?: logs.RetentionDays;
  /**
   * Hours after which an execution is stopped as timed out (it alarms, and the sweep settles what it left
   * and releases its lease). A run is far shorter: the quiet wait is at most `quietMaxRounds` × 15 minutes,
   * each group step at most 15 minutes (with its retries), groups run 10 or 50 at a time.
   * @default 24
   */
  readonly executionTimeoutHours?: number;
}

/** The S3 object access of one workflow step (each such step also lists its buckets; see `listStatements`). */
interface StepGrant {
  readonly statements: readonly { actions: string[]; resources: string[] }[];
  /** Reads the buckets' versioning status (steps that may retire inputs by delete). */
  readonly versioning?: boolean;
}

/** Source of completion events (match it in EventBridge rules). */
export const EVENT_SOURCE = 'lake-compactor';
export const EVENT_DETAIL_TYPE = 'Compaction Run Finished';

/**
 * One execution per partition run: validate → lease → quiet wait → plan → (dry run | nothing) or
 * Map / Distributed Map of compact → verify → commit (Catch → rollback) → finalize → event + SNS.
 */
export class CompactionWorkflow extends Construct {
  public readonly stateMachine: sfn.StateMachine;
  public readonly notificationTopic: sns.ITopic;
  public readonly functions: Readonly<Record<string, nodejs.NodejsFunction>>;
  public readonly logGroup: logs.LogGroup;

  /** The work root the runs use (see `CompactionWorkflowProps.workRoot`). */
  public readonly workRoot: string;

  private readonly props: CompactionWorkflowProps;

  constructor(scope: Construct, id: string, props: CompactionWorkflowProps) {
    super(scope, id);
    this.props = props;
    this.workRoot = props.workRoot ?? DEFAULT_WORK_ROOT;
    const problem = workRootProblem(this.workRoot);
    if (problem !== undefined) throw new Error(`CompactionWorkflow: workRoot ${problem}`);
    const inlineLimit = props.inlineGroupLimit ?? 40;
    const memory = props.compactMemoryMb ?? 3008;
    const tableConfig = tableConfigDelivery(props.tablesJson);
    const env = {
      TABLE_NAME: props.stateTable.tableName,
      ...tableConfig.environment,
      WORK_ROOT: this.workRoot,
      VERSIONED_BUCKETS: (props.versionedBuckets ?? []).join(','),
      INLINE_GROUP_LIMIT: String(inlineLimit),
      COMPACT_MEMORY_MB: String(memory),
      QUIET_MAX_ROUNDS: String(props.quietMaxRounds ?? 6),
    };
    const fn = (name: string, file: string, memorySize: number, timeout: Duration, description: string) =>
      projectFunction(this, name, file, {
        memorySize,
        timeout,
        description,
        environment: env,
        codeFiles: tableConfig.codeFiles,
        parquetWasm: true,
        ...(this.props.logRetention === undefined ? {} : { logRetention: this.props.logRetention }),
      });
    const functions = {
      validate: fn('Validate', 'validate.ts', 256, Duration.seconds(60), 'Validates a compaction request'),
      lease: fn('Lease', 'lease.ts', 256, Duration.seconds(30), 'Takes a partition lease, checks quiet'),
      plan: fn('Plan', 'plan.ts', 1024, Duration.minutes(5), 'Inventories and plans one partition'),
      compact: fn(
        'Compact',
        'compact.ts',
        memory,
        Duration.minutes(15),
        'Rewrites one file group to staging',
      ),
      verify: fn('Verify', 'verify.ts', memory, Duration.minutes(15), 'Re-reads staged outputs, compares'),
      // Commit, rollback, finalize and plan may undo a delete-rebuild group, which rewrites inputs from staged
      // outputs of up to REBUILD_MAX_OUTPUT_BYTES (core/workflow/compact.ts): 1,024 MB each, measured to fit.
      commit: fn('Commit', 'commit.ts', 1024, Duration.minutes(5), 'Publishes outputs, retires inputs'),
      rollback: fn('Rollback', 'rollback.ts', 1024, Duration.minutes(5), 'Rolls a failed group back'),
      finalize: fn('Finalize', 'finalize.ts', 1024, Duration.minutes(5), 'Records a run, releases the lease'),
    };
    this.functions = functions;
    // Each step reads the state table and writes only its own item collections (state-table-access.ts).
    for (const [name, f] of Object.entries(functions)) {
      grantStateTableAccess(props.stateTable, f, name as keyof typeof functions);
    }
    this.grantObjectAccess(functions);
    // What committing or settling a group of a table format takes beyond that (e.g. its commit coordination).
    addFormatWorkflowGrants(this, props, functions);

    this.notificationTopic =
      props.notificationTopic ??
      new sns.Topic(this, 'Notifications', { displayName: 'lake-compactor runs', enforceSSL: true });
    const bus = props.eventBus ?? events.EventBus.fromEventBusName(this, 'DefaultBus', 'default');

    const definition = this.definition(functions, bus, inlineLimit);
    this.logGroup = new logs.LogGroup(this, 'Logs', {
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: RemovalPolicy.DESTROY,
    });
    this.stateMachine = new sfn.StateMachine(this, 'StateMachine', {
      stateMachineType: sfn.StateMachineType.STANDARD,
      definitionBody: sfn.DefinitionBody.fromChainable(definition),
      tracingEnabled: true,
      timeout: Duration.hours(props.executionTimeoutHours ?? 24),
      logs: { destination: this.logGroup, level: sfn.LogLevel.ALL, includeExecutionData: true },
      comment:
        'lake-compactor: compact one partition (validate, lease, quiet, plan, compact/verify/commit, finalize)',
    });
    // The Distributed Map reads its items file (`<work root>plans/<run>.items.json`), nothing else.
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['s3:GetObject'],
        resources: workObjectArns(props.tables, this.workRoot, 'plans'),
      }),
    );
    const plans = workObjectArns(props.tables, this.workRoot, 'plans');
    grantKmsViaS3(
      this.stateMachine,
      props.encryptionKeys ?? [],
      ['kms:Decrypt'],
      s3EncryptionContexts(props.tables, plans),
    );
    // `Count notification failure` publishes one metric. PutMetricData has no resource-level permissions:
    // the grant is limited to the project's namespace instead.
    this.stateMachine.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['cloudwatch:PutMetricData'],
        resources: ['*'],
        conditions: { StringEquals: { 'cloudwatch:namespace': METRICS_NAMESPACE } },
      }),
    );
    // The lease step takes over the lease of a run whose execution has ended (it reads that execution's
    // status). A separate policy for the same reason as below.
    new iam.Policy(this, 'LeaseReadsExecutions', {
      roles: [functions.lease.role as iam.IRole],
      statements: [
        new iam.PolicyStatement({
          actions: ['states:DescribeExecution'],
          resources: [
            Stack.of(this).formatArn({
              service: 'states',
              resource: 'execution',
              resourceName: `${this.stateMachine.stateMachineName}:*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          ],
        }),
      ],
    });
    // Validate starts one child execution per partition. A separate policy, not the function's default
    // one, because the state machine depends on the function (a grant there would be a cycle).
    new iam.Policy(this, 'ValidateStartsChildren', {
      roles: [functions.validate.role as iam.IRole],
      statements: [
        new iam.PolicyStatement({
          actions: ['states:StartExecution', 'states:DescribeExecution'],
          resources: [
            this.stateMachine.stateMachineArn,
            Stack.of(this).formatArn({
              service: 'states',
              resource: 'execution',
              resourceName: `${this.stateMachine.stateMachineName}:*`,
              arnFormat: ArnFormat.COLON_RESOURCE_NAME,
            }),
          ],
        }),
      ],
    });
  }

  /**
   * S3 access per step, from what each one does (functions/core/workflow, core/formats/hive/commit.ts):
   * - validate, lease: no object at all (DynamoDB and Step Functions only) — except the metadata reads a table
   *   format adds to validate (infra/formats/, granted by lake-compactor.ts) to list what a `where` selects;
   * - plan: settles what earlier runs left first (the publisher's access, below), then lists and reads
   *   footers under the table prefixes, reads and writes `plans/`;
   * - compact: reads the inputs, writes, reads back and clears its group's `staging/` folder (multipart
   *   uploads, hence AbortMultipartUpload);
   * - verify: reads `staging/` only;
   * - commit, rollback, finalize (the latter two settle a group through the same commit protocol): read,
   *   copy into, delete under the table prefixes, restore an input from its noncurrent version
   *   (GetObjectVersion), copy from and delete `staging/`, move to, read and delete `trash/`
   *   (`publisherStatements`); with plan, they read the buckets' versioning status.
   * Every object-touching step reads and writes oversized journal file lists under `journal/`. No step lists
   * object versions or deletes a version (only vacuum does). Each lists its buckets (see `listStatements`).
   */
  private grantObjectAccess(fns: Record<string, nodejs.NodejsFunction>): void {
    const tables = this.props.tables;
    const data = tableObjectArns(tables);
    const work = (folder: WorkFolder) => workObjectArns(tables, this.workRoot, folder);
    const journal = { actions: ['s3:GetObject', 's3:PutObject'], resources: work('journal') };
    const publisher: StepGrant = {
      statements: publisherStatements(tables, this.workRoot),
      versioning: true,
    };
    const grants: Record<string, StepGrant> = {
      // Plan settles earlier runs' groups before planning (workflow/settle.ts): the publisher's access.
      plan: {
        statements: [
          ...publisherStatements(tables, this.workRoot),
          { actions: ['s3:GetObject', 's3:PutObject'], resources: work('plans') },
          // A rewrite dry run's preview rows (workflow/layout.ts previewKey): written, never read back.
          { actions: ['s3:PutObject'], resources: work('previews') },
        ],
        versioning: true,
      },
      compact: {
        statements: [
          { actions: ['s3:GetObject'], resources: data },
          {
            actions: ['s3:GetObject', 's3:PutObject', 's3:DeleteObject', 's3:AbortMultipartUpload'],
            resources: work('staging'),
          },
          journal,
        ],
      },
      verify: {
        statements: [{ actions: ['s3:GetObject'], resources: work('staging') }, journal],
      },
      commit: publisher,
      rollback: publisher,
      finalize: publisher,
    };
    for (const [name, grant] of Object.entries(grants)) {
      const fn = fns[name];
      if (fn === undefined)
        throw new Error(`CompactionWorkflow: no function named ${name} to grant S3 access to`);
      for (const statement of grant.statements) fn.addToRolePolicy(new iam.PolicyStatement(statement));
      for (const statement of listStatements(tables)) fn.addToRolePolicy(statement);
      if (grant.versioning === true) {
        for (const statement of versioningStatements(tables)) fn.addToRolePolicy(statement);
      }
      // The keys only through S3, for the objects this step may touch (their ARNs, or the bucket's with a Bucket Key).
      const objects = grant.statements.flatMap((s) => s.resources);
      grantKmsViaS3(
        fn,
        this.props.encryptionKeys ?? [],
        KMS_OBJECT_ACTIONS,
        s3EncryptionContexts(tables, objects),
      );
    }
  }

  private definition(
    fns: Record<
      'validate' | 'lease' | 'plan' | 'compact' | 'verify' | 'commit' | 'rollback' | 'finalize',
      lambda.IFunction
    >,
    bus: events.IEventBus,
    inlineLimit: number,
  ): sfn.IChainable {
    const finalize = (name: string, outcome: string, resultPath: string) =>
      this.task(name, fns.finalize, { outcome, 'state.$': '$' }, { resultPath });

    // Failure path: settle groups, record, release, announce, fail with the caught error.
    const failed = new sfn.Fail(this, 'Run failed', {
      errorPath: '$.error.Error',
      causePath: '$.error.Cause',
    });
    const succeeded = new sfn.Succeed(this, 'Compacted', { outputPath: '$.result' });
    const groupFailed = new sfn.Fail(this, 'Group failed', {
      errorPath: '$.result.firstError.error',
      causePath: '$.result.firstError.cause',
    });
    // Once finalize has recorded the run, the execution ends with the run's own outcome, whatever happens
    // to its announcement: a failed PutEvents or Publish neither fails a committed run nor sends it down
    // the failure path (which would record it again and claim a rollback that never happened).
    const outcome = new sfn.Choice(this, 'Failed before finalize?')
      .when(sfn.Condition.isPresent('$.error'), failed)
      .otherwise(
        new sfn.Choice(this, 'Any group failed?')
          .when(sfn.Condition.stringEquals('$.result.status', 'FAILED'), groupFailed)
          .otherwise(succeeded),
      );
    const delivered = this.deliveryCheck(outcome);
    const recordFailure = finalize('Record failure', 'failed', '$.result');
    recordFailure.addCatch(failed, { resultPath: '$.finalizeError' });
    recordFailure.next(this.announceAndNotify('Announce failure', 'Notify failure', bus, delivered));
    const onError = (state: sfn.TaskStateBase | sfn.Map | sfn.DistributedMap) =>
      state.addCatch(recordFailure, { errors: ['States.ALL'], resultPath: '$.error' });

    const validate = this.task(
      'Validate input',
      fns.validate,
      {
        'input.$': '$',
        execution: {
          'name.$': '$$.Execution.Name',
          'id.$': '$$.Execution.Id',
          'startTime.$': '$$.Execution.StartTime',
        },
        'stateMachineArn.$': '$$.StateMachine.Id',
      },
      {}, // the result replaces the input (ResultPath omitted = '$')
    );
    const childrenStarted = new sfn.Succeed(this, 'Child executions started', {
      comment: 'One execution per partition was started; see $.children',
    });

    const acquire = this.task(
      'Acquire lease',
      fns.lease,
      { action: 'acquire', 'run.$': '$.run', 'stateMachineArn.$': '$$.StateMachine.Id' },
      { resultPath: '$.lease' },
    );
    acquire.addCatch(
      new sfn.Fail(this, 'Lease held', { errorPath: '$.error.Error', causePath: '$.error.Cause' }),
      {
        errors: ['LeaseHeldError'],
        resultPath: '$.error',
      },
    );
    // Nothing to record: the partition stays as it is until an operator settles it (the cause says how).
    acquire.addCatch(
      new sfn.Fail(this, 'Partition needs attention', {
        errorPath: '$.error.Error',
        causePath: '$.error.Cause',
      }),
      { errors: ['PartitionNeedsAttentionError'], resultPath: '$.error' },
    );
    onError(acquire);

    const checkQuiet = this.task(
      'Check quiet',
      fns.lease,
      { action: 'quiet', 'run.$': '$.run', 'round.$': '$.lease.quiet.round' },
      { resultPath: '$.lease.quiet' },
    );
    onError(checkQuiet);
    const waitQuiet = new sfn.Wait(this, 'Wait for quiet', {
      time: sfn.WaitTime.secondsPath('$.lease.quiet.waitSeconds'),
    });
    const gaveUp = finalize('Finish: partition busy', 'gave-up', '$.result');
    onError(gaveUp);

    const plan = this.task('Plan partition', fns.plan, { 'run.$': '$.run' }, { resultPath: '$.plan' });
    onError(plan);
    const dryRun = finalize('Finish: dry run', 'dry-run', '$.result');
    onError(dryRun);
    const nothing = finalize('Finish: nothing to compact', 'nothing-to-do', '$.result');
    onError(nothing);
    const finishedEarly = new sfn.Succeed(this, 'Finished without compacting', { outputPath: '$.result' });
    dryRun.next(finishedEarly);
    nothing.next(finishedEarly);
    gaveUp.next(finishedEarly);

    const selector = { 'run.$': '$.run', 'group.$': '$$.Map.Item.Value' };
    const inline = new sfn.Map(this, 'Compact groups', {
      itemsPath: '$.plan.groups',
      itemSelector: selector,
      maxConcurrency: this.props.inlineMaxConcurrency ?? 10,
      resultPath: sfn.JsonPath.DISCARD,
    });
    inline.itemProcessor(this.groupChain(fns, ''));
    onError(inline);
    const distributed = new sfn.DistributedMap(this, 'Compact groups (distributed)', {
      itemReader: new sfn.S3JsonItemReader({
        bucketNamePath: sfn.JsonPath.stringAt('$.plan.bucket'),
        key: sfn.JsonPath.stringAt('$.plan.itemsKey'),
      }),
      itemSelector: selector,
      maxConcurrency: this.props.distributedMaxConcurrency ?? 50,
      mapExecutionType: sfn.StateMachineType.STANDARD,
      resultPath: sfn.JsonPath.DISCARD,
    });
    distributed.itemProcessor(this.groupChain(fns, ' (distributed)'));
    onError(distributed);

    const finish = finalize('Finalize run', 'compacted', '$.result');
    onError(finish);
    const settleOnly = finalize('Finish: settled', 'settled', '$.result');
    onError(settleOnly);
    const announceCompletion = this.announceAndNotify(
      'Announce completion',
      'Notify completion',
      bus,
      delivered,
    );
    settleOnly.next(announceCompletion);
    finish.next(announceCompletion);
    inline.next(finish);
    distributed.next(finish);

    const mapChoice = new sfn.Choice(this, 'Groups fit inline?')
      .when(sfn.Condition.numberLessThanEquals('$.plan.groupCount', inlineLimit), inline)
      .otherwise(distributed);
    const afterPlan = new sfn.Choice(this, 'Dry run or nothing to do?')
      .when(sfn.Condition.booleanEquals('$.run.dryRun', true), dryRun)
      .when(sfn.Condition.numberEquals('$.plan.groupCount', 0), nothing)
      .otherwise(mapChoice);
    plan.next(afterPlan);

    const quietChoice = new sfn.Choice(this, 'Partition quiet?')
      .when(sfn.Condition.booleanEquals('$.lease.quiet.quiet', true), plan)
      .when(sfn.Condition.booleanEquals('$.lease.quiet.giveUp', true), gaveUp)
      .otherwise(waitQuiet);
    waitQuiet.next(checkQuiet);
    checkQuiet.next(quietChoice);
    // A settle run (`"settle": true`) goes straight to finalize, which settles the partition's open
    // groups and releases it: no quiet wait (settling is due whatever the writers do), no plan.
    acquire.next(
      new sfn.Choice(this, 'Settle only?')
        .when(
          sfn.Condition.and(
            sfn.Condition.isPresent('$.run.settle'),
            sfn.Condition.booleanEquals('$.run.settle', true),
          ),
          settleOnly,
        )
        .otherwise(quietChoice),
    );

    return validate.next(
      new sfn.Choice(this, 'Several partitions?')
        .when(sfn.Condition.stringEquals('$.mode', 'fanout'), childrenStarted)
        .otherwise(acquire),
    );
  }

  /** compact → verify → commit for one group; any failure → rollback, and the Map goes on. */
  private groupChain(
    fns: Record<'compact' | 'verify' | 'commit' | 'rollback', lambda.IFunction>,
    suffix: string,
  ): sfn.IChainable {
    const compact = this.task(
      `Compact group${suffix}`,
      fns.compact,
      { 'run.$': '$.run', 'group.$': '$.group' },
      {
        resultPath: '$.compact',
        extraRetries: [{ errors: ['States.Timeout', 'Sandbox.Timedout'], maxAttempts: 1 }],
      },
    );
    const verify = this.task(
      `Verify group${suffix}`,
      fns.verify,
      { 'run.$': '$.run', 'groupId.$': '$.group.groupId', 'compact.$': '$.compact' },
      { resultPath: '$.verify' },
    );
    const commit = this.task(
      `Commit group${suffix}`,
      fns.commit,
      { 'run.$': '$.run', 'groupId.$': '$.group.groupId' },
      { resultPath: '$.commit', outputPath: '$.commit' },
    );
    const rollback = this.task(
      `Roll back group${suffix}`,
      fns.rollback,
      { 'run.$': '$.run', 'groupId.$': '$.group.groupId', 'error.$': '$.error' },
      { resultPath: '$.rollback', outputPath: '$.rollback' },
    );
    for (const step of [compact, verify, commit]) {
      step.addCatch(rollback, { errors: ['States.ALL'], resultPath: '$.error' });
    }
    // Each iteration returns {}: the Map's result array stays tiny however many groups there are
    // (finalize reads the outcome of every group from the journal, not from the Map).
    const finished = new sfn.Pass(this, `Group finished${suffix}`, { result: sfn.Result.fromObject({}) });
    rollback.next(finished);
    return compact.next(verify).next(commit).next(finished);
  }

  /** A Lambda task (direct ARN, payload = the function's event) with retries on transient errors only. */
  private task(
    name: string,
    fn: lambda.IFunction,
    payload: Record<string, unknown>,
    options: { resultPath?: string; outputPath?: string; extraRetries?: sfn.RetryProps[] },
  ): tasks.LambdaInvoke {
    const task = new tasks.LambdaInvoke(this, name, {
      lambdaFunction: fn,
      payload: sfn.TaskInput.fromObject(payload),
      payloadResponseOnly: true,
      retryOnServiceExceptions: false,
      ...(options.resultPath === undefined ? {} : { resultPath: options.resultPath }),
      ...(options.outputPath === undefined ? {} : { outputPath: options.outputPath }),
    });
    task.addRetry({
      errors: [...TRANSIENT_ERRORS],
      interval: Duration.seconds(2),
      backoffRate: 2,
      maxAttempts: 6,
      maxDelay: Duration.seconds(60),
    });
    for (const retry of options.extraRetries ?? []) task.addRetry(retry);
    return task;
  }

  /**
   * After the announcement and the notification: `notified` joins the run's summary (the execution's
   * output), and a failure to deliver either counts one `NotificationsFailed` (alarmed) before the run ends
   * with its own outcome. Counting is best effort too: it never fails the run.
   */
  private deliveryCheck(outcome: sfn.IChainable): sfn.Choice {
    const notified = new sfn.Pass(this, 'Run notified', {
      result: sfn.Result.fromBoolean(true),
      resultPath: '$.result.notified',
    });
    const notNotified = new sfn.Pass(this, 'Run not notified', {
      comment:
        'The run is recorded; only its announcement (announceError) or notification (notifyError) failed',
      result: sfn.Result.fromBoolean(false),
      resultPath: '$.result.notified',
    });
    const count = new sfn.CustomState(this, 'Count notification failure', {
      stateJson: {
        Type: 'Task',
        Resource: `arn:${Aws.PARTITION}:states:::aws-sdk:cloudwatch:putMetricData`,
        Parameters: {
          Namespace: METRICS_NAMESPACE,
          MetricData: [
            {
              MetricName: METRIC.notificationsFailed,
              Dimensions: [{ Name: DIMENSION.service, Value: METRICS_SERVICE }],
              Unit: 'Count',
              Value: 1,
            },
          ],
        },
        ResultPath: null,
      },
    });
    count.addRetry({ errors: ['States.ALL'], interval: Duration.seconds(2), backoffRate: 2, maxAttempts: 2 });
    count.addCatch(outcome, { errors: ['States.ALL'], resultPath: sfn.JsonPath.DISCARD });
    notified.next(outcome);
    notNotified.next(count);
    count.next(outcome);
    return new sfn.Choice(this, 'Run announced and notified?')
      .when(
        sfn.Condition.or(
          sfn.Condition.isPresent('$.result.announceError'),
          sfn.Condition.isPresent('$.result.notifyError'),
        ),
        notNotified,
      )
      .otherwise(notified);
  }

  /**
   * The run's summary to the bus, then to the topic, then `delivered`. A failure of either (after its
   * retries) is kept in the summary (`announceError`, `notifyError`); a failed announcement still notifies.
   */
  private announceAndNotify(
    announceName: string,
    notifyName: string,
    bus: events.IEventBus,
    delivered: sfn.IChainable,
  ): tasks.EventBridgePutEvents {
    const announce = this.announce(announceName, bus);
    const notify = this.notify(notifyName);
    announce.addCatch(notify, { errors: ['States.ALL'], resultPath: '$.result.announceError' });
    notify.addCatch(delivered, { errors: ['States.ALL'], resultPath: '$.result.notifyError' });
    announce.next(notify).next(delivered);
    return announce;
  }

  private announce(name: string, bus: events.IEventBus): tasks.EventBridgePutEvents {
    const task = new tasks.EventBridgePutEvents(this, name, {
      entries: [
        {
          eventBus: bus,
          source: EVENT_SOURCE,
          detailType: EVENT_DETAIL_TYPE,
          detail: sfn.TaskInput.fromJsonPathAt('$.result'),
        },
      ],
      resultPath: sfn.JsonPath.DISCARD,
    });
    task.addRetry({ errors: ['States.ALL'], interval: Duration.seconds(2), backoffRate: 2, maxAttempts: 3 });
    return task;
  }

  private notify(name: string): tasks.SnsPublish {
    const task = new tasks.SnsPublish(this, name, {
      topic: this.notificationTopic,
      subject: 'lake-compactor run finished',
      message: sfn.TaskInput.fromJsonPathAt('$.result'),
      resultPath: sfn.JsonPath.DISCARD,
    });
    task.addRetry({ errors: ['States.ALL'], interval: Duration.seconds(2), backoffRate: 2, maxAttempts: 3 });
    return task;
  }
}
