// The checks a declared Delta coordination makes against what the log shows, without a server: quiet windows by the
// UTC clock (days, across midnight); put-if-absent refuses Spark's S3DynamoDBLogStore temp files and recent Spark
// commits; a quiet window refuses a commit by another writer inside it, waits for quiet after one just before it,
// never counts lake-compactor's own commits, and is ignored by VACUUM.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  ConditionalPutLogStore,
  LAKE_COMPACTOR_ENGINE_INFO,
  QuietWindowLogStore,
  RECENT_COMMITS_CHECKED,
} from '../../../../../functions/core/formats/delta/log-store.js';
import {
  parseQuietWindow,
  type QuietWindow,
  quietWindowAt,
} from '../../../../../functions/core/formats/delta/quiet-window.js';
import { ManualClock } from '../../../../../functions/ports/clock.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../../../functions/tools/sample-delta.js';

/** Sunday 2024-03-03, 00:00 UTC. */
const SUNDAY = Date.UTC(2024, 2, 3);

function windows(...texts: string[]): QuietWindow[] {
  return texts.map((text) => {
    const parsed = parseQuietWindow(text);
    if ('problem' in parsed) throw new Error(parsed.problem);
    return parsed;
  });
}

/** A store whose objects are stamped with `clock`'s time. */
function world() {
  const clock = new ManualClock(SUNDAY);
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  return { clock, store };
}

/** Appends `n` batches by a writer that names itself `engineInfo`. */
async function commitsBy(store: MemoryObjectStore, engineInfo: string, n: number, seed = 1): Promise<void> {
  const writer = new ConditionalPutLogStore(store);
  for (let i = 0; i < n; i += 1) {
    await appendDeltaEvents(store, 't', {
      day: '2024-03-01',
      rows: 3,
      seed: seed + i,
      now: SUNDAY,
      writer: { engineInfo, writeCommit: (root, version, body) => writer.writeCommit(root, version, body) },
    });
  }
}

describe('quiet windows', () => {
  it.each([
    ['a daily window, inside', ['02:00-05:00'], Date.UTC(2024, 2, 3, 3), Date.UTC(2024, 2, 3, 2)],
    [
      'a daily window, at its opening minute',
      ['02:00-05:00'],
      Date.UTC(2024, 2, 3, 2),
      Date.UTC(2024, 2, 3, 2),
    ],
    [
      'a window across midnight, after midnight',
      ['22:00-02:00'],
      Date.UTC(2024, 2, 4, 1),
      Date.UTC(2024, 2, 3, 22),
    ],
    ['a weekend window on Sunday', ['sat,sun 00:00-24:00'], Date.UTC(2024, 2, 3, 23), SUNDAY],
    [
      'overlapping windows, from the earliest opening',
      ['01:00-03:00', '02:00-06:00'],
      Date.UTC(2024, 2, 3, 2, 30),
      Date.UTC(2024, 2, 3, 1),
    ],
  ])('is open in %s, since its opening', (_case, texts, now, opensAt) => {
    // Act
    const state = quietWindowAt(windows(...texts), now);

    // Assess
    expect(state).toMatchObject({ open: true, opensAt });
  });

  it.each([
    ['after a daily window', ['02:00-05:00'], Date.UTC(2024, 2, 3, 5)],
    ['before it', ['02:00-05:00'], Date.UTC(2024, 2, 3, 1, 59)],
    ['a weekday window on Sunday', ['mon,tue,wed,thu,fri 00:00-24:00'], Date.UTC(2024, 2, 3, 12)],
    ['a Saturday-night window on Sunday night', ['sat 22:00-02:00'], Date.UTC(2024, 2, 4, 1)],
  ])('is closed %s, saying so in UTC', (_case, texts, now) => {
    // Act
    const state = quietWindowAt(windows(...texts), now);

    // Assess
    expect(state).toEqual({
      open: false,
      reason: `${new Date(now).toISOString()} is outside the table's declared quiet windows (${texts.join(', ')}, UTC)`,
    });
  });

  it.each([
    ['25:00-26:00', 'is not on a 24-hour UTC clock'],
    ['02:60-03:00', 'is not on a 24-hour UTC clock'],
    ['sund 02:00-03:00', 'is not a quiet window'],
    ['xyz 02:00-03:00', 'names the day "xyz"'],
    ['05:00-05:00', 'is empty'],
  ])('refuses the window "%s"', (text, problem) => {
    // Act
    const parsed = parseQuietWindow(text);

    // Assess
    expect('problem' in parsed && parsed.problem).toContain(problem);
  });
});

