// The format registry is the single source of which table formats exist: the config schema, the construct's
// props and the CLI's --format accept exactly its formats and refuse any other with its one message, and every
// format folder exporting a TableFormat is registered under its own name (a folder + a line = a format); a folder
// without one yet (a reader being built) stays refused by name.
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { formatOption } from '../../../../functions/cli/args.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import {
  DEFAULT_TABLE_FORMAT,
  TABLE_FORMAT_NAMES,
  TABLE_FORMATS,
  TableFormatNotSupportedError,
  tableFormat,
  unsupportedFormatMessage,
} from '../../../../functions/core/formats/index.js';
import type { TableFormat } from '../../../../functions/core/formats/table-format.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { lakeCompactorPropsProblems } from '../../../../infra/props-schema.js';

const NOT_IMPLEMENTED = ['orc', 'Parquet', 'Delta', 'Iceberg', 'Hudi'];

/**
 * The settings a format requires of every table (a Delta table declares how its commits are coordinated, and none
 * is assumed): given with the format, so what is tested is that the format's name is accepted.
 */
const REQUIRED_SETTINGS: Readonly<Record<string, Record<string, unknown>>> = {
  delta: { deltaLogStore: { type: 's3-conditional' } },
  hudi: { hudiLock: { provider: 'storage' }, hudiIndexType: 'BLOOM' },
};

function configIssues(format: string): readonly string[] {
  try {
    parseTableConfigs([{ name: 't', bucket: 'lake', prefix: 't', format, ...REQUIRED_SETTINGS[format] }]);
    return [];
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
}

function propsProblems(format: string): string[] {
  return lakeCompactorPropsProblems({
    tables: [{ name: 't', bucketName: 'lake', prefix: 't/', format, ...REQUIRED_SETTINGS[format] }],
  });
}

function cliFormat(value: string): unknown {
  const parse = formatOption().parseArg as (value: string, previous: unknown) => unknown;
  return parse(value, undefined);
}

function isTableFormat(value: unknown): value is TableFormat {
  return typeof value === 'object' && value !== null && 'snapshot' in value && 'commit' in value;
}

describe('the table format registry', () => {
  it('is exactly what the config, the construct props and the CLI accept', () => {
    // Prepare
    const names = [...TABLE_FORMAT_NAMES];
    // Act
    const accepted = names.map((name) => ({
      config: configIssues(name),
      props: propsProblems(name),
      cli: cliFormat(name),
    }));
    // Assess
    expect(names).toContain(DEFAULT_TABLE_FORMAT);
    expect(accepted).toEqual(names.map((name) => ({ config: [], props: [], cli: name })));
  });

  it('refuses any other format in the config, the construct props and the CLI with the one message', () => {
    for (const format of NOT_IMPLEMENTED) {
      // Prepare
      const message = unsupportedFormatMessage(format);
      // Act
      const config = configIssues(format);
      const props = propsProblems(format);
      const cli = () => cliFormat(format);
      // Assess
      expect(config).toEqual([`0.format: ${message}`]);
      expect(props).toEqual([`tables.0.format: ${message}`]);
      expect(cli).toThrow(message);
      expect(() => tableFormat(format)).toThrow(TableFormatNotSupportedError);
    }
  });

  it('names every implemented format, and what to do, in the refusal message', () => {
    // Act
    const message = unsupportedFormatMessage('orc');
    // Assess
    expect(message).toMatch(/^table format "orc" is not supported: lake-compactor supports /);
    for (const format of TABLE_FORMATS.values())
      expect(message).toContain(`"${format.name}" (${format.title})`);
    expect(message).toMatch(/Remove the table from the configuration/);
  });

  it('accepts Hudi, which every step recognises by its .hoodie/ folder, only with its lock and index type declared', () => {
    // Act
    const issues = (() => {
      try {
        parseTableConfigs([{ name: 't', bucket: 'lake', prefix: 't', format: 'hudi' }]);
        return [];
      } catch (err) {
        if (err instanceof InvalidInputError) return err.issues;
        throw err;
      }
    })();
    // Assess
    expect(issues).toEqual([
      expect.stringMatching(/^0\.hudiLock: is required for a Hudi table: /),
      expect.stringMatching(/^0\.hudiIndexType: is required for a Hudi table: /),
    ]);
    expect(cliFormat('hudi')).toBe('hudi');
  });

  it('registers every format folder that exports a TableFormat under its own name, and refuses a folder still in progress', async () => {
    // Prepare
    const root = new URL('../../../../functions/core/formats/', import.meta.url);
    const folders = readdirSync(root, { withFileTypes: true }).filter((e) => e.isDirectory());
    // Act
    const found: TableFormat[] = [];
    const inProgress: string[] = [];
    for (const folder of folders) {
      const module = (await import(new URL(`${folder.name}/index.ts`, root).href)) as Record<string, unknown>;
      const formats = Object.values(module).filter(isTableFormat);
      expect(formats.length, `folder ${folder.name} exports more than one TableFormat`).toBeLessThanOrEqual(
        1,
      );
      if (formats.length === 0) inProgress.push(folder.name);
      found.push(...formats);
    }
    // Assess: each exported format registered as itself, nothing registered without a folder, and a folder that
    // does not export a format yet (a format being built) is refused under its name
    for (const format of found) expect(TABLE_FORMATS.get(format.name)).toBe(format);
    expect(TABLE_FORMATS.size).toBe(found.length);
    for (const name of inProgress) expect(() => tableFormat(name)).toThrow(TableFormatNotSupportedError);
  });
});
