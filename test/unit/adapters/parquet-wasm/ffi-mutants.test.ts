// Proves the FFI walker's property check (ffi-property.ts) fails for walkers with the bugs it is there to catch:
// copies of ffi-hash.ts with one plausible mistake each (a child skipped, an offset ignored or applied twice,
// 64-bit offsets read as 32-bit, a width wrong) are loaded and each must disagree with the Arrow IPC oracle on
// some seeded case. Since verify hashes through this walker, these checks are what stands in for the run-time
// cross-check verify used to make through Arrow IPC.

import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FfiWalker, propertyCase, walkerDisagreement } from './ffi-property.js';

const SOURCE = fileURLToPath(
  new URL('../../../../functions/adapters/parquet-wasm/ffi-hash.ts', import.meta.url),
);
const CORE = fileURLToPath(new URL('../../../../functions/core/', import.meta.url));

/** One mistake: the `nth` of `count` occurrences of `find` in ffi-hash.ts becomes `replace`. */
interface Mutant {
  readonly name: string;
  readonly find: string;
  readonly replace: string;
  readonly nth?: number;
  readonly count?: number;
}

const BINARY_OFFSETS =
  "const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === 'U' || f === 'Z');";
const LIST_OFFSETS = "const offsets = offsetsView(m, a.buffers[1] ?? 0, offset, length, f === '+L');";
const FIXED_BYTES = 'new Uint8Array(m.buffer, (a.buffers[1] ?? 0) + width * offset, width * length);';

const MUTANTS: readonly Mutant[] = [
  // The ordered digest's walker (verify and order-keeping rewrites).
  {
    name: 'ordered: a struct hashes its first child in place of each of the others',
    find: 'children = s.children.map((c, i) => orderedSlotsOf(m, c, a.children[i] ?? 0));',
    replace: 'children = s.children.map(() => orderedSlotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0));',
  },
  {
    name: "ordered: a struct's offset is not passed to its children",
    find: 'base: offset, children',
    replace: 'base: 0, children',
  },
  {
    name: "ordered: a fixed-size list's offset is not passed to its child",
    find: 'base: offset * size, child',
    replace: 'base: 0, child',
  },
  {
    name: "ordered: fixed-width values ignore the array's offset",
    find: FIXED_BYTES,
    replace: 'new Uint8Array(m.buffer, a.buffers[1] ?? 0, width * length);',
    nth: 1,
    count: 2,
  },
  {
    name: "ordered: binary offsets ignore the array's offset",
    find: BINARY_OFFSETS,
    replace: BINARY_OFFSETS.replace(', offset, length', ', 0, length'),
    nth: 1,
    count: 2,
  },
  {
    name: 'ordered: large (64-bit) binary offsets are read as 32-bit',
    find: BINARY_OFFSETS,
    replace: BINARY_OFFSETS.replace(" || f === 'Z'", ''),
    nth: 1,
    count: 2,
  },
  {
    name: 'ordered: binary values are read from the first offset, applying it twice',
    find: 'const values = new Uint8Array(m.buffer, a.buffers[2] ?? 0, Number(offsets[length]));',
    replace:
      'const values = new Uint8Array(m.buffer, (a.buffers[2] ?? 0) + Number(offsets[0]), Number(offsets[length]) - Number(offsets[0]));',
  },
  {
    name: "ordered: list offsets ignore the array's offset",
    find: LIST_OFFSETS,
    replace: LIST_OFFSETS.replace(', offset, length', ', 0, length'),
    nth: 1,
    count: 2,
  },
  {
    name: "ordered: boolean values ignore the array's bit offset",
    find: 'valueOffset: offset }',
    replace: 'valueOffset: 0 }',
  },
  {
    name: 'ordered: validity bitmaps ignore the bit offset',
    find: '{ bits, offset };',
    replace: '{ bits, offset: 0 };',
  },
  {
    name: "ordered: dictionary indices ignore the array's offset",
    find: 'indexView(m, f, (a.buffers[1] ?? 0) + fixedWidth(f) * offset, length)',
    replace: 'indexView(m, f, a.buffers[1] ?? 0, length)',
  },
  {
    name: "ordered: the batch's own row offset is dropped",
    find: 'sink(columns, a.offset, n);',
    replace: 'sink(columns, 0, n);',
  },
  // Both walkers.
  {
    name: 'both: 256-bit decimals are read 16 bytes wide',
    find: 'return bits === undefined ? 16 : Number(bits) / 8;',
    replace: 'return 16;',
  },
  // The row multiset's walker (sorted rewrites and their verify).
  {
    name: 'multiset: a struct hashes its first child in place of each of the others',
    find: 'children = s.children.map((c, i) => slotsOf(m, c, a.children[i] ?? 0));',
    replace: 'children = s.children.map(() => slotsOf(m, s.children[0] ?? 0, a.children[0] ?? 0));',
  },
  {
    name: "multiset: null counts ignore a column's own offset",
    find: 'countNulls(validity(m, ca), ca.offset + a.offset, n)',
    replace: 'countNulls(validity(m, ca), a.offset, n)',
  },
  {
    name: "multiset: list offsets ignore the array's offset",
    find: LIST_OFFSETS,
    replace: LIST_OFFSETS.replace(', offset, length', ', 0, length'),
    nth: 0,
    count: 2,
  },
  {
    name: "multiset: fixed-width values ignore the array's offset",
    find: FIXED_BYTES,
    replace: 'new Uint8Array(m.buffer, a.buffers[1] ?? 0, width * length);',
    nth: 0,
    count: 2,
  },
];

