// How long a Delta table keeps removed files for readers of older versions: `delta.deletedFileRetentionDuration`,
// in Spark's interval text. Read once here for the checkpoint writer (which tombstones to carry) and VACUUM (which
// files may go), so both agree on what the table says.
import { HOUR } from '../../maintenance/ages.js';

/** The table property that sets how long removed files stay for readers and time travel. */
export const DELETED_FILE_RETENTION_PROPERTY = 'delta.deletedFileRetentionDuration';

/** The property's default in Delta (Spark and delta-rs alike): one week. */
export const DEFAULT_DELETED_FILE_RETENTION = 'interval 1 week';

const UNITS_MS: Readonly<Record<string, number>> = {
  microsecond: 0.001,
  millisecond: 1,
  second: 1000,
  minute: 60_000,
  hour: HOUR,
  day: 24 * HOUR,
  week: 7 * 24 * HOUR,
};

/**
 * Milliseconds of a Delta interval property (`interval 7 days`, `interval 1 day 12 hours`, `168 hours`), or
 * undefined when it is not one. Months and years are refused as Delta refuses them for this property: their
 * length varies, so "how old is too old" would too. Negative totals are refused.
 */
export function parseDeltaInterval(text: string): number | undefined {
  const words = text.trim().toLowerCase().split(/\s+/);
  if (words[0] === 'interval') words.shift();
  if (words.length === 0 || words.length % 2 !== 0) return undefined;
  let total = 0;
  for (let i = 0; i < words.length; i += 2) {
    const amount = words[i] as string;
    const unit = (words[i + 1] as string).replace(/s$/, '');
    const ms = UNITS_MS[unit];
    if (ms === undefined || !/^[+-]?\d+(\.\d+)?$/.test(amount)) return undefined;
    total += Number(amount) * ms;
  }
  return Number.isFinite(total) && total >= 0 ? total : undefined;
}

/** The table's deleted-file retention in ms (the default week when unset), or undefined when it cannot be read. */
export function deletedFileRetentionMs(configuration: Readonly<Record<string, string>>): number | undefined {
  return parseDeltaInterval(configuration[DELETED_FILE_RETENTION_PROPERTY] ?? DEFAULT_DELETED_FILE_RETENTION);
}
