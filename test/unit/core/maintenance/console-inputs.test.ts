// The console inputs in events/ stay valid against the schemas the handlers use, and a bare scheduled
// event (a rule without Input) means "the defaults", which are a dry-run.
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parseTieringRequest } from '../../../../functions/core/maintenance/tiering.js';
import { parseVacuumRequest } from '../../../../functions/core/maintenance/vacuum.js';
import { tieringDefaultsFromEnv } from '../../../../functions/handlers/tiering.js';
import { maintenanceInput } from '../../../../functions/shared/maintenance-runtime.js';

const eventsDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../events');

function inputs(prefix: string): [string, unknown][] {
  return readdirSync(eventsDir)
    .filter((f) => f.startsWith(prefix) && f.endsWith('.json'))
    .map((f) => [f, JSON.parse(readFileSync(path.join(eventsDir, f), 'utf8'))]);
}

describe('console inputs', () => {
  it('every events/vacuum-*.json is a valid vacuum input', () => {
    // Prepare
    const files = inputs('vacuum-');
    // Act
    const parsed = files.map(([, input]) => parseVacuumRequest(input));
    // Assess
    expect(files.length).toBeGreaterThanOrEqual(3);
    expect(parsed.every((r) => typeof r.dryRun === 'boolean')).toBe(true);
  });

  it('every events/tiering-*.json is a valid tiering input', () => {
    // Prepare
    const files = inputs('tiering-');
    // Act
    const parsed = files.map(([, input]) => parseTieringRequest(input));
    // Assess
    expect(files.length).toBeGreaterThanOrEqual(2);
    expect(parsed.every((r) => typeof r.dryRun === 'boolean')).toBe(true);
  });

  it('treats a bare scheduled event as the defaults, which are a dry-run', () => {
    // Prepare
    const scheduled = { 'detail-type': 'Scheduled Event', source: 'aws.events', detail: {} };
    // Act
    const vacuum = parseVacuumRequest(maintenanceInput(scheduled));
    const tiering = parseTieringRequest(maintenanceInput(scheduled));
    // Assess
    expect(vacuum.dryRun).toBe(true);
    expect(tiering.dryRun).toBe(true);
  });

  it("reads the construct's default tiering rules from the environment and names a malformed variable", () => {
    // Prepare
    const base = { TABLE_NAME: 'state', TABLES: '[]' };
    const rules = [{ afterDays: 30, storageClass: 'STANDARD_IA' }];
    // Act
    const parsed = tieringDefaultsFromEnv({ ...base, TIERING_RULES: JSON.stringify(rules) });
    const broken = () => tieringDefaultsFromEnv({ ...base, TIERING_RULES: '[{"afterDays":0}]' });
    // Assess
    expect(parsed).toEqual({ rules });
    expect(broken).toThrow(/TIERING_RULES/);
  });
});
