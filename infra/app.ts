// The CDK app: one stack with a LakeCompactor, configured from `-c config=<file>` (JSON) or the
// bundled example config; synthesizes with no AWS account and no network.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { LakeCompactor, type LakeCompactorProps } from './lake-compactor.js';
import { lakeCompactorPropsProblems } from './props-schema.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The deployable unit: a stack holding one LakeCompactor. */
export class LakeCompactorStack extends Stack {
  public readonly compactor: LakeCompactor;

  constructor(scope: Construct, id: string, props: StackProps & { compactor: LakeCompactorProps }) {
    super(scope, id, props);
    this.compactor = new LakeCompactor(this, 'Compactor', props.compactor);
    // What an operator needs after `cdk deploy`, by name (the construct defines them; a user's own app asks for them
    // the same way with `compactor.addOutputs()`).
    this.compactor.addOutputs();
  }
}

/**
 * Reads the deployment config named by the `config` context key, or the example config: LakeCompactorProps
 * as JSON plus `stackName`, validated with the construct's own schema, so a typo anywhere in the file fails
 * `cdk synth` naming the file and the key path.
 * @throws Error listing every problem of the file.
 */
export function loadConfig(app: App): LakeCompactorProps & { stackName?: string } {
  const file = path.resolve(
    (app.node.tryGetContext('config') as string | undefined) ?? path.join(root, 'lake-compactor.config.json'),
  );
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (cause) {
    throw new Error(
      `${file}: cannot read the deployment config (${String(cause)}); fix the file or the -c config=<file> path.`,
    );
  }
  const { stackName, ...props } =
    typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  const problems = [
    ...(typeof value === 'object' && value !== null && !Array.isArray(value)
      ? []
      : ['(file): must be a JSON object of LakeCompactor props (plus "stackName")']),
    ...(stackName === undefined || (typeof stackName === 'string' && STACK_NAME.test(stackName))
      ? []
      : [
          `stackName: ${JSON.stringify(stackName)} is not a CloudFormation stack name (a letter, then letters, digits and hyphens, at most 128 characters)`,
        ]),
    ...lakeCompactorPropsProblems(props),
  ];
  if (problems.length > 0) {
    throw new Error(
      `${file}: the deployment config is invalid; fix every line:\n  - ${problems.join('\n  - ')}`,
    );
  }
  return value as LakeCompactorProps & { stackName?: string };
}

/** What CloudFormation accepts as a stack name. */
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/;

const isMain =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const app = new App();
  const { stackName, ...compactor } = loadConfig(app);
  new LakeCompactorStack(app, stackName ?? 'LakeCompactor', {
    compactor,
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  app.synth();
}
