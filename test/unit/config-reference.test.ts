// docs/configuration.md is the construct's props reference (#32: "kept in step by a test"): every path of
// `lakeCompactorPropsSchema` — the one schema that checks props in code and the JSON config — must be documented
// there, so a key added to the schema fails this test until the reference says what it does.
//
// The walk is generic over zod: objects name their keys, arrays add `[]`, records add `*` (their keys are the
// user's, e.g. table names), unions and discriminated unions contribute every option's keys, and optional, default,
// nullable, readonly, pipe and lazy wrappers are looked through. It has no list of the props.
//
// What counts as documented, in the reference's own form: a top-level bullet whose head is the path in backticks
// (`tables[].name` — …; `a.b` / `c` names the sibling `a.c`, `a.b` / `x.y` names `x.y`), or a key named in
// backticks (`minInputFiles`) or as a quoted JSON key ("tableName") in the entry — bullet, nested bullets and
// indented paragraphs — of a documented ancestor path, as the reference describes sub-objects
// (`tables[].deltaLogStore`'s three shapes, `maintenance.vacuum`'s settings).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { lakeCompactorPropsSchema } from '../../infra/props-schema.js';

const REFERENCE = join(import.meta.dirname, '..', '..', 'docs', 'configuration.md');

/** Every path of `schema`, parents before their keys: `tables`, `tables[].name`, `triggers.maxConcurrentRunsByTable`, … */
function schemaPaths(schema: z.core.$ZodType): string[] {
  const paths = new Set<string>();
  const visiting = new Set<z.core.$ZodType>();
  const walk = (node: z.core.$ZodType, at: string): void => {
    if (visiting.has(node)) return; // a recursive (lazy) schema: its paths are already being listed
    visiting.add(node);
    const def = node._zod.def as unknown as Record<string, unknown> & { type: string };
    const inner = (key: string) => def[key] as z.core.$ZodType;
    switch (def.type) {
      case 'optional':
      case 'default':
      case 'prefault':
      case 'nullable':
      case 'nonoptional':
      case 'readonly':
      case 'catch':
        walk(inner('innerType'), at);
        break;
      case 'pipe':
        walk(inner('in'), at);
        break;
      case 'lazy':
        walk((def.getter as () => z.core.$ZodType)(), at);
        break;
      case 'object':
        for (const [key, value] of Object.entries(def.shape as Record<string, z.core.$ZodType>)) {
          const path = at === '' ? key : `${at}.${key}`;
          paths.add(path);
          walk(value, path);
        }
        break;
      case 'array':
        walk(inner('element'), `${at}[]`);
        break;
      case 'record':
        walk(inner('valueType'), `${at}.*`);
        break;
      case 'union': // discriminated unions are unions with a discriminator in zod 4
        for (const option of def.options as z.core.$ZodType[]) walk(option, at);
        break;
      case 'intersection':
        walk(inner('left'), at);
        walk(inner('right'), at);
        break;
      default: // a leaf: string, number, enum, literal, custom (a construct), …
        break;
    }
    visiting.delete(node);
  };
  walk(schema, '');
  return [...paths];
}

interface Entry {
  /** The paths the bullet's head names. */
  readonly heads: readonly string[];
  /** Key names the entry mentions in backticks or as quoted JSON keys. */
  readonly mentions: ReadonlySet<string>;
}

/** The path that holds `path`'s last key: `tables[].dateColumn` → `tables[]`; `workRoot` → ``. */
function parentOf(path: string): string {
  const dot = path.lastIndexOf('.');
  return dot < 0 ? '' : path.slice(0, dot);
}

