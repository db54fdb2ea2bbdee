// The test support that launches headless Chromium: a missing browser is a failure naming the package to
// install, and a launch that overruns its timeout is killed and reported instead of hanging the suite.
import { describe, expect, it } from 'vitest';
import { requireChromium, runChromium } from '../support/chromium.js';

describe('test/support/chromium', () => {
  it('fails with the apt-get command when the browser is not installed', () => {
    // Prepare
    const missing = '/nonexistent/chromium';

    // Act
    const check = () => requireChromium(missing);

    // Assess
    expect(check).toThrow(/apt-get install -y --no-install-recommends chromium/);
  });

  it('kills a launch that overruns its timeout and rejects saying so', async () => {
    // Prepare: a page that never finishes loading is not needed; 1 ms is shorter than any launch.
    const args = ['--dump-dom', 'about:blank'];

    // Act
    const launch = runChromium(args, { timeoutMs: 1 });

    // Assess
    await expect(launch).rejects.toThrow(/did not finish within 1 ms \(killed\)/);
  });
});
