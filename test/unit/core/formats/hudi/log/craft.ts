// Test helper: writes Hudi log blocks byte for byte as Hudi does (see functions/core/formats/hudi/log/blocks.ts),
// so tests can craft valid, truncated and lying blocks without a Hudi writer.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HUDI_LOG_FILES } from '../../../../../support/fixtures.js';

const MAGIC = Buffer.from('#HUDI#', 'latin1');

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

function metadata(entries: Metadata): Buffer {
  const parts = [int32(entries.length)];
  for (const [key, value] of entries) {
    const v = Buffer.from(value, 'utf8');
    parts.push(int32(key), int32(v.length), v);
  }
  return Buffer.concat(parts);
}

/** One whole block: magic, length, version 1, type ordinal, header, content, footer, reverse pointer. */
export function block(
  type: number,
  header: Metadata,
  content: Uint8Array = new Uint8Array(),
  footer: Metadata = [],
) {
  const body = Buffer.concat([
    int32(1),
    int32(type),
    metadata(header),
    int64(content.length),
    content,
    metadata(footer),
  ]);
  const length = body.length + 8;
  return Buffer.concat([MAGIC, int64(length), body, int64(length + 6)]);
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
  const parts = [int32(3), int32(claimedCount)];
  for (const r of records) parts.push(int32(r.length), Buffer.from(r));
  return Buffer.concat(parts);
}

/** A rollback command block cancelling `target`. */
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
