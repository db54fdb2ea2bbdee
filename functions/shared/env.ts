// Parses a Lambda's environment once, at cold start, into a typed and validated config object;
// a missing or malformed variable fails the cold start with a message that names it.
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';
import { DEFAULT_WORK_ROOT, workRootSchema } from '../core/workflow/layout.js';

/**
 * Validates `env` against `schema` and returns the typed result. All problems are reported in one
 * error, because a deploy with three wrong variables should not take three cold starts to fix.
 */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (!result.success) {
    throw new InvalidInputError(
      'The function environment is invalid; fix the construct props or the variables below',
      result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
    );
  }
  return result.data;
}

/** Variables every handler receives from the construct. */
export const baseEnvSchema = z.object({
  /** The DynamoDB single table (partitions, files, decisions, journal, history). */
  TABLE_NAME: z.string().min(1),
  /**
   * The table configs, read by `loadTableConfigs`: TABLES_FILE names a JSON file in the function's code
   * (what the construct deploys), TABLES is the JSON itself (older deployments, tests, the CLI).
   */
  TABLES_FILE: z.string().min(1).optional(),
  TABLES: z.string().min(2).optional(),
  POWERTOOLS_SERVICE_NAME: z.string().default('lake-compactor'),
  /**
   * The deployment's work root in every bucket (plans, staging, trash, journal manifests, checkpoints; see
   * core/workflow/layout.ts), set by the construct's `workRoot` prop.
   */
  WORK_ROOT: workRootSchema.default(DEFAULT_WORK_ROOT),
});
