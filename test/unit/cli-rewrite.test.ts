// `lake-compactor rewrite <uri> --partition … --transform <file.json>` on a Hive-style folder: a checked cast string →
// bigint rewrites the partition on clean data and fails naming the value (every byte of the table left as it was) on a
// row that does not convert; an added column derived by an expression holds what DuckDB computes from the inputs; the
// untouched columns' row multisets are those of the inputs; 40 small files are packed into the outputs the plan counts
// at the target size, each holding whole inputs; a copied uuid column stays a UUID; a dry run prints the schema and first rows and writes nothing; a drop needs its confirmation; Delta and Iceberg tables are refused with what to run instead.
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

let root: string;
let table: string;
let partition: string;
let db: DuckDb;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-rewrite-'));
  table = join(root, 'events');
  partition = join(table, 'date=2024-01-01');
  await mkdir(partition, { recursive: true });
  db = await openDuckDb();
});

afterEach(async () => {
  db.close();
  await rm(root, { recursive: true, force: true });
});

/** Three files of (user_id VARCHAR of digits, name, ts TIMESTAMP, amount DOUBLE); `bad` puts a non-integer id in the last. */
async function writePartition(options: { bad?: string } = {}): Promise<void> {
  for (let i = 0; i < 3; i++) {
    const id =
      options.bad !== undefined && i === 2
        ? `CASE WHEN range = 3 THEN ${sqlString(options.bad)} ELSE (range * 7 + ${i * 100})::VARCHAR END`
        : `(range * 7 + ${i * 100})::VARCHAR`;
    await db.writeParquet(
      `SELECT ${id} AS user_id, 'User-' || range || '-' || ${i} AS name,
              TIMESTAMP '2023-12-30 21:00:00' + INTERVAL (range * 5 + ${i}) HOUR AS ts,
              CASE WHEN range = 2 THEN NULL ELSE range * 1.25 + ${i} END::DOUBLE AS amount
       FROM range(6)`,
      join(partition, `part-${i}.parquet`),
    );
  }
}

async function transformFile(steps: unknown[]): Promise<string> {
  const path = join(root, 'transform.json');
  await writeFile(path, JSON.stringify({ steps }));
  return path;
}

/** The partition folder's files by path, size and content hash. */
async function partitionContent(): Promise<string[]> {
  return (await folderContentSnapshot(partition)).map((line) => {
    const [path, size, , hash] = line.split(' ');
    return hash === undefined ? line : `${path} ${size} ${hash}`;
  });
}

