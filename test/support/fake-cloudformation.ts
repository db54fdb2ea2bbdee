// A FAKE CloudFormation for `--stack`: no local CloudFormation server exists, so DescribeStacks is answered from a
// synthesized template's `Outputs` section. Each output the template defines is returned under its logical id (the
// output key CloudFormation reports) with a made-up physical value, or the one a test maps it to (a DynamoDB Local
// table's name): the keys the CLI finds are exactly the keys the stack defines, which is what a test of `--stack`
// must prove. Every request is recorded, so a test can say whether the stack was read at all.
import { DescribeStacksCommand, type DescribeStacksCommandOutput } from '@aws-sdk/client-cloudformation';
import type { CloudFormationPort } from '../../functions/cli/stack-outputs.js';

/** A synthesized template, as far as this fake reads it. */
export interface TemplateWithOutputs {
  readonly Outputs?: Readonly<Record<string, { readonly Value: unknown }>>;
}

export interface FakeCloudFormation extends CloudFormationPort {
  /** The StackName of every DescribeStacks request, in order. */
  readonly requests: string[];
}

/** The made-up physical value of output `key` of `stack` (what a deployed stack would report). */
export function fakePhysicalValue(stack: string, key: string): string {
  return `${stack}-${key}-FAKE0123`;
}

/**
 * A fake answering DescribeStacks for `stack` with the outputs of `template`; each value is `values[key]`, else
 * {@link fakePhysicalValue}. Another stack name fails as CloudFormation does (ValidationError "does not exist").
 */
export function fakeCloudFormation(
  stack: string,
  template: TemplateWithOutputs,
  values: Readonly<Record<string, string>> = {},
  status = 'CREATE_COMPLETE',
): FakeCloudFormation {
  const requests: string[] = [];
  return {
    requests,
    async send(command: DescribeStacksCommand): Promise<DescribeStacksCommandOutput> {
      if (!(command instanceof DescribeStacksCommand))
        throw new Error('the fake answers DescribeStacks only');
      const name = command.input.StackName ?? '';
      requests.push(name);
      if (name !== stack) {
        throw Object.assign(new Error(`Stack with id ${name} does not exist`), { name: 'ValidationError' });
      }
      return {
        $metadata: {},
        Stacks: [
          {
            StackName: stack,
            StackStatus: status,
            CreationTime: new Date(0),
            Outputs: Object.keys(template.Outputs ?? {}).map((key) => ({
              OutputKey: key,
              OutputValue: values[key] ?? fakePhysicalValue(stack, key),
            })),
          },
        ],
      } as DescribeStacksCommandOutput;
    },
  };
}
