// Parses Delta log actions (JSON commit lines and checkpoint rows alike) into one typed shape with zod: numbers
// are safe integers, absent and null fields are both `undefined`, and unknown action kinds are skipped, never guessed.
import { z } from 'zod';

/** `null` (checkpoint rows, delta-rs JSON) and a missing field mean the same thing in the log. */
const opt = <T extends z.ZodType>(schema: T) => schema.nullish().transform((v) => v ?? undefined);

const count = z.number().int().nonnegative();
const stringMap = z.record(z.string(), z.string().nullable());

/** A deletion vector descriptor (PROTOCOL.md "Deletion Vector Descriptor Schema"). */
export const deletionVectorSchema = z.object({
  /** `u`: relative path from a Z85-encoded UUID; `i`: inline Z85 bitmap; `p`: absolute path. */
  storageType: z.enum(['u', 'i', 'p']),
  pathOrInlineDv: z.string(),
  offset: opt(count),
  sizeInBytes: count,
  cardinality: count,
});
export type DeletionVector = z.infer<typeof deletionVectorSchema>;

export const addSchema = z.object({
  path: z.string().min(1),
  partitionValues: opt(stringMap).transform((v) => v ?? {}),
  size: count,
  modificationTime: z.number().int(),
  dataChange: z.boolean(),
  stats: opt(z.string()),
  /** Checkpoints may carry the stats as a struct instead of (or beside) the JSON string. */
  stats_parsed: opt(z.record(z.string(), z.unknown())),
  tags: opt(stringMap),
  deletionVector: opt(deletionVectorSchema),
  baseRowId: opt(z.number().int()),
  defaultRowCommitVersion: opt(z.number().int()),
  clusteringProvider: opt(z.string()),
});
export type AddAction = z.infer<typeof addSchema>;

export const removeSchema = z.object({
  path: z.string().min(1),
  deletionTimestamp: opt(z.number().int()),
  dataChange: z.boolean(),
  extendedFileMetadata: opt(z.boolean()),
  partitionValues: opt(stringMap),
  size: opt(count),
  stats: opt(z.string()),
  tags: opt(stringMap),
  deletionVector: opt(deletionVectorSchema),
  baseRowId: opt(z.number().int()),
  defaultRowCommitVersion: opt(z.number().int()),
});
export type RemoveAction = z.infer<typeof removeSchema>;

export const metadataSchema = z.object({
  id: z.string(),
  name: opt(z.string()),
  description: opt(z.string()),
  format: z.object({ provider: z.string(), options: opt(z.record(z.string(), z.string())) }),
  schemaString: z.string(),
  partitionColumns: z.array(z.string()),
  configuration: opt(z.record(z.string(), z.string())).transform((v) => v ?? {}),
  createdTime: opt(z.number().int()),
});
export type MetadataAction = z.infer<typeof metadataSchema>;

export const protocolSchema = z.object({
  minReaderVersion: z.number().int().positive(),
  minWriterVersion: z.number().int().positive(),
  readerFeatures: opt(z.array(z.string())),
  writerFeatures: opt(z.array(z.string())),
});
export type ProtocolAction = z.infer<typeof protocolSchema>;

export const txnSchema = z.object({
  appId: z.string(),
  version: z.number().int(),
  lastUpdated: opt(z.number().int()),
});
export type TxnAction = z.infer<typeof txnSchema>;

export const domainMetadataSchema = z.object({
  domain: z.string(),
  configuration: z.string(),
  removed: z.boolean(),
});
export type DomainMetadataAction = z.infer<typeof domainMetadataSchema>;

/** Only the fields the reader uses; commitInfo is free-form by the protocol. */
export const commitInfoSchema = z.looseObject({
  timestamp: opt(z.number().int()),
  inCommitTimestamp: opt(z.number().int()),
  operation: opt(z.string()),
});
export type CommitInfoAction = z.infer<typeof commitInfoSchema>;

/** A V2 checkpoint's pointer to a Parquet file of add/remove actions under `_delta_log/_sidecars/`. */
export const sidecarSchema = z.object({
  path: z.string().min(1),
  sizeInBytes: count,
  modificationTime: z.number().int(),
  tags: opt(stringMap),
});
export type SidecarAction = z.infer<typeof sidecarSchema>;

export const checkpointMetadataSchema = z.object({
  version: z.number().int().nonnegative(),
  tags: opt(stringMap),
});

