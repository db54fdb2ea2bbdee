// `lake-compactor vacuum` and `lake-compactor tier`: the scheduled jobs' own core, run to completion on one
// table location; a dry run changes nothing, and a real run prints everything it will change before it does.
//
// Inputs map one-to-one onto the vacuum and tiering functions' inputs (events/vacuum-*.json,
// events/tiering-*.json) and are validated by the same schemas — with the same retention gate — before any
// object is listed, let alone changed. Invalid usage exits 2; a run that could not do everything exits 1.
//
// The commands live in cli-vacuum.ts and cli-tier.ts, what they share in cli-maintenance-shared.ts; this
// module is their public face (what cli.ts registers, what callers import).
export {
  MaintenanceIncompleteError,
  type MaintenanceIo,
  OperationCancelledError,
  UsageError,
} from './cli-maintenance-shared.js';
export {
  prepareTier,
  registerTierCommand,
  runTier,
  type TierCliOptions,
  type TierCliReport,
  type TierJob,
} from './cli-tier.js';
export {
  planVacuumJob,
  prepareVacuum,
  registerVacuumCommand,
  runVacuum,
  type VacuumCliOptions,
  type VacuumCliReport,
  type VacuumJob,
} from './cli-vacuum.js';
