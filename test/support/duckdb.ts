// Test helper: an in-memory DuckDB as an independent oracle — run SQL, read rows and column types,
// and write Parquet files from a query. Every handle opened here must be closed with close().
import { DuckDBInstance } from '@duckdb/node-api';

/** A column of a query result: its name and DuckDB's type name (e.g. `BIGINT`, `TIMESTAMP WITH TIME ZONE`). */
export interface ColumnType {
  readonly name: string;
  readonly type: string;
}

/** Options for COPY … TO … (FORMAT parquet). */
export interface WriteParquetOptions {
  /** Parquet codec: `snappy` (DuckDB's default), `zstd`, `gzip`, `uncompressed`, … */
  readonly compression?: 'snappy' | 'zstd' | 'gzip' | 'uncompressed' | 'lz4' | 'brotli';
  /** Rows per row group (DuckDB's default is 122,880). */
  readonly rowGroupSize?: number;
  /**
   * More COPY options verbatim, e.g. `KV_METADATA {origin: 'test'}` or `FIELD_IDS {a: 1}`
   * (DuckDB's COPY syntax; see its Parquet export docs).
   */
  readonly extraOptions?: readonly string[];
}

export interface DuckDb {
  /**
   * Runs `sql` and returns every row as a plain object with JSON-friendly values: BIGINT and
   * DECIMAL come back as strings (no precision loss), timestamps as ISO-like strings, LIST as
   * arrays, STRUCT/MAP as objects/arrays. Use for assertions on values.
   */
  rows(sql: string): Promise<Record<string, unknown>[]>;
  /** The single value of a one-row, one-column query (e.g. `SELECT count(*) …`), JSON-friendly. */
  scalar(sql: string): Promise<unknown>;
  /** Name and DuckDB type of each column the query returns (reads no rows). */
  columnTypes(sql: string): Promise<ColumnType[]>;
  /** Runs statements for their effect (CREATE, INSERT, SET, COPY …). */
  exec(sql: string): Promise<void>;
  /** Writes the result of `selectSql` to `path` as one Parquet file. */
  writeParquet(selectSql: string, path: string, options?: WriteParquetOptions): Promise<void>;
  /** Releases the connection and the database. */
  close(): void;
}

/** Quotes a value as an SQL string literal, e.g. a file path for `read_parquet(...)`. */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/**
 * Opens an in-memory DuckDB. `threads` defaults to 1: tests share two cores with other workers,
 * and DuckDB with more threads does not keep row order when writing (see docs/engine.md).
 */
export async function openDuckDb(options: { threads?: number } = {}): Promise<DuckDb> {
  const instance = await DuckDBInstance.create(':memory:', { threads: String(options.threads ?? 1) });
  const connection = await instance.connect();
  return {
    async rows(sql) {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRowObjectsJson() as Record<string, unknown>[];
    },
    async scalar(sql) {
      const reader = await connection.runAndReadAll(sql);
      const rows = reader.getRowsJson();
      if (rows.length !== 1 || rows[0]?.length !== 1) {
        throw new Error(`scalar() expects one row and one column, got ${rows.length} rows: ${sql}`);
      }
      return rows[0][0];
    },
    async columnTypes(sql) {
      const reader = await connection.runAndRead(`SELECT * FROM (${sql}) LIMIT 0`);
      return reader.columnNames().map((name, i) => ({ name, type: reader.columnType(i).toString() }));
    },
    async exec(sql) {
      await connection.run(sql);
    },
    async writeParquet(selectSql, path, writeOptions = {}) {
      const settings = [`FORMAT parquet`, `COMPRESSION ${writeOptions.compression ?? 'snappy'}`];
      if (writeOptions.rowGroupSize !== undefined)
        settings.push(`ROW_GROUP_SIZE ${writeOptions.rowGroupSize}`);
      settings.push(...(writeOptions.extraOptions ?? []));
      await connection.run(`COPY (${selectSql}) TO ${sqlString(path)} (${settings.join(', ')})`);
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}
