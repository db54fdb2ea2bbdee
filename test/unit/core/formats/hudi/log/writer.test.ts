// The log writer against Hudi's own files: every data-table log file among the vendored fixtures (v6, v8 and v9
// tables, and one file per block type), rebuilt block by block from what the reader decoded of it, is the very same
// bytes — framing, header entries, content version, record datums, delete list, footer — and every fixture log's
// name is what the writer names it. Then the writer's own blocks read back through the scanner and merger record for
// record, and what Hudi would not write is refused before a byte is written.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type LogBlock, readLogBlocks } from '../../../../../../functions/core/formats/hudi/log/blocks.js';
import { DecodeBudget } from '../../../../../../functions/core/formats/hudi/log/budget.js';
import { decodeBlockRecords } from '../../../../../../functions/core/formats/hudi/log/content.js';
import { HudiLogWriteError } from '../../../../../../functions/core/formats/hudi/log/errors.js';
import { mergeLogBlocks, mergePolicy } from '../../../../../../functions/core/formats/hudi/log/merge.js';
import { parseLogFileName, scanLogFiles } from '../../../../../../functions/core/formats/hudi/log/scanner.js';
import {
  avroDataBlock,
  avroDataContent,
  deleteBlock,
  deleteContent,
  encodeAvroRecords,
  encodeLogBlock,
  logFileInstant,
  logFileName,
  rollbackBlock,
} from '../../../../../../functions/core/formats/hudi/log/writer.js';
import { HUDI_FIXTURES } from '../../../../../support/fixtures.js';

/** Every log file of the fixtures' data tables (not their metadata tables), relative to HUDI_FIXTURES. */
const FIXTURE_LOGS = (readdirSync(HUDI_FIXTURES, { recursive: true }) as string[])
  .filter((p) => /(^|\/)\.[^/]+\.log\.\d+_/.test(p) && !p.includes('.hoodie'))
  .sort();

function fixture(path: string): { name: string; bytes: Uint8Array; blocks: LogBlock[] } {
  const bytes = new Uint8Array(readFileSync(join(HUDI_FIXTURES, path)));
  const blocks = readLogBlocks(path, bytes).map((b) => {
    if (b.kind !== 'block') throw new Error(`${path} has a corrupt block`);
    return b;
  });
  return { name: path.slice(path.lastIndexOf('/') + 1), bytes, blocks };
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  return new Uint8Array(Buffer.concat(parts));
}

/** One fixture block written again by the writer from its decoded parts, header entries in the file's order. */
async function rewrite(block: LogBlock): Promise<Uint8Array> {
  const header = [...block.header];
  const footer = [...block.footer];
  const framed = (content: Uint8Array) => encodeLogBlock({ type: block.type, header, content, footer });
  switch (block.type) {
    case 'AVRO_DATA_BLOCK': {
      const decoded = await decodeBlockRecords(block, new DecodeBudget());
      if (decoded.kind !== 'data') throw new Error('not data');
      return framed(avroDataContent(encodeAvroRecords(block.header.get('SCHEMA') ?? '', decoded.records)));
    }
    case 'DELETE_BLOCK': {
      const decoded = await decodeBlockRecords(block, new DecodeBudget());
      if (decoded.kind !== 'delete') throw new Error('not deletes');
      return framed(
        deleteContent(
          decoded.deletes.map((d) => ({
            recordKey: d.recordKey ?? '',
            partitionPath: d.partitionPath ?? '',
            orderingValue: d.orderingValue as number,
          })),
        ),
      );
    }
    default:
      // Parquet blocks are whole Parquet files (the engine's), command blocks have no content: framing only.
      return framed(block.content);
  }
}

