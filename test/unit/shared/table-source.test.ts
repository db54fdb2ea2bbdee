// The functions read their table config from the file their code ships (TABLES_FILE in LAMBDA_TASK_ROOT),
// with deploy-time values filled from TABLES_REF_<n>, or from the TABLES variable; every failure says what to do.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { loadTableConfigs } from '../../../functions/shared/table-source.js';

const TABLES = [
  { name: 'events', bucket: `\${TABLES_REF_0}`, prefix: 'events/', partitionColumns: ['date'] },
  { name: 'orders', bucket: 'lake', prefix: 'orders/', policy: { quietMinutes: 5 } },
];

describe('loadTableConfigs', () => {
  let codeRoot: string;

  beforeEach(() => {
    codeRoot = mkdtempSync(path.join(tmpdir(), 'table-source-'));
  });

  afterEach(() => {
    rmSync(codeRoot, { recursive: true, force: true });
  });

  it('reads TABLES_FILE from the code folder and fills deploy-time values from TABLES_REF_<n>', () => {
    // Prepare
    writeFileSync(path.join(codeRoot, 'tables.json'), JSON.stringify(TABLES));
    const env = { TABLES_FILE: 'tables.json', LAMBDA_TASK_ROOT: codeRoot, TABLES_REF_0: 'owned-1a2b3c' };
    // Act
    const tables = loadTableConfigs(env);
    // Assess: what the same config in the TABLES variable (the old way) parses to
    const viaVariable = JSON.stringify(TABLES).replace(`\${TABLES_REF_0}`, 'owned-1a2b3c');
    expect(tables).toEqual(parseTableConfigs(viaVariable));
    expect(tables.map((t) => t.bucket)).toEqual(['owned-1a2b3c', 'lake']);
  });

  it('still reads the TABLES variable of older deployments, tests and the CLI', () => {
    // Prepare
    const env = { TABLES: JSON.stringify([{ name: 'orders', bucket: 'lake', prefix: 'orders/' }]) };
    // Act
    const tables = loadTableConfigs(env);
    // Assess
    expect(tables.map((t) => [t.name, t.bucket, t.prefix])).toEqual([['orders', 'lake', 'orders']]);
  });

  it('fails naming the file when it is missing, and the variable when a deploy-time value is', () => {
    // Prepare
    writeFileSync(path.join(codeRoot, 'tables.json'), JSON.stringify(TABLES));
    // Act
    const missingFile = () => loadTableConfigs({ TABLES_FILE: 'other.json', LAMBDA_TASK_ROOT: codeRoot });
    const missingValue = () => loadTableConfigs({ TABLES_FILE: 'tables.json', LAMBDA_TASK_ROOT: codeRoot });
    // Assess
    expect(missingFile).toThrow(InvalidInputError);
    expect(missingFile).toThrow(/other\.json \(TABLES_FILE\) cannot be read .* redeploy the stack/);
    expect(missingValue).toThrow(/refers to the variable TABLES_REF_0, which is not set; redeploy the stack/);
  });

  it('fails saying what to set when neither TABLES_FILE nor TABLES is there', () => {
    // Prepare / Act
    const act = () => loadTableConfigs({ TABLE_NAME: 'state' });
    // Assess
    expect(act).toThrow(/No table config: set TABLES_FILE .* or TABLES/);
  });

  it('reports the problems of the file’s tables like those of the variable, all at once', () => {
    // Prepare
    const bad = [
      { name: 'a', bucket: 'lake', prefix: 'a', codec: 'lz4' },
      { name: 'b', bucket: 'lake', prefix: '_tmp/b' },
    ];
    writeFileSync(path.join(codeRoot, 'tables.json'), JSON.stringify(bad));
    // Act
    const act = () => loadTableConfigs({ TABLES_FILE: 'tables.json', LAMBDA_TASK_ROOT: codeRoot });
    // Assess
    expect(act).toThrow(/0\.codec[\s\S]*1\.prefix: "_tmp\/b" has the folder "_tmp"/);
  });
});
