// Test kit for the Delta log reader: an independent reference replay of a fixture's JSON commits (never the code
// under test), copies of fixtures into a MemoryObjectStore, and small synthetic logs for refusals and edge cases.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { openDuckDb } from '../../../../support/duckdb.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';

/** A live file as the reference replay sees it: enough to compare sets exactly. */
export interface ReferenceFile {
  readonly path: string;
  readonly partitionValues: Readonly<Record<string, string | null>>;
  readonly size: number;
  readonly dvId: string | null;
}

/**
 * The live files of `table` at `version`, by replaying its JSON commits 0..version in the simplest way the
 * protocol allows: a file is (decoded path, DV id); an add puts it, a remove deletes it. Sorted by path then DV.
 */
export function referenceReplay(table: string, version: number): ReferenceFile[] {
  const commits: object[][] = [];
  for (let v = 0; v <= version; v += 1) {
    const text = readFileSync(
      join(DELTA_FIXTURES, table, '_delta_log', `${String(v).padStart(20, '0')}.json`),
      'utf8',
    );
    commits.push(
      text
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => JSON.parse(line) as object),
    );
  }
  return referenceReplayOf(commits);
}

/** The same reference replay over commits held in memory (synthetic tables). */
export function referenceReplayOf(commits: readonly (readonly object[])[]): ReferenceFile[] {
  const live = new Map<string, ReferenceFile>();
  for (const actions of commits) {
    for (const raw of actions) {
      const action = raw as Record<string, Record<string, unknown> | undefined>;
      const file = action.add ?? action.remove;
      if (file === undefined) continue;
      const dv = file.deletionVector as
        | { storageType: string; pathOrInlineDv: string; offset?: number }
        | undefined;
      const dvId = dv
        ? `${dv.storageType}${dv.pathOrInlineDv}${dv.offset === undefined ? '' : `@${dv.offset}`}`
        : null;
      const id = `${decodeURIComponent(file.path as string)}|${dvId ?? ''}`;
      if (action.add !== undefined) {
        live.set(id, {
          path: file.path as string,
          partitionValues: (file.partitionValues ?? {}) as Record<string, string | null>,
          size: file.size as number,
          dvId,
        });
      } else {
        live.delete(id);
      }
    }
  }
  return [...live.values()].sort(
    (a, b) => a.path.localeCompare(b.path) || (a.dvId ?? '').localeCompare(b.dvId ?? ''),
  );
}

/** The reader's files in the reference's shape. */
export function asReference(
  files: readonly {
    path: string;
    physicalPartitionValues: Readonly<Record<string, string | null>>;
    size: number;
    deletionVector?: { storageType: string; pathOrInlineDv: string; offset?: number };
  }[],
): ReferenceFile[] {
  return files
    .map((f) => ({
      path: f.path,
      partitionValues: f.physicalPartitionValues,
      size: f.size,
      dvId: f.deletionVector
        ? `${f.deletionVector.storageType}${f.deletionVector.pathOrInlineDv}${f.deletionVector.offset === undefined ? '' : `@${f.deletionVector.offset}`}`
        : null,
    }))
    .sort((a, b) => a.path.localeCompare(b.path) || (a.dvId ?? '').localeCompare(b.dvId ?? ''));
}

/** Every file of a fixture table, copied byte for byte into a fresh MemoryObjectStore under `root`. */
export async function memoryCopy(table: string, root = `${table}/`): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore({ now: () => new Date(0) });
  const base = join(DELTA_FIXTURES, table);
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
    );
  for (const file of walk(base)) await store.put(`${root}${relative(base, file)}`, readFileSync(file));
  return store;
}

/** The JSON-lines text of a commit of these actions. */
export function commitText(actions: readonly object[]): string {
  return `${actions.map((a) => JSON.stringify(a)).join('\n')}\n`;
}

/** `_delta_log/000…N.json` under `root`. */
export function commitKey(root: string, version: number): string {
  return `${root}_delta_log/${String(version).padStart(20, '0')}.json`;
}

export const SCHEMA_ID_LONG = JSON.stringify({
  type: 'struct',
  fields: [
    { name: 'id', type: 'long', nullable: true, metadata: {} },
    { name: 'day', type: 'string', nullable: true, metadata: {} },
  ],
});

/** A metaData action of a table partitioned by `day`, with `configuration` merged in. */
export function metaDataAction(configuration: Record<string, string> = {}): object {
  return {
    metaData: {
      id: 'synthetic',
      format: { provider: 'parquet', options: {} },
      schemaString: SCHEMA_ID_LONG,
      partitionColumns: ['day'],
      configuration,
      createdTime: 1,
    },
  };
}

export function protocolAction(
  minReaderVersion: number,
  minWriterVersion: number,
  readerFeatures?: string[],
  writerFeatures?: string[],
): object {
  return {
    protocol: {
      minReaderVersion,
      minWriterVersion,
      ...(readerFeatures ? { readerFeatures } : {}),
      ...(writerFeatures ? { writerFeatures } : {}),
    },
  };
}

export function addAction(path: string, day: string | null, extra: Record<string, unknown> = {}): object {
  return {
    add: { path, partitionValues: { day }, size: 100, modificationTime: 1, dataChange: true, ...extra },
  };
}

