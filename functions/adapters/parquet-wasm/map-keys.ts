// The guard that lets schema fidelity `logical` write a MAP whose key is OPTIONAL (Presto/Trino before 386/0.274 and
// Athena wrote such maps; parquet-testing's `incorrect_map_schema.parquet`) as a standard map, whose key is REQUIRED.
//
// Why a check of the decoded values and not of the footer: only a null key makes the two forms differ, the MAP spec
// forbids one, and no statistic says there is none (a nested column's null count also counts null and empty maps).
// The decoder keeps a null key as a null in the key array while the writer, holding the key REQUIRED, writes a file
// no reader can read (it traps on it); so each batch of such an input is looked at before it is written, and an
// input with a null key is refused by name, nothing written.

import { type Data, type DataType, Type } from 'apache-arrow';
import { UnsupportedInputError } from '../../core/errors.js';
import { wasmBatchToTable } from './batch-hash.js';
import type { pw } from './wasm.js';

/** The first of `data`'s maps (at any depth) whose key array holds a null, by its dotted path; undefined when none. */
function nullKeyIn(data: Data<DataType>, path: string): string | undefined {
  if (data.typeId === Type.Map) {
    const entries = data.children[0];
    if ((entries?.children[0]?.nullCount ?? 0) > 0) return path;
  }
  const names = (data.type as { children?: { name: string }[] }).children ?? [];
  for (const [i, child] of data.children.entries()) {
    const found = nullKeyIn(child, `${path}.${names[i]?.name ?? i}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses `batch` (decoded from `key`, some of whose MAP columns have an OPTIONAL key) when a map key is null.
 * The batch is read through Arrow IPC and left as it is (the caller still owns it).
 * @throws UnsupportedInputError naming the file and the map column.
 */
export function assertMapKeysPresent(key: string, batch: pw.RecordBatch): void {
  if (batch.numRows === 0) return;
  const table = wasmBatchToTable(batch);
  for (const [i, field] of table.schema.fields.entries()) {
    for (const data of table.getChildAt(i)?.data ?? []) {
      const at = nullKeyIn(data, field.name);
      if (at !== undefined) {
        throw new UnsupportedInputError(
          key,
          `map column ${at} holds a null key, which its OPTIONAL key allows but no map may hold (the MAP spec): schema fidelity "logical" writes the standard map, whose key is REQUIRED, so this file cannot be written with the same values; exclude it, or rewrite it without null keys`,
        );
      }
    }
  }
}
