// `--stack <name>`: the CLI finds a deployment's resources through its CloudFormation stack's outputs, so an operator
// never copies a generated name (the state table's, the sweep function's) by hand. The output keys are the ones the
// stack defines (core/stack-output-keys.ts, shared with infra/app.ts); an explicit option (`--state-table`) wins
// and then nothing is read.
//
// Light to load: commands register `--stack` at start-up, so the CloudFormation SDK is imported only when a
// command that was given `--stack` runs (see test/unit/cli-startup.test.ts).

import type { DescribeStacksCommand, DescribeStacksCommandOutput } from '@aws-sdk/client-cloudformation';
import type { Command } from 'commander';
import { z } from 'zod';
import { InvalidInputError } from '../core/errors.js';
import { STACK_OUTPUT_KEYS } from '../core/stack-output-keys.js';

/**
 * The one call `--stack` makes (DescribeStacks): the SDK's CloudFormationClient satisfies it, and a test passes a
 * recorded fake, as no local CloudFormation exists.
 */
export interface CloudFormationPort {
  send(command: DescribeStacksCommand): Promise<DescribeStacksCommandOutput>;
}

/** What `--stack` needs of a command's io: the environment the SDK client is made from, or an injected client. */
export interface StackIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly aws?: { readonly cloudFormation?: CloudFormationPort };
}

/**
 * Each CLI option `--stack` can fill → the stack output holding its value and the flag that names it (for help and
 * errors). The option is commander's attribute name of the flag (`--state-table` → `stateTable`).
 */
export const STACK_OPTIONS = {
  stateTable: { output: STACK_OUTPUT_KEYS.stateTable, flag: '--state-table' },
  sweepFunction: { output: STACK_OUTPUT_KEYS.sweepFunction, flag: '--sweep-function' },
} as const;

/**
 * How an error asks for the state table: `--stack` first (no generated name to copy), then the explicit name and the
 * environment, in the order they win. One phrase, so every command asks the same way.
 */
export const NAME_THE_STATE_TABLE =
  'pass --stack <stack-name> (its StateTableName output) or --state-table <name>, or set LAKE_COMPACTOR_TABLE';

/** An option `--stack` can fill. */
export type StackOption = keyof typeof STACK_OPTIONS;

/**
 * The stack's outputs as the options they fill: each output a `--stack` option reads, when present, a non-empty
 * name (an empty or non-string value is refused, not passed on as a table or function name).
 */
const stackOptionsSchema = z.object(
  Object.fromEntries(
    Object.keys(STACK_OPTIONS).map((option) => [option, z.string().min(1).optional()]),
  ) as Record<StackOption, z.ZodOptional<z.ZodString>>,
);

/** What DescribeStacks answers, as far as `--stack` reads it. */
const describeStacksSchema = z.object({
  Stacks: z
    .array(
      z.object({
        StackName: z.string().optional(),
        StackStatus: z.string().optional(),
        Outputs: z
          .array(z.object({ OutputKey: z.string().optional(), OutputValue: z.string().optional() }))
          .optional(),
      }),
    )
    .optional(),
});

/** A stack's outputs, read once per command. */
export interface StackOutputs {
  readonly stack: string;
  /** CloudFormation's status of the stack (an output is missing while it is created, or after a failed create). */
  readonly status: string | undefined;
  /** The values of the options `--stack` fills that the stack has outputs for. */
  readonly options: Partial<Record<StackOption, string>>;
}

/** The stack `--stack` names does not exist (in the region the CLI asked). Nothing was read or changed. */
export class StackNotFoundError extends InvalidInputError {
  constructor(
    readonly stackName: string,
    region: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(
      `stack ${stackName} does not exist${region === undefined ? '' : ` in ${region}`}: check --stack (the stack name \`cdk deploy\` printed) and AWS_REGION (the region it was deployed to)`,
      [],
      options,
    );
  }
}

/**
 * The stack exists but has no output the command needs: deployed with a version of lake-compactor older than the
 * CLI's (which had no such output), or still being created. Says which output, and the two ways out.
 */
export class StackOutputMissingError extends InvalidInputError {
  constructor(
    readonly stackName: string,
    readonly output: string,
    flag: string,
    status: string | undefined,
  ) {
    super(
      `stack ${stackName}${status === undefined ? '' : ` (${status})`} has no output ${output}: deploy the stack with this version of lake-compactor, or pass ${flag} <name>`,
    );
  }
}

