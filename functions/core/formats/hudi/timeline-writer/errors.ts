// The timeline writer's one typed error: what it was asked to build cannot become a file Hudi accepts.
import { CompactorError } from '../../../errors.js';

/**
 * A Hudi timeline file cannot be built from the given input (a table version without a known layout, an instant
 * time that is not Hudi's, a LOCAL-timezone table without an explicit zone, content that does not fit Hudi's
 * schema). Raised before anything is written; never retried, since the same input fails the same way.
 */
export class HudiTimelineWriteError extends CompactorError {
  constructor(
    /** What is wrong, in Hudi's terms. */
    readonly reason: string,
  ) {
    super(`Cannot write a Hudi timeline file: ${reason}. Nothing was written`);
  }
}
