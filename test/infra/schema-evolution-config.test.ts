// Proves a Hive-style table's schemaEvolution is a typed prop of the construct (LakeCompactorTable, through the
// format's own infra/formats/hive/props.ts), is checked at synth, and reaches the functions' table config as they
// parse it (absent: the functions' default, never); on a table of another format it is refused at synth by name.
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorTable } from '../../infra/lake-compactor-props.js';
import { lakeCompactorPropsProblems } from '../../infra/props-schema.js';

const TABLES: LakeCompactorTable[] = [
  { name: 'streaming', prefix: 'streaming/', schemaEvolution: 'union' },
  { name: 'strict', prefix: 'strict/', format: 'parquet', schemaEvolution: 'never' },
  { name: 'events', prefix: 'events/' },
];

describe('schemaEvolution in the props', () => {
  it('hands the functions the setting in their table config, as they parse it', () => {
    // Act
    const parsed = parseTableConfigs(tablesJsonOf(TABLES, 'owned'));

    // Assess
    expect(parsed.map((t) => [t.name, t.schemaEvolution])).toEqual([
      ['streaming', 'union'],
      ['strict', 'never'],
      ['events', undefined],
    ]);
  });

  it('accepts never and union on Hive-style tables at synth, and names the key of any other value or format', () => {
    // Act
    const fine = lakeCompactorPropsProblems({ tables: TABLES });
    const wrongMode = lakeCompactorPropsProblems({
      tables: [{ name: 'x', prefix: 'x/', schemaEvolution: 'merge' }],
    });
    const wrongFormat = lakeCompactorPropsProblems({
      tables: [{ name: 'o', prefix: 'o/', format: 'iceberg', schemaEvolution: 'union' }],
    });

    // Assess
    expect(fine).toEqual([]);
    expect(wrongMode).toEqual([expect.stringContaining('schemaEvolution must be one of never, union')]);
    expect(wrongFormat).toEqual([
      expect.stringContaining('schemaEvolution is a setting of Hive-style Parquet tables'),
    ]);
  });
});