/** Cases tried per source before a mutant is declared alive. */
const BUDGET = 48;

let dir: string;
let source: string;
let loaded = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'ffi-mutants-'));
  source = await readFile(SOURCE, 'utf8');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** ffi-hash.ts with `mutant` applied (none: as it is), loaded as a module of its own. */
async function load(mutant?: Mutant): Promise<FfiWalker> {
  let text = source;
  if (mutant !== undefined) {
    const parts = source.split(mutant.find);
    // A mutation site that moved or multiplied must fail here, not leave a mutant that is the original.
    expect(parts.length - 1, `occurrences of ${JSON.stringify(mutant.find)}`).toBe(mutant.count ?? 1);
    const nth = mutant.nth ?? 0;
    text = parts.map((p, i) => (i === 0 ? p : (i - 1 === nth ? mutant.replace : mutant.find) + p)).join('');
  }
  text = text.replaceAll("from '../../core/", `from '${CORE}`);
  const file = join(dir, `ffi-hash-${loaded++}.ts`);
  await writeFile(file, text);
  const module = (await import(pathToFileURL(file).href)) as {
    withWasmBatchColumns: FfiWalker['ordered'];
    hashWasmBatchFfi: FfiWalker['multiset'];
  };
  return { ordered: module.withWasmBatchColumns, multiset: module.hashWasmBatchFfi };
}

/** The first case, within the budget, on which `walker` disagrees with the oracle. */
function firstDisagreement(walker: FfiWalker, budget: number): string | undefined {
  for (let seed = 1; seed <= budget; seed++) {
    for (const from of ['parquet', 'ipc'] as const) {
      const found = walkerDisagreement(propertyCase(seed, from, new Set()), walker);
      if (found !== undefined) return `${from} seed ${seed}: ${found.slice(0, 160)}`;
    }
  }
  return undefined;
}

describe('the FFI property check against mutants of the walker', () => {
  it('passes the walker as it is, loaded the way the mutants are', async () => {
    // Prepare
    const walker = await load();

    // Act
    const found = firstDisagreement(walker, 8);

    // Assess
    expect(found).toBeUndefined();
  });

  it.each(MUTANTS.map((m) => [m.name, m] as const))('catches the mutant where %s', async (_name, mutant) => {
    // Prepare
    const walker = await load(mutant);

    // Act
    const found = firstDisagreement(walker, BUDGET);

    // Assess
    expect(found).toBeDefined();
  });
});
