// `lake-compactor compact --schema-fidelity`: a partition of Spark INT96 files is refused by default (exact)
// and left as it was, compacted with `logical` into one file with the same timestamps as INT64, and an
// unknown fidelity is a usage error.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { int96File } from '../support/legacy-parquet.js';

let root: string;
let partition: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-fidelity-'));
  partition = join(root, 'events', 'date=2024-01-01');
  await mkdir(partition, { recursive: true });
  // Enough small files for the planner to find merging them worth a run.
  for (let i = 0; i < 6; i++) {
    const day = 1_704_067_200_000_000_000n + BigInt(i) * 86_400_000_000_000n;
    await writeFile(join(partition, `part-${i}.parquet`), int96File([day, null, day + 123_456_000n]));
  }
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const INPUTS = [0, 1, 2, 3, 4, 5].map((i) => `part-${i}.parquet`);

async function dataFiles(): Promise<string[]> {
  return (await readdir(partition)).filter((n) => n.endsWith('.parquet')).sort();
}

/** Every `ts` of the partition's data files as exact nanoseconds (INT96 or INT64 alike), sorted. */
async function timestamps(): Promise<string[]> {
  const out: string[] = [];
  for (const name of await dataFiles()) {
    const bytes = await readFile(join(partition, name));
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      parsers: {
        timestampFromNanoseconds: (n: bigint) => n,
        timestampFromMicroseconds: (n: bigint) => n * 1000n,
      } as never,
    });
    out.push(...rows.map((r) => String(r.ts)));
  }
  return out.sort();
}

describe('lake-compactor compact --schema-fidelity', () => {
  it('refuses INT96 inputs by default and leaves the partition as it was', async () => {
    // Prepare
    const before = await timestamps();
    const io = captureIo();

    // Act
    const code = await run(['compact', join(root, 'events')], io);

    // Assess
    expect(code).not.toBe(0);
    expect([...io.stdout, ...io.stderr].join('\n')).toContain('INT96');
    expect(await dataFiles()).toEqual(INPUTS);
    expect(await timestamps()).toEqual(before);
  });

  it('compacts INT96 inputs with logical into one file of INT64 timestamps with the same values', async () => {
    // Prepare
    const before = await timestamps();

    // Act
    const code = await run(
      ['compact', join(root, 'events'), '--schema-fidelity', 'logical', '--codec', 'snappy'],
      captureIo(),
    );

    // Assess
    expect(code).toBe(0);
    const [output, ...others] = await dataFiles();
    expect(others).toEqual([]);
    const bytes = await readFile(join(partition, output ?? ''));
    const ts = parquetMetadata(
      bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    ).schema.find((e) => e.name === 'ts');
    expect(ts?.type).toBe('INT64');
    expect(await timestamps()).toEqual(before);
  });

  it('tries a file quarantined for INT96 under exact again once the run asks for logical, and compacts it with the rest', async () => {
    // Prepare: a default run refuses the partition and quarantines the file it failed on
    const before = await timestamps();
    expect(await run(['compact', join(root, 'events')], captureIo())).not.toBe(0);
    const listed = captureIo();
    expect(await run(['quarantine', join(root, 'events')], listed)).toBe(0);
    expect(listed.stdout.join('\n')).toMatch(/part-\d\.parquet/);
    const io = captureIo();

    // Act: the setting the refusal named
    const code = await run(
      ['compact', join(root, 'events'), '--schema-fidelity', 'logical', '--codec', 'snappy'],
      io,
    );

    // Assess: nothing left out as quarantined — all six inputs in one output, the same instants
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).not.toContain('quarantined since');
    expect(await dataFiles()).toHaveLength(1);
    expect(await timestamps()).toEqual(before);
  });

  it('rejects a fidelity it does not know as a usage error, changing nothing', async () => {
    // Prepare
    const io = captureIo();

    // Act
    const code = await run(['compact', join(root, 'events'), '--schema-fidelity', 'loose'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain('exact, logical');
    expect(await dataFiles()).toEqual(INPUTS);
  });
});