describe('the put-if-absent (s3-conditional) check', () => {
  it('finds nothing on a table only put-if-absent writers commit to', async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    await commitsBy(store, 'delta-rs.1.1.0', 3);

    // Act
    const finding = await new ConditionalPutLogStore(store).check('t');

    // Assess
    expect(finding).toBeUndefined();
  });

  it("refuses Spark's S3DynamoDBLogStore temp files under _delta_log/.tmp/, naming one and what to declare", async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    const temp = 't/_delta_log/.tmp/00000000000000000001.json.0f0e6b7a-1f7c-4c55-9c59-0d3c1f7f5a21';
    await store.put(temp, '{}');
    await store.put('t/_delta_log/.tmp/not-a-spark-temp-file', '{}');

    // Act
    const finding = await new ConditionalPutLogStore(store).check('t');

    // Assess
    expect(finding?.kind).toBe('mismatch');
    expect(finding?.message).toContain(
      `1 temp file(s) of Spark's S3DynamoDBLogStore are under _delta_log/.tmp/ (e.g. ${temp}`,
    );
    expect(finding?.message).toContain('Declare deltaLogStore { "type": "dynamodb"');
  });

  it('refuses a table a Spark writer committed to among its latest commits, and says which log store to declare', async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    await commitsBy(store, 'Apache-Spark/3.5.1 Delta-Lake/3.2.0', 1);
    await commitsBy(store, 'delta-rs.1.1.0', RECENT_COMMITS_CHECKED - 1, 10);

    // Act
    const finding = await new ConditionalPutLogStore(store).check('t');

    // Assess
    expect(finding?.kind).toBe('mismatch');
    expect(finding?.message).toMatch(
      /^version 1 was committed by Apache-Spark\/3\.5\.1 Delta-Lake\/3\.2\.0 .*Declare "dynamodb" if the Spark writers use io\.delta\.storage\.S3DynamoDBLogStore, or "quiet-window"/,
    );
  });

  it('does not read further back than the latest commits (a heuristic, documented as such)', async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    await commitsBy(store, 'Apache-Spark/3.5.1 Delta-Lake/3.2.0', 1);
    await commitsBy(store, 'delta-rs.1.1.0', RECENT_COMMITS_CHECKED, 10);

    // Act
    const finding = await new ConditionalPutLogStore(store).check('t');

    // Assess
    expect(finding).toBeUndefined();
  });
});

describe('the quiet-window check', () => {
  const setting = {
    windows: ['02:00-05:00'],
    quietMinutes: 60,
    acceptUncoordinatedWriters: true as const,
  };

  it('plans and commits nothing outside the windows, and says when they are', async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });

    // Act
    const finding = await new QuietWindowLogStore(store, setting).check('t', {
      now: Date.UTC(2024, 2, 3, 12),
      purpose: 'commit',
    });

    // Assess
    expect(finding).toEqual({
      kind: 'not-now',
      message:
        "2024-03-03T12:00:00.000Z is outside the table's declared quiet windows (02:00-05:00, UTC); nothing is committed outside them",
    });
  });

  it('refuses (alarmed) a commit by another writer inside the window: the declared windows are wrong', async () => {
    // Prepare: Spark committed at 02:10, inside the window that opened at 02:00
    const { clock, store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    clock.set(Date.UTC(2024, 2, 3, 2, 10));
    await commitsBy(store, 'Apache-Spark/3.5.1 Delta-Lake/3.2.0', 1);

    // Act
    const finding = await new QuietWindowLogStore(store, setting).check('t', {
      now: Date.UTC(2024, 2, 3, 4),
      purpose: 'commit',
    });

    // Assess
    expect(finding?.kind).toBe('mismatch');
    expect(finding?.message).toMatch(
      /^version 1 was committed at 2024-03-03T02:10:00\.000Z by Apache-Spark\/3\.5\.1 Delta-Lake\/3\.2\.0, inside the quiet window that opened at 2024-03-03T02:00:00\.000Z/,
    );
  });

  it('waits for quietMinutes after a commit made just before the window opened, then commits', async () => {
    // Prepare: the nightly job's last commit at 01:45
    const { clock, store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    clock.set(Date.UTC(2024, 2, 3, 1, 45));
    await commitsBy(store, 'Apache-Spark/3.5.1 Delta-Lake/3.2.0', 1);
    const log = new QuietWindowLogStore(store, setting);

    // Act
    const early = await log.check('t', { now: Date.UTC(2024, 2, 3, 2, 15), purpose: 'plan' });
    const quiet = await log.check('t', { now: Date.UTC(2024, 2, 3, 2, 46), purpose: 'commit' });

    // Assess
    expect(early).toEqual({
      kind: 'not-now',
      message:
        'version 1 was committed 30 min ago, less than the declared quietMinutes (60) before now: its writer may still be committing',
    });
    expect(quiet).toBeUndefined();
  });

  it("does not take lake-compactor's own commits inside the window for another writer's", async () => {
    // Prepare
    const { clock, store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    clock.set(Date.UTC(2024, 2, 3, 2, 5));
    await commitsBy(store, LAKE_COMPACTOR_ENGINE_INFO, 2);

    // Act
    const finding = await new QuietWindowLogStore(store, setting).check('t', {
      now: Date.UTC(2024, 2, 3, 2, 30),
      purpose: 'commit',
    });

    // Assess
    expect(finding).toBeUndefined();
  });

  it('lets VACUUM run outside the window (it writes no commit) but not beside a DynamoDB writer', async () => {
    // Prepare
    const { store } = world();
    await createDeltaEventsTable(store, 't', { now: SUNDAY });
    const log = new QuietWindowLogStore(store, setting);
    const noon = { now: Date.UTC(2024, 2, 3, 12), purpose: 'vacuum' } as const;

    // Act
    const clean = await log.check('t', noon);
    await store.put('t/_delta_log/.tmp/00000000000000000001.json.0f0e6b7a-1f7c-4c55-9c59-0d3c1f7f5a21', '{}');
    const spark = await log.check('t', noon);

    // Assess
    expect(clean).toBeUndefined();
    expect(spark?.kind).toBe('mismatch');
  });
});
