// Fixtures of the verification tests: a rewritten sample group, an output tampered with through
// Arrow JS, and the problems a VerificationError lists.

import { tableFromIPC, tableToIPC } from 'apache-arrow';
import { expect } from 'vitest';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../functions/adapters/parquet-wasm/rewrite.js';
import { pw } from '../../functions/adapters/parquet-wasm/wasm.js';
import { VerificationError } from '../../functions/core/errors.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';

/** 2,000 sample rows in four files, rewritten into `outputs` outputs (default: as many as the target size gives). */
export async function rewritten(outputs?: number) {
  const source = new MemoryObjectStore();
  const target = new MemoryObjectStore();
  const files: { key: string; size: number; etag: string }[] = [];
  await writeSampleLake(
    async (key, bytes) => {
      const { etag } = await source.put(key, bytes);
      files.push({ key, size: bytes.length, etag });
    },
    { files: 4, rows: 500, partitions: 'single', seed: 3 },
  );
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'v', files, ...(outputs === undefined ? {} : { expectedOutputFiles: outputs }) },
    { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd' },
  );
  return { target, result };
}

/** Rewrites one stored output through Arrow JS, letting `edit` change the decoded rows. */
export async function tamper(
  store: MemoryObjectStore,
  key: string,
  edit: (columns: Record<string, unknown[]>) => void,
  kv?: Map<string, string>,
): Promise<{ key: string; size: number }> {
  const original = await store.get(key);
  const table = tableFromIPC(pw.readParquet(original).intoIPCStream());
  const columns: Record<string, unknown[]> = {};
  for (const f of table.schema.fields) columns[f.name] = [...(table.getChild(f.name)?.toArray() ?? [])];
  edit(columns);
  const { Table, vectorFromArray } = await import('apache-arrow');
  const vectors = Object.fromEntries(
    table.schema.fields.map((f) => [f.name, vectorFromArray(columns[f.name] as never[], f.type)]),
  );
  const edited = new Table(vectors);
  const meta = pw.readParquet(original).schema.metadata();
  const props = new pw.WriterPropertiesBuilder()
    .setCompression(pw.Compression.ZSTD)
    .setKeyValueMetadata(kv ?? new Map([...meta.entries()].filter(([k]) => k !== 'ARROW:schema')))
    .build();
  const bytes = pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(edited, 'stream')), props);
  await store.put(key, bytes);
  return { key, size: bytes.length };
}

export async function problemsOf(act: Promise<unknown>): Promise<string[]> {
  const err = await act.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VerificationError);
  return (err as VerificationError).details.problems as string[];
}
