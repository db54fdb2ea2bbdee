// The CLI silences the AWS SDK's Node version warning only where the SDK would print it (Node < 22), and never
// over the user's own setting of the SDK's variable.
import { describe, expect, it } from 'vitest';
import { quietSdkNodeWarning, SDK_NODE_WARNING_VARIABLE } from '../../functions/cli/node-support.js';

describe('quietSdkNodeWarning', () => {
  it.each<[string, Record<string, string>, string | undefined]>([
    ['20.20.2', {}, 'true'],
    ['v20.1.0', {}, 'true'],
    ['22.3.0', {}, undefined],
    ['24.0.0', {}, undefined],
    ['20.20.2', { [SDK_NODE_WARNING_VARIABLE]: 'false' }, 'false'],
  ])('on Node %s with %j sets the variable to %s', (version, given, expected) => {
    // Prepare
    const env: Record<string, string | undefined> = { ...given };

    // Act
    quietSdkNodeWarning(env, version);

    // Assess
    expect(env[SDK_NODE_WARNING_VARIABLE]).toBe(expected);
  });
});
