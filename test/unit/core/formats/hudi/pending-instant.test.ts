// A clustering instant's heartbeat is renewed only while it is alive (pending-instant.ts `renewLiveHeartbeat`), as
// Hudi's own writer treats its heartbeat: once older than the tolerance — or gone — a writer may be rolling the instant
// back, so it is never brought back, and the caller's commit aborts. Ages are the store's modification times (a local
// folder whose files are aged as time would).
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  HUDI_HEARTBEAT_TOLERANCE_MS,
  renewHeartbeat,
  renewLiveHeartbeat,
} from '../../../../../functions/core/formats/hudi/pending-instant.js';
import { ageFiles } from '../../../../support/age-files.js';

const T = '20261207201500123';
const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function tableWithHeartbeat(ageMs: number): Promise<{ dir: string; store: LocalObjectStore }> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-heartbeat-'));
  dirs.push(dir);
  const store = new LocalObjectStore(dir);
  await renewHeartbeat(store, 'trips', T);
  await ageFiles(dir, ageMs);
  return { dir, store };
}

const heartbeatFile = (dir: string) => join(dir, 'trips', '.hoodie', '.heartbeat', T);

describe('renewLiveHeartbeat', () => {
  it('renews a heartbeat within the tolerance: alive, its modification time now', async () => {
    // Prepare: last renewed 90 s ago
    const { dir, store } = await tableWithHeartbeat(90_000);
    // Act
    const alive = await renewLiveHeartbeat(store, 'trips', T, HUDI_HEARTBEAT_TOLERANCE_MS);
    // Assess
    expect(alive).toBe(true);
    expect(Date.now() - (await stat(heartbeatFile(dir))).mtimeMs).toBeLessThan(60_000);
  });

  it('declares a lapsed heartbeat dead for good: not renewed, removed, and dead again at the next call', async () => {
    // Prepare: last renewed 3 minutes ago, past Hudi's 2-minute tolerance
    const { store } = await tableWithHeartbeat(3 * 60_000);
    // Act
    const first = await renewLiveHeartbeat(store, 'trips', T, HUDI_HEARTBEAT_TOLERANCE_MS);
    const second = await renewLiveHeartbeat(store, 'trips', T, HUDI_HEARTBEAT_TOLERANCE_MS);
    // Assess
    expect([first, second]).toEqual([false, false]);
    expect(await store.head(`trips/.hoodie/.heartbeat/${T}`)).toBeUndefined();
  });

  it('never recreates a heartbeat that is gone (a writer rolled the instant back)', async () => {
    // Prepare: a table with no heartbeat for T
    const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-heartbeat-'));
    dirs.push(dir);
    const store = new LocalObjectStore(dir);
    // Act
    const alive = await renewLiveHeartbeat(store, 'trips', T, HUDI_HEARTBEAT_TOLERANCE_MS);
    // Assess
    expect(alive).toBe(false);
    expect(await store.head(`trips/.hoodie/.heartbeat/${T}`)).toBeUndefined();
  });
});
