// The vacuum and tiering schedules' props, apart from the construct: the props schema checks them and the
// LakeCompactor props expose them, neither needing the construct (so no import cycle through it).
import type * as events from 'aws-cdk-lib/aws-events';
import type { TieringRule } from '../functions/core/maintenance/tiering.js';
import type { FormatVacuumProps } from './formats/index.js';

/** Settings every maintenance schedule has. */
export interface MaintenanceScheduleProps {
  /**
   * When the schedule fires.
   * A string is an EventBridge schedule expression (`rate(1 day)`, `cron(0 4 * * ? *)`), so the JSON
   * deployment config can set it.
   * @default vacuum: daily 04:00 UTC; tiering: weekly, Sunday 05:00 UTC
   */
  readonly schedule?: events.Schedule | string;
  /**
   * Whether the scheduled run only reports (dry-run). The rule's Input always carries it explicitly.
   * @default true — nothing is deleted or moved until an operator has read a dry-run report and flipped it
   */
  readonly dryRun?: boolean;
  /**
   * Whether the schedule rule is enabled (the function stays runnable from the console either way).
   * @default true
   */
  readonly enabled?: boolean;
}

/**
 * The vacuum schedule. A format's own vacuum props (a retention of its own) are declared by its infra module
 * (infra/formats/<name>/props.ts) and composed here.
 */
export interface VacuumScheduleProps extends MaintenanceScheduleProps, FormatVacuumProps {
  /**
   * Hours retired inputs and trash copies are kept after their run retired them.
   * @default 168 (below it synthesis fails unless `allowRetentionBelowMinimum`)
   */
  readonly retentionHours?: number;
  /** Allows a retention (either) below 168 h, and turns off a format's own retention check where it has one. @default false */
  readonly allowRetentionBelowMinimum?: boolean;
  /**
   * Age after which writer debris (`_temporary/`, `.spark-staging-*`, unfinished multipart uploads) goes.
   * @default 72
   */
  readonly debrisAgeHours?: number;
  /**
   * Hours after which a run stuck before publishing counts as abandoned (its staging is removed).
   * @default 24
   */
  readonly abandonedAfterHours?: number;
}

export interface TieringScheduleProps extends MaintenanceScheduleProps {
  /**
   * Rules for every table with a date column: `[{ afterDays, storageClass }]`, ascending, each colder.
   * @default [{ afterDays: 30, storageClass: 'STANDARD_IA' }, { afterDays: 90, storageClass: 'GLACIER_IR' }]
   */
  readonly rules?: readonly TieringRule[];
  /**
   * Rules by table name, winning over `rules`.
   * @default none
   */
  readonly tableRules?: Readonly<Record<string, readonly TieringRule[]>>;
}

/** The two schedules, as LakeCompactor and the Maintenance construct take them. */
export interface MaintenanceSchedulesProps {
  /** @default the VacuumScheduleProps defaults */
  readonly vacuum?: VacuumScheduleProps;
  /** @default the TieringScheduleProps defaults */
  readonly tiering?: TieringScheduleProps;
}
