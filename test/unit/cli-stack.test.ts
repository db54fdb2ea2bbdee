// `--stack <name>` and `lake-compactor reconcile`: the CLI finds a deployment's resources through its stack's outputs.
//
// FAKES, and why: no local CloudFormation or Lambda server exists. DescribeStacks is answered by a fake whose outputs
// are read FROM THE SYNTHESIZED TEMPLATE's `Outputs` section (each output's logical id with a made-up physical value,
// test/support/fake-cloudformation.ts), so these tests prove the keys the CLI asks for are the keys the stack defines.
// The sweep function is a recorded fake Lambda client, injected through the CLI io (`aws.lambda`), as is the
// CloudFormation client (`aws.cloudFormation`). The state table `--stack` finds is read for real against DynamoDB
// Local in test/integration/cli-history.test.ts.
import { readFileSync } from 'node:fs';
import type { InvokeCommand, InvokeCommandOutput } from '@aws-sdk/client-lambda';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { Command } from 'commander';
import { beforeAll, describe, expect, it } from 'vitest';
import { failureContext } from '../../functions/cli/errors.js';
import { buildProgram, type CliIo, run } from '../../functions/cli/index.js';
import type { LambdaPort } from '../../functions/cli/reconcile-run.js';
import {
  addStackOption,
  STACK_OPTIONS,
  type StackIo,
  StackNotFoundError,
  StackOutputMissingError,
} from '../../functions/cli/stack-outputs.js';
import { sweepInputSchema } from '../../functions/core/profiler/sweep-input.js';
import { STACK_OUTPUT_KEYS } from '../../functions/core/stack-output-keys.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { captureIo } from '../support/cli-io.js';
import {
  fakeCloudFormation,
  fakePhysicalValue,
  type TemplateWithOutputs,
} from '../support/fake-cloudformation.js';

const STACK = 'LakeCompactorProd';

let template: TemplateWithOutputs;

beforeAll(() => {
  // Synthesized as the infra tests do (no bundling, no account), with one table in a bucket of its own.
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'Test', {
    compactor: {
      tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
    },
  });
  template = Template.fromStack(stack).toJSON() as TemplateWithOutputs;
}, 120_000);

/** A command with `--state-table` and `--stack` whose action records the options it was run with. */
function probe(io: StackIo): { command: Command; seen: { stateTable?: string }[] } {
  const seen: { stateTable?: string }[] = [];
  const command = new Command('probe').exitOverride().option('--state-table <name>');
  addStackOption(command, io, ['stateTable']).action((opts: { stateTable?: string }) => {
    seen.push(opts);
  });
  return { command, seen };
}

/** The error a parse ended with, or undefined. */
async function parseError(command: Command, args: readonly string[]): Promise<unknown> {
  try {
    await command.parseAsync([...args], { from: 'user' });
    return undefined;
  } catch (error) {
    return error;
  }
}

/**
 * A RECORDED FAKE Lambda client: records each Invoke and answers with `answer` (its Payload plain bytes: the CLI
 * decodes it as bytes, never through the SDK's blob helpers).
 */
function recordedLambda(
  answer: Omit<InvokeCommandOutput, '$metadata' | 'Payload'> & { Payload?: Uint8Array },
): LambdaPort & {
  readonly requests: InvokeCommand['input'][];
} {
  const requests: InvokeCommand['input'][] = [];
  return {
    requests,
    async send(command) {
      requests.push(command.input);
      return { $metadata: {}, ...answer } as InvokeCommandOutput;
    },
  };
}

const encode = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const decode = (bytes: Uint8Array | undefined) => JSON.parse(new TextDecoder().decode(bytes)) as unknown;

/** A captured CLI io whose AWS clients are the given fakes. */
function ioWith(aws: CliIo['aws']) {
  return { ...captureIo({ env: { AWS_REGION: 'eu-west-1' } }), aws };
}

