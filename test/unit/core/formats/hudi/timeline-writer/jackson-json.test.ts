// Jackson's pretty printer and java.util.HashMap's iteration order, reproduced: what makes our version-6 JSON
// commit files read like Hudi's own (the golden text comparison is in clustering.test.ts).
import { describe, expect, it } from 'vitest';
import {
  jacksonPrettyJson,
  javaHashMap,
  javaHashMapOrder,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/jackson-json.js';

describe('jacksonPrettyJson', () => {
  it('lays out objects, arrays and empty containers as DefaultPrettyPrinter does', () => {
    // Act
    const text = jacksonPrettyJson({ a: [{ b: 1 }, { c: null }], d: {}, e: [], f: ['x', 'y'], g: true });

    // Assess
    expect(text).toBe(
      '{\n  "a" : [ {\n    "b" : 1\n  }, {\n    "c" : null\n  } ],\n  "d" : { },\n  "e" : [ ],\n  "f" : [ "x", "y" ],\n  "g" : true\n}',
    );
  });

  it('escapes as Jackson does: short escapes, upper-case \\u00XX for other controls, non-ASCII raw', () => {
    // Act
    const text = jacksonPrettyJson({ s: 'q"b\\n\nt\t\u0001é/' });

    // Assess
    expect(text).toBe('{\n  "s" : "q\\"b\\\\n\\nt\\t\\u0001é/"\n}');
    expect(JSON.parse(text).s).toBe('q"b\\n\nt\t\u0001é/');
  });

  it('refuses a number Jackson would not write as a long', () => {
    expect(() => jacksonPrettyJson({ n: 0.5 })).toThrow(/not an integer/);
  });
});

describe('javaHashMapOrder', () => {
  it("iterates keys in the order the fixtures' HashMaps did", () => {
    // Act & Assess: cow_v9_txns_simple_meta's replacecommit, the v6 overwrite's JSON, the plans' metrics.
    expect(javaHashMapOrder(['region=apac', 'region=eu', 'region=us'])).toEqual([
      'region=eu',
      'region=us',
      'region=apac',
    ]);
    expect(javaHashMapOrder(['10', '20', '30'])).toEqual(['30', '20', '10']);
    expect(
      javaHashMapOrder([
        'TOTAL_IO_READ_MB',
        'TOTAL_IO_WRITE_MB',
        'TOTAL_IO_MB',
        'TOTAL_LOG_FILES_SIZE',
        'TOTAL_LOG_FILES',
      ]),
    ).toEqual([
      'TOTAL_LOG_FILES',
      'TOTAL_IO_MB',
      'TOTAL_IO_READ_MB',
      'TOTAL_LOG_FILES_SIZE',
      'TOTAL_IO_WRITE_MB',
    ]);
  });

  it('keeps every key once when the map grows past its initial capacity', () => {
    // Prepare
    const keys = Array.from({ length: 100 }, (_, i) => `p=${i}`);

    // Act
    const map = javaHashMap(keys.map((k) => [k, k] as const));

    // Assess
    expect([...map.keys()].sort()).toEqual([...keys].sort());
  });
});