describe('Hudi log writer against the fixtures', () => {
  it('finds the data-table log files of every block type among the fixtures', () => {
    // Prepare
    const types = new Set(FIXTURE_LOGS.flatMap((p) => fixture(p).blocks.map((b) => b.type)));

    // Assess
    expect(FIXTURE_LOGS.length).toBeGreaterThanOrEqual(15);
    expect([...types].sort()).toEqual([
      'AVRO_DATA_BLOCK',
      'COMMAND_BLOCK',
      'DELETE_BLOCK',
      'PARQUET_DATA_BLOCK',
    ]);
  });

  it.each(FIXTURE_LOGS)('rebuilds %s byte for byte from its decoded blocks', async (path) => {
    // Prepare
    const { bytes, blocks } = fixture(path);

    // Act
    const written = concat(await Promise.all(blocks.map(rewrite)));

    // Assess
    expect(Buffer.from(written).equals(Buffer.from(bytes))).toBe(true);
  });

  it.each(FIXTURE_LOGS)('names %s as Hudi named it', (path) => {
    // Prepare
    const { name } = fixture(path);
    const parts = parseLogFileName(name);
    if (parts === undefined) throw new Error(`${name} does not parse`);

    // Act
    const written = logFileName(parts);

    // Assess
    expect(written).toBe(name);
  });

  it('writes an Avro data block with the header of Hudi 0.x and 1.x writers (INSTANT_TIME then SCHEMA), as the v6 and v9 fixtures have it', async () => {
    // Prepare: the fixtures whose single Avro block has INSTANT_TIME first
    const paths = FIXTURE_LOGS.filter((p) => {
      const [b] = fixture(p).blocks;
      return b?.type === 'AVRO_DATA_BLOCK' && [...b.header.keys()][0] === 'INSTANT_TIME';
    });
    expect(paths.length).toBeGreaterThanOrEqual(4);

    for (const path of paths) {
      const { bytes, blocks } = fixture(path);
      const [block] = blocks as [LogBlock];
      const decoded = await decodeBlockRecords(block, new DecodeBudget());
      if (decoded.kind !== 'data') throw new Error('not data');

      // Act
      const written = avroDataBlock(
        block.header.get('INSTANT_TIME') ?? '',
        block.header.get('SCHEMA') ?? '',
        decoded.records,
      );

      // Assess
      expect(Buffer.from(written).equals(Buffer.from(bytes)), path).toBe(true);
    }
  });

  it('writes a delete block and a rollback block as the v9 and rollback fixtures have them', async () => {
    // Prepare
    const deletes = FIXTURE_LOGS.filter(
      (p) => p.startsWith('mor_v9') && fixture(p).blocks[0]?.type === 'DELETE_BLOCK',
    );
    const rollbackPath = FIXTURE_LOGS.find((p) => p.startsWith('log_files/valid_log_rollback')) ?? '';
    expect(deletes).toHaveLength(2);

    for (const path of deletes) {
      const { bytes, blocks } = fixture(path);
      const [block] = blocks as [LogBlock];
      const decoded = await decodeBlockRecords(block, new DecodeBudget());
      if (decoded.kind !== 'delete') throw new Error('not deletes');

      // Act
      const written = deleteBlock(
        block.header.get('INSTANT_TIME') ?? '',
        block.header.get('SCHEMA') ?? '',
        decoded.deletes.map((d) => ({
          recordKey: d.recordKey ?? '',
          partitionPath: d.partitionPath ?? '',
          orderingValue: 0,
        })),
      );

      // Assess
      expect(Buffer.from(written).equals(Buffer.from(bytes)), path).toBe(true);
    }
    const rollback = fixture(rollbackPath);
    const [command] = rollback.blocks as [LogBlock];
    const written = rollbackBlock(
      command.header.get('INSTANT_TIME') ?? '',
      command.header.get('TARGET_INSTANT_TIME') ?? '',
    );
    expect(Buffer.from(written).equals(Buffer.from(rollback.bytes))).toBe(true);
  });

  it('names a log by its slice base instant on v6 and by its own deltacommit on v8, as the fixtures do', () => {
    // Prepare: the v6 trips update extends the slice of base 20250331030642808 at deltacommit 20250331030645735; the
    // v8 one was written by deltacommit 20251220210127080 (its block's INSTANT_TIME)
    const v6 = FIXTURE_LOGS.find((p) => p.startsWith('mor_v6_trips_8i1u/')) ?? '';
    const v8 = FIXTURE_LOGS.filter((p) => p.startsWith('mor_v8_trips_8i3u1d/'));
    const v6Block = fixture(v6).blocks[0];

    // Act
    const v6Instant = logFileInstant(6, '20250331030642808', v6Block?.header.get('INSTANT_TIME') ?? '');
    const v8Instants = v8.map((p) => {
      const f = fixture(p);
      return [
        parseLogFileName(f.name)?.instant,
        logFileInstant(8, 'unused', f.blocks[0]?.header.get('INSTANT_TIME') ?? ''),
      ];
    });

    // Assess
    expect(v6Block?.header.get('INSTANT_TIME')).toBe('20250331030645735');
    expect(parseLogFileName(fixture(v6).name)?.instant).toBe(v6Instant);
    expect(v8Instants.length).toBeGreaterThanOrEqual(4);
    for (const [named, written] of v8Instants) expect(named).toBe(written);
  });
});

