// Replays Delta actions into table state as PROTOCOL.md "Action Reconciliation" defines it: a logical file is its
// path plus its deletion vector's unique id, the newest reference wins, and at most one live add per path.
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

/**
 * Mutable state of a replay: `applyCommit` one version after another (a checkpoint counts as one). The order of
 * actions inside one commit is not significant by the protocol, so a commit that both adds and removes the same
 * logical file is ambiguous and refused, and everything else gives the same state in any order.
 */
export class LogReplay {
  readonly live = new Map<string, AddAction>();
  readonly tombstones = new Map<string, RemoveAction>();
  readonly transactions = new Map<string, TxnAction>();
  readonly domains = new Map<string, DomainMetadataAction>();
  protocol: ProtocolAction | undefined;
  metadata: MetadataAction | undefined;
  /** The logical key of the live add of each decoded path: the add collection has unique paths. */
  private readonly liveKeyOfPath = new Map<string, string>();

  /**
   * `decode` turns a log path into the form files are compared by (see {@link logicalFileKey}); `invalid` builds
   * the error for an invalid commit (the caller knows the table and file).
   */
  constructor(
    private readonly decode: (path: string) => string,
    private readonly invalid: (reason: string) => Error,
  ) {}

  /** Applies one version's actions (or a checkpoint's); `label` names it in errors. */
  applyCommit(actions: readonly DeltaAction[], label: string): void {
    const added = new Set<string>();
    for (const a of actions)
      if (a.kind === 'add') added.add(logicalFileKey(this.decode(a.add.path), a.add.deletionVector));
    for (const a of actions) {
      if (a.kind !== 'remove') continue;
      const key = logicalFileKey(this.decode(a.remove.path), a.remove.deletionVector);
      if (added.has(key)) {
        throw this.invalid(
          `${label} both adds and removes the logical file ${a.remove.path}${a.remove.deletionVector === undefined ? '' : ' (same deletion vector)'}, which the protocol does not allow in one version`,
        );
      }
    }
    for (const action of actions) this.apply(action);
  }

  /**
   * Applies one piece of a checkpoint (a row group, a part, a sidecar), which must be the first thing applied: a
   * checkpoint is one version read in pieces, so besides {@link applyCommit}'s check within the piece, an add of a
   * logical file an earlier piece removed, or a remove of one it added, is the same file both added and removed.
   */
  applyCheckpointPiece(actions: readonly DeltaAction[], label: string): void {
    for (const a of actions) {
      const clash =
        a.kind === 'add'
          ? this.tombstones.has(logicalFileKey(this.decode(a.add.path), a.add.deletionVector))
          : a.kind === 'remove' &&
            this.live.has(logicalFileKey(this.decode(a.remove.path), a.remove.deletionVector));
      if (clash) {
        const path = a.kind === 'add' ? a.add.path : a.kind === 'remove' ? a.remove.path : '';
        throw this.invalid(
          `${label} both adds and removes the logical file ${path}, which the protocol does not allow in one version`,
        );
      }
    }
    this.applyCommit(actions, label);
  }

  /** Actions the state holds (live files, tombstones, transactions, domains): what its memory grows with. */
  get size(): number {
    return this.live.size + this.tombstones.size + this.transactions.size + this.domains.size;
  }

  private apply(action: DeltaAction): void {
    switch (action.kind) {
      case 'add': {
        const path = this.decode(action.add.path);
        const key = logicalFileKey(path, action.add.deletionVector);
        // "the newest (path, dvId) pair encountered for each path": another DV of the same path is superseded.
        const previous = this.liveKeyOfPath.get(path);
        if (previous !== undefined && previous !== key) this.live.delete(previous);
        this.live.set(key, action.add);
        this.liveKeyOfPath.set(path, key);
        this.tombstones.delete(key);
        return;
      }
      case 'remove': {
        const path = this.decode(action.remove.path);
        const key = logicalFileKey(path, action.remove.deletionVector);
        if (this.live.delete(key) && this.liveKeyOfPath.get(path) === key) this.liveKeyOfPath.delete(path);
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
        // commitInfo describes the commit; sidecar and checkpointMetadata describe a V2 checkpoint and do not
        // take part in replay (and are not allowed in commits).
        return;
    }
  }
}
