// Parses a Lambda's environment once, at cold start, into a typed and validated config object;
// a missing or malformed variable fails the cold start with a message that names it.
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';
import { type MemoryBudget, memoryBudget } from '../core/memory-budget.js';
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

/** What Lambda tells a function about itself: its memory size (MB) and name. */
const lambdaFunctionSchema = z.object({
  AWS_LAMBDA_FUNCTION_MEMORY_SIZE: z.coerce.number().int().min(128).optional(),
  AWS_LAMBDA_FUNCTION_NAME: z.string().min(1).optional(),
});

/**
 * The memory budget of this Lambda function (see core/memory-budget.ts), from the memory size Lambda sets in its
 * environment, read once per cold start; undefined outside Lambda (a test importing a handler), where core assumes
 * its default. Every decoder of untrusted metadata checks its limits against it, so a table too large for this
 * function fails by name, saying which function to give more memory, instead of the runtime killing it.
 */
export function lambdaMemoryBudget(
  env: Readonly<Record<string, string | undefined>>,
): MemoryBudget | undefined {
  const parsed = parseEnv(lambdaFunctionSchema, env as NodeJS.ProcessEnv);
  const mb = parsed.AWS_LAMBDA_FUNCTION_MEMORY_SIZE;
  if (mb === undefined) return undefined;
  const name = parsed.AWS_LAMBDA_FUNCTION_NAME ?? 'this Lambda function';
  return memoryBudget(
    mb,
    `raise the memory of Lambda function ${name} (now ${mb} MB; the LakeCompactor construct's memory props, see docs/configuration.md)`,
  );
}
