// Synth-time validation of LakeCompactorProps: every problem (schema, run caps, the profiler's reservation,
// work-root clashes, the functions' own table parser) reported in one error, before any resource is created.
import { Token } from 'aws-cdk-lib';
import { runCapIssues } from '../functions/core/run-caps.js';
import { parseTableConfigs } from '../functions/core/table-config.js';
import { DEFAULT_WORK_ROOT, workRootsOverlap } from '../functions/core/workflow/layout.js';
import { tablesJsonOf } from './function-config.js';
import type { LakeCompactorProps, LakeCompactorTable } from './lake-compactor-props.js';
import { lakeCompactorPropsProblems, OWNED_BUCKET_PLACEHOLDER } from './props-schema.js';
import { DEFAULT_TABLE_ISOLATION, sessionPolicyProblems } from './table-isolation.js';

/**
 * Throws one error listing every problem of `props`, plus `workRootClashes` (the construct tree's check,
 * see `workRootClashProblems`); returns when there is none.
 */
export function assertValidProps(props: LakeCompactorProps, workRootClashes: readonly string[]): void {
  // Validated at synth time, every problem in one message, instead of a deploy (or a cold start) that
  // fails: the props schema refuses unknown keys anywhere, and its table fields are the ones the
  // functions parse. As a last guard the functions' own parser reads the config they will be given: the
  // owned bucket's name is a token until deploy, so its tables are checked under a readable placeholder
  // (bucket-less tables share it, so two of them on the same root still conflict).
  const problems = lakeCompactorPropsProblems(props);
  problems.push(
    ...runCapIssues(
      props.triggers ?? {},
      props.tables.map((t) => t.name),
    ),
  );
  problems.push(...reservedConcurrencyIssues(props.profilerReservedConcurrency));
  problems.push(...workRootClashes);
  if (problems.length === 0) {
    try {
      const tables = parseTableConfigs(tablesJsonOf(props.tables, OWNED_BUCKET_PLACEHOLDER));
      if ((props.tableIsolation ?? DEFAULT_TABLE_ISOLATION) === 'session-policy') {
        problems.push(...sessionPolicyProblems(tables, props.workRoot ?? DEFAULT_WORK_ROOT));
      }
    } catch (err) {
      problems.push(`invalid \`tables\`. ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  if (problems.length > 0) {
    throw new Error(
      `LakeCompactor: ${problems.length === 1 ? 'a problem' : `${problems.length} problems`} in the props; fix ${problems.length === 1 ? 'it' : 'them all'}, then synthesize again:\n  - ${problems.join('\n  - ')}`,
    );
  }
}

/** An SQS event source polls with 2–1000 concurrent invocations; the reservation bounds it. */
function reservedConcurrencyIssues(reserved: number | false | undefined): string[] {
  if (reserved === undefined || reserved === false) return [];
  if (Number.isInteger(reserved) && reserved >= 2 && reserved <= 1000) return [];
  return [
    `\`profilerReservedConcurrency\` is ${reserved}; use a whole number from 2 to 1000 (the profiler's SQS event source polls with at least 2 concurrent invocations), or false to reserve nothing.`,
  ];
}

/** What one LakeCompactor of the app keeps where, for the work-root clash check. */
export interface WorkRootClaim {
  /** The construct's path, to name it. */
  readonly path: string;
  /** Its work root (see `LakeCompactorProps.workRoot`). */
  readonly workRoot: string;
  /** The tables' bucket names known at synth (see `literalBucketsOf`). */
  readonly literalBuckets: readonly string[];
}

/**
 * The tables' bucket names known at synth, each once. Buckets known only at deploy time (tokens) cannot be
 * compared; a table without `bucketName` is in its construct's own bucket, which is its deployment's alone.
 */
export function literalBucketsOf(tables: readonly LakeCompactorTable[]): string[] {
  return [
    ...new Set(
      // Not an array when the props are malformed (the props schema reports it).
      (Array.isArray(tables) ? tables : []).flatMap((t) =>
        typeof t.bucketName === 'string' && !Token.isUnresolved(t.bucketName) ? [t.bucketName] : [],
      ),
    ),
  ];
}

/**
 * The other LakeCompactors (`others`, of the same CDK app) that name one of `claim`'s buckets with the same (or
 * a nested) work root: each one's vacuum would delete the other's staging and trash. `stackName` is the stack
 * of `claim`, for the suggested work root.
 */
export function workRootClashProblems(
  claim: WorkRootClaim,
  others: readonly WorkRootClaim[],
  stackName: string,
): string[] {
  const suggestion = `_lake-compactor-${stackName.toLowerCase().replace(/[^a-z0-9_.-]/g, '-')}/`;
  return others.flatMap((other) => {
    const shared = claim.literalBuckets.filter((b) => other.literalBuckets.includes(b));
    if (shared.length === 0 || !workRootsOverlap(claim.workRoot, other.workRoot)) return [];
    const same = claim.workRoot === other.workRoot;
    const buckets = shared.map((b) => JSON.stringify(b)).join(', ');
    return [
      `workRoot: ${JSON.stringify(claim.workRoot)} ${same ? 'is also' : 'overlaps'} the work root of the LakeCompactor at ${other.path}${same ? '' : ` (${JSON.stringify(other.workRoot)})`}, which uses bucket ${buckets} too. Two deployments on one bucket must use different work roots, neither inside the other, or each one's vacuum deletes the other's staging and trash: set \`workRoot\` of this one to its own, e.g. "${suggestion}".`,
    ];
  });
}
