// Which footer key-value entries keep Parquet files of one schema apart, and which a merged output may take from
// one input: files group by schema plus the entries that change how their values read, never by provenance.
//
// Why: writers stamp per-file entries (Databricks' write timestamp, Spark's version and row schema, pandas'
// index range). Grouping by the whole footer made eight files that differ only in such a stamp compact 8 → 8 on
// every run, each run committing again. But a few entries do change what a reader returns for the same bytes
// (Spark's calendar rebase of dates and timestamps) or describe the file's own contents (a bloom filter, a
// bounding box), and merging files under one of them would silently shift or hide rows: those keep files apart.
import type { ThriftStruct } from './thrift-compact.js';

/** Spark's footer keys (`org.apache.spark.sql.execution.datasources.DataSourceUtils`). */
export const SPARK_VERSION_KEY = 'org.apache.spark.version';
const SPARK_LEGACY_DATETIME_KEY = 'org.apache.spark.legacyDateTime';
const SPARK_LEGACY_INT96_KEY = 'org.apache.spark.legacyINT96';
const SPARK_TIMEZONE_KEY = 'org.apache.spark.timeZone';

/**
 * Entries that describe the file's own contents, so no other file's may stand for them: Hudi's bloom filter and
 * record-key range (an upsert that trusts them misses keys), GeoParquet's `geo` (its per-column bounding boxes
 * prune spatial scans). Files group only when these are equal.
 */
export const CONTENT_KEYS: readonly string[] = [
  'geo',
  'org.apache.hudi.bloomfilter',
  'hoodie_bloom_filter_type_code',
  'hoodie_min_record_key',
  'hoodie_max_record_key',
];

/**
 * How Spark reads a file's dates and timestamps, as its footer decides (`DataSourceUtils.datetimeRebaseSpec` and
 * `int96RebaseSpec`, version compared as text, as Spark does): `LEGACY <time zone>` for files Spark rebases from
 * the hybrid Julian calendar (written by Spark before 3.0 — 3.1 for INT96 — or in LEGACY mode), '' otherwise
 * (proleptic Gregorian; a file without Spark's version key is read by the reader's configuration, which every
 * non-Spark writer's values match). Two files that differ here must never share a footer: one of them would read
 * shifted by days.
 */
export function sparkRebaseOf(kv: Readonly<Record<string, string>>): {
  readonly datetime: string;
  readonly int96: string;
} {
  const version = kv[SPARK_VERSION_KEY];
  if (version === undefined) return { datetime: '', int96: '' };
  const legacy = `LEGACY ${kv[SPARK_TIMEZONE_KEY] ?? ''}`;
  return {
    datetime: version < '3.0.0' || SPARK_LEGACY_DATETIME_KEY in kv ? legacy : '',
    int96: version < '3.1.0' || SPARK_LEGACY_INT96_KEY in kv ? legacy : '',
  };
}

/**
 * What of a footer's key-value metadata files must agree on to be written into one output: Spark's rebase modes
 * and the content entries (`CONTENT_KEYS`), as canonical text — '' when there is nothing to agree on (most
 * files). Everything else (writer versions and timestamps, Spark's row schema, Avro and pandas schemas, Arrow's
 * schema, which the writer writes anew) may differ: a merged output keeps its first input's entries whole (see
 * `docs/engine.md`), a set one writer wrote together rather than a mix.
 */
export function keyValueGroupingOf(kv: Readonly<Record<string, string>>): string {
  const rebase = sparkRebaseOf(kv);
  const content = CONTENT_KEYS.filter((k) => k in kv).map((k) => [k, kv[k]]);
  if (rebase.datetime === '' && rebase.int96 === '' && content.length === 0) return '';
  return JSON.stringify(['kv-grouping/v1', rebase.datetime, rebase.int96, content]);
}

/** A footer's key-value list (hyparquet's, or decoded from Thrift) as a record; a repeated key keeps its last value. */
export function keyValueRecord(
  entries: Iterable<{ readonly key: string; readonly value?: string | undefined }>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const { key, value } of entries) out[key] = value ?? '';
  return out;
}

/** FileMetaData.key_value_metadata and KeyValue's fields, in parquet.thrift. */
const FMD_KV = 5;
const KV_KEY = 1;
const KV_VALUE = 2;

/**
 * The key-value metadata of a FileMetaData decoded with the schema-less Thrift codec (stitching and its proof read
 * footers that way), as a record. Entries that are not well-formed KeyValue structs are skipped.
 */
export function thriftKeyValues(meta: ThriftStruct): Record<string, string> {
  const list = meta.fields.find((f) => f.id === FMD_KV)?.value;
  const items = typeof list === 'object' && list !== null && 'items' in list ? list.items : [];
  const text = new TextDecoder();
  const entries: { key: string; value?: string }[] = [];
  for (const item of items) {
    if (typeof item !== 'object' || item === null || !('fields' in item)) continue;
    const key = item.fields.find((f) => f.id === KV_KEY)?.value;
    const value = item.fields.find((f) => f.id === KV_VALUE)?.value;
    if (!(key instanceof Uint8Array)) continue;
    entries.push({
      key: text.decode(key),
      ...(value instanceof Uint8Array ? { value: text.decode(value) } : {}),
    });
  }
  return keyValueRecord(entries);
}
