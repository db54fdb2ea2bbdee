// The one interface through which a table format contributes to the LakeCompactor construct: IAM statements for
// the functions that read, commit, settle or vacuum its tables, the props its standalone CompactionWorkflow takes,
// and the cdk-nag wildcards its grants need. The construct composes every registered contribution (./index.ts) at
// fixed points of its build and names no format itself, so a format's infrastructure lives beside its other
// infra code (./<format>.ts) instead of in branches all over the construct.
//
// Kept apart from the registry so that a format module can import these types without a cycle through it.
import type * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct, IConstruct } from 'constructs';
import type { z } from 'zod';
import type { TableFormatName, TableFormatSettings } from '../../functions/core/formats/index.js';
import type { WildcardGrant } from '../nag-acknowledgements.js';

/** The construct's functions a format may grant to, by the names the construct and the workflow give them. */
export type FunctionRole =
  | 'profiler'
  | 'sweep'
  | 'validate'
  | 'lease'
  | 'plan'
  | 'compact'
  | 'verify'
  | 'commit'
  | 'rollback'
  | 'finalize'
  | 'vacuum'
  | 'tiering';

/**
 * The functions that plan, commit or settle a group, or vacuum a table: each one may commit to a table (or finish
 * another writer's commit), so each needs what committing through the table's catalog or log store takes.
 */
export const COMMITTING_FUNCTIONS: readonly FunctionRole[] = [
  'plan',
  'commit',
  'rollback',
  'finalize',
  'sweep',
  'vacuum',
];

/**
 * Where in the construct's build a format's statements are added. A role's policy lists its statements in the
 * order they were added (cdk's policy minimization merges them in that order too), so the stages are the points
 * of the build, in this order, and within a stage the formats come in registry order:
 * - `profiler`: once the profiler exists, before its queue is wired (what watching the table's changes reads);
 * - `sweep`: once the sweep exists, before it may start executions;
 * - `catalog`: once every function exists (the table's catalog: loading and committing through it);
 * - `log`: after `catalog` (the table's own log, metadata and commit coordination beyond the catalog).
 * The workflow's own steps get their format statements in the workflow itself (see {@link FormatInfra.workflow}).
 */
export type GrantStage = 'profiler' | 'sweep' | 'catalog' | 'log';

/** Statements for some of the construct's functions, each added to every one of `to`, in order. */
export interface FormatGrant {
  readonly to: readonly FunctionRole[];
  readonly statements: readonly iam.PolicyStatement[];
}

/** A {@link FormatGrant} with the stage of the construct's build it is added at. */
export interface StagedGrant extends FormatGrant {
  readonly stage: GrantStage;
}

/**
 * A configured table as far as its format's infrastructure goes: its name, format, key and format-specific
 * settings. Structural (a `LakeCompactorTable` is one), so that the props module, which the workflow's props are
 * part of, is not imported here: the workflow imports this registry.
 */
export type ConfiguredTable = {
  readonly name: string;
  readonly format?: TableFormatName | undefined;
  readonly kmsKeyArn?: string | undefined;
} & TableFormatSettings;

/** A table of the deployment, with the bucket it is in (the owned bucket's name is a deploy-time token). */
export type DeployedTable = ConfiguredTable & { readonly bucketName: string; readonly prefix: string };

/** What a format's grants are computed from. */
export interface FormatInfraContext {
  /** The construct: for ARNs in its stack's partition, region and account. */
  readonly scope: Construct;
  /** Every table of the deployment, of every format, in props order. */
  readonly tables: readonly DeployedTable[];
  /**
   * The keys that may encrypt the objects of `tables` (the owned bucket's for those in it, and their
   * `kmsKeyArn`s), so a format's reads decrypt with its own tables' keys only.
   */
  keysOf(tables: readonly DeployedTable[]): kms.IKey[];
}

