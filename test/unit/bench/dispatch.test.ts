// `npm run bench -- --help` prints the usage and runs nothing: a whole benchmark run takes the machine for many
// minutes, and asking how to call it must not start one. Read from the dispatcher's decision, no suite loaded.
import { describe, expect, it } from 'vitest';
import { benchCommand, SUITES } from '../../bench/dispatch.js';

describe('benchCommand', () => {
  it('answers --help and -h with the usage of every suite, and runs none', () => {
    // Act
    const long = benchCommand(['--help']);
    const short = benchCommand(['-h']);

    // Assess
    expect(long.kind).toBe('help');
    expect(short).toEqual(long);
    const text = long.kind === 'help' ? long.text : '';
    expect(text).toMatch(/^usage: npm run bench -- /);
    for (const name of Object.keys(SUITES)) expect(text).toContain(`\n  ${name} [--`);
  });

  it('answers a suite named with --help with that suite’s usage only', () => {
    // Act
    const command = benchCommand(['hudi', '--help']);

    // Assess
    expect(command.kind).toBe('help');
    const text = command.kind === 'help' ? command.text : '';
    expect(text).toContain('\n  hudi [--scale 1]');
    expect(text).not.toContain('\n  rewrite ');
  });

  it('runs every suite when none is named, and the named ones with their flags otherwise', () => {
    // Act
    const all = benchCommand([]);
    const named = benchCommand(['hudi', '--only', 'mor', '--files', '20']);

    // Assess
    expect(all).toEqual({ kind: 'run', suites: Object.keys(SUITES), flags: [] });
    expect(named).toEqual({ kind: 'run', suites: ['hudi'], flags: ['--only', 'mor', '--files', '20'] });
  });

  it('refuses an unknown suite by name, listing the known ones', () => {
    // Act / Assess
    expect(() => benchCommand(['hudl', '--help'])).toThrow(
      /Unknown benchmark suite\(s\) hudl; known: rewrite, /,
    );
  });
});
