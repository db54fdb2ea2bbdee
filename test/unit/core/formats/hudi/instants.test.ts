// Instant file names of both timeline layouts, their order, and the moment an instant time names.
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { HudiTimelineError, HudiTimezoneError } from '../../../../../functions/core/formats/hudi/errors.js';
import {
  compareInstants,
  instantToEpochMs,
  instantZone,
  parseInstantFileName,
} from '../../../../../functions/core/formats/hudi/instants.js';
import { HUDI_FIXTURES } from '../../../../support/fixtures.js';

describe('instant file names', () => {
  it('reads layout 1 (v6): T.action, T.action.requested|inflight, and T.inflight as a commit in flight', () => {
    // Act
    const parse = (name: string) => parseInstantFileName('t', name, 1);

    // Assess
    expect(parse('20240418172802262.commit')).toEqual({
      time: '20240418172802262',
      action: 'commit',
      state: 'completed',
      fileName: '20240418172802262.commit',
    });
    expect(parse('20240418172802262.inflight')).toMatchObject({ action: 'commit', state: 'inflight' });
    expect(parse('20240418172802262.commit.requested')).toMatchObject({
      action: 'commit',
      state: 'requested',
    });
    expect(parse('20240707001303088.replacecommit.inflight')).toMatchObject({
      action: 'replacecommit',
      state: 'inflight',
    });
    expect(parse('20250126040936578.rollback')).toMatchObject({ action: 'rollback', state: 'completed' });
    expect(parse('20210101000000.commit')).toMatchObject({ time: '20210101000000' });
    expect(parse('hoodie.properties')).toBeUndefined();
    expect(parse('archived')).toBeUndefined();
  });

  it('reads layout 2 (v8+): T_C.action completed, with requested and inflight named as in layout 1', () => {
    // Act
    const parse = (name: string) => parseInstantFileName('t', name, 2);

    // Assess
    expect(parse('20260307162454799_20260307162456102.replacecommit')).toEqual({
      time: '20260307162454799',
      completionTime: '20260307162456102',
      action: 'replacecommit',
      state: 'completed',
      fileName: '20260307162454799_20260307162456102.replacecommit',
    });
    expect(parse('20260307162454799.clustering.requested')).toMatchObject({
      action: 'clustering',
      state: 'requested',
    });
    expect(parse('20250713011315930.inflight')).toMatchObject({ action: 'commit', state: 'inflight' });
    expect(parse('history')).toBeUndefined();
  });

  it('refuses a name that starts like an instant but names no known action, or a layout-2 completion without C', () => {
    // Assess
    expect(() => parseInstantFileName('t', '20240418172802262.futureaction', 1)).toThrow(HudiTimelineError);
    expect(() => parseInstantFileName('t', '20240418172802262.commit', 2)).toThrow(/no completion time/);
  });

  it('parses every timeline file name of every vendored table', () => {
    // Prepare
    const folders: [string, number][] = [
      ['cow_v6_simplekeygen_nonhivestyle_overwritetable/.hoodie', 1],
      ['mor_v6_nonpartitioned_rollback/.hoodie', 1],
      ['cow_v9_txns_simple_meta/.hoodie/timeline', 2],
      ['mor_v8_trips_8i3u1d/.hoodie/timeline', 2],
      ['mor_v9_txns_simple_nometa/.hoodie/timeline', 2],
    ];

    for (const [folder, layout] of folders) {
      // Act
      const names = readdirSync(join(HUDI_FIXTURES, folder)).filter((n) => /^\d/.test(n));
      const instants = names.map((n) => parseInstantFileName('t', n, layout));

      // Assess
      expect(instants.every((i) => i !== undefined)).toBe(true);
    }
  });

  it('orders instants by time as strings, then requested < inflight < completed', () => {
    // Prepare
    const names = [
      '20260307162454799_20260307162456102.replacecommit',
      '20260307162454799.clustering.requested',
      '20260307162450901.replacecommit.inflight',
      '20260307162454799.clustering.inflight',
    ];

    // Act
    const sorted = names
      .map((n) => parseInstantFileName('t', n, 2))
      .filter((i) => i !== undefined)
      .sort(compareInstants)
      .map((i) => i.fileName);

    // Assess
    expect(sorted).toEqual([
      '20260307162450901.replacecommit.inflight',
      '20260307162454799.clustering.requested',
      '20260307162454799.clustering.inflight',
      '20260307162454799_20260307162456102.replacecommit',
    ]);
  });
});

describe('the moment an instant time names', () => {
  it('keeps 17-digit times exact as strings and converts them to epoch ms in UTC', () => {
    // Act
    const ms = instantToEpochMs('20260307162454799', 'UTC');

    // Assess
    expect(ms).toBe(Date.UTC(2026, 2, 7, 16, 24, 54, 799));
    expect(instantToEpochMs('20260307162454', 'UTC')).toBe(Date.UTC(2026, 2, 7, 16, 24, 54));
  });

  it('reads LOCAL instants in the zone the deployment declares, across daylight saving time', () => {
    // Prepare
    const paris = instantZone('t', 'LOCAL', 'Europe/Paris');

    // Act
    const winter = instantToEpochMs('20260115120000000', paris);
    const summer = instantToEpochMs('20260715120000000', paris);

    // Assess
    expect(winter).toBe(Date.UTC(2026, 0, 15, 11));
    expect(summer).toBe(Date.UTC(2026, 6, 15, 10));
  });

  it('refuses LOCAL instants when no zone is declared, and an unknown zone, by name', () => {
    // Assess
    expect(() => instantZone('t', 'LOCAL', undefined)).toThrow(HudiTimezoneError);
    expect(() => instantZone('t', 'LOCAL', 'Mars/Olympus')).toThrow(/not an IANA time zone/);
    expect(instantZone('t', 'UTC', undefined)).toBe('UTC');
  });

  it('refuses times that are no instant: wrong length or an impossible date', () => {
    // Assess
    expect(() => instantToEpochMs('2026030716245', 'UTC')).toThrow(RangeError);
    expect(() => instantToEpochMs('20261332000000000', 'UTC')).toThrow(RangeError);
  });
});
