// Runs before every test file: CDK apps synthesize into one temporary folder per file, removed
// afterwards, instead of leaving a new `cdk.outXXXX` folder in the system temp dir per App.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const outdir = mkdtempSync(join(tmpdir(), 'lc-cdk-out-'));
process.env.CDK_OUTDIR = outdir;

afterAll(() => {
  rmSync(outdir, { recursive: true, force: true });
});
