// What Ctrl-C prints at each moment of a compact: before anything was planned, mid-partition with a group in
// flight, after a rollback, and in a dry run.
import { describe, expect, it } from 'vitest';
import { CompactProgress } from '../../functions/cli/compact-progress.js';

describe('CompactProgress.interruptedReport', () => {
  it('says nothing of this run was planned when interrupted while settling or listing', () => {
    // Prepare
    const progress = new CompactProgress('s3://lake/events', false);

    // Act
    const report = progress.interruptedReport();

    // Assess
    expect(report).toEqual([
      'interrupted (Ctrl-C):',
      '  committed: nothing',
      '  rolled back: nothing',
      '  in flight: settling what an earlier run left, or listing the table; nothing of this run was planned',
      'next: run the same compact again (it settles the interrupted group first, then compacts the rest), or lake-compactor settle s3://lake/events (with the same --format options) to only settle it.',
    ]);
  });

  it('names the committed and rolled-back groups, the group in flight and the partitions not started', () => {
    // Prepare
    const progress = new CompactProgress('lake/events', false);
    progress.listed(['date=1', 'date=2', 'date=3', '']);
    progress.planned('date=1', 1);
    progress.groupEnded('date=1', 'g0001', true);
    progress.partitionDone('date=1');
    progress.planned('date=2', 3);
    progress.groupEnded('date=2', 'g0001', false);

    // Act
    const report = progress.interruptedReport();

    // Assess
    expect(report.slice(1, 5)).toEqual([
      '  committed: 1 group (date=1 g0001)',
      '  rolled back: 1 group (date=2 g0001)',
      '  in flight: date=2, group 2 of 3: journaled, so the next run rolls it forward if it had started publishing and back otherwise; no row is lost or kept twice',
      '  not started: 2 partitions (date=3, (root))',
    ]);
  });

  it('says a dry run wrote nothing', () => {
    // Act
    const report = new CompactProgress('lake/events', true).interruptedReport();

    // Assess
    expect(report).toEqual(['interrupted (Ctrl-C) during a dry run: nothing was written.']);
  });
});
