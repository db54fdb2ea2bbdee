// A Hudi table's declared settings: the lock and the index type are required (the table records neither), index
// types that map keys to file ids outside the files are refused by name, the CLI's --hudi-* options spell the same
// settings and are refused for another format, and a Hudi table is never tiered.
import { describe, expect, it } from 'vitest';
import { InvalidInputError, UsageError } from '../../../../../functions/core/errors.js';
import {
  hudiIndexTypeSchema,
  hudiSettingsFromFlags,
} from '../../../../../functions/core/formats/hudi/settings.js';
import { tieringUnsupportedFor } from '../../../../../functions/core/maintenance/tiering.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';

function issuesOf(table: Record<string, unknown>): readonly string[] {
  try {
    parseTableConfigs([{ name: 't', bucket: 'lake', prefix: 't', format: 'hudi', ...table }]);
    return [];
  } catch (err) {
    if (err instanceof InvalidInputError) return err.issues;
    throw err;
  }
}

describe('Hudi table settings', () => {
  it('accepts a table declaring its lock and index type', () => {
    // Act
    const issues = issuesOf({ hudiLock: { provider: 'storage' }, hudiIndexType: 'bloom' });
    // Assess
    expect(issues).toEqual([]);
  });

  it('refuses the no-lock opt-in without the single-writer acknowledgement', () => {
    // Act
    const issues = issuesOf({
      hudiLock: { provider: 'none', quietWindowMinutes: 30 },
      hudiIndexType: 'SIMPLE',
    });
    // Assess
    expect(issues.join('\n')).toMatch(/hudiLock/);
  });

  it.each(['BUCKET', 'HBASE', 'FLINK_STATE', 'RECORD_INDEX'])('refuses index type %s by name', (type) => {
    // Act
    const parsed = hudiIndexTypeSchema.safeParse(type);
    // Assess
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]?.message).toMatch(new RegExp(`^index type ${type} is refused: `));
  });

  it('reads the CLI options into the same settings, and refuses them for another format', () => {
    // Act
    const settings = hudiSettingsFromFlags('hudi', {
      hudiLock: 'dynamodb',
      hudiLockTable: 'hudi_locks',
      hudiIndexType: 'GLOBAL_BLOOM',
      hudiTimezone: 'Europe/Paris',
    });
    const elsewhere = () => hudiSettingsFromFlags('delta', { hudiLock: 'storage' });
    const incomplete = () => hudiSettingsFromFlags('hudi', { hudiLock: 'none', hudiQuietMinutes: 10 });
    // Assess
    expect(settings).toEqual({
      hudiLock: { provider: 'dynamodb', table: 'hudi_locks' },
      hudiIndexType: 'GLOBAL_BLOOM',
      hudiTimezone: 'Europe/Paris',
    });
    expect(elsewhere).toThrow(UsageError);
    expect(incomplete).toThrow(UsageError);
  });

  it('is never tiered: its timeline says which files are live', () => {
    // Act
    const reason = tieringUnsupportedFor('hudi');
    // Assess
    expect(reason).toMatch(/^tiering is not supported for Apache Hudi tables yet/);
    expect(tieringUnsupportedFor('parquet')).toBeUndefined();
  });
});
