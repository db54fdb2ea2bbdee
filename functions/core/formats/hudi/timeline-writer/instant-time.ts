// Minting Hudi instant times: `yyyyMMddHHmmssSSS` in the table's timezone, strictly greater than every instant on
// the timeline. Hudi compares instant times as strings and orders the whole timeline by them, so an instant that
// is not greater than the latest one would land in the past of writers and table services (on table version 6
// conflict detection is by instant time). The clock is an input, so the same journal replays to the same time.
import { HudiTimelineWriteError } from './errors.js';

/**
 * The zone instants are minted in: `UTC` for tables with `hoodie.table.timeline.timezone=UTC`, else the IANA
 * zone the table's writers run in (Hudi's default, LOCAL, is the writer JVM's zone, which no file records: the
 * operator declares it).
 */
export type InstantTimeZone = 'UTC' | { readonly iana: string };

const INSTANT = /^\d{17}$/;
const SECONDS_INSTANT = /^\d{14}$/;

/**
 * The zone to mint in for a table: its `hoodie.table.timeline.timezone` property (absent means LOCAL, as in Hudi)
 * and, for LOCAL, the zone the operator declared for the table's writers.
 * @throws HudiTimelineWriteError for LOCAL without a declared zone, an unknown property value or an invalid zone.
 */
export function instantTimeZoneFor(
  property: string | undefined,
  declaredLocalZone?: string,
): InstantTimeZone {
  const value = (property ?? 'LOCAL').trim().toUpperCase();
  if (value === 'UTC') return 'UTC';
  if (value !== 'LOCAL') {
    throw new HudiTimelineWriteError(`hoodie.table.timeline.timezone=${property} is neither UTC nor LOCAL`);
  }
  if (declaredLocalZone === undefined) {
    throw new HudiTimelineWriteError(
      "the table mints instants in its writers' LOCAL zone, which the table does not record; declare that IANA zone (for example Europe/Paris) for the table",
    );
  }
  checkZone(declaredLocalZone);
  return { iana: declaredLocalZone };
}

/** `clockMs` (epoch milliseconds) as a 17-digit instant time in `zone`. */
export function formatInstantTime(clockMs: number, zone: InstantTimeZone): string {
  if (!Number.isSafeInteger(clockMs) || clockMs < 0) {
    throw new HudiTimelineWriteError(`clock value ${clockMs} is not a non-negative integer of milliseconds`);
  }
  const ms = clockMs % 1000;
  if (zone === 'UTC') return naiveDigits(new Date(clockMs), ms);
  const parts = zoneFormatter(zone.iana).formatToParts(new Date(clockMs));
  const part = (type: Intl.DateTimeFormatPartTypes): string => {
    const found = parts.find((p) => p.type === type);
    if (found === undefined) throw new HudiTimelineWriteError(`no ${type} when formatting in ${zone.iana}`);
    return found.value;
  };
  return (
    part('year').padStart(4, '0') +
    part('month') +
    part('day') +
    part('hour') +
    part('minute') +
    part('second') +
    String(ms).padStart(3, '0')
  );
}

/**
 * The instant time to use for a new action: the clock in the table's zone, or — when the clock is at or behind the
 * latest instant on the timeline (clock skew, a zone ahead of ours, a replay) — the latest instant plus one
 * millisecond. `existing` holds every instant and completion time on the timeline (active and archived alike,
 * as the caller knows them); 14-digit instants of old tables count as their second's last millisecond, as in
 * Hudi's HoodieInstantTimeGenerator.
 * @throws HudiTimelineWriteError when an existing instant is not an instant time.
 */
export function mintInstantTime(clockMs: number, zone: InstantTimeZone, existing: Iterable<string>): string {
  const candidate = formatInstantTime(clockMs, zone);
  const latest = latestInstant(existing);
  if (latest === undefined || candidate > latest) return candidate;
  return nextInstant(latest);
}

/** The greatest instant time of `instants`, normalised to 17 digits; undefined for none. */
export function latestInstant(instants: Iterable<string>): string | undefined {
  let latest: string | undefined;
  for (const instant of instants) {
    const normal = normaliseInstant(instant);
    if (latest === undefined || normal > latest) latest = normal;
  }
  return latest;
}

/**
 * The instant one millisecond after `instant`, with calendar carry (no zone involved). Hudi's special instants
 * (`00000000000000`, `…01`, `…02`: init and bootstrap) are not dates; they are incremented as numbers.
 */
export function nextInstant(instant: string): string {
  const normal = normaliseInstant(instant);
  const date = new Date(0);
  // setUTCFullYear, unlike Date.UTC, keeps years 0-99 as they are.
  date.setUTCFullYear(Number(normal.slice(0, 4)), Number(normal.slice(4, 6)) - 1, Number(normal.slice(6, 8)));
  date.setUTCHours(Number(normal.slice(8, 10)), Number(normal.slice(10, 12)), Number(normal.slice(12, 14)));
  date.setUTCMilliseconds(Number(normal.slice(14, 17)));
  if (naiveDigits(date, date.getUTCMilliseconds()) !== normal) {
    return (BigInt(normal) + 1n).toString().padStart(17, '0');
  }
  date.setUTCMilliseconds(date.getUTCMilliseconds() + 1);
  return naiveDigits(date, date.getUTCMilliseconds());
}

function normaliseInstant(instant: string): string {
  if (INSTANT.test(instant)) return instant;
  if (SECONDS_INSTANT.test(instant)) return `${instant}999`;
  throw new HudiTimelineWriteError(`"${instant}" is not a Hudi instant time (yyyyMMddHHmmss[SSS])`);
}

function naiveDigits(date: Date, ms: number): string {
  const two = (n: number): string => String(n).padStart(2, '0');
  return (
    String(date.getUTCFullYear()).padStart(4, '0') +
    two(date.getUTCMonth() + 1) +
    two(date.getUTCDate()) +
    two(date.getUTCHours()) +
    two(date.getUTCMinutes()) +
    two(date.getUTCSeconds()) +
    String(ms).padStart(3, '0')
  );
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function zoneFormatter(iana: string): Intl.DateTimeFormat {
  let formatter = formatters.get(iana);
  if (formatter === undefined) {
    checkZone(iana);
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: iana,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formatters.set(iana, formatter);
  }
  return formatter;
}

function checkZone(iana: string): void {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: iana });
  } catch {
    throw new HudiTimelineWriteError(`"${iana}" is not an IANA time zone this runtime knows`);
  }
}