/**
 * What one table format contributes to the construct. Every member is optional: a format that needs nothing beyond
 * the shared grants (Hive-style Parquet) contributes nothing and is not listed.
 *
 * @typeParam WorkflowProps the props a standalone CompactionWorkflow takes for this format's tables
 * @typeParam TableProps the props a table of this format may give, with the docs users read on them: the registry
 *   composes them into `LakeCompactorTable` (type only: their schemas are the format's table settings, declared in
 *   its folder under functions/core/formats/, which the props schema and the functions share)
 * @typeParam VacuumProps the props this format adds to the vacuum schedule's (`maintenance.vacuum`), composed
 *   into `VacuumScheduleProps`; see {@link FormatInfra.vacuum}
 */
export interface FormatInfra<
  WorkflowProps extends object = Record<never, never>,
  // biome-ignore lint/correctness/noUnusedVariables: type-level only, read by the registry (FormatTableProps)
  TableProps extends object = Record<never, never>,
  VacuumProps extends object = Record<never, never>,
> {
  /** The registered format (functions/core/formats/index.ts) whose tables this is for. */
  readonly format: TableFormatName;
  /**
   * The statements the construct's functions need for this format's tables of `context`, by stage; none when the
   * deployment has no such table (or none that needs them), so its template is as if the format did not exist.
   */
  grants?(context: FormatInfraContext): readonly StagedGrant[];
  /**
   * What the workflow's steps need for this format: the props it takes (filled from the tables by the construct,
   * given by hand to a standalone CompactionWorkflow) and the statements they grant, added when the steps are
   * created.
   */
  readonly workflow?: {
    propsOf(tables: readonly ConfiguredTable[]): WorkflowProps;
    grants(scope: IConstruct, props: WorkflowProps): readonly FormatGrant[];
  };
  /** The cdk-nag wildcards this format's statements need, each with why (see `AcknowledgeWildcards`). */
  readonly wildcardGrants?: readonly WildcardGrant[];
  /**
   * The problems of this format's table settings that only the construct sees, beyond what the table config's
   * schema checks (which the functions share): what its grants need the props to say (an S3 Tables catalog's
   * table bucket, in the catalog's region). One line each, naming the table and what to do; [] when none.
   * `tables` are the props' tables as given, of every format and any shape: the schema reports what is malformed.
   */
  propsProblems?(tables: readonly Readonly<Record<string, unknown>>[]): string[];
  /**
   * What the construct's descriptions say of this format, so that an alarm or a function description names what
   * the format adds without the construct naming the format (each a phrase or sentence, composed in registry order).
   */
  readonly words?: {
    /** What the vacuum function deletes of this format's tables beyond the shared work (a noun phrase). */
    readonly vacuumRemoves?: string;
    /**
     * What makes a table of this format refused as coordinating its commits otherwise than its config declares
     * (a `CoordinationMismatchError`), and the setting that fixes it: the coordination alarm's description.
     */
    readonly coordinationRefusal?: string;
  };
  /** What the format's vacuum props are: checked with the schedule's others, and handed to the vacuum function. */
  readonly vacuum?: {
    /** Their schemas, as the vacuum function's input parses them (a JSON config is checked at synth the same way). */
    readonly shape: { readonly [K in keyof Required<VacuumProps>]: z.ZodType };
    /**
     * Those that are a retention in hours: held to the minimum `retentionHours` is (168 h), unless
     * `allowRetentionBelowMinimum` is set.
     */
    readonly retentionProps?: readonly string[];
    /** What the props become in the scheduled rule's input to the vacuum function (unset props: nothing). */
    inputOf(props: VacuumProps): Readonly<Record<string, unknown>>;
  };
}

/** The statements that exist, in order: a builder's `undefined` is "no such statement for this deployment". */
export function present(...statements: readonly (iam.PolicyStatement | undefined)[]): iam.PolicyStatement[] {
  return statements.filter((s): s is iam.PolicyStatement => s !== undefined);
}
