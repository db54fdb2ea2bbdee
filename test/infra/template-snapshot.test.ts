// Whole-template snapshots of the deployable stack: the example config (what `cdk deploy` uses) and a
// config with the construct-owned data bucket. Any change to any resource shows up in review as a diff of
// the committed snapshot; accept an intended one with
// `npx vitest run test/infra/template-snapshot.test.ts --update`.
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { LakeCompactorStack, loadConfig } from '../../infra/app.js';
import type { LakeCompactorProps } from '../../infra/lake-compactor.js';

const EXAMPLE_CONFIG = new URL('../../lake-compactor.config.json', import.meta.url);

/** The template as CloudFormation receives it, with asset hashes (they follow the bundled code) masked. */
function templateOf(props: LakeCompactorProps): string {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'LakeCompactor', { compactor: props });
  const json = Template.fromStack(stack).toJSON();
  return `${JSON.stringify(
    json,
    (_key, value: unknown) =>
      typeof value === 'string' ? value.replace(/\b[0-9a-f]{64}\b/g, '<asset-hash>') : value,
    2,
  )}\n`;
}

describe('LakeCompactor template', () => {
  it('synthesizes the example deployment config to exactly the reviewed template', async () => {
    // Prepare: read as `cdk synth` does (validated; the stack name is not a construct prop)
    const { stackName: _stackName, ...config } = loadConfig(
      new App({ context: { config: fileURLToPath(EXAMPLE_CONFIG) } }),
    );
    // Act
    const template = templateOf(config);
    // Assess
    expect(template).toContain('"AWS::StepFunctions::StateMachine"');
    expect(template).not.toContain('"AWS::S3::Bucket"');
    await expect(template).toMatchFileSnapshot('__snapshots__/example-config.template.json');
  });

  it('synthesizes a deployment with the construct-owned data bucket to exactly the reviewed template', async () => {
    // Prepare
    const props: LakeCompactorProps = {
      tables: [
        {
          name: 'events',
          prefix: 'events/',
          partitionColumns: ['date'],
          dateColumn: 'date',
          dateFormat: 'yyyy-MM-dd',
        },
        { name: 'orders', bucketName: 'orders-lake', prefix: 'orders/', partitionColumns: ['day'] },
      ],
    };
    // Act
    const template = templateOf(props);
    // Assess
    expect(template).toContain('"AWS::S3::Bucket"');
    await expect(template).toMatchFileSnapshot('__snapshots__/owned-bucket.template.json');
  });
});
