// The Hudi bench's instants won / lost (issue #28) are counted from the timeline files a run put: held here with
// chosen keys in both timeline layouts, so the printed count cannot drift from Hudi's file names. No times are
// measured or asserted.
import { describe, expect, it } from 'vitest';
import { completedInstantOf, tallyHudiInstants } from '../../bench/hudi-instants.js';

const T1 = '20261207001500123';
const T2 = '20261207001501456';
const C1 = '20261207001509999';

describe('tallyHudiInstants', () => {
  it('counts a v8 clustering as won once its T_C.replacecommit is put, and one whose plan never completed as lost', () => {
    // Prepare: two plans; only the first completes (its inflight and completed files), the second is aborted.
    const keys = [
      `.hoodie/timeline/${T1}.clustering.requested`,
      `.hoodie/timeline/${T1}.clustering.inflight`,
      `1/abc-0_0-1-0_${T1}.parquet`,
      `.hoodie/timeline/${T2}.clustering.requested`,
      `.hoodie/timeline/${T1}_${C1}.replacecommit`,
      `.hoodie/timeline/${T2}.clustering.inflight`,
    ];

    // Act
    const tally = tallyHudiInstants(keys, 'clustering');

    // Assess
    expect(tally).toEqual({ planned: [T1, T2], won: [T1], lost: [T2] });
  });

  it('reads the v6 layout: T.replacecommit.requested plans, T.replacecommit completes', () => {
    // Act
    const tally = tallyHudiInstants(
      [
        `tbl/.hoodie/${T2}.replacecommit.requested`,
        `tbl/.hoodie/${T2}.replacecommit.inflight`,
        `tbl/.hoodie/${T2}.replacecommit`,
      ],
      'clustering',
    );

    // Assess
    expect(tally).toEqual({ planned: [T2], won: [T2], lost: [] });
  });

  it('counts a compaction by its plan and its completed commit, and not a commit it did not plan', () => {
    // Prepare: our compaction T1 completes as a commit; a commit at T2 without our plan is another writer's.
    const keys = [
      `.hoodie/timeline/${T1}.compaction.requested`,
      `.hoodie/timeline/${T1}.compaction.inflight`,
      `.hoodie/timeline/${T2}_${C1}.commit`,
      `.hoodie/timeline/${T1}_${C1}.commit`,
    ];

    // Act
    const compaction = tallyHudiInstants(keys, 'compaction');
    const clustering = tallyHudiInstants(keys, 'clustering');

    // Assess: the compaction is won; it is no clustering, and the foreign commit is nobody's here
    expect(compaction).toEqual({ planned: [T1], won: [T1], lost: [] });
    expect(clustering).toEqual({ planned: [], won: [], lost: [] });
  });

  it('counts an instant once when its files are put more than once (a retried put)', () => {
    // Act
    const tally = tallyHudiInstants(
      [
        `.hoodie/timeline/${T1}.clustering.requested`,
        `.hoodie/timeline/${T1}.clustering.requested`,
        `.hoodie/timeline/${T1}_${C1}.replacecommit`,
        `.hoodie/timeline/${T1}_${C1}.replacecommit`,
      ],
      'clustering',
    );

    // Assess
    expect(tally).toEqual({ planned: [T1], won: [T1], lost: [] });
  });

  it('takes no requested or inflight file for a completed instant', () => {
    // Act: a plan whose only later file is its inflight one
    const tally = tallyHudiInstants(
      [`.hoodie/timeline/${T1}.clustering.requested`, `.hoodie/timeline/${T1}.replacecommit.inflight`],
      'clustering',
    );

    // Assess
    expect(tally.won).toEqual([]);
    expect(tally.lost).toEqual([T1]);
  });
});

describe('completedInstantOf', () => {
  it("names a completed file's begin time in either layout, and nothing for a plan, an inflight file or data", () => {
    // Act
    const names = [
      `.hoodie/timeline/${T1}_${C1}.commit`,
      `.hoodie/${T2}.commit`,
      `.hoodie/timeline/${T1}.compaction.requested`,
      `.hoodie/timeline/${T1}.compaction.inflight`,
      `1/abc-0_0-1-0_${T1}.parquet`,
    ].map((key) => completedInstantOf(key, 'compaction'));

    // Assess
    expect(names).toEqual([T1, T2, undefined, undefined, undefined]);
  });
});
