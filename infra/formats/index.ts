// The registry of what table formats contribute to the construct's infrastructure (see ./format-infra.ts): the
// construct, the workflow and the cdk-nag acknowledgements compose these and never name a format. A format that
// needs something of the construct is one module here and one line in REGISTERED; Hive-style Parquet needs
// nothing beyond the shared grants and is listed only for the table props it owns.
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { IConstruct } from 'constructs';
import type { z } from 'zod';
import type { WildcardGrant } from '../nag-acknowledgements.js';
import { deltaInfra } from './delta/index.js';
import type {
  ConfiguredTable,
  FormatInfra,
  FormatInfraContext,
  FunctionRole,
  GrantStage,
  StagedGrant,
} from './format-infra.js';
import { hiveInfra } from './hive/index.js';
import { hudiInfra } from './hudi/index.js';
import { icebergInfra } from './iceberg/index.js';

/** Every format's contribution, one registration line each; within a stage, grants are added in this order. */
const REGISTERED = [
  hiveInfra, // format: "parquet" (table props only)
  deltaInfra, // format: "delta"
  icebergInfra, // format: "iceberg"
  hudiInfra, // format: "hudi"
] as const;

/** What the construct's build passes the formats (see ./format-infra.ts), for the modules that compose them. */
export type { ConfiguredTable, DeployedTable, FormatInfraContext } from './format-infra.js';

/** The contributions, as the construct composes them. */
const CONTRIBUTIONS: readonly FormatInfra<object>[] = REGISTERED;

type Registered = (typeof REGISTERED)[number];
type WorkflowPropsOf<F> = F extends FormatInfra<infer P, object, object> ? P : never;
type TablePropsOf<F> = F extends FormatInfra<object, infer P, object> ? P : never;
type VacuumPropsOf<F> = F extends FormatInfra<object, object, infer P> ? P : never;
type Intersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Every format's props of a standalone CompactionWorkflow (see `FormatInfra.workflow`), in one type. */
export type FormatWorkflowProps = Intersection<WorkflowPropsOf<Registered>>;

/** Every format's table props (`LakeCompactorTable` extends them), in one type. */
export type FormatTableProps = Intersection<TablePropsOf<Registered>>;

/** Every format's vacuum schedule props (`VacuumScheduleProps` extends them), in one type. */
export type FormatVacuumProps = Intersection<VacuumPropsOf<Registered>>;

/** The schemas of every format's vacuum props, one per prop (see `FormatInfra.vacuum`), in registry order. */
export const FORMAT_VACUUM_SHAPE = Object.assign({}, ...CONTRIBUTIONS.map((f) => f.vacuum?.shape ?? {})) as {
  readonly [K in keyof Required<FormatVacuumProps>]: z.ZodType;
};

/** The formats' vacuum props that are a retention in hours (held to the shared minimum), in registry order. */
export const FORMAT_RETENTION_PROPS: readonly string[] = CONTRIBUTIONS.flatMap(
  (f) => f.vacuum?.retentionProps ?? [],
);

/** What the formats' vacuum props of `vacuum` become in the vacuum function's scheduled input, in registry order. */
export function formatVacuumInputOf(vacuum: FormatVacuumProps): Record<string, unknown> {
  return Object.assign({}, ...CONTRIBUTIONS.map((f) => f.vacuum?.inputOf(vacuum) ?? {}));
}

/** The functions a stage's grants may go to (those that exist by then). */
export type FunctionsByRole = Partial<Record<FunctionRole, lambda.IFunction>>;

/** Every format's grants for the deployment of `context`, in registry order. */
export function formatGrantsOf(context: FormatInfraContext): StagedGrant[] {
  return CONTRIBUTIONS.flatMap((f) => f.grants?.(context) ?? []);
}

/**
 * Adds the `stage` grants of `grants` (see `formatGrantsOf`) to `functions`, in order.
 * @throws Error when one goes to a function `functions` lacks: the stage comes before that function exists.
 */
export function addFormatGrants(
  grants: readonly StagedGrant[],
  stage: GrantStage,
  functions: FunctionsByRole,
): void {
  for (const grant of grants) {
    if (grant.stage !== stage || grant.statements.length === 0) continue;
    for (const role of grant.to) {
      const fn = functions[role];
      if (fn === undefined) {
        throw new Error(
          `LakeCompactor: a table format grants to the ${role} function at the "${stage}" stage, where it does not exist yet; use a later stage (infra/formats/format-infra.ts).`,
        );
      }
      for (const statement of grant.statements) fn.addToRolePolicy(statement);
    }
  }
}

/** Every format's CompactionWorkflow props for `tables` (what the construct gives its workflow). */
export function formatWorkflowPropsOf(tables: readonly ConfiguredTable[]): FormatWorkflowProps {
  return Object.assign(
    {},
    ...CONTRIBUTIONS.map((f) => f.workflow?.propsOf(tables) ?? {}),
  ) as FormatWorkflowProps;
}

/** Adds every format's statements for the workflow's steps, from the workflow's props, to `functions`. */
export function addFormatWorkflowGrants(
  scope: IConstruct,
  props: FormatWorkflowProps,
  functions: FunctionsByRole,
): void {
  for (const format of CONTRIBUTIONS) {
    for (const grant of format.workflow?.grants(scope, props) ?? []) {
      for (const role of grant.to) {
        const fn = functions[role];
        if (fn === undefined)
          throw new Error(`CompactionWorkflow: no ${role} step for a table format to grant to`);
        for (const statement of grant.statements) fn.addToRolePolicy(statement);
      }
    }
  }
}

/** The cdk-nag wildcards the formats' statements need, in registry order. */
export function formatWildcardGrants(): WildcardGrant[] {
  return CONTRIBUTIONS.flatMap((f) => f.wildcardGrants ?? []);
}

/** Every format's problems of the props' `tables` (see `FormatInfra.propsProblems`), in registry order. */
export function formatPropsProblems(tables: readonly Readonly<Record<string, unknown>>[]): string[] {
  return CONTRIBUTIONS.flatMap((f) => f.propsProblems?.(tables) ?? []);
}

/**
 * What the vacuum function removes of the formats' tables beyond the shared work (`FormatInfra.words`), in registry
 * order (none when no format adds any).
 */
export function formatVacuumRemovals(): readonly string[] {
  return CONTRIBUTIONS.flatMap((f) => (f.words?.vacuumRemoves === undefined ? [] : [f.words.vacuumRemoves]));
}

/** What refuses a table of each format as coordinating otherwise than declared (`FormatInfra.words`), in order. */
export function formatCoordinationRefusals(): readonly string[] {
  return CONTRIBUTIONS.flatMap((f) =>
    f.words?.coordinationRefusal === undefined ? [] : [f.words.coordinationRefusal],
  );
}
