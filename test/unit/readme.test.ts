// The README stays true where it can be checked mechanically: the deployment example it shows is the
// config file the repository ships (and `cdk synth` reads), key for key.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

describe('README', () => {
  it('shows the shipped lake-compactor.config.json as its deployment example', () => {
    // Prepare
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const shipped = JSON.parse(readFileSync(join(root, 'lake-compactor.config.json'), 'utf8')) as unknown;

    // Act: the JSON block that follows "the example shipped as `lake-compactor.config.json`"
    const after = readme.slice(readme.indexOf('the example shipped as `lake-compactor.config.json`'));
    const block = /```json\n([\s\S]*?)```/.exec(after)?.[1];

    // Assess
    expect(block, 'the deployment example block').toBeDefined();
    expect(JSON.parse(block as string)).toEqual(shipped);
  });
});
