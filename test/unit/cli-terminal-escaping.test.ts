// L3: keys and values from listings and table metadata reach the terminal escaped. Two old untracked files named to
// rewrite the vacuum review list (ANSI erase and cursor-up, a carriage return, conceal; an embedded newline) are shown
// by name, escaped, and never deleted; every CLI table escapes its cells; an error naming a hostile path prints it
// escaped; and `--json` output stays valid JSON.
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { renderTable } from '../../functions/cli/table.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const WRITTEN = Date.UTC(2024, 2, 3);
const FAR = Date.UTC(2100, 0, 1);
const ANSI = 'zz.parquet\x1b[2K\x1b[1A\x1b[2K\rnothing to delete here\x1b[8m';
const NEWLINE = 'nl\nFAKE LINE: 0 objects.parquet';
/** Any terminal control character (C0, DEL, C1) or bidirectional override. */
const RAW = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-escaping-'));
  const store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: WRITTEN });
  await appendDeltaEvents(store, '', { day: '2024-03-01', rows: 10, seed: 1, now: WRITTEN });
  for (const name of [ANSI, NEWLINE, 'old-stray.parquet']) {
    await writeFile(join(dir, name), 'PAR1 never committed PAR1');
    await utimes(join(dir, name), new Date(WRITTEN), new Date(WRITTEN));
  }
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('keys printed to a terminal', () => {
  it('the vacuum review list shows the hostile keys escaped, by name, and deletes none of them', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'delta', '--dry-run'], io);

    // Assess: no raw control character anywhere, no forged line, both keys named in their escaped form
    expect(code, io.stderr.join('\n')).toBe(0);
    const lines = io.stdout.flatMap((t) => t.split('\n'));
    for (const line of lines) expect(line).not.toMatch(RAW);
    expect(lines).not.toContain('FAKE LINE: 0 objects.parquet');
    expect(lines).not.toContain('nothing to delete here');
    const text = lines.join('\n');
    expect(text).toContain('refused: 2 listed key(s) that are never deleted here (shown escaped):');
    expect(text).toContain(
      '  zz.parquet\\x1b[2K\\x1b[1A\\x1b[2K\\x0dnothing to delete here\\x1b[8m: refused: the key contains control characters',
    );
    expect(text).toContain(
      '  nl\\x0aFAKE LINE: 0 objects.parquet: refused: the key contains control characters',
    );
    expect(text).toContain('old-stray.parquet');
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });

  it('a real vacuum deletes the ordinary stray file and leaves the hostile keys in place', async () => {
    // Prepare
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'delta', '--yes'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await folderContentSnapshot(dir);
    expect(after.some((l) => l.startsWith('old-stray.parquet '))).toBe(false);
    expect(after.some((l) => l.startsWith(`${ANSI} `))).toBe(true);
    expect(after.some((l) => l.startsWith(`${NEWLINE} `))).toBe(true);
    for (const line of io.stdout.flatMap((t) => t.split('\n'))) expect(line).not.toMatch(RAW);
  });

  it('--json keeps the keys exact and the output valid JSON', async () => {
    // Prepare
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['vacuum', dir, '--format', 'delta', '--dry-run', '--json'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const report = JSON.parse(io.stdout.join('\n')) as { kept: { key: string }[] };
    expect(report.kept.map((k) => k.key)).toEqual(expect.arrayContaining([ANSI, NEWLINE]));
  });

  it('every CLI table escapes its cells', () => {
    // Act
    const table = renderTable(
      [
        { header: 'key', value: (r: { key: string }) => r.key },
        { header: 'size', value: () => 1, align: 'right' },
      ],
      [{ key: ANSI }, { key: NEWLINE }, { key: 'a\u202eb' }],
    );

    // Assess
    expect(table.split('\n')).toHaveLength(5);
    for (const line of table.split('\n')) expect(line).not.toMatch(RAW);
    expect(table).toContain('nl\\x0aFAKE LINE: 0 objects.parquet');
    expect(table).toContain('a\\u202eb');
  });

  it('an error naming a hostile path from a Delta log prints it escaped, on one line', async () => {
    // Prepare: a live add whose path carries an ANSI escape and a newline
    const log = join(dir, '_delta_log', '00000000000000000002.json');
    await writeFile(
      log,
      `${JSON.stringify({ add: { path: `x\x1b[31m\nFORGED.parquet`, partitionValues: { date: '2024-03-01' }, size: 1, modificationTime: 1, dataChange: true } })}\n`,
    );
    const io = captureIo({ now: FAR });

    // Act
    const code = await run(['plan', dir, '--format', 'delta'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr).toHaveLength(1);
    expect(io.stderr[0]).toContain(
      'names the file "x\\x1b[31m\\x0aFORGED.parquet", which contains control characters',
    );
    expect(io.stderr[0]).not.toMatch(RAW);
  });
});
