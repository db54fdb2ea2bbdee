// The demo's independent oracle: DuckDB reads the local copies of the lake before and after compaction,
// proves the rows are the same multiset (EXCEPT ALL both ways) and times the same queries on both copies.
//
// A trimmed copy of test/support/duckdb.ts: the demo is a tool shipped with the package, and tools must
// not import from test/. @duckdb/node-api is a devDependency, which `npm ci` installs.
import { DuckDBInstance } from '@duckdb/node-api';

/** Quotes a value as an SQL string literal (file paths, dates). */
export function sqlString(value: string): string {
  return `'${value.replaceAll("'", "''")}'`;
}

/** An in-memory DuckDB with one connection; close() releases both. */
export interface DemoDuckDb {
  rows(sql: string): Promise<Record<string, unknown>[]>;
  scalar(sql: string): Promise<unknown>;
  close(): void;
}

/**
 * Opens an in-memory DuckDB. Two threads: the machine the demo must fit is a 2-core box shared with the
 * local cloud, and the benchmark compares layouts, not thread counts.
 */
export async function openDemoDuckDb(threads = 2): Promise<DemoDuckDb> {
  const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) });
  const connection = await instance.connect();
  return {
    async rows(sql) {
      const reader = await connection.runAndReadAll(sql);
      return reader.getRowObjectsJson() as Record<string, unknown>[];
    },
    async scalar(sql) {
      const reader = await connection.runAndReadAll(sql);
      const rows = reader.getRowsJson();
      const first = rows[0];
      if (rows.length !== 1 || first?.length !== 1) {
        throw new Error(`scalar() expects one row and one column, got ${rows.length} rows: ${sql}`);
      }
      return first[0];
    },
    close() {
      connection.closeSync();
      instance.closeSync();
    },
  };
}

/** `read_parquet` over every Parquet file of a Hive-partitioned table folder (the `date` column comes from the path). */
export function tableScan(tableDir: string): string {
  return `read_parquet(${sqlString(`${tableDir}/*/*.parquet`)}, hive_partitioning = true, hive_types = {'date': VARCHAR})`;
}

/** Row count and revenue of a table copy, exact: revenue summed as DECIMAL so float order cannot differ. */
export interface TableTotals {
  readonly rows: number;
  /** Sum of revenue_usd, rounded to cents, as a string (no float noise). */
  readonly revenueUsd: string;
}

export async function tableTotals(db: DemoDuckDb, tableDir: string): Promise<TableTotals> {
  const [row] = await db.rows(
    `SELECT count(*) AS n, CAST(sum(CAST(revenue_usd AS DECIMAL(38, 6))) AS DECIMAL(38, 2)) AS revenue FROM ${tableScan(tableDir)}`,
  );
  return { rows: Number(row?.n ?? 0), revenueUsd: String(row?.revenue ?? '0') };
}

/** Rows in `a` missing from `b` and rows in `b` missing from `a`, counting duplicates (EXCEPT ALL). */
export async function multisetDifference(
  db: DemoDuckDb,
  beforeDir: string,
  afterDir: string,
): Promise<{ readonly onlyBefore: number; readonly onlyAfter: number }> {
  const columns = 'user_id, event_type, event_timestamp, session_id, revenue_usd, date';
  const a = `SELECT ${columns} FROM ${tableScan(beforeDir)}`;
  const b = `SELECT ${columns} FROM ${tableScan(afterDir)}`;
  const onlyBefore = Number(await db.scalar(`SELECT count(*) FROM (${a} EXCEPT ALL ${b})`));
  const onlyAfter = Number(await db.scalar(`SELECT count(*) FROM (${b} EXCEPT ALL ${a})`));
  return { onlyBefore, onlyAfter };
}

/** One benchmark query: its SQL shape and the time it took on each copy (milliseconds, best of `repeat`). */
export interface QueryTiming {
  readonly name: string;
  readonly sql: string;
  readonly beforeMs: number;
  readonly afterMs: number;
  /** beforeMs / afterMs. */
  readonly speedup: number;
}

/**
 * Times a point query on one partition and a full scan on both copies. Best of `repeat` runs, so one
 * scheduling hiccup on a loaded machine does not decide the figure; the numbers are shown, never asserted.
 */
export async function benchmarkReads(
  db: DemoDuckDb,
  beforeDir: string,
  afterDir: string,
  day: string,
  repeat = 3,
): Promise<QueryTiming[]> {
  const queries = [
    {
      name: `one partition (date = ${day})`,
      sql: (dir: string) =>
        `SELECT count(*), sum(revenue_usd) FROM ${tableScan(dir)} WHERE date = ${sqlString(day)}`,
    },
    {
      name: 'full scan',
      sql: (dir: string) =>
        `SELECT event_type, count(*), sum(revenue_usd), count(DISTINCT user_id) FROM ${tableScan(dir)} GROUP BY event_type`,
    },
  ];
  const time = async (sql: string): Promise<number> => {
    let best = Number.POSITIVE_INFINITY;
    for (let i = 0; i < repeat; i += 1) {
      const started = performance.now();
      await db.rows(sql);
      best = Math.min(best, performance.now() - started);
    }
    return best;
  };
  const out: QueryTiming[] = [];
  for (const q of queries) {
    const beforeMs = await time(q.sql(beforeDir));
    const afterMs = await time(q.sql(afterDir));
    out.push({
      name: q.name,
      sql: q.sql('<lake>/events'),
      beforeMs,
      afterMs,
      speedup: afterMs > 0 ? beforeMs / afterMs : 0,
    });
  }
  return out;
}
