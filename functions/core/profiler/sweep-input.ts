// What the sweep Lambda accepts as its event, in a module of its own: the handler validates its input with it, and
// the CLI's `reconcile` validates the payload it sends with the same schema, without loading the handler (its
// SDK clients, Powertools and Parquet engine) to do so.
import { z } from 'zod';

/**
 * `{ "mode": "sweep" }` (the default, also for a bare scheduled event), `{ "mode": "reconcile", "table"? }`, or
 * `{ "mode": "undo", "table", "runId", "dryRun"? }`: the console's way to undo a finished workflow run of a table
 * (what `lake-compactor undo --stack` does), with `dryRun` saying what would change.
 */
export const sweepInputSchema = z.union([
  z.object({ mode: z.literal('reconcile'), table: z.string().min(1).optional() }),
  z
    .object({
      mode: z.literal('undo'),
      table: z.string().min(1),
      /** The run's id: its Step Functions execution's name. */
      runId: z.string().min(1).max(512),
      dryRun: z.boolean().default(false),
    })
    .strict(),
  z.object({ mode: z.literal('sweep').optional(), table: z.string().min(1).optional() }).loose(),
]);
export type SweepInput = z.infer<typeof sweepInputSchema>;