/** A table's writer schema with Hudi's meta fields first, nullable unions as Spark's writer declares them. */
const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'events_record',
  namespace: 'hoodie.events',
  fields: [
    ...[
      '_hoodie_commit_time',
      '_hoodie_commit_seqno',
      '_hoodie_record_key',
      '_hoodie_partition_path',
      '_hoodie_file_name',
    ].map((name) => ({ name, type: ['null', 'string'], doc: '', default: null })),
    { name: 'id', type: ['null', 'int'], default: null },
    { name: 'name', type: ['null', 'string'], default: null },
    { name: 'ts', type: ['null', 'long'], default: null },
  ],
});

function record(instant: string, seq: number, id: number, name: string | null, ts: bigint) {
  return {
    _hoodie_commit_time: instant,
    _hoodie_commit_seqno: `${instant}_0_${seq}`,
    _hoodie_record_key: String(id),
    _hoodie_partition_path: '1',
    _hoodie_file_name: 'f1-0',
    id,
    name,
    ts,
  };
}

describe('Hudi log writer round trip', () => {
  it('writes data, delete and rollback blocks the scanner and merger read back record for record', async () => {
    // Prepare: two committed delta commits and a failed one rolled back, in two log files of one slice
    const first = [
      record('20240301000000002', 0, 1, 'one-v2', 20n),
      record('20240301000000002', 1, 2, null, 2n ** 60n),
    ];
    const second = [record('20240301000000004', 0, 1, 'one-v3', 30n)];
    const failed = [record('20240301000000003', 0, 2, 'never', 99n)];
    const log1 = concat([
      avroDataBlock('20240301000000002', SCHEMA, first),
      avroDataBlock('20240301000000003', SCHEMA, failed),
      rollbackBlock('20240301000000005', '20240301000000003'),
    ]);
    const log2 = concat([
      avroDataBlock('20240301000000004', SCHEMA, second),
      deleteBlock('20240301000000006', SCHEMA, [{ recordKey: '3', partitionPath: '1', orderingValue: 40n }]),
    ]);
    const token = '0-1-0';
    const files = [
      {
        key: `1/${logFileName({ fileId: 'f1-0', instant: '20240301000000001', version: 2, writeToken: token })}`,
        bytes: log2,
      },
      {
        key: `1/${logFileName({ fileId: 'f1-0', instant: '20240301000000001', version: 1, writeToken: token })}`,
        bytes: log1,
      },
    ];

    // Act
    const scan = scanLogFiles(files, { isCommitted: () => true });
    const decoded = await Promise.all(scan.blocks.map((b) => decodeBlockRecords(b, new DecodeBudget())));
    const merged = await mergeLogBlocks(
      scan.blocks,
      mergePolicy({ tableVersion: 8, mergeMode: 'EVENT_TIME_ORDERING', orderingFields: 'ts' }),
      new DecodeBudget(),
    );

    // Assess: blocks in order, the rolled-back one left out, every record as written
    expect(scan.rolledBack).toEqual(['20240301000000003']);
    expect(decoded).toEqual([
      { kind: 'data', records: first },
      { kind: 'data', records: second },
      {
        kind: 'delete',
        deletes: [{ recordKey: '3', partitionPath: '1', orderingValue: 40n, naturalOrder: false }],
      },
    ]);
    expect([...merged.keys()].sort()).toEqual(['1', '2', '3']);
    expect(merged.get('1')).toMatchObject({ kind: 'upsert', row: second[0], instant: '20240301000000004' });
    expect(merged.get('2')).toMatchObject({ kind: 'upsert', row: first[1], instant: '20240301000000002' });
    expect(merged.get('3')).toMatchObject({ kind: 'delete' });
  });

  it('frames header and footer entries in the order given, each as key ordinal, length and UTF-8 bytes', () => {
    // Prepare
    const header = [
      ['SCHEMA', '{}'],
      ['INSTANT_TIME', '20240301000000001'],
    ] as const;

    // Act
    const bytes = encodeLogBlock({
      type: 'AVRO_DATA_BLOCK',
      header,
      content: Uint8Array.of(9),
      footer: [['BLOCK_IDENTIFIER', 'é']],
    });
    const [block] = readLogBlocks('f', bytes) as [LogBlock];

    // Assess
    const view = Buffer.from(bytes);
    expect(view.subarray(0, 6).toString('latin1')).toBe('#HUDI#');
    expect(view.readBigInt64BE(6)).toBe(BigInt(bytes.length - 14));
    expect(view.readInt32BE(14)).toBe(1);
    expect(view.readInt32BE(18)).toBe(3);
    expect(view.readInt32BE(22)).toBe(2);
    expect(view.readInt32BE(26)).toBe(2);
    expect(view.readBigInt64BE(bytes.length - 8)).toBe(BigInt(bytes.length - 8));
    expect([...block.header]).toEqual(header);
    expect([...block.footer]).toEqual([['BLOCK_IDENTIFIER', 'é']]);
    expect([...block.content]).toEqual([9]);
  });
});

