// Hudi instants as their file names say them. Layout 1 (table version 6) keeps every instant directly in `.hoodie/`
// as `T.action[.requested|.inflight]`, a commit's inflight being `T.inflight`; layout 2 (versions 8 and 9) keeps the
// active ones in `.hoodie/timeline/`, a completed instant named `T_C.action` with its completion time C. Instant
// times stay strings: 17 digits (yyyyMMddHHmmssSSS) exceed 2^53, and Hudi itself orders them as strings.
import { HudiTimelineError, HudiTimezoneError } from './errors.js';
import type { HudiTimelineTimezone } from './properties.js';

/** Every action a Hudi timeline holds (notes §2.2). */
export const HUDI_ACTIONS = [
  'commit',
  'deltacommit',
  'replacecommit',
  'clustering',
  'compaction',
  'logcompaction',
  'clean',
  'rollback',
  'restore',
  'savepoint',
  'indexing',
] as const;
export type HudiAction = (typeof HUDI_ACTIONS)[number];

export type HudiInstantState = 'requested' | 'inflight' | 'completed';

/** One instant file of the active timeline. */
export interface HudiInstant {
  /** The begin (instant) time: 14 or 17 digits, as text. */
  readonly time: string;
  /** The completion time, in layout 2's completed file names only. */
  readonly completionTime?: string;
  /**
   * The action as the file names it. A completed compaction is a `commit`, a completed v8+ clustering a
   * `replacecommit`, a completed logcompaction a `deltacommit`, as Hudi writes them.
   */
  readonly action: HudiAction;
  readonly state: HudiInstantState;
  /** The file's name (no folder). */
  readonly fileName: string;
}

const TIME = '(\\d{14}|\\d{17})';
const ACTION = `(${HUDI_ACTIONS.join('|')})`;
const LAYOUT1 = new RegExp(`^${TIME}(?:\\.${ACTION}(?:\\.(requested|inflight))?|\\.(inflight))$`);
const LAYOUT2_COMPLETED = new RegExp(`^${TIME}_${TIME}\\.${ACTION}$`);
/** A name that starts like an instant: one that then fails to parse is refused, never skipped. */
const LOOKS_LIKE_INSTANT = /^\d{14}/;

/** Whether an instant time has a shape Hudi mints: 14 or 17 digits. */
export function isInstantTime(time: string): boolean {
  return /^(?:\d{14}|\d{17})$/.test(time);
}

/**
 * The instant a timeline file name stands for under `layoutVersion`, or undefined when the name is no instant
 * (hoodie.properties, a folder marker, a `.crc`-less sidecar Hudi writes beside the timeline).
 * @throws HudiTimelineError when the name starts with an instant time but names no action this reader knows: a
 * newer Hudi's action must not be mistaken for nothing.
 */
export function parseInstantFileName(
  table: string,
  fileName: string,
  layoutVersion: number,
): HudiInstant | undefined {
  if (layoutVersion >= 2) {
    const completed = LAYOUT2_COMPLETED.exec(fileName);
    if (completed !== null)
      return {
        time: completed[1] as string,
        completionTime: completed[2] as string,
        action: completed[3] as HudiAction,
        state: 'completed',
        fileName,
      };
  }
  const m = LAYOUT1.exec(fileName);
  if (m !== null) {
    const time = m[1] as string;
    if (m[4] === 'inflight') return { time, action: 'commit', state: 'inflight', fileName };
    const state = (m[3] as HudiInstantState | undefined) ?? 'completed';
    // Layout 2 names every completed instant with its completion time: a bare `T.action` there is not Hudi's.
    if (state === 'completed' && layoutVersion >= 2)
      throw new HudiTimelineError(
        table,
        `timeline file ${fileName} has no completion time, which layout 2 requires`,
      );
    return { time, action: m[2] as HudiAction, state, fileName };
  }
  if (LOOKS_LIKE_INSTANT.test(fileName))
    throw new HudiTimelineError(
      table,
      `timeline file ${fileName} names no instant this reader knows (${HUDI_ACTIONS.join(', ')})`,
    );
  return undefined;
}

/** Orders instant times as Hudi does: as strings (a 14-digit time sorts before the 17-digit times of its second). */
export function compareInstantTimes(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

const STATE_ORDER: Readonly<Record<HudiInstantState, number>> = { requested: 0, inflight: 1, completed: 2 };

/** Orders instants by time, then requested < inflight < completed (one instant's files in the order written). */
export function compareInstants(a: HudiInstant, b: HudiInstant): number {
  return compareInstantTimes(a.time, b.time) || STATE_ORDER[a.state] - STATE_ORDER[b.state];
}

/** The zone to read a table's instant times in: UTC, or the IANA zone the deployment declares for LOCAL. */
export type InstantZone = 'UTC' | { readonly iana: string };

/**
 * The zone a table's instant times are in: UTC when `hoodie.table.timeline.timezone=UTC`, else the zone the
 * deployment declares for the writers' LOCAL time.
 * @throws HudiTimezoneError when the table says LOCAL and the deployment declares no zone, or an unknown one.
 */
export function instantZone(
  table: string,
  timezone: HudiTimelineTimezone,
  declaredZone: string | undefined,
): InstantZone {
  if (timezone === 'UTC') return 'UTC';
  if (declaredZone === undefined)
    throw new HudiTimezoneError(
      table,
      "its instant times are in the writers' LOCAL zone (hoodie.table.timeline.timezone is LOCAL or absent) and no zone is declared",
    );
  if (declaredZone === 'UTC') return 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: declaredZone });
  } catch {
    throw new HudiTimezoneError(
      table,
      `the declared zone ${JSON.stringify(declaredZone)} is not an IANA time zone`,
    );
  }
  return { iana: declaredZone };
}

/**
 * The moment (epoch ms) an instant time names in `zone`: for cursors and quiet windows, never for ordering (which
 * stays on the strings). A wall time a DST change skips or repeats resolves to one of its candidate moments (an hour apart).
 * @throws RangeError when `time` is not a valid 14- or 17-digit instant time.
 */
export function instantToEpochMs(time: string, zone: InstantZone): number {
  if (!isInstantTime(time)) throw new RangeError(`${JSON.stringify(time)} is not a Hudi instant time`);
  const n = (from: number, to: number) => Number(time.slice(from, to));
  const [year, month, day, hour, minute, second] = [
    n(0, 4),
    n(4, 6),
    n(6, 8),
    n(8, 10),
    n(10, 12),
    n(12, 14),
  ];
  const ms = time.length === 17 ? n(14, 17) : 0;
  const wall = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  const back = new Date(wall);
  if (
    month < 1 ||
    month > 12 ||
    back.getUTCDate() !== day ||
    back.getUTCHours() !== hour ||
    back.getUTCMinutes() !== minute ||
    back.getUTCSeconds() !== second
  )
    throw new RangeError(`${JSON.stringify(time)} is not a valid date and time`);
  if (zone === 'UTC') return wall;
  // The zone's offset at the guessed moment, then once more at the corrected one (enough across one DST change).
  const first = wall - offsetMs(wall, zone.iana);
  const second2 = wall - offsetMs(first, zone.iana);
  return Math.min(first, second2);
}

/** The zone's offset from UTC at `epochMs`, in ms (positive east of Greenwich). */
function offsetMs(epochMs: number, iana: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone: iana,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(epochMs));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(
    get('year'),
    get('month') - 1,
    get('day'),
    get('hour'),
    get('minute'),
    get('second'),
  );
  return asUtc - (epochMs - (((epochMs % 1000) + 1000) % 1000));
}
