// The typed errors of Hudi's bloom filter codec. They live beside the codec rather than in core/errors.ts: they are
// raised by pure decoding and building, which a caller (the Hudi format, the engine's footer hook) turns into its own
// refusal with the file's name, so no workflow step matches them by name and the state machine's lists stay as
// they are.
import { CompactorError } from '../../../errors.js';

/**
 * A serialised Hudi bloom filter (a footer's `org.apache.hudi.bloomfilter`) is not one Hudi could have written or
 * read: bad Base64, an unknown version or type code, or a size (vector bits, matrix rows, hash count) that the bytes
 * present cannot hold. Refused before anything of that size is allocated, so a lying footer cannot exhaust memory.
 */
export class CorruptBloomFilterError extends CompactorError {
  constructor(readonly reason: string) {
    super(
      `Corrupt Hudi bloom filter: ${reason}. Hudi's index cannot use it either; rewrite the file with Hudi.`,
    );
  }
}

/**
 * A request Hudi itself would refuse or that this codec does not implement: an empty key (Hadoop's HashFunction
 * throws on it), Jenkins hashing (Hudi writes Murmur only), or sizing parameters out of range.
 */
export class UnsupportedBloomFilterError extends CompactorError {
  constructor(readonly reason: string) {
    super(`Unsupported Hudi bloom filter: ${reason}.`);
  }
}
