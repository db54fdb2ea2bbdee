// The local cloud's function runner loads each function's module as its own instance, with its environment during
// the import (its cold start): a second runner in the same process — a second local cloud, on other endpoints —
// must cold-start its functions again, not reuse the first runner's modules bound to the first one's environment.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FunctionRunner, type LocalFunction } from '../../../infra/local/functions.js';

const folder = mkdtempSync(join(tmpdir(), 'function-runner-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

/** A handler that answers with the endpoint its module read at import, as the project's handlers parse env once. */
const entry = join(folder, 'endpoint-handler.mjs');
writeFileSync(
  entry,
  'const endpoint = process.env.PROBE_ENDPOINT;\nexport const handler = async () => endpoint;\n',
);

function runnerOn(endpoint: string): FunctionRunner {
  const fn: LocalFunction = {
    logicalId: 'ProbeFunction',
    name: 'probe',
    arn: 'arn:aws:lambda:us-east-1:111122223333:function:probe',
    exportName: 'handler',
    timeoutSeconds: 10,
    memoryMb: 128,
    env: { PROBE_ENDPOINT: endpoint },
    source: {},
  };
  return new FunctionRunner(new Map([[fn.logicalId, fn]]), { entries: { ProbeFunction: entry } });
}

describe('FunctionRunner', () => {
  it("cold-starts a function again in a second runner, with that runner's environment", async () => {
    // Prepare
    const first = runnerOn('http://127.0.0.1:4001');
    const second = runnerOn('http://127.0.0.1:4002');

    // Act
    const fromFirst = await first.invoke('ProbeFunction', {});
    const fromSecond = await second.invoke('ProbeFunction', {});
    const firstAgain = await first.invoke('ProbeFunction', {});

    // Assess: each runner's function read its own environment once; the first keeps its warm instance.
    expect(fromFirst).toBe('http://127.0.0.1:4001');
    expect(fromSecond).toBe('http://127.0.0.1:4002');
    expect(firstAgain).toBe('http://127.0.0.1:4001');
  });
});
