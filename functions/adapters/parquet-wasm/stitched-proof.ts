// Verify's byte-level proof of stitched outputs: the footers compared by core (core/verify/stitched-proof.ts),
// then every range it names read from the output and from the source as stored and compared by SHA-256,
// streamed in bounded pieces. The sources are read at the ETag the fingerprint records, or refused.

import { createHash } from 'node:crypto';
import pLimit from 'p-limit';
import type { StitchedSegment } from '../../core/fingerprint/stitched.js';
import { readFooterBytes } from '../../core/parquet/footer.js';
import { PROOF_PIECE_BYTES } from '../../core/parquet/stitch.js';
import { decodeStruct, field } from '../../core/parquet/thrift-compact.js';
import {
  bloomFilterLength,
  type ObjectFooter,
  offsetIndexProblem,
  type Range,
  type RangeCheck,
  sourceCoverageProblems,
  stitchedFooterProof,
} from '../../core/verify/stitched-proof.js';
import type { ObjectStore } from '../../ports/object-store.js';

/** Bytes read per request while hashing a range: memory stays bounded whatever a column chunk's size. */
const PIECE_BYTES = PROOF_PIECE_BYTES;
/** Ranges compared at once (each holds at most two pieces). */
const RANGES_IN_FLIGHT = 2;
/** Bytes read at a bloom filter's start to learn its length (its header is a few bytes of Thrift). */
const BLOOM_HEADER_PROBE = 256;

/** SHA-256 of bytes `range` of `key`, read `PIECE_BYTES` at a time. */
async function hashRange(store: ObjectStore, key: string, range: Range): Promise<string> {
  const hash = createHash('sha256');
  for (let at = range.offset; at < range.offset + range.length; at += PIECE_BYTES) {
    const end = Math.min(range.offset + range.length, at + PIECE_BYTES);
    hash.update(await store.getRange(key, at, end - 1));
  }
  return hash.digest('hex');
}

/** The FileMetaData bytes of a `size`-byte object and where its data ends, from its last bytes (`readFooterBytes`). */
function footerOfTail(key: string, size: number, tail: Uint8Array): ObjectFooter {
  const length = new DataView(tail.buffer, tail.byteOffset, tail.byteLength).getUint32(tail.length - 8, true);
  return {
    key,
    metadata: tail.subarray(tail.length - 8 - length, tail.length - 8),
    dataEnd: size - 8 - length,
  };
}

/** The footer of a `size`-byte object, read as every footer is (`readFooterBytes`: at most two ranged reads). */
async function footerBytesOf(store: ObjectStore, key: string, size: number): Promise<ObjectFooter> {
  return footerOfTail(key, size, (await readFooterBytes(store, key, size)).tail);
}

/** A source input as verify found it: its footer, or why it cannot be read as planned. */
interface SourceState {
  readonly footer: ObjectFooter | undefined;
  readonly problem: string | undefined;
}

/**
 * Proves a group's stitched outputs from the objects themselves. Sources are looked up once per group:
 * HEAD (the ETag must be the one each segment records — the plan's, which core checks), footer read, and
 * HEAD again once every range is compared, so bytes read from any other version are refused.
 */
export class StitchedProver {
  private readonly sources = new Map<string, Promise<SourceState>>();
  private readonly etags = new Map<string, string>();

  constructor(
    /** Where the sources are. */
    private readonly store: ObjectStore,
    /** Where the outputs are. */
    private readonly outputs: ObjectStore,
  ) {}

  private source(key: string, etag: string): Promise<SourceState> {
    let state = this.sources.get(key);
    if (state === undefined) {
      this.etags.set(key, etag);
      state = (async (): Promise<SourceState> => {
        const head = await this.store.head(key);
        if (head === undefined) return { footer: undefined, problem: `source ${key} is gone` };
        if (head.etag !== etag) {
          return {
            footer: undefined,
            problem: `source ${key} changed since it was planned (ETag ${head.etag}, copied at ${etag})`,
          };
        }
        return { footer: await footerBytesOf(this.store, key, head.size), problem: undefined };
      })();
      this.sources.set(key, state);
    }
    return state;
  }

