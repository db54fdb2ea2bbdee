// Test helper: Hudi log blocks crafted through the production writer (functions/core/formats/hudi/log/writer.ts),
// by ordinal, so tests can write valid blocks with any header (short instants included), then truncate or lie about
// them without a Hudi writer. The framing itself is the writer's: there is one encoder.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BLOCK_TYPES, HEADER_KEYS } from '../../../../../../functions/core/formats/hudi/log/blocks.js';
import { avroDataContent, encodeLogBlock } from '../../../../../../functions/core/formats/hudi/log/writer.js';
import { HUDI_LOG_FILES } from '../../../../../support/fixtures.js';

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

function int64(n: number | bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(BigInt(n));
  return b;
}

/** Header or footer entries as (key ordinal, value). */
export type Metadata = readonly (readonly [number, string])[];

function byName(entries: Metadata) {
  return entries.map(([key, value]) => {
    const name = HEADER_KEYS[key];
    if (name === undefined) throw new Error(`no header key ordinal ${key}`);
    return [name, value] as const;
  });
}

/** One whole block: magic, length, version 1, type ordinal, header, content, footer, reverse pointer. */
export function block(
  type: number,
  header: Metadata,
  content: Uint8Array = new Uint8Array(),
  footer: Metadata = [],
): Buffer {
  const name = BLOCK_TYPES[type];
  if (name === undefined) throw new Error(`no block type ordinal ${type}`);
  const bytes = encodeLogBlock({ type: name, header: byName(header), content, footer: byName(footer) });
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A block whose length field says `claimed` instead of the truth (the rest unchanged). */
export function withLength(b: Buffer, claimed: number | bigint): Buffer {
  const out = Buffer.from(b);
  out.writeBigInt64BE(BigInt(claimed), 6);
  return out;
}

/** Header key ordinals. */
export const H = { INSTANT_TIME: 0, TARGET_INSTANT_TIME: 1, SCHEMA: 2, COMMAND_BLOCK_TYPE: 3, IS_PARTIAL: 7 };
/** Block type ordinals. */
export const T = { COMMAND: 0, DELETE: 1, AVRO: 3, HFILE: 4, PARQUET: 5, CDC: 6 };

/** An Avro data block's content: int32 version 3, int32 count, then (int32 length, datum) per record. */
export function avroContent(records: readonly Uint8Array[], claimedCount = records.length): Buffer {
  const bytes = avroDataContent(records, claimedCount);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** A rollback command block cancelling `target` (any instant text, short ones included). */
export function rollback(instant: string, target: string): Buffer {
  return block(T.COMMAND, [
    [H.INSTANT_TIME, instant],
    [H.TARGET_INSTANT_TIME, target],
    [H.COMMAND_BLOCK_TYPE, '0'],
  ]);
}

/** The bytes and name of the one log file in `log_files/<folder>`. */
export function logFixture(folder: string): { name: string; bytes: Buffer } {
  const dir = join(HUDI_LOG_FILES, folder);
  const name = readdirSync(dir).find((n) => n.includes('.log.'));
  if (name === undefined) throw new Error(`no log file in ${dir}`);
  return { name, bytes: readFileSync(join(dir, name)) };
}

export { int32, int64 };
