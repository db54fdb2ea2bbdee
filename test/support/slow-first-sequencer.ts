// Vitest's sequencer for `npm test`: the known-slow files start first (why, and the list: slow-files.ts). Kept apart
// from the pure ordering so the unit test of that ordering does not import vitest's node API.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { slowFirst } from './slow-files.js';

/** Vitest's sequencer (cached timings, failed files first), then the known-slow files moved to the front. */
export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    return slowFirst(await super.sort(files), (spec) => relative(root, spec.moduleId).split('\\').join('/'));
  }
}
