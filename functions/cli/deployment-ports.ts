// The journal and leases of an operator's run against a deployment (`settle` or `compact` with --stack or
// --state-table): the deployment's own, in its DynamoDB state table, so its workflow, sweep and undo see the run.
import { DynamoJournal } from '../adapters/dynamodb-journal.js';
import { DynamoPartitionLease } from '../adapters/dynamodb-partition-lease.js';
import type { OpenedStore } from '../adapters/open-store.js';
import { journalManifestPrefix } from '../core/workflow/layout.js';
import type { PartitionLeases } from '../core/workflow/ports.js';
import type { Journal } from '../ports/journal.js';
import { dynamoDbClientFromEnv } from '../shared/aws-env.js';

/** A deployment's journal and leases, as an operator's run uses them. */
export interface DeploymentPorts {
  readonly stateTable: string;
  readonly journal: Journal;
  readonly leases: PartitionLeases;
}

/**
 * The ports over `stateTable`, the journal's oversized file lists in `opened`'s work root (as the workflow keeps
 * them). The leases get no table config: it only classifies the run's own file changes for the statistics, which
 * the S3 events that follow do anyway.
 */
export function deploymentPorts(
  stateTable: string,
  opened: OpenedStore,
  env: Readonly<Record<string, string | undefined>>,
): DeploymentPorts {
  const client = dynamoDbClientFromEnv(env);
  return {
    stateTable,
    journal: new DynamoJournal({
      client,
      tableName: stateTable,
      manifests: { store: opened.store, prefix: journalManifestPrefix(opened.workRoot) },
    }),
    leases: new DynamoPartitionLease({ client, tableName: stateTable, tables: [], policies: new Map() }),
  };
}
