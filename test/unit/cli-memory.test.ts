// The CLI's memory budget: --memory-mb (anywhere on the line) when given, else this machine's memory capped by
// Node's heap limit; a value below 128 MB is a usage error (exit 2) before anything is read.
import { totalmem } from 'node:os';
import { getHeapStatistics } from 'node:v8';
import { describe, expect, it } from 'vitest';
import { cliMemoryBudget } from '../../functions/cli/args.js';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';

describe('the CLI memory budget', () => {
  it('is --memory-mb when given, before or after the command, and says to raise it', () => {
    // Act
    const after = cliMemoryBudget(['plan', 's3://b/t', '--memory-mb', '768']);
    const before = cliMemoryBudget(['--memory-mb=2048', 'vacuum', 's3://b/t']);

    // Assess
    expect(after.memoryMb).toBe(768);
    expect(after.advice).toBe('run it with a larger --memory-mb (now 768) on a machine that has the memory');
    expect(before.memoryMb).toBe(2048);
  });

  it("is otherwise this machine's memory, never more than Node's heap limit", () => {
    // Act
    const budget = cliMemoryBudget(['plan', 's3://b/t']);

    // Assess
    const expected = Math.floor(Math.min(totalmem(), getHeapStatistics().heap_size_limit) / (1024 * 1024));
    expect(budget.memoryMb).toBe(expected);
    expect(budget.advice).toMatch(/--max-old-space-size/);
  });

  it('refuses --memory-mb below 128 as a usage error', async () => {
    // Prepare
    const io = captureIo();

    // Act
    const code = await run(['profile', '/nowhere', '--memory-mb', '64'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(
      /--memory-mb <n>' argument '64' is invalid\. expected a whole number of MB, at least 128/,
    );
  });
});