async function dataFiles(): Promise<string[]> {
  return (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
}

/** `columns` of every row of the partition's files as DuckDB reads them, one JSON text per row, sorted. */
async function partitionRows(columns: string): Promise<string[]> {
  const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
  const rows = await db.rows(`SELECT ${columns} FROM read_parquet([${files}], hive_partitioning = false)`);
  return rows.map((r) => JSON.stringify(r)).sort();
}

describe('lake-compactor rewrite (Hive-style Parquet)', () => {
  it('casts a string column to bigint on clean data, keeping every other column row for row', async () => {
    // Prepare
    await writePartition();
    const untouched = await partitionRows('name, ts, amount');
    const expected = await partitionRows('user_id::BIGINT AS user_id, name, ts, amount');
    const transform = await transformFile([{ op: 'cast', column: 'user_id', to: 'int64' }]);
    const io = captureIo();

    // Act
    const code = await run(
      ['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform],
      io,
    );

    // Assess
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    // Three small files packed into one output at the default target (128 MiB)
    expect(await dataFiles()).toHaveLength(1);
    const files = (await dataFiles()).map((n) => sqlString(join(partition, n))).join(', ');
    const types = await db.columnTypes(`SELECT * FROM read_parquet([${files}], hive_partitioning = false)`);
    expect(types.map((t) => `${t.name} ${t.type}`)).toEqual([
      'user_id BIGINT',
      'name VARCHAR',
      'ts TIMESTAMP',
      'amount DOUBLE',
    ]);
    expect(await partitionRows('name, ts, amount')).toEqual(untouched);
    expect(await partitionRows('user_id, name, ts, amount')).toEqual(expected);
  });

  it('fails naming the value on a row that does not convert, leaving every byte of the table as it was', async () => {
    // Prepare
    await writePartition({ bad: '12.5' });
    const transform = await transformFile([{ op: 'cast', column: 'user_id', to: 'int64' }]);
    const before = await folderContentSnapshot(table);
    const io = captureIo();

    // Act
    const code = await run(
      ['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform],
      io,
    );

    // Assess
    expect(code).toBe(1);
    const message = io.stderr.join('\n');
    expect(message).toContain('Row 4 of date=2024-01-01/part-2.parquet');
    expect(message).toContain('column user_id value "12.5"');
    expect(message).toContain('inputs are untouched');
    // The run's journal and trash stay in the work root; the table's own files are byte for byte what they were.
    const after = await folderContentSnapshot(table);
    expect(after.filter((l) => !l.startsWith('_lake-compactor'))).toEqual(
      before.filter((l) => !l.startsWith('_lake-compactor')),
    );
    expect(after.filter((l) => l.startsWith('_lake-compactor/staging/') && !l.endsWith('/'))).toEqual([]);
  });

  it('writes an added column derived by an expression with the values DuckDB computes from the inputs', async () => {
    // Prepare
    await writePartition();
    const expected = await partitionRows(
      `user_id, name, ts, amount,
       concat(upper(substring(name, 1, 4)), '-', year(ts)::VARCHAR) AS tag,
       hour(ts)::INTEGER AS hour_of_day,
       amount * 2 + 1 AS doubled`,
    );
    const transform = await transformFile([
      {
        op: 'addColumn',
        name: 'tag',
        type: 'string',
        expression: "concat(upper(substring(name, 1, 4)), '-', cast(year(ts) as string))",
      },
      { op: 'addColumn', name: 'hour_of_day', type: 'int32', expression: 'hour(ts)' },
      { op: 'addColumn', name: 'doubled', type: 'float64', expression: 'amount * 2 + 1' },
    ]);
    const io = captureIo();

    // Act
    const code = await run(
      ['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform],
      io,
    );

    // Assess
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    expect(await partitionRows('user_id, name, ts, amount, tag, hour_of_day, doubled')).toEqual(expected);
  });

  it('keeps a copied uuid column a UUID, renamed or not, with the same values', async () => {
    // Prepare: three files of a UUID column (FIXED_LEN_BYTE_ARRAY(16), UUID annotation, as DuckDB writes it) and a count
    for (let i = 0; i < 3; i++) {
      await db.writeParquet(
        `SELECT uuid() AS id, uuid() AS ref, range + ${i * 10} AS n FROM range(5)`,
        join(partition, `part-${i}.parquet`),
      );
    }
    const expected = await partitionRows('id, ref AS source_ref, n');
    const transform = await transformFile([{ op: 'rename', column: 'ref', to: 'source_ref' }]);
    const io = captureIo();

    // Act
    const code = await run(
      ['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform],
      io,
    );

    // Assess: the same rows, and both columns still annotated UUID in the output's footer
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    expect(await partitionRows('id, source_ref, n')).toEqual(expected);
    const [output, ...others] = await dataFiles();
    expect(others).toEqual([]);
    const schema = await db.rows(
      `SELECT name, type, logical_type FROM parquet_schema(${sqlString(join(partition, output ?? ''))}) WHERE name IN ('id', 'source_ref') ORDER BY name`,
    );
    expect(schema).toEqual([
      { name: 'id', type: 'FIXED_LEN_BYTE_ARRAY', logical_type: 'UUIDType()' },
      { name: 'source_ref', type: 'FIXED_LEN_BYTE_ARRAY', logical_type: 'UUIDType()' },
    ]);
  });

  it('packs 40 small files into the outputs its plan counts at the target size, each holding whole inputs, rows as transformed', async () => {
    // Prepare: 40 files of 5–11 rows; a target of a quarter of their bytes
    const local: string[] = [];
    for (let i = 0; i < 40; i++) {
      const file = join(partition, `part-${String(i).padStart(2, '0')}.parquet`);
      await db.writeParquet(
        `SELECT (range + ${i * 1000})::VARCHAR AS user_id, 'User-' || range || '-' || ${i} AS name,
                (range * 0.5 + ${i})::DOUBLE AS amount FROM range(${5 + (i % 7)})`,
        file,
      );
      local.push(file);
    }
    const list = local.map(sqlString).join(', ');
    const expected = await db.rows(
      `SELECT user_id::BIGINT AS user_id, name, amount, upper(name) || '/' || substring(user_id, 1, 2) AS tag,
              amount * 2 AS doubled
       FROM read_parquet([${list}], hive_partitioning = false)`,
    );
    const perFile = await db.rows(
      `SELECT count(*)::INTEGER AS n FROM read_parquet([${list}], filename = true, hive_partitioning = false) GROUP BY filename ORDER BY filename`,
    );
    let bytes = 0;
    for (const name of await dataFiles()) bytes += (await stat(join(partition, name))).size;
    const transform = await transformFile([
      { op: 'cast', column: 'user_id', to: 'int64' },
      {
        op: 'addColumn',
        name: 'tag',
        type: 'string',
        expression: "concat(upper(name), '/', substring(user_id, 1, 2))",
      },
      { op: 'addColumn', name: 'doubled', type: 'float64', expression: 'amount * 2' },
    ]);
    const io = captureIo();

    // Act
    const code = await run(
      [
        'rewrite',
        table,
        '--partition',
        'date=2024-01-01',
        '--transform',
        transform,
        '--target-mb',
        String(bytes / 4 / (1024 * 1024)),
      ],
      io,
    );

    // Assess: as many outputs as the plan packed (Iceberg's rule: a quarter of the bytes → 4)
    expect(io.stderr).toEqual([]);
    expect(code).toBe(0);
    const runId = /^run (\S+): lake-compactor undo/.exec(io.stdout.at(-1) ?? '')?.[1] ?? '?';
    const plan = JSON.parse(
      await readFile(join(table, '_lake-compactor', 'plans', `${runId}.json`), 'utf8'),
    ) as { groups: { expectedOutputFiles: number }[]; transform: { inputsPerOutput: number[] } };
    const packing = plan.transform.inputsPerOutput;
    expect(packing).toHaveLength(4);
    expect(plan.groups[0]?.expectedOutputFiles).toBe(4);
    expect(packing.reduce((n, k) => n + k, 0)).toBe(40);
    const outputs = await dataFiles();
    expect(outputs).toHaveLength(4);
    expect(io.stdout.join('\n')).toContain('40 files rewritten into 4 files');
    // Each output holds whole inputs, consecutive in key order: its rows are their rows
    let first = 0;
    for (const [i, name] of outputs.entries()) {
      const [{ n } = { n: -1 }] = await db.rows(
        `SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlString(join(partition, name))})`,
      );
      const planned = perFile.slice(first, first + (packing[i] ?? 0)).reduce((m, r) => m + Number(r.n), 0);
      expect(n, name).toBe(planned);
      first += packing[i] ?? 0;
    }
    // The row multiset is the inputs' as DuckDB transforms them
    expect(await partitionRows('user_id, name, amount, tag, doubled')).toEqual(
      expected.map((r) => JSON.stringify(r)).sort(),
    );
  });

  it('renames and, with its confirmation, drops columns; the rest keep their row multiset', async () => {
    // Prepare
    await writePartition();
    const expected = await partitionRows('user_id, name AS display_name, ts');
    const transform = await transformFile([
      { op: 'rename', column: 'name', to: 'display_name' },
      { op: 'drop', column: 'amount' },
    ]);
    const unconfirmed = captureIo();
    const before = await folderContentSnapshot(table);

    // Act
    const refused = await run(
      ['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform],
      unconfirmed,
    );
    const untouched = await folderContentSnapshot(table);
    const code = await run(
      [
        'rewrite',
        table,
        '--partition',
        'date=2024-01-01',
        '--transform',
        transform,
        '--confirm-drop',
        'amount',
      ],
      captureIo(),
    );

    // Assess
    expect(refused).toBe(1);
    expect(unconfirmed.stderr.join('\n')).toContain('--confirm-drop amount');
    expect(untouched).toEqual(before);
    expect(code).toBe(0);
    expect(await partitionRows('*')).toEqual(expected);
  });

  it('dry run prints the written schema and the first rows, and writes nothing', async () => {
    // Prepare
    await writePartition();
    const transform = await transformFile([
      { op: 'cast', column: 'user_id', to: 'int64' },
      { op: 'addColumn', name: 'source', type: 'string', default: 'legacy' },
    ]);
    const before = await folderContentSnapshot(table);
    const io = captureIo();

    // Act
    const code = await run(
      [
        'rewrite',
        table,
        '--partition',
        'date=2024-01-01',
        '--transform',
        transform,
        '--dry-run',
        '--preview-rows',
        '2',
      ],
      io,
    );

    // Assess
    expect(code).toBe(0);
    const out = io.stdout.join('\n');
    expect(out).toContain('user_id  int64  (cast, checked)');
    expect(out).toContain('source  string  (added: "legacy" in every row)');
    expect(out).toContain('first 2 rows of date=2024-01-01/part-0.parquet as rewritten:');
    expect(out).toContain('User-1-0');
    expect(out).toContain('2023-12-30T21:00:00.000000');
    expect(out).toContain('nothing was changed');
    expect(await folderContentSnapshot(table)).toEqual(before);
  });

  it.each([
    ['delta', 'ALTER TABLE'],
    ['iceberg', 'rewrite-all=true'],
  ])(
    'refuses a transformation of a %s table, before reading anything, and says what to run instead',
    async (format, advice) => {
      // Prepare
      const transform = await transformFile([{ op: 'cast', column: 'user_id', to: 'int64' }]);
      const io = captureIo();

      // Act
      const code = await run(
        [
          'rewrite',
          join(root, 'missing-table'),
          '--partition',
          'date=2024-01-01',
          '--transform',
          transform,
          '--format',
          format,
        ],
        io,
      );

      // Assess
      expect(code).toBe(2);
      expect(io.stderr.join('\n')).toContain('does not transform');
      expect(io.stderr.join('\n')).toContain(advice);
    },
  );

  it('is reverted by undo: the old partition comes back byte for byte from the trash copies', async () => {
    // Prepare
    await writePartition();
    const transform = await transformFile([{ op: 'cast', column: 'user_id', to: 'int64' }]);
    const before = await partitionContent();
    const io = captureIo();
    expect(
      await run(['rewrite', table, '--partition', 'date=2024-01-01', '--transform', transform], io),
    ).toBe(0);
    const runId = /^run (\S+): lake-compactor undo/.exec(io.stdout.at(-1) ?? '')?.[1];
    expect(await partitionContent()).not.toEqual(before);

    // Act
    const code = await run(['undo', table, runId ?? '(no run printed)'], captureIo());

    // Assess
    expect(code).toBe(0);
    expect(await partitionContent()).toEqual(before);
  });
});