  /**
   * Differences between `segment`'s claim and the stitched output `output` (empty when proven). `outputTail`: the
   * output's last bytes when the caller reads them anyway (verify does, to decode it), so they are not read twice.
   */
  async prove(
    output: { key: string; size: number },
    segment: StitchedSegment,
    outputTail?: Promise<{ readonly tail: Uint8Array }>,
  ): Promise<string[]> {
    const problems: string[] = [];
    const footers = new Map<string, ObjectFooter>();
    for (const ref of segment.sources) {
      if (this.etags.has(ref.key) && this.etags.get(ref.key) !== ref.etag) {
        problems.push(`source ${ref.key} listed at two ETags (${this.etags.get(ref.key)}, ${ref.etag})`);
        continue;
      }
      const state = await this.source(ref.key, ref.etag);
      if (state.problem !== undefined) problems.push(state.problem);
      else footers.set(ref.key, state.footer as ObjectFooter);
    }
    if (problems.length > 0) return [...new Set(problems)];
    const own =
      outputTail === undefined
        ? await footerBytesOf(this.outputs, output.key, output.size)
        : footerOfTail(output.key, output.size, (await outputTail).tail);
    const proof = stitchedFooterProof(own, segment, footers);
    problems.push(...proof.problems);
    const ends = new Map([...footers].map(([k, f]) => [k, f.dataEnd]));
    ends.set(output.key, own.dataEnd);
    const limit = pLimit(RANGES_IN_FLIGHT);
    const found = await Promise.all(
      proof.checks.map((check) => limit(() => this.compare(output.key, check, ends))),
    );
    for (const f of found) if (f !== undefined) problems.push(f);
    return problems;
  }

  /**
   * The whole-input rule over the group (see `sourceCoverageProblems`), and each source's ETag checked again
   * now that every range was read: a source replaced while verify read it is refused.
   */
  async finish(segments: readonly StitchedSegment[]): Promise<string[]> {
    const counts = new Map<string, number>();
    const problems: string[] = [];
    for (const [key, state] of this.sources) {
      const { footer } = await state;
      if (footer === undefined) continue;
      const groups = field(decodeStruct(footer.metadata).struct, 4)?.value;
      counts.set(
        key,
        typeof groups === 'object' && groups !== null && 'items' in groups ? groups.items.length : 0,
      );
      const head = await this.store.head(key);
      if (head?.etag !== this.etags.get(key)) {
        problems.push(`source ${key} changed while it was verified (ETag ${head?.etag ?? 'none'})`);
      }
    }
    return [...problems, ...sourceCoverageProblems(segments, counts)];
  }

  /** `ends`: where each object's data ends (bloom filter headers are read up to it, never into the footer). */
  private async compare(
    outputKey: string,
    check: RangeCheck,
    ends: ReadonlyMap<string, number>,
  ): Promise<string | undefined> {
    const { store, outputs } = this;
    if (check.kind === 'bytes') {
      const [a, b] = await Promise.all([
        hashRange(outputs, outputKey, check.output),
        hashRange(store, check.source.key, check.source.range),
      ]);
      return a === b ? undefined : `${check.what}: bytes differ from the source's`;
    }
    if (check.kind === 'offset-index') {
      const read = (from: ObjectStore, key: string, r: Range) =>
        r.length === 0 ? new Uint8Array(0) : from.getRange(key, r.offset, r.offset + r.length - 1);
      const [a, b] = await Promise.all([
        read(outputs, outputKey, check.output),
        read(store, check.source.key, check.source.range),
      ]);
      const problem = offsetIndexProblem(a, b, check.delta);
      return problem === undefined ? undefined : `${check.what}: ${problem}`;
    }
    const lengthAt = async (from: ObjectStore, key: string, offset: number): Promise<number | undefined> => {
      try {
        const end = Math.min(offset + BLOOM_HEADER_PROBE, ends.get(key) ?? 0);
        return end <= offset ? undefined : bloomFilterLength(await from.getRange(key, offset, end - 1));
      } catch {
        return undefined;
      }
    };
    const [ol, sl] = await Promise.all([
      lengthAt(outputs, outputKey, check.output),
      lengthAt(store, check.source.key, check.source.offset),
    ]);
    if (ol === undefined || sl === undefined || ol !== sl)
      return `${check.what}: header differs from the source's`;
    const [a, b] = await Promise.all([
      hashRange(outputs, outputKey, { offset: check.output, length: ol }),
      hashRange(store, check.source.key, { offset: check.source.offset, length: sl }),
    ]);
    return a === b ? undefined : `${check.what}: bytes differ from the source's`;
  }
}
