// The CDK app: one stack with a LakeCompactor, configured from `-c config=<file>` (JSON) or the
// bundled example config; synthesizes with no AWS account and no network.
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { App, CfnOutput, Stack, type StackProps } from 'aws-cdk-lib';
import type { Construct } from 'constructs';
import { LakeCompactor, type LakeCompactorProps } from './lake-compactor.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The deployable unit: a stack holding one LakeCompactor. */
export class LakeCompactorStack extends Stack {
  public readonly compactor: LakeCompactor;

  constructor(scope: Construct, id: string, props: StackProps & { compactor: LakeCompactorProps }) {
    super(scope, id, props);
    this.compactor = new LakeCompactor(this, 'Compactor', props.compactor);
    if (this.compactor.dataBucket !== undefined) {
      // Writers need the generated name: the tables without `bucketName` live there.
      new CfnOutput(this, 'DataBucketName', {
        value: this.compactor.dataBucket.bucketName,
        description: 'Bucket created for the tables without bucketName; write their Parquet files here',
      });
    }
  }
}

/** Reads the deployment config named by the `config` context key, or the example config. */
export function loadConfig(app: App): LakeCompactorProps & { stackName?: string } {
  const file =
    (app.node.tryGetContext('config') as string | undefined) ?? path.join(root, 'lake-compactor.config.json');
  return JSON.parse(readFileSync(path.resolve(file), 'utf8')) as LakeCompactorProps & { stackName?: string };
}

const isMain =
  process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url);
if (isMain) {
  const app = new App();
  const config = loadConfig(app);
  new LakeCompactorStack(app, config.stackName ?? 'LakeCompactor', {
    compactor: config,
    env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  });
  app.synth();
}
