// The scan of a slice's log files keeps the blocks Hudi's BaseHoodieLogRecordReader keeps, in its order: files by
// instant, version and write token; corrupt and uncommitted blocks skipped; rollback command blocks void their target
// instant; blocks processed instant by instant in order of first appearance.
import { describe, expect, it } from 'vitest';
import {
  HudiLogFormatError,
  HudiLogUnsupportedError,
} from '../../../../../../functions/core/formats/hudi/log/errors.js';
import {
  compareLogFileNames,
  parseLogFileName,
  scanLogFiles,
} from '../../../../../../functions/core/formats/hudi/log/scanner.js';
import { block, H, int32, rollback, T } from './craft.js';

const data = (instant: string) => block(T.AVRO, [[H.INSTANT_TIME, instant]], int32(3));
const all = () => true;
const instants = (scan: ReturnType<typeof scanLogFiles>) =>
  scan.blocks.map((b) => b.header.get('INSTANT_TIME'));

describe('Hudi log file names', () => {
  it('parses fileId, instant, version and write token', () => {
    // Act
    const name = parseLogFileName('city=x/.d0304c53-6fd2-0_20250331030642808.log.12_0-26-85');

    // Assess
    expect(name).toEqual({
      fileId: 'd0304c53-6fd2-0',
      instant: '20250331030642808',
      version: 12,
      writeToken: '0-26-85',
    });
  });

  it('is not a log name for a base file, and refuses a CDC log by name', () => {
    // Act / Assess
    expect(parseLogFileName('abc-0_0-1-2_20250101.parquet')).toBeUndefined();
    expect(() => parseLogFileName('.abc-0_2025.log.1_0-1-2.cdc')).toThrow(HudiLogUnsupportedError);
  });

  it('orders by instant, then numerically by version, then by write token', () => {
    // Prepare
    const names = ['.f_2.log.1_0-1-1', '.f_1.log.10_0-1-1', '.f_1.log.2_1-1-1', '.f_1.log.2_0-9-9'].map(
      (n) => parseLogFileName(n) ?? expect.unreachable(),
    );

    // Act
    const sorted = [...names].sort(compareLogFileNames);

    // Assess
    expect(sorted.map((n) => `${n.instant}.${n.version}_${n.writeToken}`)).toEqual([
      '1.2_0-9-9',
      '1.2_1-1-1',
      '1.10_0-1-1',
      '2.1_0-1-1',
    ]);
  });
});

describe('Hudi log scan', () => {
  it('reads files in Hudi order regardless of the order given', () => {
    // Prepare
    const files = [
      { key: '.f_1.log.2_0-1-1', bytes: data('002') },
      { key: '.f_1.log.1_0-1-1', bytes: data('001') },
    ];

    // Act
    const scan = scanLogFiles(files, { isCommitted: all });

    // Assess
    expect(instants(scan)).toEqual(['001', '002']);
  });

  it('voids every earlier block of a rolled-back instant, and keeps a later block of it', () => {
    // Prepare: B1(001) B2(002) B3(002, a retried task) R(002) B4(003) B5(002 again, after the rollback)
    const bytes = Buffer.concat([
      data('001'),
      data('002'),
      data('002'),
      rollback('009', '002'),
      data('003'),
      data('002'),
    ]);

    // Act
    const scan = scanLogFiles([{ key: '.f_1.log.1_0-1-1', bytes }], { isCommitted: all });

    // Assess
    expect(instants(scan)).toEqual(['001', '003', '002']);
    expect(scan.rolledBack).toEqual(['002']);
  });

  it('processes blocks instant by instant in order of first appearance', () => {
    // Prepare
    const bytes = Buffer.concat([data('001'), data('002'), data('001')]);

    // Act
    const scan = scanLogFiles([{ key: '.f_1.log.1_0-1-1', bytes }], { isCommitted: all });

    // Assess
    expect(instants(scan)).toEqual(['001', '001', '002']);
  });

  it('skips blocks of uncommitted instants and of instants after the latest, and corrupt blocks', () => {
    // Prepare
    const bytes = Buffer.concat([data('001'), data('002'), data('003'), data('004').subarray(0, 20)]);

    // Act
    const scan = scanLogFiles([{ key: '.f_1.log.1_0-1-1', bytes }], {
      isCommitted: (i) => i !== '002',
      latestInstant: '002',
    });

    // Assess
    expect(instants(scan)).toEqual(['001']);
    expect(scan.uncommittedBlocks).toBe(1);
    expect(scan.corruptBlocks).toBe(1);
  });

  it('refuses a file whose name is not a log file name', () => {
    // Act
    const act = () => scanLogFiles([{ key: 'x.parquet', bytes: data('001') }], { isCommitted: all });

    // Assess
    expect(act).toThrow(HudiLogFormatError);
  });

  it('refuses an HFILE block of a committed instant by name', () => {
    // Prepare
    const bytes = block(T.HFILE, [[H.INSTANT_TIME, '001']], int32(0));

    // Act
    const act = () => scanLogFiles([{ key: '.f_1.log.1_0-1-1', bytes }], { isCommitted: all });

    // Assess
    expect(act).toThrow(/HFILE_DATA block/);
  });

  it('refuses a command block that is not a rollback by name', () => {
    // Prepare
    const bytes = block(T.COMMAND, [
      [H.INSTANT_TIME, '002'],
      [H.COMMAND_BLOCK_TYPE, '1'],
    ]);

    // Act
    const act = () => scanLogFiles([{ key: '.f_1.log.1_0-1-1', bytes }], { isCommitted: all });

    // Assess
    expect(act).toThrow(/command block type 1/);
  });
});
