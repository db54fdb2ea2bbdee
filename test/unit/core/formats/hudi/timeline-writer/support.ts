// Test helpers for the Hudi timeline writer: the fixtures' timeline files (written by Hudi itself, the independent
// oracle the golden tests compare with byte for byte) and their raw `avro.schema` header.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import avro from 'avsc';
import { parseFooter } from '../../../../../../functions/core/parquet/footer.js';
import { HUDI_FIXTURES } from '../../../../../support/fixtures.js';

/** Bytes of one file under a fixture table's `.hoodie/` (`timeline/…` for v8+). */
export function hoodieFile(table: string, relative: string): Uint8Array {
  return new Uint8Array(readFileSync(join(HUDI_FIXTURES, table, '.hoodie', relative)));
}

/** The container header of a timeline file: the exact `avro.schema` text and where the sync marker ends. */
export function avroHeader(bytes: Uint8Array): { schemaText: string; keys: string[]; dataOffset: number } {
  const buf = Buffer.from(bytes);
  const meta = avro.Type.forSchema({ type: 'map', values: 'bytes' }).decode(buf, 4);
  const map = meta.value as Record<string, Buffer>;
  return {
    schemaText: (map['avro.schema'] as Buffer).toString('utf8'),
    keys: Object.keys(map),
    dataOffset: meta.offset + 16,
  };
}

/** The data blocks of a container without its sync markers (what two writers of the same record must agree on). */
export function blocksWithoutSync(bytes: Uint8Array): Buffer {
  const { dataOffset } = avroHeader(bytes);
  const buf = Buffer.from(bytes);
  return buf.subarray(dataOffset, buf.length - 16);
}

/** Size in bytes of a file of a fixture table (path relative to the table's base path). */
export function tableFileSize(table: string, relative: string): number {
  return statSync(join(HUDI_FIXTURES, table, relative)).size;
}

/** Rows of a Parquet file of a fixture table, from its footer. */
export function parquetRows(table: string, relative: string): number {
  const bytes = new Uint8Array(readFileSync(join(HUDI_FIXTURES, table, relative)));
  return parseFooter(relative, bytes.length, bytes).rows;
}

/** The names in one partition folder of a fixture table (dot-named log files included). */
export function partitionFiles(table: string, partitionPath: string): string[] {
  return readdirSync(join(HUDI_FIXTURES, table, partitionPath)).sort();
}

/** The last path segment. */
export function baseName(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1);
}
