// Merge-on-Read compaction's own refusal: a file slice whose rows lake-compactor cannot merge or write back exactly.
// Raised before the slice's new base file is written; a compaction instant of ours already scheduled is rolled
// back, so the table is left as it was (the payload-class and merge-mode refusals are log/errors.ts's, raised before
// anything is written at all).
import { CompactorError } from '../../errors.js';

/** A slice lake-compactor does not compact, by name: the feature, and why. */
export class HudiCompactionUnsupportedError extends CompactorError {
  constructor(
    /** The file the refusal is about. */
    readonly key: string,
    readonly feature: string,
    readonly why: string,
  ) {
    super(
      `Hudi Merge-on-Read compaction of ${key}: ${feature} is not supported (${why}); no compaction of the table was committed, leave it to Hudi's own compactor`,
    );
  }
}