describe('the stack outputs the CLI reads are the ones the stack defines', () => {
  it("every output a --stack option reads, and every shared key but the data bucket's, is an output of the synthesized template", () => {
    // Act
    const defined = Object.keys(template.Outputs ?? {}).sort();
    const read = Object.values(STACK_OPTIONS).map((o) => o.output);

    // Assess
    expect(defined).toEqual(
      Object.values(STACK_OUTPUT_KEYS)
        .filter((k) => k !== STACK_OUTPUT_KEYS.dataBucket)
        .sort(),
    );
    expect(defined).toEqual(expect.arrayContaining(read));
  });

  it('every command that takes --state-table also takes --stack (status, history, report and quarantine among them)', () => {
    // Prepare
    const program = buildProgram(captureIo());

    // Act
    const withStateTable = program.commands.filter((c) => c.options.some((o) => o.long === '--state-table'));
    const without = withStateTable.filter((c) => !c.options.some((o) => o.long === '--stack'));

    // Assess
    expect(withStateTable.map((c) => c.name())).toEqual(
      expect.arrayContaining(['status', 'history', 'report', 'quarantine']),
    );
    expect(without.map((c) => c.name())).toEqual([]);
  });
});

describe('--stack fills --state-table', () => {
  it("takes the state table from the stack's StateTableName output", async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation(STACK, template);
    const { command, seen } = probe({ env: {}, aws: { cloudFormation } });

    // Act
    await command.parseAsync(['--stack', STACK], { from: 'user' });

    // Assess
    expect(cloudFormation.requests).toEqual([STACK]);
    expect(seen[0]?.stateTable).toBe(fakePhysicalValue(STACK, 'StateTableName'));
  });

  it('an explicit --state-table wins, and the stack is then not read at all', async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation(STACK, template);
    const { command, seen } = probe({ env: {}, aws: { cloudFormation } });

    // Act
    await command.parseAsync(['--stack', STACK, '--state-table', 'Mine'], { from: 'user' });

    // Assess
    expect(seen[0]?.stateTable).toBe('Mine');
    expect(cloudFormation.requests).toEqual([]);
  });

  it('without --stack nothing is read and the option stays unset (the environment default applies later)', async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation(STACK, template);
    const { command, seen } = probe({ env: { LAKE_COMPACTOR_TABLE: 'FromEnv' }, aws: { cloudFormation } });

    // Act
    await command.parseAsync([], { from: 'user' });

    // Assess
    expect(seen[0]?.stateTable).toBeUndefined();
    expect(cloudFormation.requests).toEqual([]);
  });

  it('a stack without the output (deployed by an older version) is refused naming the stack, the output and what to do', async () => {
    // Prepare: a stack whose template has no outputs but the data bucket's.
    const old = fakeCloudFormation(STACK, { Outputs: { DataBucketName: { Value: 'x' } } });
    const { command, seen } = probe({ env: {}, aws: { cloudFormation: old } });

    // Act
    const error = await parseError(command, ['--stack', STACK]);

    // Assess
    expect(error).toBeInstanceOf(StackOutputMissingError);
    expect((error as Error).message).toBe(
      `stack ${STACK} (CREATE_COMPLETE) has no output StateTableName: deploy the stack with this version of lake-compactor, or pass --state-table <name>`,
    );
    expect(seen).toEqual([]);
  });

  it('a stack that does not exist is refused naming it and the region asked', async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation(STACK, template);
    const { command } = probe({ env: { AWS_REGION: 'eu-west-1' }, aws: { cloudFormation } });

    // Act
    const error = await parseError(command, ['--stack', 'Typo']);

    // Assess
    expect(error).toBeInstanceOf(StackNotFoundError);
    expect((error as Error).message).toContain('stack Typo does not exist in eu-west-1');
  });

  it("an error's context never names LAKE_COMPACTOR_TABLE's table when --stack chose the table instead", () => {
    // Prepare
    const env = { LAKE_COMPACTOR_TABLE: 'FromEnv' };

    // Act
    const withStack = failureContext(['status', '--stack', STACK], env);
    const withBoth = failureContext(['status', '--stack', STACK, '--state-table', 'Mine'], env);
    const withNeither = failureContext(['status'], env);

    // Assess
    expect(withStack.stateTable).toBeUndefined();
    expect(withBoth.stateTable).toBe('Mine');
    expect(withNeither.stateTable).toBe('FromEnv');
  });

  it('through the CLI, a missing output exits 1 with the message', async () => {
    // Prepare
    const io = ioWith({ cloudFormation: fakeCloudFormation(STACK, { Outputs: {} }) });

    // Act
    const code = await run(['status', '--stack', STACK, '--table', 'events'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toContain(`has no output StateTableName`);
  });
});

