// The demo's vacuum dry-run: runs the vacuum core (plan only, nothing deleted) over the demo lake, now and
// as if the 168 h retention had passed, so the reader sees what compaction left for vacuum and why it waits.
//
// The stack does not wire the vacuum Lambda yet, so the core is called directly with the same adapters the
// handler uses (S3 store, DynamoDB journal).
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { S3Client } from '@aws-sdk/client-s3';
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { S3ObjectStore } from '../adapters/s3-object-store.js';
import {
  type CandidateKind,
  MIN_RETENTION_HOURS,
  parseVacuumRequest,
  planVacuum,
} from '../core/maintenance/vacuum.js';
import type { TableConfig } from '../core/table-config.js';
import { DEFAULT_WORK_ROOT, journalManifestPrefix } from '../core/workflow/layout.js';

const HOUR = 3_600_000;

/** What a dry-run found: objects that may go (by kind) and objects kept with a reason. */
export interface VacuumDryRun {
  /** The clock the plan was made at (epoch ms). */
  readonly at: number;
  readonly retentionHours: number;
  readonly candidates: number;
  readonly bytes: number;
  readonly byKind: Readonly<Partial<Record<CandidateKind, number>>>;
  readonly kept: number;
  /** One example reason for keeping something (why vacuum waits). */
  readonly keptReason?: string;
  readonly examined: number;
}

export interface DemoVacuum {
  readonly now: VacuumDryRun;
  /** The same plan as if the retention had just passed. */
  readonly afterRetention: VacuumDryRun;
}

/** Plans a vacuum (dry-run) at `now` and at `now` + retention + 1 h. Deletes nothing. */
export async function demoVacuumDryRun(deps: {
  readonly s3: S3Client;
  readonly dynamodb: DynamoDBClient;
  readonly stateTable: string;
  readonly tables: readonly TableConfig[];
  readonly now: number;
}): Promise<DemoVacuum> {
  const storeFor = (bucket: string) => new S3ObjectStore({ client: deps.s3, bucket });
  const journalFor = (bucket: string) =>
    new DynamoJournal({
      client: deps.dynamodb,
      tableName: deps.stateTable,
      manifests: { store: storeFor(bucket), prefix: journalManifestPrefix(DEFAULT_WORK_ROOT) },
    });
  const request = parseVacuumRequest({ dryRun: true });
  const planAt = async (at: number): Promise<VacuumDryRun> => {
    const plan = await planVacuum(
      {
        tables: deps.tables,
        workRoot: DEFAULT_WORK_ROOT,
        storeFor,
        journalFor,
        clock: { now: () => at },
      },
      request,
    );
    const byKind: Partial<Record<CandidateKind, number>> = {};
    for (const c of plan.candidates) byKind[c.kind] = (byKind[c.kind] ?? 0) + 1;
    return {
      at,
      retentionHours: plan.retentionHours,
      candidates: plan.candidates.length,
      bytes: plan.candidates.reduce((n, c) => n + c.size, 0),
      byKind,
      kept: plan.kept.length,
      ...(plan.kept[0] === undefined ? {} : { keptReason: plan.kept[0].reason }),
      examined: plan.examined,
    };
  };
  return {
    now: await planAt(deps.now),
    afterRetention: await planAt(deps.now + (MIN_RETENTION_HOURS + 1) * HOUR),
  };
}
