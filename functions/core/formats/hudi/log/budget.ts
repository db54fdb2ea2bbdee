// The memory a scan of one file slice's logs may spend on decoded records. Why one budget for the whole scan and not
// per block: the merger holds every block's records at once (a key's latest version can come from any block), so it
// is the sum that must fit, and a writer can split a bomb over many small blocks.
import { MetadataTooLargeError } from '../../../errors.js';
import { currentMemoryBudget, currentMetadataLimits, describeBytes } from '../../../memory-budget.js';

/** Heap bytes decoded log records may take, spent as each value is checked (before it is built). */
export class DecodeBudget {
  private spentBytes = 0;

  /** @param limit bytes; by default the current memory budget's share for one decoded structure. */
  constructor(readonly limit: number = currentMetadataLimits().decodedBytes) {}

  get spent(): number {
    return this.spentBytes;
  }

  /**
   * Records `bytes` more as spent.
   * @throws MetadataTooLargeError naming `file` once the total passes the limit.
   */
  spend(bytes: number, file: string): void {
    this.spentBytes += bytes;
    if (this.spentBytes > this.limit)
      throw new MetadataTooLargeError(
        file,
        'Hudi log file',
        `its records (with the slice's other log records) would take more than ${describeBytes(this.limit)} decoded`,
        currentMemoryBudget().advice,
        "compact the file group with Hudi's own compactor",
      );
  }
}
