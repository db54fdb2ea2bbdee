// Setup file (every project): a fast path for what toEqual / toStrictEqual decide on integer typed arrays (Buffers
// and Uint8Arrays: file bytes, object bodies).
//
// Why: vitest's deep equality walks a typed array element by element through its generic comparison, then builds
// and compares the arrays' Object.entries: ~10 s for one 436 KB file on a shared 2-core machine. Tests that
// compare whole files with toEqual spent most of their time there (one fault test, four minutes).
//
// Same verdict, by construction: vitest decides typed arrays in `iterableEquality` — different constructors are
// unequal, then every element with Object.is, then the own enumerable entries (the indices again, plus any named
// property). For the same integer element type, elements are Object.is-equal exactly when their bytes are, so a
// byte comparison decides the elements. Named properties are left to vitest: the fast path answers only when
// util.inspect shows neither array has one (inspect lists them; a clean array prints as its type and length), and
// float arrays (NaN payloads, -0: bytes and Object.is disagree) and anything else go the usual way. A failing
// comparison still prints vitest's usual diff.
import { inspect } from 'node:util';
import { expect } from 'vitest';

/** Integer element types: equal elements ⇔ equal bytes. */
const INTEGER_ARRAYS: readonly (abstract new (...args: never[]) => ArrayBufferView)[] = [
  Uint8Array,
  Int8Array,
  Uint8ClampedArray,
  Uint16Array,
  Int16Array,
  Uint32Array,
  Int32Array,
  BigUint64Array,
  BigInt64Array,
];

/** Below this many bytes vitest's own walk is cheap: not worth an inspect. */
const FAST_PATH_MIN_BYTES = 256;

/**
 * How util.inspect prints an integer typed array, or a Buffer, with no named property: a typed array's elements
 * elided (maxArrayLength 0), a Buffer's first bytes in hex (its own limit), then the count of the rest.
 */
const CLEAN =
  /^(?:<Buffer ?(?: ?[0-9a-f]{2})*(?: \.\.\. \d+ more bytes)?>|[A-Za-z0-9]+\(\d+\) \[(?: \.\.\. \d+ more items )?\])$/;

function hasNoNamedProperty(view: ArrayBufferView): boolean {
  return CLEAN.test(inspect(view, { maxArrayLength: 0, depth: 0, showHidden: false }));
}

function bytesOf(view: ArrayBufferView): Buffer {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

/**
 * The verdict for two integer typed arrays of one type, or undefined to let vitest decide (see the module comment).
 */
export function integerArrayEquality(a: unknown, b: unknown): boolean | undefined {
  if (!ArrayBuffer.isView(a) || !ArrayBuffer.isView(b) || a.constructor !== b.constructor) return undefined;
  if (!INTEGER_ARRAYS.some((type) => a instanceof type)) return undefined;
  if (a.byteLength < FAST_PATH_MIN_BYTES && b.byteLength < FAST_PATH_MIN_BYTES) return undefined;
  // Different elements: unequal whatever named properties they have (vitest stops at the elements too).
  if (!bytesOf(a).equals(bytesOf(b))) return false;
  if (!hasNoNamedProperty(a) || !hasNoNamedProperty(b)) return undefined;
  return true;
}

// Registered once per worker process: files that share a worker run this setup file each.
const REGISTERED = Symbol.for('lake-compactor.test.integerArrayEquality');
const registry = globalThis as { [REGISTERED]?: true };
if (registry[REGISTERED] !== true) {
  registry[REGISTERED] = true;
  expect.addEqualityTesters([integerArrayEquality]);
}
