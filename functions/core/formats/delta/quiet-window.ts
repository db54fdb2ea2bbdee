// The declared quiet windows of a Delta table whose writers have no commit coordination (`deltaLogStore: { type:
// "quiet-window" }`): when, by the UTC clock, every such writer is known to be stopped. Pure: parsing and "is now
// inside one, and until when". A window is written the way an operator schedules jobs: "02:00-05:00" every day,
// "sat,sun 00:00-24:00" on given days, "22:00-02:00" across midnight (the days name the day the window opens).

/** Days as the window syntax spells them, Sunday first (JavaScript's `getUTCDay`). */
const DAYS = ['sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'] as const;

/**
 * The default of a quiet-window table's `quietMinutes`: how long the log must show no other writer's commit before
 * lake-compactor commits. An hour covers a batch job's commit retries after its last task, at the cost of starting
 * an hour into the window.
 */
export const DEFAULT_QUIET_MINUTES = 60;

const MINUTES_PER_DAY = 24 * 60;
const MINUTE_MS = 60_000;
const DAY_MS = MINUTES_PER_DAY * MINUTE_MS;

/** One parsed window: the days it opens on (all when undefined) and its minutes of the UTC day. */
export interface QuietWindow {
  readonly text: string;
  /** `getUTCDay()` numbers the window opens on; undefined: every day. */
  readonly days?: ReadonlySet<number>;
  /** Minutes after UTC midnight, 0–1439. */
  readonly start: number;
  /** Minutes after UTC midnight, 1–1440; below `start`: the window closes the next day. */
  readonly end: number;
}

const WINDOW = /^(?:([a-z]{3}(?:,[a-z]{3})*)\s+)?(\d{2}):(\d{2})-(\d{2}):(\d{2})$/;

/**
 * A window's text as a window, or why it is not one (the message names the syntax). Times are UTC; "24:00" ends at
 * midnight; a window may not be empty (equal start and end) — "00:00-24:00" is a whole day.
 */
export function parseQuietWindow(text: string): QuietWindow | { readonly problem: string } {
  const m = WINDOW.exec(text.trim().toLowerCase());
  const syntax =
    'write it as "HH:MM-HH:MM" in UTC, optionally after days ("sat,sun 00:00-24:00"; days mon tue wed thu fri sat sun)';
  if (m === null) return { problem: `"${text}" is not a quiet window: ${syntax}` };
  const [, dayList, sh, sm, eh, em] = m;
  const start = Number(sh) * 60 + Number(sm);
  const end = Number(eh) * 60 + Number(em);
  if (Number(sm) > 59 || Number(em) > 59 || start >= MINUTES_PER_DAY || end > MINUTES_PER_DAY) {
    return { problem: `"${text}" has a time that is not on a 24-hour UTC clock: ${syntax}` };
  }
  if (start === end || end === 0) {
    return { problem: `"${text}" is empty (it closes when it opens); "00:00-24:00" is a whole day` };
  }
  let days: Set<number> | undefined;
  if (dayList !== undefined) {
    days = new Set();
    for (const day of dayList.split(',')) {
      const index = DAYS.indexOf(day as (typeof DAYS)[number]);
      if (index === -1) return { problem: `"${text}" names the day "${day}": ${syntax}` };
      days.add(index);
    }
  }
  return { text: text.trim(), ...(days === undefined ? {} : { days }), start, end };
}

/** Whether `now` (epoch ms) is inside `window`, and when that opening closes (epoch ms). */
function openingAt(
  window: QuietWindow,
  now: number,
): { readonly opensAt: number; readonly closesAt: number } | undefined {
  const midnight = Math.floor(now / DAY_MS) * DAY_MS;
  // The opening that started today, and (for a window across midnight) the one that started yesterday.
  for (const dayStart of [midnight, midnight - DAY_MS]) {
    const day = new Date(dayStart).getUTCDay();
    if (window.days !== undefined && !window.days.has(day)) continue;
    const opens = dayStart + window.start * MINUTE_MS;
    const closes =
      dayStart + (window.end > window.start ? window.end : window.end + MINUTES_PER_DAY) * MINUTE_MS;
    if (now >= opens && now < closes) return { opensAt: opens, closesAt: closes };
  }
  return undefined;
}

/**
 * Whether `now` is inside one of `windows`: since when (the earliest opening of the windows open now, so
 * overlapping windows count as one) and until when (their latest close); or why not.
 */
export function quietWindowAt(
  windows: readonly QuietWindow[],
  now: number,
):
  | { readonly open: true; readonly opensAt: number; readonly closesAt: number }
  | { readonly open: false; readonly reason: string } {
  const openings = windows.flatMap((w) => {
    const opening = openingAt(w, now);
    return opening === undefined ? [] : [opening];
  });
  if (openings.length > 0) {
    return {
      open: true,
      opensAt: Math.min(...openings.map((o) => o.opensAt)),
      closesAt: Math.max(...openings.map((o) => o.closesAt)),
    };
  }
  return {
    open: false,
    reason: `${new Date(now).toISOString()} is outside the table's declared quiet windows (${windows.map((w) => w.text).join(', ')}, UTC)`,
  };
}
