// The JSON deployment config `cdk synth` reads is checked with the construct's own schema: a typo anywhere in
// the file fails synthesis naming the file and the key path, before any resource is built.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { App } from 'aws-cdk-lib';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../infra/app.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const scratch = mkdtempSync(path.join(tmpdir(), 'config-file-'));

afterAll(() => {
  rmSync(scratch, { recursive: true, force: true });
});

/** Writes `config` as a JSON file and returns its path. */
function configFile(name: string, config: unknown): string {
  const file = path.join(scratch, name);
  writeFileSync(file, JSON.stringify(config, null, 2));
  return file;
}

/** The error `loadConfig` throws for the file ('' when it loads). */
function loadError(file: string): string {
  try {
    loadConfig(new App({ context: { config: file } }));
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
  return '';
}

const TABLE = { name: 'events', bucketName: 'my-data-lake', prefix: 'events/', partitionColumns: ['date'] };

describe('the deployment config file', () => {
  it('loads the example config, stack name included', () => {
    // Prepare
    const file = path.join(root, 'lake-compactor.config.json');
    // Act
    const config = loadConfig(new App({ context: { config: file } }));
    // Assess
    expect(config.stackName).toBe('LakeCompactor');
    expect(config.tables.map((t) => t.name)).toEqual(['events']);
  });

  it('fails naming the file and every bad key path, the `trigger` typo among them', () => {
    // Prepare
    const file = configFile('typos.json', {
      stackName: 'LakeCompactor',
      tables: [{ ...TABLE, partitionColumn: ['date'] }],
      trigger: { dryRun: true },
      sweep: { schedule: 'rate(5 minute)' },
    });
    // Act
    const message = loadError(file);
    // Assess
    expect(message).toContain(`${file}: the deployment config is invalid; fix every line:`);
    expect(message).toMatch(/- trigger: not a LakeCompactor prop; did you mean `triggers`\?/);
    expect(message).toMatch(
      /- tables\.0\.partitionColumn: not a key of tables\.0; did you mean `partitionColumns`\?/,
    );
    expect(message).toMatch(/- sweep\.schedule: rate\(5 minute\) must say "minutes"/);
  });

  it('fails on a stack name CloudFormation refuses and on a file that is not JSON', () => {
    // Prepare
    const badName = configFile('bad-name.json', { stackName: 'lake_compactor', tables: [TABLE] });
    const notJson = path.join(scratch, 'not-json.json');
    writeFileSync(notJson, '{ "tables": [ ');
    // Act / Assess
    expect(loadError(badName)).toMatch(/stackName: "lake_compactor" is not a CloudFormation stack name/);
    expect(loadError(notJson)).toMatch(/not-json\.json: cannot read the deployment config/);
  });

  it('makes the CDK app (what `cdk synth` runs) exit with the problems of a config with a typo', async () => {
    // Prepare
    const file = configFile('app-typo.json', { tables: [TABLE], trigger: { dryRun: true } });
    const outdir = mkdtempSync(path.join(scratch, 'cdk.out-'));
    // Act
    const run = promisify(execFile)(path.join(root, 'node_modules', '.bin', 'tsx'), ['infra/app.ts'], {
      cwd: root,
      env: { ...process.env, CDK_CONTEXT_JSON: JSON.stringify({ config: file }), CDK_OUTDIR: outdir },
    });
    // Assess
    await expect(run).rejects.toMatchObject({
      stderr: expect.stringMatching(/trigger: not a LakeCompactor prop; did you mean `triggers`\?/),
    });
  });
});
