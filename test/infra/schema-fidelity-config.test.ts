// Proves a table's schemaFidelity in the construct's props is checked at synth and reaches the functions'
// table config as they parse it (absent: the functions' default, exact).
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorTable } from '../../infra/lake-compactor-props.js';
import { lakeCompactorPropsProblems } from '../../infra/props-schema.js';

const TABLES: LakeCompactorTable[] = [
  { name: 'legacy', prefix: 'legacy/', schemaFidelity: 'logical' },
  { name: 'events', prefix: 'events/' },
];

describe('schemaFidelity in the props', () => {
  it('hands the functions the setting in their table config, as they parse it', () => {
    // Act
    const parsed = parseTableConfigs(tablesJsonOf(TABLES, 'owned'));

    // Assess
    expect(parsed.map((t) => [t.name, t.schemaFidelity])).toEqual([
      ['legacy', 'logical'],
      ['events', undefined],
    ]);
  });

  it('accepts exact and logical at synth and names the key of any other value', () => {
    // Act
    const fine = lakeCompactorPropsProblems({ tables: TABLES });
    const wrong = lakeCompactorPropsProblems({
      tables: [{ name: 'x', prefix: 'x/', schemaFidelity: 'loose' }],
    });

    // Assess
    expect(fine).toEqual([]);
    expect(wrong).toEqual([expect.stringContaining('schemaFidelity')]);
  });
});
