// Framing of Hudi log files: the real fixtures (one per block type) frame into the blocks hudi-rs's own reader tests
// expect (crates/core/src/file_group/log_file/reader.rs: one block each, its type, header size and instant), and
// crafted damage takes Hudi's CORRUPT-block path (HoodieLogFileReader.isBlockCorrupt / createCorruptBlock) or a typed
// error naming the file and offset — never an allocation of what a length claims.
import { describe, expect, it } from 'vitest';
import { readLogBlocks } from '../../../../../../functions/core/formats/hudi/log/blocks.js';
import {
  HudiLogFormatError,
  HudiLogUnsupportedError,
} from '../../../../../../functions/core/formats/hudi/log/errors.js';
import { block, H, int32, logFixture, rollback, T, withLength } from './craft.js';

function only<T>(xs: readonly T[]): T {
  expect(xs).toHaveLength(1);
  return xs[0] as T;
}

describe('Hudi log block framing', () => {
  it.each([
    ['valid_log_avro_data', 'AVRO_DATA_BLOCK', '20250316025828811'],
    ['valid_log_parquet_data', 'PARQUET_DATA_BLOCK', '20250113230424191'],
    ['valid_log_delete', 'DELETE_BLOCK', '20250618054714114'],
    ['valid_log_rollback', 'COMMAND_BLOCK', '20250126040936578'],
  ])('frames the %s fixture into one %s of instant %s, as hudi-rs reads it', (folder, type, instant) => {
    // Prepare
    const { name, bytes } = logFixture(folder);

    // Act
    const b = only(readLogBlocks(name, bytes));

    // Assess
    expect(b.kind).toBe('block');
    if (b.kind !== 'block') return;
    expect(b.type).toBe(type);
    expect(b.header.get('INSTANT_TIME')).toBe(instant);
    expect(b.footer.size).toBe(0);
    // hudi-rs: data and delete blocks carry 2 header entries (instant, schema), the rollback 3.
    expect(b.header.size).toBe(type === 'COMMAND_BLOCK' ? 3 : 2);
  });

  it('reads the rollback fixture as a rollback (command type 0) of instant 20250126040826878', () => {
    // Prepare
    const { name, bytes } = logFixture('valid_log_rollback');

    // Act
    const b = only(readLogBlocks(name, bytes));

    // Assess
    expect(b.kind === 'block' && b.header.get('COMMAND_BLOCK_TYPE')).toBe('0');
    expect(b.kind === 'block' && b.header.get('TARGET_INSTANT_TIME')).toBe('20250126040826878');
  });

  it('frames several blocks of one file in order', () => {
    // Prepare
    const bytes = Buffer.concat([block(T.AVRO, [[H.INSTANT_TIME, '001']], int32(3)), rollback('002', '001')]);

    // Act
    const blocks = readLogBlocks('f', bytes);

    // Assess
    expect(blocks.map((b) => (b.kind === 'block' ? b.type : b.kind))).toEqual([
      'AVRO_DATA_BLOCK',
      'COMMAND_BLOCK',
    ]);
  });

  it('reads a truncated last block (a crashed append) as a corrupt block and keeps the blocks before it', () => {
    // Prepare
    const good = rollback('002', '001');
    const torn = block(T.AVRO, [[H.INSTANT_TIME, '003']], int32(3)).subarray(0, 30);

    // Act
    const blocks = readLogBlocks('f', Buffer.concat([good, torn]));

    // Assess
    expect(blocks[0]?.kind).toBe('block');
    expect(blocks[1]).toMatchObject({ kind: 'corrupt', offset: good.length + 14, length: 30 - 14 });
  });

  it('skips a block whose length lies and resumes at the next magic, as Hudi scans forward', () => {
    // Prepare: the first block claims to be 4 bytes longer than it is, so no magic follows where it says it ends.
    const honest = block(T.AVRO, [[H.INSTANT_TIME, '001']], int32(3));
    const lying = withLength(honest, honest.length - 14 + 4);
    const next = rollback('002', '001');
    const bytes = Buffer.concat([lying, next]);

    // Act
    const blocks = readLogBlocks('f', bytes);

    // Assess
    expect(blocks).toHaveLength(2);
    expect(blocks[0]).toMatchObject({ kind: 'corrupt', offset: 14, length: lying.length - 14 });
    expect(blocks[1]).toMatchObject({ kind: 'block', type: 'COMMAND_BLOCK', offset: lying.length });
  });

  it('reads a length of 2^62 in a 60-byte file as a corrupt block, allocating nothing for it', () => {
    // Prepare
    const bytes = withLength(rollback('002', '001'), 2n ** 62n);

    // Act
    const b = only(readLogBlocks('f', bytes));

    // Assess
    expect(b).toMatchObject({ kind: 'corrupt', offset: 14, length: bytes.length - 14 });
  });

  it('refuses a file that does not start with the magic, naming the file and offset 0', () => {
    // Prepare
    const bytes = Buffer.from('not a hudi log file');

    // Act
    const act = () => readLogBlocks('.f_1.log.1_0-0-0', bytes);

    // Assess
    expect(act).toThrow(HudiLogFormatError);
    expect(act).toThrow(/\.f_1\.log\.1_0-0-0 is malformed at byte 0/);
  });

  it('refuses a header entry count the block cannot hold, without allocating it', () => {
    // Prepare: the header says 2^31-1 entries; the block is consistent framing-wise.
    const b = block(T.COMMAND, []);
    b.writeInt32BE(0x7fffffff, 22);

    // Act
    const act = () => readLogBlocks('f', b);

    // Assess
    expect(act).toThrow(HudiLogFormatError);
    expect(act).toThrow(/claims 2147483647 entries/);
  });

  it('refuses a content length that runs past the block, naming the offset', () => {
    // Prepare: content length field (after version, type, empty header) claims 1000 bytes.
    const b = block(T.AVRO, [], int32(3));
    b.writeBigInt64BE(1000n, 26);

    // Act
    const act = () => readLogBlocks('f', b);

    // Assess
    expect(act).toThrow(/content length 1000 is more than/);
  });

  it('refuses a log format version other than 1 by name', () => {
    // Prepare
    const b = block(T.COMMAND, []);
    b.writeInt32BE(2, 14);

    // Act
    const act = () => readLogBlocks('f', b);

    // Assess
    expect(act).toThrow(HudiLogUnsupportedError);
    expect(act).toThrow(/log format version 2/);
  });

  it('ignores fewer than six trailing bytes, as Hudi reads them as the end of the file', () => {
    // Prepare
    const bytes = Buffer.concat([rollback('002', '001'), Buffer.from([1, 2, 3])]);

    // Act
    const blocks = readLogBlocks('f', bytes);

    // Assess
    expect(blocks).toHaveLength(1);
    expect(blocks[0]?.kind).toBe('block');
  });
});
