// The v6 log moves of an unscheduled compaction plan (unschedule-logs.ts), on an in-memory store: Hudi's renaming
// rule (versions counting on from the base instant's slice, in log order, Hudi's unknown write token), copies only
// while the plan stands, every move recorded before it is made so a re-run after a crash makes no second copy, and a
// source written again under a name already moved given the next version instead of being taken for moved; copies are
// server-side and create-only, so a target a writer took first is never overwritten.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import {
  moveLogsOffInstant,
  traceOf,
  type UnscheduleTrace,
  writeTrace,
} from '../../../../../functions/core/formats/hudi/unschedule-logs.js';

const B = '20250101000000000';
const T = '20250102000000000';
const FILE_ID = 'aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee-0';
const P = 'city=x';
const log = (instant: string, version: number, token: string) =>
  `${P}/.${FILE_ID}_${instant}.log.${version}_${token}`;
const bytes = (text: string) => new TextEncoder().encode(text);

async function tableWithLogsUnderT(): Promise<{ store: MemoryObjectStore; trace: UnscheduleTrace }> {
  const store = new MemoryObjectStore();
  await store.put(`${P}/${FILE_ID}_0-1-0_${B}.parquet`, bytes('base'));
  await store.put(log(B, 1, '0-2-0'), bytes('b1'));
  await store.put(log(B, 2, '0-3-0'), bytes('b2'));
  // Two logs under T, listed out of Hudi's order by name (version 10 sorts after 9, not after 1)
  await store.put(log(T, 10, '0-4-0'), bytes('t10'));
  await store.put(log(T, 9, '0-4-0'), bytes('t9'));
  const trace = { instant: T, groups: [{ partition: P, fileId: FILE_ID, baseInstant: B }], moves: [] };
  await writeTrace(store, '', trace);
  return { store, trace };
}

async function keys(store: MemoryObjectStore): Promise<string[]> {
  const out: string[] = [];
  for await (const o of store.listAll(`${P}/`)) out.push(o.key);
  return out.sort();
}

describe('moving the logs under an unscheduled T into their slice', () => {
  it("copies them by Hudi's rule while the plan stands (sources kept), then deletes the sources once asked", async () => {
    // Prepare
    const { store, trace } = await tableWithLogsUnderT();

    // Act
    const copied = await moveLogsOffInstant(store, '', trace, { removeSources: false });
    const afterCopy = await keys(store);
    const moved = await moveLogsOffInstant(store, '', copied.trace, { removeSources: true });

    // Assess: versions 3 and 4 of B's slice, in the logs' own order (9 before 10), Hudi's unknown write token
    expect(copied.remaining).toBe(2);
    expect(afterCopy).toContain(log(T, 9, '0-4-0'));
    expect(Buffer.from(await store.get(log(B, 3, '1-0-1'))).toString()).toBe('t9');
    expect(Buffer.from(await store.get(log(B, 4, '1-0-1'))).toString()).toBe('t10');
    expect(moved.remaining).toBe(0);
    expect(await keys(store)).toEqual(
      [
        `${P}/${FILE_ID}_0-1-0_${B}.parquet`,
        log(B, 1, '0-2-0'),
        log(B, 2, '0-3-0'),
        log(B, 3, '1-0-1'),
        log(B, 4, '1-0-1'),
      ].sort(),
    );
  });

  it('a re-run after a crash between a copy and its record makes no second copy: the recorded move is found by its bytes', async () => {
    // Prepare: the moves recorded and made, then the process died before deleting the sources
    const { store, trace } = await tableWithLogsUnderT();
    await moveLogsOffInstant(store, '', trace, { removeSources: false });
    const recorded = await traceOf(store, '', T);
    if (recorded === undefined) throw new Error('no trace');

    // Act
    const moved = await moveLogsOffInstant(store, '', recorded, { removeSources: true });

    // Assess
    expect(moved.trace.moves).toEqual(recorded.moves);
    expect((await keys(store)).filter((k) => k.includes('_1-0-1'))).toEqual([
      log(B, 3, '1-0-1'),
      log(B, 4, '1-0-1'),
    ]);
  });

  it("a target a writer takes between our listing and our copy is never overwritten: the create-only copy fails, the group's logs get the next versions in their order, and no copied log's bytes are read", async () => {
    // Prepare: a writer puts a log of the same size at B's version 3 right before our first copy lands there
    const { store, trace } = await tableWithLogsUnderT();
    let taken = false;
    const reads: string[] = [];
    const racing = new Proxy(store, {
      get(target, prop, receiver) {
        if (prop === 'copy')
          return async (source: string, destination: string, options?: { ifNoneMatch?: '*' }) => {
            if (!taken && destination === log(B, 3, '1-0-1')) {
              taken = true;
              await target.put(destination, bytes('w3'));
            }
            return target.copy(source, destination, options);
          };
        if (prop === 'get' || prop === 'getRange')
          return async (key: string, ...rest: number[]) => {
            reads.push(key);
            return (target[prop] as (k: string, ...r: number[]) => Promise<Uint8Array>).call(
              target,
              key,
              ...rest,
            );
          };
        return Reflect.get(target, prop, receiver);
      },
    });

    // Act
    const moved = await moveLogsOffInstant(racing, '', trace, { removeSources: true });

    // Assess: the writer's log intact at version 3; ours at 4 and 5, still in the logs' order (9 before 10: the later
    // log waited for the earlier one's new target); the sources gone; the only bytes read were the taken target's and
    // its source's (to tell them apart), nothing of the copies that landed
    expect(taken).toBe(true);
    expect(moved.remaining).toBe(0);
    expect(Buffer.from(await store.get(log(B, 3, '1-0-1'))).toString()).toBe('w3');
    expect(Buffer.from(await store.get(log(B, 4, '1-0-1'))).toString()).toBe('t9');
    expect(Buffer.from(await store.get(log(B, 5, '1-0-1'))).toString()).toBe('t10');
    expect((await keys(store)).filter((k) => k.includes(`_${T}.log.`))).toEqual([]);
    expect([...new Set(reads)].filter((k) => !k.includes('lake-compactor-unscheduled')).sort()).toEqual(
      [log(B, 3, '1-0-1'), log(T, 9, '0-4-0')].sort(),
    );
  });

  it('a source written again under a name already moved (a writer numbering T afresh) gets the next version', async () => {
    // Prepare: both logs moved and their sources deleted; then a writer writes a new log under T's version 9
    const { store, trace } = await tableWithLogsUnderT();
    const first = await moveLogsOffInstant(store, '', trace, { removeSources: true });
    await store.put(log(T, 9, '0-4-0'), bytes('t9-again'));

    // Act
    const again = await moveLogsOffInstant(store, '', first.trace, { removeSources: true });

    // Assess: the earlier copy kept, the new log copied as version 5, nothing left under T
    expect(again.remaining).toBe(0);
    expect(Buffer.from(await store.get(log(B, 3, '1-0-1'))).toString()).toBe('t9');
    expect(Buffer.from(await store.get(log(B, 5, '1-0-1'))).toString()).toBe('t9-again');
    expect((await keys(store)).filter((k) => k.includes(`_${T}.log.`))).toEqual([]);
  });
});
