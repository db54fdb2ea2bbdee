// Instant times are minted as Hudi does — yyyyMMddHHmmssSSS in the table's zone — and are always strictly greater
// than every instant on the timeline, even when the clock is behind it.
import { describe, expect, it } from 'vitest';
import { HudiTimelineWriteError } from '../../../../../../functions/core/formats/hudi/timeline-writer/errors.js';
import {
  formatInstantTime,
  instantTimeZoneFor,
  latestInstant,
  mintInstantTime,
  nextInstant,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/instant-time.js';

const AT = Date.parse('2026-03-07T22:24:59.031Z');

describe('formatInstantTime', () => {
  it('formats UTC digits', () => {
    expect(formatInstantTime(AT, 'UTC')).toBe('20260307222459031');
  });

  it("formats a LOCAL table's digits in its declared zone (the v9 fixture's writer ran in US Central time)", () => {
    // Act & Assess: CST is UTC-6 in March before the switch; Kolkata is +5:30; Paris is +2 in summer.
    expect(formatInstantTime(AT, { iana: 'America/Chicago' })).toBe('20260307162459031');
    expect(formatInstantTime(AT, { iana: 'Asia/Kolkata' })).toBe('20260308035459031');
    expect(formatInstantTime(Date.parse('2026-07-01T23:59:59.999Z'), { iana: 'Europe/Paris' })).toBe(
      '20260702015959999',
    );
    expect(formatInstantTime(Date.parse('2026-01-01T00:00:00.007Z'), { iana: 'Europe/Paris' })).toBe(
      '20260101010000007',
    );
  });
});

describe('mintInstantTime', () => {
  it('uses the clock when it is ahead of the timeline', () => {
    expect(mintInstantTime(AT, 'UTC', ['20260307222459030', '20250101000000000'])).toBe('20260307222459031');
  });

  it('mints one millisecond after the latest instant when the clock is behind or equal', () => {
    // Act & Assess
    expect(mintInstantTime(AT, 'UTC', ['20260307222459031'])).toBe('20260307222459032');
    expect(mintInstantTime(AT - 3_600_000, 'UTC', ['20260307222459031', '20260307162459032'])).toBe(
      '20260307222459032',
    );
  });

  it('stays above the timeline when a LOCAL zone is behind UTC instants already written', () => {
    // Prepare: a writer in UTC+5:30 wrote the latest instant; our zone is Chicago's, hours behind.
    const timeline = [formatInstantTime(AT, { iana: 'Asia/Kolkata' })];

    // Act
    const minted = mintInstantTime(AT + 1000, { iana: 'America/Chicago' }, timeline);

    // Assess
    expect(minted > (timeline[0] as string)).toBe(true);
    expect(minted).toBe('20260308035459032');
  });

  it('carries across seconds, days and years, and counts 14-digit instants as their last millisecond', () => {
    // Act & Assess
    expect(nextInstant('20261231235959999')).toBe('20270101000000000');
    expect(nextInstant('20240229235959999')).toBe('20240301000000000');
    expect(nextInstant('00000000000001')).toBe('00000000000002000');
    expect(mintInstantTime(0, 'UTC', ['00000000000000'])).toBe('19700101000000000');
    expect(mintInstantTime(0, 'UTC', ['20240101000000'])).toBe('20240101000001000');
    expect(latestInstant(['20240101000000', '20240101000000500'])).toBe('20240101000000999');
  });

  it('refuses instants that are not Hudi instant times', () => {
    expect(() => mintInstantTime(AT, 'UTC', ['2026-03-07'])).toThrow(HudiTimelineWriteError);
    expect(() => formatInstantTime(-1, 'UTC')).toThrow(HudiTimelineWriteError);
  });
});

describe('instantTimeZoneFor', () => {
  it("takes UTC from the table's property and LOCAL from the operator's declared zone", () => {
    expect(instantTimeZoneFor('UTC')).toBe('UTC');
    expect(instantTimeZoneFor('LOCAL', 'Europe/Paris')).toEqual({ iana: 'Europe/Paris' });
    expect(instantTimeZoneFor(undefined, 'America/Chicago')).toEqual({ iana: 'America/Chicago' });
  });

  it('refuses a LOCAL table without a declared zone, an invalid zone and an unknown property value', () => {
    expect(() => instantTimeZoneFor(undefined)).toThrow(/LOCAL zone/);
    expect(() => instantTimeZoneFor('LOCAL', 'Mars/Olympus')).toThrow(HudiTimelineWriteError);
    expect(() => instantTimeZoneFor('PST')).toThrow(/neither UTC nor LOCAL/);
  });
});