/**
 * Reads `stack`'s outputs with DescribeStacks and keeps those the CLI's options take.
 * @throws StackNotFoundError when CloudFormation knows no such stack; anything else the SDK throws (credentials,
 * region, access denied) is left to the CLI's environment errors.
 */
export async function readStackOutputs(
  stack: string,
  client: CloudFormationPort,
  region?: string,
): Promise<StackOutputs> {
  const { DescribeStacksCommand } = await import('@aws-sdk/client-cloudformation');
  let answer: DescribeStacksCommandOutput;
  try {
    answer = await client.send(new DescribeStacksCommand({ StackName: stack }));
  } catch (error) {
    // CloudFormation answers a missing stack with a ValidationError "Stack with id <name> does not exist".
    if (error instanceof Error && error.name === 'ValidationError' && /does not exist/i.test(error.message)) {
      throw new StackNotFoundError(stack, region, { cause: error });
    }
    throw error;
  }
  const found = describeStacksSchema.parse(answer).Stacks?.[0];
  if (found === undefined) throw new StackNotFoundError(stack, region);
  const byKey = new Map((found.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
  const parsed = stackOptionsSchema.safeParse(
    Object.fromEntries(
      Object.entries(STACK_OPTIONS).map(([option, { output }]) => [option, byKey.get(output)]),
    ),
  );
  if (!parsed.success) {
    throw new InvalidInputError(
      `stack ${stack} has outputs the CLI cannot use`,
      parsed.error.issues.map(
        (i) => `${STACK_OPTIONS[i.path[0] as StackOption]?.output ?? i.path.join('.')}: ${i.message}`,
      ),
    );
  }
  return {
    stack,
    status: found.StackStatus,
    options: Object.fromEntries(
      Object.entries(parsed.data).filter(([, value]) => value !== undefined),
    ) as Partial<Record<StackOption, string>>,
  };
}

/**
 * The value of `option` from the stack's outputs.
 * @throws StackOutputMissingError naming the stack, the output and the flag to pass instead.
 */
export function stackOptionValue(outputs: StackOutputs, option: StackOption): string {
  const value = outputs.options[option];
  if (value === undefined) {
    const { output, flag } = STACK_OPTIONS[option];
    throw new StackOutputMissingError(outputs.stack, output, flag, outputs.status);
  }
  return value;
}

/**
 * Adds `--stack <name>` to `command`: before its action runs, each of `fills` the command line left unset is taken
 * from the stack's outputs. An explicit option wins (and when every one is given, the stack is not read at all);
 * `--stack` wins over the environment's defaults (LAKE_COMPACTOR_TABLE), as the command line always does.
 */
export function addStackOption(command: Command, io: StackIo, fills: readonly StackOption[]): Command {
  const names = fills.map((f) => `${STACK_OPTIONS[f].flag} from its ${STACK_OPTIONS[f].output} output`);
  return command
    .option(
      '--stack <name>',
      `the deployed lake-compactor stack: ${names.join(', ')} (an explicit ${fills.map((f) => STACK_OPTIONS[f].flag).join(' or ')} wins)`,
    )
    .hook('preAction', async (_hooked, action) => {
      await fillFromStack(action, io, fills);
    });
}

/** Sets each of `fills` that `action`'s command line left unset from the outputs of the stack `--stack` names. */
async function fillFromStack(action: Command, io: StackIo, fills: readonly StackOption[]): Promise<void> {
  const stack = action.getOptionValue('stack') as string | undefined;
  if (stack === undefined) return;
  const unset = fills.filter((option) => action.getOptionValue(option) === undefined);
  if (unset.length === 0) return;
  const region = io.env.AWS_REGION || io.env.AWS_DEFAULT_REGION || undefined;
  const outputs = await readStackOutputs(
    stack,
    io.aws?.cloudFormation ?? (await cloudFormationFromEnv(io)),
    region,
  );
  for (const option of unset)
    action.setOptionValueWithSource(option, stackOptionValue(outputs, option), 'implied');
}

/** A CloudFormation client from the command's environment (`AWS_ENDPOINT_URL_CLOUDFORMATION`, region, keys). */
async function cloudFormationFromEnv(io: StackIo): Promise<CloudFormationPort> {
  const [{ CloudFormationClient }, { clientConfigFromEnv }] = await Promise.all([
    import('@aws-sdk/client-cloudformation'),
    import('../shared/aws-env.js'),
  ]);
  return new CloudFormationClient(clientConfigFromEnv(io.env, io.env.AWS_ENDPOINT_URL_CLOUDFORMATION));
}
