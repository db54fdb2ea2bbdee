// The test support that launches headless Chromium: a missing browser is a failure naming the package to
// install (or, outside CI, a skip with a one-line notice), and an overrunning launch is killed and reported.
import { describe, expect, it } from 'vitest';
import { browserTestsEnabled, requireChromium, runChromium } from '../support/chromium.js';

const browser = browserTestsEnabled();

describe('test/support/chromium', () => {
  it('fails with the apt-get command when the browser is not installed', () => {
    // Prepare
    const missing = '/nonexistent/chromium';

    // Act
    const check = () => requireChromium(missing);

    // Assess
    expect(check).toThrow(/apt-get install -y --no-install-recommends chromium/);
  });

  it.skipIf(!browser)('kills a launch that overruns its timeout and rejects saying so', async () => {
    // Prepare: a page that never finishes loading is not needed; 1 ms is shorter than any launch.
    const args = ['--dump-dom', 'about:blank'];

    // Act
    const launch = runChromium(args, { timeoutMs: 1 });

    // Assess
    await expect(launch).rejects.toThrow(/did not finish within 1 ms \(killed\)/);
  });
});

describe('browserTestsEnabled', () => {
  const missing = '/nonexistent/chromium';

  it('skips the browser tests outside CI with one notice naming the install command and CHROMIUM_PATH', () => {
    // Prepare
    const lines: string[] = [];

    // Act
    const enabled = browserTestsEnabled({ path: missing, env: {}, warn: (l) => lines.push(l) });

    // Assess
    expect(enabled).toBe(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain('\n');
    expect(lines[0]).toContain(missing);
    expect(lines[0]).toMatch(/apt-get install -y --no-install-recommends chromium/);
    expect(lines[0]).toContain('CHROMIUM_PATH');
  });

  it('runs them in CI without the browser, so they fail with the install hint instead of passing unseen', () => {
    // Prepare
    const lines: string[] = [];

    // Act
    const enabled = ['true', 'TRUE', '1'].map((CI) =>
      browserTestsEnabled({ path: missing, env: { CI }, warn: (l) => lines.push(l) }),
    );

    // Assess
    expect(enabled).toEqual([true, true, true]);
    expect(lines).toEqual([]);
  });

  it('runs them without a notice when the browser is installed, in CI or not', () => {
    // Prepare: any existing executable stands in for the browser.
    const lines: string[] = [];
    const installed = process.execPath;

    // Act
    const enabled = [{}, { CI: 'true' }, { CI: 'false' }].map((env) =>
      browserTestsEnabled({ path: installed, env, warn: (l) => lines.push(l) }),
    );

    // Assess
    expect(enabled).toEqual([true, true, true]);
    expect(lines).toEqual([]);
  });

  it('does not count CI=false or an empty CI as CI', () => {
    // Prepare
    const lines: string[] = [];

    // Act
    const enabled = ['false', '0', ''].map((CI) =>
      browserTestsEnabled({ path: missing, env: { CI }, warn: (l) => lines.push(l) }),
    );

    // Assess
    expect(enabled).toEqual([false, false, false]);
    expect(lines).toHaveLength(3);
  });
});
