// Where a function finds its table config: a JSON file shipped in its own code (TABLES_FILE, read once at
// cold start), or the TABLES variable (older deployments, the CLI, tests); every problem names what to fix.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { InvalidInputError } from '../core/errors.js';
import { parseTableConfigs, type TableConfig } from '../core/table-config.js';

/**
 * A value known only at deploy time (the owned bucket's generated name, any CDK token) is written into the
 * table config file as `${TABLES_REF_<n>}` and set as the environment variable `TABLES_REF_<n>`. Bucket
 * names and table roots never contain `${`, so a placeholder cannot be mistaken for a literal.
 */
export const TABLES_REF_PLACEHOLDER = /\$\{(TABLES_REF_\d+)\}/g;

/** The environment variable a deploy-time value of the table config is passed in. */
export function tablesRefVariable(index: number): string {
  return `TABLES_REF_${index}`;
}

/**
 * The table configs of this function. With `TABLES_FILE` (what the construct sets: the config does not fit
 * Lambda's 4 KB environment for many tables), the file of that name in the function's code folder
 * (`LAMBDA_TASK_ROOT`, else the working directory), its `${TABLES_REF_<n>}` placeholders filled from the
 * environment. Otherwise the `TABLES` variable, as JSON.
 * @throws InvalidInputError naming the file or variable and every problem of the config.
 */
export function loadTableConfigs(env: Readonly<Record<string, string | undefined>>): TableConfig[] {
  const file = env.TABLES_FILE;
  if (file !== undefined && file !== '') {
    const location = path.resolve(env.LAMBDA_TASK_ROOT ?? process.cwd(), file);
    let text: string;
    try {
      text = readFileSync(location, 'utf8');
    } catch (cause) {
      throw new InvalidInputError(
        `The table config file ${location} (TABLES_FILE) cannot be read (${String(cause)}); the construct writes it into the function's code at synth: redeploy the stack, or set TABLES instead of TABLES_FILE`,
      );
    }
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new InvalidInputError(
        `The table config file ${location} is not valid JSON (${String(cause)}); redeploy the stack to rewrite it`,
      );
    }
    return parseTableConfigs(fillPlaceholders(value, env, location));
  }
  if (env.TABLES !== undefined && env.TABLES !== '') return parseTableConfigs(env.TABLES);
  throw new InvalidInputError(
    'No table config: set TABLES_FILE (the construct does, naming tables.json in the code) or TABLES (a JSON array of tables)',
  );
}

/** `value` with every `${TABLES_REF_<n>}` in its strings replaced by that variable's value. */
function fillPlaceholders(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  location: string,
): unknown {
  if (typeof value === 'string') {
    return value.replace(TABLES_REF_PLACEHOLDER, (_match, name: string) => {
      const resolved = env[name];
      if (resolved === undefined || resolved === '') {
        throw new InvalidInputError(
          `The table config file ${location} refers to the variable ${name}, which is not set; redeploy the stack (the construct sets it beside TABLES_FILE)`,
        );
      }
      return resolved;
    });
  }
  if (Array.isArray(value)) return value.map((item) => fillPlaceholders(item, env, location));
  if (typeof value === 'object' && value !== null) {
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [key, fillPlaceholders(item, env, location)]),
    );
  }
  return value;
}
