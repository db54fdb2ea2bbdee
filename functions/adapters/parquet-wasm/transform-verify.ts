// The verification of a partition rewrite (see core/transform/rederive.ts), on hyparquet rather than the
// parquet-wasm decoder the rewrite reads with: the expected fingerprint is the inputs' rows re-derived through the
// plan's interpreter, the actual one the outputs' rows as stored. The rewrite's own batches are never looked at.
import { createHash } from 'node:crypto';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { compressors } from 'hyparquet-compressors';
import { CorruptInputError, VerificationError } from '../../core/errors.js';
import type { OrderedFingerprint } from '../../core/fingerprint/fingerprint.js';
import type { Value } from '../../core/transform/cast.js';
import { ColumnDigests, differingColumns } from '../../core/transform/digest.js';
import { rederiveRow } from '../../core/transform/rederive.js';
import { type InputColumn, inputColumnsOf, type TransformPlan } from '../../core/transform/spec.js';
import type { ObjectStore } from '../../ports/object-store.js';
import type { VerificationReport } from '../../ports/parquet-engine.js';

/** Times as the file stores them (micros, days), so nothing is rounded to milliseconds before it is compared. */
const RAW_TIME = {
  timestampFromMilliseconds: (v: bigint) => v * 1000n,
  timestampFromMicroseconds: (v: bigint) => v,
  timestampFromNanoseconds: (v: bigint) => v,
  dateFromDays: (v: number) => v,
};

/** The kind of fingerprint a rewrite records; the segments' digests are column digests (core/transform/digest.ts). */
const KIND = 'ordered-columns-v1' as const;

async function decodedRows(
  store: ObjectStore,
  key: string,
  limit?: number,
): Promise<{ names: string[]; rows: Record<string, unknown>[]; columns: InputColumn[] }> {
  const bytes = await store.get(key);
  const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
  try {
    const metadata = parquetMetadata(file);
    const root = metadata.schema[0];
    const names: string[] = [];
    // Top-level names: walk the flat schema list, skipping each group's descendants.
    let i = 1;
    const skip = (at: number): number => {
      let next = at + 1;
      for (let c = 0; c < (metadata.schema[at]?.num_children ?? 0); c++) next = skip(next);
      return next;
    };
    for (let c = 0; c < (root?.num_children ?? 0); c++) {
      names.push(metadata.schema[i]?.name ?? '');
      i = skip(i);
    }
    const rows = (await parquetReadObjects({
      file,
      metadata,
      compressors,
      parsers: RAW_TIME,
      ...(limit === undefined ? {} : { rowEnd: Math.min(limit, Number(metadata.num_rows)) }),
    })) as Record<string, unknown>[];
    return { names, rows, columns: inputColumnsOf(metadata.schema) };
  } catch (err) {
    throw new CorruptInputError(
      key,
      `it could not be decoded to verify the rewrite (${err instanceof Error ? err.message : String(err)})`,
    );
  }
}

/** A decoded input value as the interpreter takes it: dates and timestamps tagged, int32 as an exact integer. */
function asValue(v: unknown, column: InputColumn | undefined): Value {
  if (v === null || v === undefined) return null;
  if (column?.type === 'date') return { kind: 'date', days: Number(v) };
  if (column?.type === 'timestamp') return { kind: 'timestamp', micros: BigInt(v as bigint) };
  if (column?.type === 'int' && typeof v === 'number') return BigInt(v);
  return v as Value;
}

/** A re-derived value as a reader decodes the written column (an int32 column reads back as a number). */
function asWritten(v: Value, type: string | undefined): unknown {
  return type === 'int32' && typeof v === 'bigint' ? Number(v) : v;
}

function schemaFingerprintOf(names: readonly string[]): string {
  return `transform:${createHash('sha256').update(JSON.stringify(names)).digest('hex').slice(0, 32)}`;
}

function fingerprintOf(
  segments: { rows: number; digests: ColumnDigests }[],
  names: readonly string[],
): OrderedFingerprint {
  const nullCounts: Record<string, number> = {};
  const recorded = segments.map((s) => {
    for (const [c, n] of Object.entries(s.digests.nullCounts())) nullCounts[c] = (nullCounts[c] ?? 0) + n;
    return { rows: s.rows, digest: s.digests.finish() };
  });
  const hash = createHash('sha256');
  for (const s of recorded) hash.update(`${s.rows}:${s.digest}\n`);
  return {
    kind: KIND,
    rows: recorded.reduce((n, s) => n + s.rows, 0),
    schemaFingerprint: schemaFingerprintOf(names),
    nullCounts,
    hash: hash.digest('hex'),
    segments: recorded,
  };
}

/**
 * What the outputs must hold, one segment per output: the rows of its inputs (`outputs[n]`, in the order the rewrite
 * wrote them), each re-derived through the plan from an independent decode of the input.
 * @throws TransformValueError naming the file, row, column and value the plan cannot write.
 */
