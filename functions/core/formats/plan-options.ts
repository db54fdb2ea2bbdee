// The options a stored plan may have been planned with besides the bin-pack planner's: a format that plans by rules
// of its own (TableFormat.planPartition) records what it resolved, and declares the schema of that record in its
// folder. The plan schema (core/planning.ts) accepts each of them, so a stored plan of any format is checked in full
// when it is read back.
//
// Why a list apart from the registry (index.ts): the formats' planners import planning.ts (its plan types and the
// bin-pack planner), so planning.ts importing the registry would be an import cycle; the schemas listed here import
// nothing of planning. A format with a planner of its own adds its options schema here, besides its registration
// line in formats/index.ts.
import { resolvedRewriteOptionsSchema } from './iceberg/rewrite-options.js';

/** The schema of each format's own plan options, one line each; each tells itself apart by its `kind`. */
export const FORMAT_PLAN_OPTIONS = [resolvedRewriteOptionsSchema] as const;
