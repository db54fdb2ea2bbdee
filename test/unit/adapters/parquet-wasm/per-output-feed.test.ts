// How the engine feeds an output's footer hook (`feedAccumulator`): a hook that takes bytes (`addUtf8`) gets each
// well-formed value's stored bytes, a null and a value that is not well-formed UTF-8 still come through `add` — so
// it sees the same values, in the same order, as a hook that takes strings only. And a derived column (`PerOutput`)
// holds the output's name in every row of every batch, whatever the batch's size.
import { type Data, makeData, Table, tableFromIPC, tableToIPC, Utf8, vectorFromArray } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import {
  feedAccumulator,
  PerOutput,
  RelayAccumulator,
  replayFooterValues,
} from '../../../../functions/adapters/parquet-wasm/per-output.js';
import { PerOutputFeed } from '../../../../functions/adapters/parquet-wasm/split-output.js';
import { oneBatch } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import type { OutputFooterAccumulator } from '../../../../functions/ports/parquet-engine.js';

const text = new TextDecoder();

/** An accumulator recording what it was fed, as strings (bytes decoded), and by which door. */
function recorder(
  takesBytes: boolean,
): OutputFooterAccumulator & { seen: (string | null)[]; doors: string[] } {
  const seen: (string | null)[] = [];
  const doors: string[] = [];
  return {
    seen,
    doors,
    add(value) {
      seen.push(value);
      doors.push('add');
    },
    ...(takesBytes && {
      addUtf8(bytes: Uint8Array) {
        seen.push(text.decode(bytes));
        doors.push('bytes');
      },
    }),
    finish: () => ({}),
  };
}

/** A Utf8 column of raw value bytes (possibly not UTF-8), `null` for a null. */
function rawColumn(values: readonly (Uint8Array | null)[]): Data<Utf8> {
  const offsets = new Int32Array(values.length + 1);
  const bitmap = new Uint8Array(Math.ceil(values.length / 8));
  let length = 0;
  values.forEach((v, i) => {
    if (v !== null) {
      bitmap[i >> 3] = (bitmap[i >> 3] as number) | (1 << (i & 7));
      length += v.length;
    }
    offsets[i + 1] = length;
  });
  const bytes = new Uint8Array(length);
  values.forEach((v, i) => {
    if (v !== null) bytes.set(v, offsets[i] as number);
  });
  return makeData({
    type: new Utf8(),
    length: values.length,
    nullCount: values.filter((v) => v === null).length,
    nullBitmap: bitmap,
    valueOffsets: offsets,
    data: bytes,
  });
}

describe('feedAccumulator', () => {
  it('gives a byte-taking hook the same values in the same order as a string-taking one', () => {
    // Prepare: ASCII, non-ASCII, a supplementary character, a null, an empty string.
    const values = ['key-1', 'clé-2', '\u{1f600}', null, '', 'z'];
    const column = vectorFromArray(values, new Utf8()).data[0] as Data<Utf8>;
    const bytes = recorder(true);
    const strings = recorder(false);
    // Act
    feedAccumulator(bytes, column);
    feedAccumulator(strings, column);
    // Assess
    expect(bytes.seen).toEqual(values);
    expect(strings.seen).toEqual(values);
    expect(bytes.doors).toEqual(['bytes', 'bytes', 'bytes', 'add', 'bytes', 'bytes']);
  });

  it('hands a value that is not well-formed UTF-8 over as arrow-js decodes it, through add', () => {
    // Prepare: 'é' (C3 A9) cut between two values — the buffer is well-formed, neither value is — and a lone FF.
    const column = rawColumn([
      new Uint8Array([0x61]),
      new Uint8Array([0xc3]),
      new Uint8Array([0xa9]),
      new Uint8Array([0xff]),
      null,
    ]);
    const hook = recorder(true);
    // Act
    feedAccumulator(hook, column);
    // Assess
    expect(hook.seen).toEqual(['a', '\ufffd', '\ufffd', '\ufffd', null]);
    expect(hook.doors).toEqual(['bytes', 'add', 'add', 'add', 'add']);
  });

  it('does not take a value for well-formed when the bytes of the null after it complete its character', () => {
    // Prepare: value 0 is C3 (half an 'é'); the null slot after it holds A9 — the buffer is well-formed, value 0 not.
    const column = makeData({
      type: new Utf8(),
      length: 2,
      nullCount: 1,
      nullBitmap: new Uint8Array([0b01]),
      valueOffsets: new Int32Array([0, 1, 2]),
      data: new Uint8Array([0xc3, 0xa9]),
    });
    const hook = recorder(true);
    // Act
    feedAccumulator(hook, column);
    // Assess
    expect(hook.seen).toEqual(['\ufffd', null]);
    expect(hook.doors).toEqual(['add', 'add']);
  });
});

