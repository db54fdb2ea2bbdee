// Proves a table's readers, statistics and keepStatistics in the construct's props reach the functions' table
// config as they parse it, and that an unknown reader is refused at synth, naming the key and the accepted readers.
import { describe, expect, it } from 'vitest';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorTable } from '../../infra/lake-compactor-props.js';
import { lakeCompactorPropsProblems } from '../../infra/props-schema.js';

const TABLES: LakeCompactorTable[] = [
  {
    name: 'modern',
    prefix: 'modern/',
    readers: ['trino', 'duckdb'],
    statistics: 'auto',
    keepStatistics: ['request_id'],
  },
  { name: 'events', prefix: 'events/' },
];

describe('readers and statistics in the props', () => {
  it('hands the functions the settings in their table config, as they parse it', () => {
    // Act
    const parsed = parseTableConfigs(tablesJsonOf(TABLES, 'owned'));

    // Assess
    expect(parsed.map((t) => [t.name, t.readers, t.statistics, t.keepStatistics])).toEqual([
      ['modern', ['trino', 'duckdb'], 'auto', ['request_id']],
      ['events', undefined, undefined, undefined],
    ]);
  });

  it('refuses an unknown reader at synth, listing the accepted ones', () => {
    // Act
    const wrong = lakeCompactorPropsProblems({
      tables: [{ name: 'x', prefix: 'x/', readers: ['presto'] }],
    });

    // Assess
    expect(wrong).toEqual([expect.stringMatching(/readers.*"presto" is not a reader .*athena-v3/)]);
  });
});