describe('lake-compactor reconcile', () => {
  const report = { mode: 'reconcile', reports: [], tableFailures: [], notReached: [] };

  it("invokes the stack's sweep function with events/sweep-reconcile.json's input, valid for the sweep's schema, and prints the result", async () => {
    // Prepare
    const example = JSON.parse(
      readFileSync(new URL('../../events/sweep-reconcile.json', import.meta.url), 'utf8'),
    ) as { table: string };
    const lambda = recordedLambda({ StatusCode: 200, Payload: encode(report) });
    const io = ioWith({ cloudFormation: fakeCloudFormation(STACK, template), lambda });

    // Act
    const code = await run(['reconcile', '--stack', STACK, '--table', example.table], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(lambda.requests).toHaveLength(1);
    const request = lambda.requests[0];
    expect(request?.FunctionName).toBe(fakePhysicalValue(STACK, 'SweepFunctionName'));
    expect(request?.InvocationType).toBe('RequestResponse');
    const payload = decode(request?.Payload as Uint8Array);
    expect(payload).toEqual(example);
    expect(sweepInputSchema.safeParse(payload).success).toBe(true);
    expect(JSON.parse(io.stdout.join('\n'))).toEqual(report);
  });

  it('without --table reconciles every table: the same input without the table', async () => {
    // Prepare
    const lambda = recordedLambda({ StatusCode: 200, Payload: encode(report) });
    const io = ioWith({ cloudFormation: fakeCloudFormation(STACK, template), lambda });

    // Act
    const code = await run(['reconcile', '--stack', STACK], io);

    // Assess
    expect(code).toBe(0);
    const payload = decode(lambda.requests[0]?.Payload as Uint8Array);
    expect(payload).toEqual({ mode: 'reconcile' });
    expect(sweepInputSchema.safeParse(payload).success).toBe(true);
  });

  it('an explicit --sweep-function wins over --stack, which is then not read', async () => {
    // Prepare
    const cloudFormation = fakeCloudFormation(STACK, template);
    const lambda = recordedLambda({ StatusCode: 200, Payload: encode(report) });
    const io = ioWith({ cloudFormation, lambda });

    // Act
    const code = await run(['reconcile', '--stack', STACK, '--sweep-function', 'my-sweep'], io);

    // Assess
    expect(code).toBe(0);
    expect(lambda.requests[0]?.FunctionName).toBe('my-sweep');
    expect(cloudFormation.requests).toEqual([]);
  });

  it("a FunctionError exits 1 with the function's own error message", async () => {
    // Prepare
    const lambda = recordedLambda({
      StatusCode: 200,
      FunctionError: 'Unhandled',
      Payload: encode({
        errorType: 'InvalidInputError',
        errorMessage: 'Unknown table "nope"; configured tables: events',
        trace: [],
      }),
    });
    const io = ioWith({ cloudFormation: fakeCloudFormation(STACK, template), lambda });

    // Act
    const code = await run(['reconcile', '--stack', STACK, '--table', 'nope'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toContain(
      `the sweep function ${fakePhysicalValue(STACK, 'SweepFunctionName')} failed: InvalidInputError: Unknown table "nope"; configured tables: events`,
    );
    expect(io.stdout).toEqual([]);
  });

  it('with neither --stack nor --sweep-function, exits 2 saying what to pass', async () => {
    // Prepare
    const io = ioWith({});

    // Act
    const code = await run(['reconcile'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain('pass --stack <stack-name>');
  });
});