describe('Hudi log writer refusals', () => {
  it.each([
    ['an instant that is not 17 digits', () => avroDataBlock('2024', SCHEMA, [])],
    [
      'a record that does not fit the schema',
      () => avroDataBlock('20240301000000001', SCHEMA, [{ id: 'x' }]),
    ],
    ['a schema that is not a record', () => encodeAvroRecords('"string"', [])],
    [
      'an ordering value no int32 wrapper holds',
      () =>
        deleteBlock('20240301000000001', SCHEMA, [{ recordKey: '1', partitionPath: '', orderingValue: 1.5 }]),
    ],
    [
      'a file id with an underscore',
      () => logFileName({ fileId: 'a_b', instant: '20240301000000001', version: 1, writeToken: '0-1-0' }),
    ],
    [
      'log version 0',
      () => logFileName({ fileId: 'a', instant: '20240301000000001', version: 0, writeToken: '0-1-0' }),
    ],
    [
      'a malformed write token',
      () => logFileName({ fileId: 'a', instant: '20240301000000001', version: 1, writeToken: '0-1' }),
    ],
  ])('refuses %s with HudiLogWriteError', (_what, act) => {
    // Act + Assess
    expect(act).toThrow(HudiLogWriteError);
  });

  it('writes no byte for an unknown header key', () => {
    // Act
    const act = () => encodeLogBlock({ type: 'COMMAND_BLOCK', header: [['NOT_A_KEY' as never, 'x']] });

    // Assess
    expect(act).toThrow(/header key NOT_A_KEY/);
  });
});
