// Replays Delta actions into table state as PROTOCOL.md "Action Reconciliation" defines it: a logical file is its
// path plus its deletion vector's unique id; the last add or remove of it wins; the last protocol and metaData win.
import {
  type AddAction,
  type DeletionVector,
  type DeltaAction,
  type DomainMetadataAction,
  deletionVectorUniqueId,
  type MetadataAction,
  type ProtocolAction,
  type RemoveAction,
  type TxnAction,
} from './actions.js';

/**
 * The key of a logical file. Paths are compared decoded (`x=A%252FA` and a writer that spells the same file
 * `x=A%2FA`-decoded once are one file), as delta-rs and the Delta Kernel do.
 */
export function logicalFileKey(decodedPath: string, dv: DeletionVector | undefined): string {
  return dv === undefined ? decodedPath : `${decodedPath}\u0000${deletionVectorUniqueId(dv)}`;
}

/** Mutable state of a replay; `apply` in log order, one version after another. */
export class LogReplay {
  readonly live = new Map<string, AddAction>();
  readonly tombstones = new Map<string, RemoveAction>();
  readonly transactions = new Map<string, TxnAction>();
  readonly domains = new Map<string, DomainMetadataAction>();
  protocol: ProtocolAction | undefined;
  metadata: MetadataAction | undefined;

  /** `decode` turns a log path into the form files are compared by (see {@link logicalFileKey}). */
  constructor(private readonly decode: (path: string) => string) {}

  apply(action: DeltaAction): void {
    switch (action.kind) {
      case 'add': {
        const key = logicalFileKey(this.decode(action.add.path), action.add.deletionVector);
        this.live.set(key, action.add);
        this.tombstones.delete(key);
        return;
      }
      case 'remove': {
        const key = logicalFileKey(this.decode(action.remove.path), action.remove.deletionVector);
        this.live.delete(key);
        this.tombstones.set(key, action.remove);
        return;
      }
      case 'protocol':
        this.protocol = action.protocol;
        return;
      case 'metaData':
        this.metadata = action.metaData;
        return;
      case 'txn':
        this.transactions.set(action.txn.appId, action.txn);
        return;
      case 'domainMetadata':
        if (action.domainMetadata.removed) this.domains.delete(action.domainMetadata.domain);
        else this.domains.set(action.domainMetadata.domain, action.domainMetadata);
        return;
      default:
        // commitInfo, sidecar and checkpointMetadata describe the log, not the table state.
        return;
    }
  }
}