describe('PerOutput', () => {
  it("sets the derived column to the output's name in every row of batches of different sizes", () => {
    // Prepare
    const perOutput = new PerOutput(
      'out/part-0001_0-1-1_20260101.parquet',
      [{ column: 'file', value: 'output-file-name' }],
      undefined,
    );
    const batchOf = (rows: number) => {
      const table = new Table({
        id: vectorFromArray(Array.from({ length: rows }, (_, i) => i)),
        file: vectorFromArray(
          Array.from({ length: rows }, () => 'old.parquet'),
          new Utf8(),
        ),
      });
      return oneBatch(tableToIPC(table, 'stream'));
    };
    // Act
    const written = [3, 1, 3, 0].map((rows) =>
      tableFromIPC(perOutput.apply(batchOf(rows), 'in').intoIPCStream()),
    );
    // Assess
    for (const [i, rows] of [3, 1, 3, 0].entries()) {
      const table = written[i];
      expect(table?.numRows).toBe(rows);
      expect([...(table?.getChild('file') ?? [])]).toEqual(
        Array.from({ length: rows }, () => 'part-0001_0-1-1_20260101.parquet'),
      );
      expect([...(table?.getChild('id') ?? [])]).toEqual(Array.from({ length: rows }, (_, j) => j));
    }
  });
});

describe('a footer hook fed through a worker (RelayAccumulator, replayFooterValues)', () => {
  for (const takesBytes of [true, false]) {
    it(`gets the calls the direct feed makes, in order (hook ${takesBytes ? 'taking bytes' : 'taking strings'})`, () => {
      // Prepare: well-formed values, a null, an empty string, a supplementary character, and bytes that are not
      // UTF-8 (a cut character, a lone FF).
      const values = [
        new TextEncoder().encode('key-1'),
        null,
        new Uint8Array(0),
        new TextEncoder().encode('clé-\u{1f600}'),
        new Uint8Array([0xc3]),
        new Uint8Array([0xa9]),
        new Uint8Array([0xff]),
        new TextEncoder().encode('z'),
      ];
      const direct = recorder(takesBytes);
      const relayed = recorder(takesBytes);
      const relay = new RelayAccumulator();
      // Act: fed in two stretches, as a worker posts one per batch.
      feedAccumulator(direct, rawColumn(values));
      feedAccumulator(relay, rawColumn(values.slice(0, 3)));
      const first = relay.take();
      feedAccumulator(relay, rawColumn(values.slice(3)));
      const second = relay.take();
      for (const values of [first, second]) if (values !== undefined) replayFooterValues(values, relayed);
      // Assess
      expect(relay.take()).toBeUndefined();
      expect(relayed.seen).toEqual(direct.seen);
      expect(relayed.doors).toEqual(direct.doors);
      expect(direct.seen).toContain(null);
    });
  }
});

describe("a split output's footer feed (PerOutputFeed)", () => {
  it('feeds the parts’ values in part order whatever order they arrive and finish in', () => {
    // Prepare: three parts of two batches each; part 2 posts and finishes first, part 0 last to post.
    const batch = (part: number, b: number) => {
      const relay = new RelayAccumulator();
      relay.add(`p${part}-b${b}`);
      return relay.take() as NonNullable<ReturnType<RelayAccumulator['take']>>;
    };
    const hook = recorder(false);
    const feed = new PerOutputFeed(hook, 3);
    // Act
    feed.values(2, batch(2, 0));
    feed.values(2, batch(2, 1));
    feed.finished(2);
    feed.values(1, batch(1, 0));
    feed.values(0, batch(0, 0));
    const afterFirst = [...hook.seen];
    feed.values(1, batch(1, 1));
    feed.values(0, batch(0, 1));
    feed.finished(0);
    const afterPartZero = [...hook.seen];
    feed.finished(1);
    // Assess: part 0 live, part 1 held until part 0 finished, then live; part 2 held until part 1 finished.
    expect(afterFirst).toEqual(['p0-b0']);
    expect(afterPartZero).toEqual(['p0-b0', 'p0-b1', 'p1-b0', 'p1-b1']);
    expect(hook.seen).toEqual(['p0-b0', 'p0-b1', 'p1-b0', 'p1-b1', 'p2-b0', 'p2-b1']);
  });
});