/** One action of the log, by kind. `cdc` files are change data, not table state, and are skipped like unknown kinds. */
export type DeltaAction =
  | { readonly kind: 'add'; readonly add: AddAction }
  | { readonly kind: 'remove'; readonly remove: RemoveAction }
  | { readonly kind: 'metaData'; readonly metaData: MetadataAction }
  | { readonly kind: 'protocol'; readonly protocol: ProtocolAction }
  | { readonly kind: 'txn'; readonly txn: TxnAction }
  | { readonly kind: 'domainMetadata'; readonly domainMetadata: DomainMetadataAction }
  | { readonly kind: 'commitInfo'; readonly commitInfo: CommitInfoAction }
  | { readonly kind: 'sidecar'; readonly sidecar: SidecarAction }
  | { readonly kind: 'checkpointMetadata'; readonly version: number };

const ACTION_PARSERS = {
  add: (v: unknown): DeltaAction => ({ kind: 'add', add: addSchema.parse(v) }),
  remove: (v: unknown): DeltaAction => ({ kind: 'remove', remove: removeSchema.parse(v) }),
  metaData: (v: unknown): DeltaAction => ({ kind: 'metaData', metaData: metadataSchema.parse(v) }),
  protocol: (v: unknown): DeltaAction => ({ kind: 'protocol', protocol: protocolSchema.parse(v) }),
  txn: (v: unknown): DeltaAction => ({ kind: 'txn', txn: txnSchema.parse(v) }),
  domainMetadata: (v: unknown): DeltaAction => ({
    kind: 'domainMetadata',
    domainMetadata: domainMetadataSchema.parse(v),
  }),
  commitInfo: (v: unknown): DeltaAction => ({ kind: 'commitInfo', commitInfo: commitInfoSchema.parse(v) }),
  sidecar: (v: unknown): DeltaAction => ({ kind: 'sidecar', sidecar: sidecarSchema.parse(v) }),
  checkpointMetadata: (v: unknown): DeltaAction => ({
    kind: 'checkpointMetadata',
    version: checkpointMetadataSchema.parse(v).version,
  }),
} as const;

/**
 * The actions of one log record: a JSON line holds exactly one, a checkpoint row holds one non-null column.
 * Unknown kinds (`cdc`, a future action) are skipped: the protocol gates every action that changes what a
 * reader must do behind a table feature, and features are checked separately (protocol.ts).
 * @throws z.ZodError when a known action is malformed; the caller names the file.
 */
export function parseActions(record: Readonly<Record<string, unknown>>): DeltaAction[] {
  const actions: DeltaAction[] = [];
  for (const [kind, parse] of Object.entries(ACTION_PARSERS)) {
    const value = record[kind];
    if (value !== undefined && value !== null) actions.push(parse(value));
  }
  return actions;
}

/** The parsed column statistics of an `add` (PROTOCOL.md "Per-file Statistics"); undefined parts were not collected. */
export interface FileStats {
  readonly numRecords?: number;
  readonly minValues?: Readonly<Record<string, unknown>>;
  readonly maxValues?: Readonly<Record<string, unknown>>;
  readonly nullCount?: Readonly<Record<string, unknown>>;
  /** False when a deletion vector made min/max only bounds, not exact values. */
  readonly tightBounds?: boolean;
}

const statsSchema = z.object({
  numRecords: opt(count),
  minValues: opt(z.record(z.string(), z.unknown())),
  maxValues: opt(z.record(z.string(), z.unknown())),
  nullCount: opt(z.record(z.string(), z.unknown())),
  tightBounds: opt(z.boolean()),
});

/**
 * The stats of an add, from its JSON string or a checkpoint's `stats_parsed`. Stats are optional in Delta and a
 * writer's malformed stats must not hide a live file, so anything unparseable yields undefined (rows unknown).
 */
export function parseStats(add: Pick<AddAction, 'stats' | 'stats_parsed'>): FileStats | undefined {
  let raw: unknown = add.stats_parsed;
  if (add.stats !== undefined) {
    try {
      raw = JSON.parse(add.stats);
    } catch {
      return undefined;
    }
  }
  if (raw === undefined) return undefined;
  const parsed = statsSchema.safeParse(raw);
  if (!parsed.success) return undefined;
  const s = parsed.data;
  return {
    ...(s.numRecords === undefined ? {} : { numRecords: s.numRecords }),
    ...(s.minValues === undefined ? {} : { minValues: s.minValues }),
    ...(s.maxValues === undefined ? {} : { maxValues: s.maxValues }),
    ...(s.nullCount === undefined ? {} : { nullCount: s.nullCount }),
    ...(s.tightBounds === undefined ? {} : { tightBounds: s.tightBounds }),
  };
}

/**
 * The protocol's unique id of a deletion vector: storage type + path or inline data, plus `@offset` when there
 * is one. Together with the path it identifies a logical file (PROTOCOL.md "Reconciliation").
 */
export function deletionVectorUniqueId(dv: DeletionVector): string {
  return `${dv.storageType}${dv.pathOrInlineDv}${dv.offset === undefined ? '' : `@${dv.offset}`}`;
}