export async function expectedFingerprint(
  store: ObjectStore,
  outputs: readonly (readonly { readonly key: string }[])[],
  plan: TransformPlan,
  columns: readonly InputColumn[],
): Promise<OrderedFingerprint> {
  const byName = new Map(columns.map((c) => [c.name, c]));
  const names = plan.columns.map((c) => c.name);
  const written = plan.columns.map((c) =>
    c.kind === 'cast' ? c.to : c.kind === 'copy' ? undefined : c.type,
  );
  const segments: { rows: number; digests: ColumnDigests }[] = [];
  for (const inputs of outputs) {
    const digests = new ColumnDigests(names);
    let count = 0;
    for (const input of inputs) {
      const { rows } = await decodedRows(store, input.key);
      for (const [index, row] of rows.entries()) {
        const values: Record<string, Value> = {};
        for (const [name, v] of Object.entries(row)) values[name] = asValue(v, byName.get(name));
        const derived = rederiveRow(plan, values, input.key, index);
        // Copied columns are compared as decoded (the input's own representation), the rest as written.
        digests.add(
          plan.columns.map((c, i) =>
            c.kind === 'copy' ? row[c.source] : asWritten(derived[i] ?? null, written[i]),
          ),
        );
      }
      count += rows.length;
    }
    segments.push({ rows: count, digests });
  }
  return fingerprintOf(segments, names);
}

/**
 * The outputs re-read (hyparquet) and compared with `expected`, output by output and column by column.
 * @throws VerificationError naming each output and the columns that differ, or a row count or schema that does.
 */
export async function verifyTransformOutputs(
  store: ObjectStore,
  outputs: readonly { readonly key: string; readonly size: number }[],
  expected: OrderedFingerprint,
): Promise<VerificationReport> {
  const segments: { rows: number; digests: ColumnDigests }[] = [];
  let names: string[] = [];
  const problems: string[] = [];
  for (const [index, output] of outputs.entries()) {
    const decoded = await decodedRows(store, output.key);
    names = decoded.names;
    const digests = new ColumnDigests(decoded.names);
    for (const row of decoded.rows) digests.add(decoded.names.map((n) => row[n]));
    segments.push({ rows: decoded.rows.length, digests });
    const want = expected.segments[index];
    if (want === undefined || !('digest' in want)) {
      problems.push(`${output.key}: no output was expected at position ${index + 1}`);
      continue;
    }
    if (want.rows !== decoded.rows.length)
      problems.push(`${output.key}: ${decoded.rows.length} rows, ${want.rows} expected`);
    const actual = digests.finish();
    if (actual !== want.digest)
      problems.push(
        `${output.key}: column(s) ${differingColumns(want.digest, actual).join(', ')} differ from the values re-derived from the input`,
      );
  }
  if (outputs.length !== expected.segments.length)
    problems.push(
      `${outputs.length} outputs, ${expected.segments.length} expected (as the plan packed the inputs)`,
    );
  const actual = fingerprintOf(segments, names);
  if (outputs.length > 0 && actual.schemaFingerprint !== expected.schemaFingerprint)
    problems.push(`the outputs' columns (${names.join(', ')}) are not the transformation's`);
  if (problems.length > 0)
    throw new VerificationError(
      `the rewrite's outputs are not the transformation of its inputs: ${problems.join('; ')}`,
      { problems },
    );
  return {
    outputs: outputs.length,
    rows: actual.rows,
    bytes: outputs.reduce((n, o) => n + o.size, 0),
    fingerprint: actual,
  };
}

/** The top-level columns of the partition file `key`, as a transformation is planned against them. */
export async function partitionColumns(store: ObjectStore, key: string): Promise<InputColumn[]> {
  return (await decodedRows(store, key, 0)).columns;
}

/**
 * The first `limit` rows of `key` as the transformation writes them (the dry run's preview), through the
 * verification's interpreter: a value the plan cannot write fails here as it would fail the rewrite.
 */
export async function previewRows(
  store: ObjectStore,
  key: string,
  plan: TransformPlan,
  limit: number,
): Promise<unknown[][]> {
  const { rows, columns } = await decodedRows(store, key, limit);
  const byName = new Map(columns.map((c) => [c.name, c]));
  return rows.map((row, index) => {
    const values: Record<string, Value> = {};
    for (const [name, v] of Object.entries(row)) values[name] = asValue(v, byName.get(name));
    const derived = rederiveRow(plan, values, key, index);
    return plan.columns.map((c, i) =>
      c.kind === 'copy' ? shownTime(row[c.source], byName.get(c.source)) : derived[i],
    );
  });
}

/** A date or timestamp as an operator reads it (ISO, UTC; a preview only, nothing is compared in this form). */
function shownTime(v: unknown, column: InputColumn | undefined): unknown {
  if (v === null || v === undefined) return v;
  if (column?.type === 'date') return new Date(Number(v) * 86_400_000).toISOString().slice(0, 10);
  if (column?.type === 'timestamp') {
    const micros = BigInt(v as bigint);
    const iso = new Date(Number(micros / 1000n)).toISOString();
    return `${iso.slice(0, 19)}.${String(((micros % 1_000_000n) + 1_000_000n) % 1_000_000n).padStart(6, '0')}`;
  }
  return v;
}
