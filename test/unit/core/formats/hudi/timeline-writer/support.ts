// Test helpers for the Hudi timeline writer: the fixtures' timeline files, their raw `avro.schema` header, and an
// INDEPENDENT Avro decoder (Apache Avro's Python implementation, Debian's python3-avro) when it is installed.
import { spawnSync } from 'node:child_process';
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

const PYTHON_CANDIDATES = ['/usr/bin/python3', 'python3'];

const PY_DECODE = `
import sys, json, io
import avro.datafile, avro.io
data = sys.stdin.buffer.read()
reader = avro.datafile.DataFileReader(io.BytesIO(data), avro.io.DatumReader())
out = [r for r in reader]
print(json.dumps(out))
`;

/** A python3 that can `import avro`, or undefined (the tests that need it skip, saying so). */
export const PYTHON_AVRO: string | undefined = PYTHON_CANDIDATES.find((python) => {
  const probe = spawnSync(python, ['-c', 'import avro.datafile, avro.io'], { encoding: 'utf8' });
  return probe.status === 0;
});

/** Why the independent-decoder tests skip, when they do. */
export const PYTHON_AVRO_MISSING =
  'Apache Avro for Python is not installed (apt-get install python3-avro): the independent-decoder check is skipped';

/** Decodes a container with Apache Avro's Python implementation and returns its records as JSON values. */
export function decodeWithPythonAvro(bytes: Uint8Array): unknown[] {
  if (PYTHON_AVRO === undefined) throw new Error(PYTHON_AVRO_MISSING);
  const run = spawnSync(PYTHON_AVRO, ['-c', PY_DECODE], { input: Buffer.from(bytes), encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`python avro failed: ${run.stderr}`);
  return JSON.parse(run.stdout) as unknown[];
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
