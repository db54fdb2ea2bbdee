// Names the files of a `_delta_log/` folder: commits, classic (single and multi-part) and V2 checkpoints, log
// compactions, `_last_checkpoint`; anything else there (`.crc`, `.tmp/`, `_sidecars/`, `_staged_commits/`) is not the log.

/** A Delta version is a 20-digit zero-padded number in every log file name. */
const VERSION = '(\\d{20})';
const COMMIT = new RegExp(`^${VERSION}\\.json$`);
const CLASSIC_CHECKPOINT = new RegExp(`^${VERSION}\\.checkpoint\\.parquet$`);
const MULTI_PART_CHECKPOINT = new RegExp(`^${VERSION}\\.checkpoint\\.(\\d{10})\\.(\\d{10})\\.parquet$`);
const V2_CHECKPOINT = new RegExp(`^${VERSION}\\.checkpoint\\.([0-9A-Fa-f-]{36})\\.(json|parquet)$`);
const COMPACTION = new RegExp(`^${VERSION}\\.${VERSION}\\.compacted\\.json$`);

export const LAST_CHECKPOINT = '_last_checkpoint';

/** One file of the log folder, by what it is. */
export type LogFile =
  | { readonly kind: 'commit'; readonly version: number; readonly name: string }
  | {
      readonly kind: 'checkpoint';
      readonly version: number;
      readonly name: string;
      /** 1-based part and total parts; 1 of 1 for a single-file or V2 checkpoint. */
      readonly part: number;
      readonly parts: number;
      /** Whether the name is a V2 checkpoint's (`n.checkpoint.<uuid>.json|parquet`). */
      readonly v2: boolean;
    }
  | { readonly kind: 'compaction'; readonly from: number; readonly to: number; readonly name: string }
  | { readonly kind: 'lastCheckpoint'; readonly name: string };

function version(digits: string | undefined): number {
  const n = Number(digits);
  // 20 digits can exceed 2^53; a table that old does not exist, and a wrong number must not pass silently.
  if (!Number.isSafeInteger(n)) throw new RangeError(`Delta version ${digits} is not a safe integer`);
  return n;
}

/** What a name directly in `_delta_log/` is, or undefined when it is not part of the log. */
export function classifyLogFile(name: string): LogFile | undefined {
  if (name === LAST_CHECKPOINT) return { kind: 'lastCheckpoint', name };
  let m = COMMIT.exec(name);
  if (m) return { kind: 'commit', version: version(m[1]), name };
  m = CLASSIC_CHECKPOINT.exec(name);
  if (m) return { kind: 'checkpoint', version: version(m[1]), name, part: 1, parts: 1, v2: false };
  m = MULTI_PART_CHECKPOINT.exec(name);
  if (m)
    return {
      kind: 'checkpoint',
      version: version(m[1]),
      name,
      part: Number(m[2]),
      parts: Number(m[3]),
      v2: false,
    };
  m = V2_CHECKPOINT.exec(name);
  if (m) return { kind: 'checkpoint', version: version(m[1]), name, part: 1, parts: 1, v2: true };
  m = COMPACTION.exec(name);
  if (m) return { kind: 'compaction', from: version(m[1]), to: version(m[2]), name };
  return undefined;
}

/** `00000000000000000007.json`. */
export function commitFileName(v: number): string {
  return `${String(v).padStart(20, '0')}.json`;
}

/** A checkpoint a reader may start from: all its parts are present. */
export interface CompleteCheckpoint {
  readonly version: number;
  /** Part file names in part order (one for single-file and V2 checkpoints). */
  readonly names: readonly string[];
  readonly v2: boolean;
}

/**
 * The checkpoints of a listing whose every part is there, newest first. A multi-part checkpoint missing a part
 * (a writer died mid-way) is not a checkpoint; of several complete checkpoints of one version (a classic and a
 * V2, or two V2 by different writers), any is correct: the one whose names sort first is taken, for determinism.
 */
export function completeCheckpoints(files: readonly LogFile[]): CompleteCheckpoint[] {
  const groups = new Map<
    string,
    { version: number; parts: number; v2: boolean; names: Map<number, string> }
  >();
  for (const f of files) {
    if (f.kind !== 'checkpoint') continue;
    const id = f.v2 ? `${f.version}:${f.name}` : `${f.version}:${f.parts}`;
    let g = groups.get(id);
    if (!g) {
      g = { version: f.version, parts: f.parts, v2: f.v2, names: new Map() };
      groups.set(id, g);
    }
    g.names.set(f.part, f.name);
  }
  const complete: CompleteCheckpoint[] = [];
  for (const g of groups.values()) {
    // Completeness over the parts actually listed, never by counting to the number the name claims: a 0-byte file
    // named `….0000000001.9999999999.parquet` would otherwise cost 10^10 iterations on every read of the log.
    if (g.names.size !== g.parts) continue;
    const parts = [...g.names.keys()].sort((a, b) => a - b);
    if (parts.some((p, i) => p !== i + 1)) continue;
    complete.push({ version: g.version, names: parts.map((p) => g.names.get(p) as string), v2: g.v2 });
  }
  return complete.sort((a, b) => b.version - a.version || (a.names[0] ?? '').localeCompare(b.names[0] ?? ''));
}
