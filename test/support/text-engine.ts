// Test helper: a stand-in Parquet engine over text objects whose lines are rows, for commit tests that need
// the engine's rewrite only to re-create an input from outputs (delete-rebuild undo). It honours what the
// real one promises there: inputs in order, deleted positions dropped, one output, a verify that re-reads it.
import { createHash } from 'node:crypto';
import { InvalidInputError, VerificationError } from '../../functions/core/errors.js';
import type { GroupFingerprint } from '../../functions/core/fingerprint/fingerprint.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import type { ParquetEngine } from '../../functions/ports/parquet-engine.js';

/** The rows of a text object: its non-empty lines. */
export function textRows(bytes: Uint8Array): string[] {
  return new TextDecoder().decode(bytes).split('\n').filter(Boolean);
}

function fingerprintOf(rows: readonly string[]): GroupFingerprint {
  const hash = createHash('sha256')
    .update([...rows].sort().join('\n'))
    .digest('hex')
    .slice(0, 16);
  return { kind: 'multiset-v1', rows: rows.length, schemaFingerprint: 'text', nullCounts: {}, hash };
}

/** Rewrites text inputs (minus their deleted lines) into outputs; `rewrites` counts the calls. */
export function textEngine(): Pick<ParquetEngine, 'rewriteGroup' | 'verifyOutputs'> & {
  rewrites: number;
  /** Refuse to cut more than one output, as the real engine does for outputs of several schema runs. */
  oneOutputOnly: boolean;
} {
  const engine = {
    rewrites: 0,
    oneOutputOnly: false,
    async rewriteGroup(
      io: Parameters<ParquetEngine['rewriteGroup']>[0],
      group: Parameters<ParquetEngine['rewriteGroup']>[1],
      options: Parameters<ParquetEngine['rewriteGroup']>[2],
    ) {
      engine.rewrites += 1;
      const rows: string[] = [];
      for (const file of group.files) {
        const lines = textRows(await io.source.get(file.key));
        rows.push(...lines.filter((_, i) => file.deleted?.has(i) !== true));
      }
      const cuts = options.outputRows ?? [rows.length];
      if (cuts.reduce((n, r) => n + r, 0) !== rows.length || (engine.oneOutputOnly && cuts.length > 1)) {
        throw new InvalidInputError(`cannot cut ${rows.length} rows into outputs of ${cuts.join(', ')}`);
      }
      const outputs = [];
      let at = 0;
      for (const [index, count] of cuts.entries()) {
        const key = options.outputKey(index);
        const { etag } = await io.target.put(key, `${rows.slice(at, at + count).join('\n')}\n`);
        at += count;
        outputs.push({ key, etag, size: (await io.target.head(key))?.size ?? 0, rows: count });
      }
      return { outputs, fingerprint: fingerprintOf(rows), bytesRead: 0 };
    },
    async verifyOutputs(
      store: ObjectStore,
      outputs: readonly { readonly key: string; readonly size: number }[],
      expected: GroupFingerprint,
    ) {
      const rows: string[] = [];
      for (const output of outputs) rows.push(...textRows(await store.get(output.key)));
      const found = fingerprintOf(rows);
      if (JSON.stringify(found) !== JSON.stringify(expected)) {
        throw new VerificationError('text outputs differ from what was read', { found, expected });
      }
      return { outputs: outputs.length, rows: rows.length, bytes: 0, fingerprint: found };
    },
  };
  return engine;
}