/** The reference's entries: each top-level `- ` bullet with the indented lines (nested bullets, paragraphs) below it. */
function referenceEntries(markdown: string): Entry[] {
  const blocks: string[][] = [];
  let current: string[] | undefined;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('- ')) {
      current = [line];
      blocks.push(current);
    } else if (current !== undefined && (line.trim() === '' || /^\s/.test(line))) {
      current.push(line);
    } else {
      current = undefined;
    }
  }
  return blocks.flatMap((lines) => {
    const text = lines.join('\n');
    const head = /^- ((?:`[^`\s]+`(?: \/ )?)+) —/.exec(text);
    if (head === null) return [];
    const named = [...(head[1] ?? '').matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
    const first = named[0] ?? '';
    const heads = named.map((name, i) =>
      i === 0 || /[.[]/.test(name) ? name : [parentOf(first), name].filter(Boolean).join('.'),
    );
    const mentions = new Set(
      [...text.matchAll(/`([A-Za-z_$][\w$-]*)`|"([A-Za-z_$][\w$-]*)"/g)].map((m) => m[1] ?? m[2] ?? ''),
    );
    return [{ heads, mentions }];
  });
}

/** The schema's paths the reference does not document, in schema order. */
function undocumentedPaths(schema: z.core.$ZodType, markdown: string): string[] {
  const entries = referenceEntries(markdown);
  const headed = new Set(entries.flatMap((e) => e.heads));
  const lastKey = (path: string) => path.slice(path.lastIndexOf('.') + 1).replace(/(\[\])+$/, '');
  const paths = schemaPaths(schema);
  const childrenOf = (path: string) =>
    paths.filter((p) => p !== path && parentOf(p).replace(/(\[\]|\.\*)+$/, '') === path);
  const documented = (path: string): boolean =>
    headed.has(path) ||
    entries.some((entry) =>
      entry.heads.some(
        (head) =>
          (path.startsWith(`${head}.`) || path.startsWith(`${head}[]`)) && entry.mentions.has(lastKey(path)),
      ),
    ) ||
    // A container (`workflow`, `tables`) needs no entry of its own when each of its keys has one.
    (childrenOf(path).length > 0 && childrenOf(path).every(documented));
  return paths.filter((path) => !documented(path));
}

describe('docs/configuration.md documents every path of the props schema', () => {
  it('names every key of lakeCompactorPropsSchema, nested ones included', () => {
    // Prepare
    const markdown = readFileSync(REFERENCE, 'utf8');

    // Act
    const missing = undocumentedPaths(lakeCompactorPropsSchema, markdown);

    // Assess
    expect(missing).toEqual([]);
  });

  it('finds the whole schema: keys under arrays, records, unions and wrappers are walked', () => {
    // Act
    const paths = schemaPaths(lakeCompactorPropsSchema);

    // Assess: one path from each kind of nesting the props have.
    expect(paths).toEqual(
      expect.arrayContaining([
        'tables[].name', // array of objects
        'tables[].policy.futureToleranceDays', // optional object
        'tables[].deltaLogStore.checkDynamoDbTable.region', // discriminated union, then an object in it
        'tables[].catalog.auth.tokenSecretArn', // union inside a union
        'maintenance.tiering.rules[].storageClass', // array inside an optional object
        'maintenance.tiering.tableRules.*[].afterDays', // record of arrays
        'workflow.logRetention',
      ]),
    );
  });
});

describe('the reference check itself', () => {
  const synthetic = z.strictObject({
    tables: z.array(
      z.strictObject({
        name: z.string(),
        store: z
          .discriminatedUnion('type', [
            z.strictObject({ type: z.literal('a'), region: z.string() }),
            z.strictObject({ type: z.literal('b'), brandNewKey: z.number().default(3) }),
          ])
          .optional(),
      }),
    ),
    limits: z.strictObject({ low: z.number(), high: z.number() }).optional(),
    byName: z.record(z.string(), z.strictObject({ days: z.number() })).optional(),
    mode: z.union([z.literal('x'), z.strictObject({ custom: z.string() })]).optional(),
  });
  const documented = [
    '- `tables[].name` — the name.',
    '- `tables[].store` — `{ "type": "a", "region" }` or:',
    '  - `{ "type": "b" }`, and more.',
    '- `limits.low` / `high` — bounds.',
    '- `limits` — both bounds.',
    '- `byName` — per name: `days`.',
    '- `mode` — `x`, or `custom`.',
    '- `tables` — the tables.',
    '',
    'A paragraph naming `brandNewKey` outside every entry documents nothing.',
  ].join('\n');

  it('reports a key added without documentation, wherever it is nested', () => {
    // Act
    const missing = undocumentedPaths(synthetic, documented);

    // Assess: only the undocumented key of the union's second option.
    expect(missing).toEqual(['tables[].store.brandNewKey']);
  });

  it('accepts the key once its entry names it', () => {
    // Prepare
    const fixed = documented.replace('`{ "type": "b" }`', '`{ "type": "b", "brandNewKey": 3 }`');

    // Act
    const missing = undocumentedPaths(synthetic, fixed);

    // Assess
    expect(missing).toEqual([]);
  });

  it('reads `a.b` / `c` as the sibling a.c, and a mention only inside a documented ancestor’s entry', () => {
    // Prepare: `high` is named only in the paragraph, and `limits` has no entry of its own.
    const text = [
      '- `tables` — t. `tables[].name` — n. `store` — `"type"`, `"region"`, `"brandNewKey"`.',
      '- `tables[].store` — s.',
      '- `limits.low` — low.',
      '- `byName` — `days`.',
      '- `mode` — `custom`.',
      '',
      'Also `high` and `limits`.',
    ].join('\n');

    // Act
    const missing = undocumentedPaths(synthetic, text);

    // Assess: a full path written inside prose is not a bullet's head, and `high` outside every entry counts for nothing.
    expect(missing).toEqual(['tables[].name', 'limits', 'limits.high']);
  });
});
