// What Hive-style Parquet tables (`format: "parquet"`) need from the construct: no statement beyond the shared
// grants (their data files and the work root are all there is), so this contribution only carries the table props
// the format owns (./props.ts) into `LakeCompactorTable`, and adds nothing to any template.
import type { FormatInfra } from '../format-infra.js';
import type { HiveTableProps } from './props.js';

export type { HiveTableProps } from './props.js';

/** Hive-style Parquet's contribution to the construct: its table props, no grants. */
export const hiveInfra: FormatInfra<Record<never, never>, HiveTableProps> = {
  format: 'parquet',
};