export function removeAction(
  path: string,
  deletionTimestamp: number,
  extra: Record<string, unknown> = {},
): object {
  return { remove: { path, deletionTimestamp, dataChange: true, ...extra } };
}

/** A MemoryObjectStore holding one synthetic table at `root` with these commits (version = index). */
export async function syntheticTable(
  root: string,
  commits: readonly (readonly object[])[],
): Promise<MemoryObjectStore> {
  const store = new MemoryObjectStore({ now: () => new Date(0) });
  for (const [version, actions] of commits.entries())
    await store.put(commitKey(root, version), commitText(actions));
  return store;
}

// ---------------------------------------------------------------------------------------------------------
// Checkpoint Parquet files written by DuckDB (an independent writer), in the columns Delta checkpoints use
// ---------------------------------------------------------------------------------------------------------

const PROTOCOL_T =
  'STRUCT(minReaderVersion INTEGER, minWriterVersion INTEGER, readerFeatures VARCHAR[], writerFeatures VARCHAR[])';
const META_T =
  'STRUCT(id VARCHAR, format STRUCT(provider VARCHAR, options MAP(VARCHAR, VARCHAR)), schemaString VARCHAR, partitionColumns VARCHAR[], configuration MAP(VARCHAR, VARCHAR), createdTime BIGINT)';
const ADD_T =
  'STRUCT(path VARCHAR, partitionValues MAP(VARCHAR, VARCHAR), size BIGINT, modificationTime BIGINT, dataChange BOOLEAN, stats VARCHAR)';
const REMOVE_T = 'STRUCT(path VARCHAR, deletionTimestamp BIGINT, dataChange BOOLEAN)';

function lit(value: string | null): string {
  return value === null ? 'NULL' : `'${value.replaceAll("'", "''")}'`;
}

function list(values: readonly string[] | undefined): string {
  return values === undefined ? 'NULL' : `[${values.map(lit).join(', ')}]::VARCHAR[]`;
}

/** One row of a checkpoint or sidecar, in the shape of the synthetic actions above. */
function rowSql(action: object, withMetaColumns: boolean): string {
  const a = action as Record<string, Record<string, unknown> | undefined>;
  const nulls = {
    protocol: `NULL::${PROTOCOL_T}`,
    metaData: `NULL::${META_T}`,
    add: `NULL::${ADD_T}`,
    remove: `NULL::${REMOVE_T}`,
  };
  const row = { ...nulls };
  if (a.protocol) {
    const p = a.protocol as {
      minReaderVersion: number;
      minWriterVersion: number;
      readerFeatures?: string[];
      writerFeatures?: string[];
    };
    row.protocol = `{'minReaderVersion': ${p.minReaderVersion}, 'minWriterVersion': ${p.minWriterVersion}, 'readerFeatures': ${list(p.readerFeatures)}, 'writerFeatures': ${list(p.writerFeatures)}}::${PROTOCOL_T}`;
  }
  if (a.metaData) {
    const m = a.metaData as {
      id: string;
      schemaString: string;
      partitionColumns: string[];
      configuration: Record<string, string>;
    };
    const config = Object.entries(m.configuration).map(([k, v]) => `${lit(k)}: ${lit(v)}`);
    row.metaData = `{'id': ${lit(m.id)}, 'format': {'provider': 'parquet', 'options': MAP {}}, 'schemaString': ${lit(m.schemaString)}, 'partitionColumns': ${list(m.partitionColumns)}, 'configuration': MAP {${config.join(', ')}}, 'createdTime': 1}::${META_T}`;
  }
  if (a.add) {
    const f = a.add as {
      path: string;
      partitionValues: Record<string, string | null>;
      size: number;
      stats?: string;
    };
    const pv = Object.entries(f.partitionValues).map(([k, v]) => `${lit(k)}: ${lit(v)}`);
    row.add = `{'path': ${lit(f.path)}, 'partitionValues': MAP {${pv.join(', ')}}, 'size': ${f.size}, 'modificationTime': 1, 'dataChange': false, 'stats': ${lit(f.stats ?? null)}}::${ADD_T}`;
  }
  if (a.remove) {
    const r = a.remove as { path: string; deletionTimestamp: number };
    row.remove = `{'path': ${lit(r.path)}, 'deletionTimestamp': ${r.deletionTimestamp}, 'dataChange': true}::${REMOVE_T}`;
  }
  return withMetaColumns
    ? `(${row.protocol}, ${row.metaData}, ${row.add}, ${row.remove})`
    : `(${row.add}, ${row.remove})`;
}

/**
 * The bytes of a Parquet file of these actions written by DuckDB: checkpoint columns (protocol, metaData, add,
 * remove), or only add/remove for a V2 sidecar.
 */
export async function actionsParquet(
  actions: readonly object[],
  kind: 'checkpoint' | 'sidecar',
): Promise<Uint8Array> {
  const duck = await openDuckDb();
  const dir = mkdtempSync(join(tmpdir(), 'delta-checkpoint-'));
  try {
    const path = join(dir, 'actions.parquet');
    const columns = kind === 'checkpoint' ? 'protocol, metaData, "add", "remove"' : '"add", "remove"';
    const values = actions.map((a) => rowSql(a, kind === 'checkpoint')).join(',\n');
    await duck.writeParquet(`SELECT * FROM (VALUES ${values}) AS t(${columns})`, path);
    return readFileSync(path);
  } finally {
    duck.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
