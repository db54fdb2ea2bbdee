// Proves verifyOutputs catches outputs that differ from the inputs in ways row counts cannot see:
// one changed value, a value swapped between two rows, a dropped row, and changed key-value metadata.

import { tableFromIPC, tableToIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { rewriteGroup } from '../../../../functions/core/rewrite/rewrite.js';
import { pw } from '../../../../functions/core/rewrite/wasm.js';
import { verifyOutputs } from '../../../../functions/core/verify/verify.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';

async function rewritten() {
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
    { groupId: 'v', files },
    { outputKey: (i) => `out/${i}.parquet`, codec: 'zstd' },
  );
  return { target, result };
}

/** Rewrites one stored output through Arrow JS, letting `edit` change the decoded rows. */
async function tamper(
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

async function problemsOf(act: Promise<unknown>): Promise<string[]> {
  const err = await act.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(VerificationError);
  return (err as VerificationError).details.problems as string[];
}

describe('verifyOutputs', () => {
  it('passes untouched outputs and reports the recomputed fingerprint', async () => {
    // Prepare
    const { target, result } = await rewritten();

    // Act
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(report.rows).toBe(2_000);
    expect(report.fingerprint.hash).toBe(result.fingerprint.hash);
  });

  it('catches one changed value even though rows, nulls and schema match', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      const ids = c.user_id as bigint[];
      ids[17] = (ids[17] as bigint) + 1n;
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^row hash/);
  });

  it('catches two rows swapping a value, which keeps every column multiset intact', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      const ids = c.user_id as bigint[];
      const j = ids.findIndex((v) => v !== ids[0]);
      [ids[0], ids[j]] = [ids[j] as bigint, ids[0] as bigint];
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems).toEqual([expect.stringMatching(/^row hash/)]);
  });

  it('catches a dropped row and changed key-value metadata', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(
      target,
      out.key,
      (c) => {
        for (const v of Object.values(c)) v.pop();
      },
      new Map([['writer', 'someone else']]),
    );

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems.some((p) => p.startsWith('rows:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('schema:'))).toBe(true);
    expect(problems.some((p) => p.startsWith('row hash'))).toBe(true);
  });
});
