// JSON as Hudi 0.x writes commit metadata on table version 6: Jackson's DefaultPrettyPrinter (two-space object
// indentation, `"key" : value`, arrays inline as `[ a, b ]`, empty containers `{ }` and `[ ]`, no final newline),
// Jackson's string escapes, and maps in java.util.HashMap iteration order. Readers parse the JSON and do not care
// about layout; matching it anyway makes our files indistinguishable from Hudi's in a diff and in golden tests.

/** A JSON value; a Map is a Java HashMap (emitted in HashMap order), a plain object a POJO (emitted as given). */
export type JacksonValue =
  | null
  | boolean
  | number
  | string
  | readonly JacksonValue[]
  | ReadonlyMap<string, JacksonValue>
  | { readonly [field: string]: JacksonValue };

/**
 * Serialises `value` as Jackson's `writerWithDefaultPrettyPrinter().writeValueAsString` would.
 * @throws Error for a number that is not a safe integer (commit metadata holds counts only).
 */
export function jacksonPrettyJson(value: JacksonValue): string {
  return write(value, 0);
}

/**
 * The keys of a `new HashMap<>()` filled with `keys` in that order, in the order the map iterates them: by bucket
 * (String.hashCode spread as HashMap.hash does, over the capacity the map has grown to), insertion order within
 * a bucket (Java 8+ resizes keep it).
 */
export function javaHashMapOrder(keys: readonly string[]): string[] {
  let capacity = 16;
  while (keys.length > capacity * 0.75) capacity *= 2;
  return keys
    .map((key, index) => ({ key, index, bucket: spreadHash(javaStringHash(key)) & (capacity - 1) }))
    .sort((a, b) => a.bucket - b.bucket || a.index - b.index)
    .map((e) => e.key);
}

/** A Map whose iteration order is a Java HashMap's with the same insertions. */
export function javaHashMap<V extends JacksonValue>(entries: Iterable<readonly [string, V]>): Map<string, V> {
  const source = new Map(entries);
  return new Map(javaHashMapOrder([...source.keys()]).map((k) => [k, source.get(k) as V]));
}

function javaStringHash(s: string): number {
  let h = 0;
  for (let i = 0; i < s.length; i++) h = (Math.imul(31, h) + s.charCodeAt(i)) | 0;
  return h;
}

function spreadHash(h: number): number {
  return (h ^ (h >>> 16)) >>> 0;
}

function indent(level: number): string {
  return `\n${'  '.repeat(level)}`;
}

function write(value: JacksonValue, level: number): string {
  if (value === null) return 'null';
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value))
      throw new Error(`${value} is not an integer Jackson would write as a long`);
    return String(value);
  }
  if (typeof value === 'string') return quote(value);
  if (Array.isArray(value)) {
    const items = value as readonly JacksonValue[];
    if (items.length === 0) return '[ ]';
    return `[ ${items.map((item) => write(item, level)).join(', ')} ]`;
  }
  const entries =
    value instanceof Map
      ? [...(value as ReadonlyMap<string, JacksonValue>).entries()]
      : Object.entries(value as { readonly [field: string]: JacksonValue });
  if (entries.length === 0) return '{ }';
  const inner = entries.map(([k, v]) => `${indent(level + 1)}${quote(k)} : ${write(v, level + 1)}`).join(',');
  return `{${inner}${indent(level)}}`;
}

const SHORT_ESCAPES: Readonly<Record<string, string>> = {
  '"': '\\"',
  '\\': '\\\\',
  '\b': '\\b',
  '\t': '\\t',
  '\f': '\\f',
  '\n': '\\n',
  '\r': '\\r',
};

/** Jackson's escaping: `"`, `\`, the short control escapes, other controls as upper-case `\u00XX`, the rest raw. */
function quote(s: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point.
  const escaped = s.replace(/["\\\u0000-\u001f]/g, (c) => {
    return SHORT_ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')}`;
  });
  return `"${escaped}"`;
}
