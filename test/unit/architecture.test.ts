// The module graph of functions/ and infra/ has no import cycle (type-only imports included), and the layout
// rules of DESIGN.md that a regex can check hold: core/ is pure, ports/ and core/ never reach into adapters, and a
// table format reaches the construct only through its infra module and the registry (infra/formats/).
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * Cycles tolerated while being removed, each one exactly: a cycle not listed fails, and so does a listed one
 * that is gone, so the list only shrinks. Empty since issue #16 broke the last ones; keep it so.
 */
const KNOWN_CYCLES: readonly (readonly string[])[] = [];

/** Every `.ts` file under `dir`, repository-relative with `/` separators. */
function sourceFiles(dir: string): string[] {
  const found: string[] = [];
  const walk = (absolute: string): void => {
    for (const entry of readdirSync(absolute, { withFileTypes: true })) {
      const path = join(absolute, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) found.push(relative(REPO_ROOT, path).split('\\').join('/'));
    }
  };
  walk(join(REPO_ROOT, dir));
  return found.sort();
}

/**
 * Source text without its comment lines and blocks, so a comment that names a rule (or an import) does not
 * trip it. Only comments that start a line: `/*` inside a string (a glob) must not swallow code.
 */
function code(file: string): string {
  return readFileSync(join(REPO_ROOT, file), 'utf8')
    .replace(/^\s*\/\*[\s\S]*?\*\//gm, '')
    .replace(/^\s*\/\/.*$/gm, '');
}

/**
 * Module specifiers of every static import, re-export and dynamic import of `text` (`import type` too: a
 * type-only cycle is still two modules that cannot be understood, or moved, one without the other).
 */
function specifiers(text: string): string[] {
  const pattern =
    /(?:^|[;\s])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;
  return [...text.matchAll(pattern)].map((m) => (m[1] ?? m[2]) as string);
}

/** The repository file a relative specifier of `from` names (`./x.js` → `x.ts`), or undefined for a package. */
function resolveLocal(from: string, specifier: string, known: ReadonlySet<string>): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = posix.normalize(posix.join(posix.dirname(from), specifier)).replace(/\.js$/, '.ts');
  if (known.has(target)) return target;
  const index = `${target.replace(/\.ts$/, '')}/index.ts`;
  return known.has(index) ? index : undefined;
}

/** Local imports of every file under `roots`. */
function importGraph(roots: readonly string[]): Map<string, string[]> {
  const files = roots.flatMap(sourceFiles);
  const known = new Set(files);
  return new Map(
    files.map((file) => [
      file,
      specifiers(code(file))
        .map((s) => resolveLocal(file, s, known))
        .filter((t): t is string => t !== undefined),
    ]),
  );
}

/** Strongly connected components of more than one module (or a module importing itself): the cycles. */
function cycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
      }
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return found.sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1));
}

/** One edge of each cycle, so a failure says where to cut. */
function describeCycle(graph: ReadonlyMap<string, readonly string[]>, component: readonly string[]): string {
  const members = new Set(component);
  const edges = component.flatMap((from) =>
    (graph.get(from) ?? []).filter((to) => members.has(to)).map((to) => `${from} → ${to}`),
  );
  return edges.join('\n  ');
}

describe('import cycles', () => {
  it('the cycle finder finds a cycle through type-only imports and ignores packages and a DAG', () => {
    // Prepare
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts']],
      ['d.ts', ['a.ts', 'e.ts']],
      ['e.ts', []],
      ['f.ts', ['f.ts']],
    ]);
    const text = "import type { X } from './x.js';\nexport { y } from '../y.js';\nimport z from 'zod';\n";

    // Act
    const found = cycles(graph);
    const named = specifiers(text);

    // Assess
    expect(found).toEqual([['a.ts', 'b.ts', 'c.ts'], ['f.ts']]);
    expect(named).toEqual(['./x.js', '../y.js', 'zod']);
  });

  it('functions/ and infra/ have no import cycle besides the listed ones being removed', () => {
    // Prepare
    const graph = importGraph(['functions', 'infra']);
    const listed = new Set(KNOWN_CYCLES.map((c) => [...c].sort().join(' ')));

    // Act
    const found = cycles(graph);
    const unlisted = found.filter((c) => !listed.has(c.join(' ')));
    const gone = [...listed].filter((c) => !found.some((f) => f.join(' ') === c));

    // Assess
    expect(
      unlisted.map((c) => `cycle:\n  ${describeCycle(graph, c)}`),
      'import cycles: move the shared types into a model module or the port',
    ).toEqual([]);
    expect(gone, 'these listed cycles are gone: remove them from KNOWN_CYCLES').toEqual([]);
  });
});

describe('layout rules', () => {
  const core = sourceFiles('functions/core');

  it('core/ uses no AWS SDK, reads no environment and no wall clock: I/O and time come in as ports', () => {
    // Prepare
    const rules: readonly (readonly [string, RegExp])[] = [
      ['imports the AWS SDK', /['"]@aws-sdk\//],
      ['reads process.env', /\bprocess\.env\b/],
      ['reads the clock with Date.now()', /\bDate\.now\(/],
      ['reads the clock with new Date()', /\bnew Date\(\s*\)/],
    ];

    // Act
    const violations = core.flatMap((file) => {
      const text = code(file);
      return rules.filter(([, pattern]) => pattern.test(text)).map(([rule]) => `${file} ${rule}`);
    });

    // Assess
    // The walk found core (not an empty or wrong folder): some 40 modules live there.
    expect(core.length).toBeGreaterThan(30);
    expect(violations).toEqual([]);
  });

  it('core/ and ports/ import no adapter, handler or shared (runtime) module', () => {
    // Prepare
    const graph = importGraph(['functions']);
    const inner = (file: string) => file.startsWith('functions/core/') || file.startsWith('functions/ports/');
    const outer = /^functions\/(adapters|handlers|shared)\//;

    // Act
    const violations = [...graph.entries()]
      .filter(([file]) => inner(file))
      .flatMap(([file, targets]) => targets.filter((t) => outer.test(t)).map((t) => `${file} → ${t}`));

    // Assess
    expect(violations).toEqual([]);
  });
});

describe('format-owned maintenance (issue #27 item 2)', () => {
  /**
   * The modules that reach a table's format only through the TableFormat port (`format.maintenance`, the registry
   * in formats/index.ts): none names a format or imports a format's folder. Only the modules cleaned so far; add a
   * module here once it stops branching on a format.
   */
  const FORMAT_FREE = [
    // All of core but the formats' own folder: maintenance, the run input and plan (a format's `where` filter and
    // options reach it through the registry), the errors (a foreign table's refusal is in its format's words).
    ...sourceFiles('functions/core').filter((f) => !f.startsWith('functions/core/formats/')),
    ...sourceFiles('functions/handlers'),
    // Every CLI module but compact.ts and index.ts (their Iceberg `where`/rewrite-options path is still the CLI's).
    ...sourceFiles('functions/cli').filter(
      (file) => !['functions/cli/compact.ts', 'functions/cli/index.ts'].includes(file),
    ),
  ];
  const FORMAT_LITERAL = /(['"`])(delta|iceberg|hudi)\1/;
  const FORMAT_FOLDER = /^functions\/core\/formats\/[^/]+\//;

  it('the format-free rule catches a format literal and a format-folder import, and leaves prose alone', () => {
    // Prepare
    const named = "if (table.format === 'iceberg') return;";
    const prose = "const note = 'a Delta table at ' + root;";
    const folder = 'functions/core/formats/delta/vacuum.ts';

    // Act
    const caught = [FORMAT_LITERAL.test(named), FORMAT_LITERAL.test(prose), FORMAT_FOLDER.test(folder)];

    // Assess
    expect(caught).toEqual([true, false, true]);
  });

  it('core outside the formats, the handlers, vacuum and tiering and their entry points name no format and import no format folder', () => {
    // Prepare
    const graph = importGraph(['functions']);

    // Act
    const violations = FORMAT_FREE.flatMap((file) => [
      ...(FORMAT_LITERAL.test(code(file)) ? [`${file} names a format in a string literal`] : []),
      ...(graph.get(file) ?? []).filter((t) => FORMAT_FOLDER.test(t)).map((t) => `${file} → ${t}`),
    ]);

    // Assess
    // The list names real modules (a renamed file would otherwise pass unchecked).
    expect(FORMAT_FREE.every((file) => graph.has(file))).toBe(true);
    expect(violations).toEqual([]);
  });
});

describe('format-owned adapters (issue #27)', () => {
  /**
   * A format's I/O lives in its folder under adapters/formats/ and is composed by the adapter registry
   * (adapters/formats/index.ts); the other adapters and the runtime modules in shared/ only hand it what every
   * format shares. So none of them names a format or imports a format's folder — in core or in adapters — and a new
   * format's adapters are one folder and one registration line.
   */
  const FORMAT_LITERAL = /(['"`])(delta|iceberg|hudi)\1/;
  const FORMAT_FOLDER = /^functions\/(core|adapters)\/formats\/[^/]+\//;
  const formatFree = (file: string): boolean =>
    (file.startsWith('functions/adapters/') && !file.startsWith('functions/adapters/formats/')) ||
    file.startsWith('functions/shared/');

  /** What breaks the rule among `modules` (each a file with its code and the local modules it imports). */
  function violations(
    modules: ReadonlyMap<string, { readonly text: string; readonly imports: readonly string[] }>,
  ) {
    return [...modules.entries()]
      .filter(([file]) => formatFree(file))
      .flatMap(([file, { text, imports }]) => [
        ...(FORMAT_LITERAL.test(text) ? [`${file} names a format in a string literal`] : []),
        ...imports.filter((t) => FORMAT_FOLDER.test(t)).map((t) => `${file} → ${t}`),
      ]);
  }

  it('the rule catches a format literal and a format-folder import outside the format folders, and spares the registries, the folders and an encoding', () => {
    // Prepare
    const modules = new Map([
      ['functions/adapters/s3-object-store.ts', { text: "if (format === 'delta') return;", imports: [] }],
      [
        'functions/shared/workflow-runtime.ts',
        { text: '', imports: ['functions/adapters/formats/iceberg/catalog-services.ts'] },
      ],
      [
        'functions/shared/table-stores.ts',
        { text: '', imports: ['functions/core/formats/delta/log-store.ts'] },
      ],
      [
        'functions/shared/format-services.ts',
        { text: '', imports: ['functions/adapters/formats/index.ts', 'functions/core/formats/index.ts'] },
      ],
      ['functions/adapters/formats/delta/services.ts', { text: "format: 'delta',", imports: [] }],
      [
        'functions/adapters/formats/index.ts',
        { text: '', imports: ['functions/adapters/formats/iceberg/catalog-services.ts'] },
      ],
      ['functions/adapters/parquet-wasm/wasm.ts', { text: "how === 'delta-binary-packed'", imports: [] }],
      [
        'functions/adapters/open-store.ts',
        { text: "const note = 'an Iceberg table at ' + root;", imports: [] },
      ],
    ]);

    // Act
    const found = violations(modules);

    // Assess
    expect(found).toEqual([
      'functions/adapters/s3-object-store.ts names a format in a string literal',
      'functions/shared/workflow-runtime.ts → functions/adapters/formats/iceberg/catalog-services.ts',
      'functions/shared/table-stores.ts → functions/core/formats/delta/log-store.ts',
    ]);
  });

  it('adapters outside adapters/formats/ and the shared runtime name no format and import no format folder', () => {
    // Prepare
    const graph = importGraph(['functions']);
    const modules = new Map(
      [...graph.entries()].map(([file, imports]) => [file, { text: code(file), imports }] as const),
    );

    // Act
    const found = violations(modules);

    // Assess
    // The walk saw the modules the rule is about (not an empty or renamed folder): the ones it checks, the format
    // adapter folders it keeps them out of, and the registry they may import.
    expect([...graph.keys()].filter(formatFree).length).toBeGreaterThan(30);
    expect(
      [...graph.keys()].filter((f) => f.startsWith('functions/adapters/formats/')).length,
    ).toBeGreaterThan(3);
    expect(graph.has('functions/adapters/formats/index.ts')).toBe(true);
    expect(
      found,
      'move format-specific I/O into adapters/formats/<name>/ and reach it through the registry',
    ).toEqual([]);
  });
});

describe('format-owned infrastructure (issue #27 item 3)', () => {
  /** Where a format's own infra lives; its registry (the one module the rest of infra/ may import) is its index. */
  const FORMATS_DIR = 'infra/formats/';
  const REGISTRY = 'infra/formats/index.ts';
  const FORMAT_LITERAL = /(['"`])(delta|iceberg|hudi)\1/;
  /** A module of a format's folder in functions/ (its settings' types, its maintenance), not the formats' registry. */
  const FORMAT_FOLDER = /^functions\/core\/formats\/[^/]+\//;

  /** A module of infra/ as the rule reads it: its code (comments dropped) and the local modules it imports. */
  interface InfraModule {
    readonly code: string;
    readonly imports: readonly string[];
  }

  /**
   * Every breach of the rule among `modules`: a module of infra/ outside infra/formats/ that names a format in a
   * string literal, imports a module of infra/formats/ other than the registry, or imports a format's folder of
   * functions/core/formats/ (what infra needs of a format, its infra module imports).
   */
  function infraFormatViolations(modules: ReadonlyMap<string, InfraModule>): string[] {
    return [...modules.entries()]
      .filter(([file]) => file.startsWith('infra/') && !file.startsWith(FORMATS_DIR))
      .flatMap(([file, module]) => [
        ...(FORMAT_LITERAL.test(module.code) ? [`${file} names a format in a string literal`] : []),
        ...module.imports
          .filter(
            (target) => (target.startsWith(FORMATS_DIR) && target !== REGISTRY) || FORMAT_FOLDER.test(target),
          )
          .map((target) => `${file} → ${target}`),
      ]);
  }

  it("the rule catches a format literal, an import of a format's infra module or functions folder, and allows the registry and the formats themselves", () => {
    // Prepare
    const modules = new Map<string, InfraModule>([
      ['infra/sweep.ts', { code: "if (t.format === 'iceberg') grant();", imports: [] }],
      ['infra/lake-compactor.ts', { code: '', imports: ['infra/formats/delta/log-access.ts'] }],
      [
        'infra/lake-compactor-props.ts',
        { code: '', imports: ['functions/core/formats/iceberg/catalogs.ts'] },
      ],
      [
        'infra/profiler.ts',
        { code: "const note = 'a Delta table';", imports: [REGISTRY, 'functions/core/formats/index.ts'] },
      ],
      [
        'infra/formats/delta/index.ts',
        {
          code: "format: 'delta',",
          imports: ['infra/formats/format-infra.ts', 'functions/core/formats/delta/coordination.ts'],
        },
      ],
    ]);

    // Act
    const violations = infraFormatViolations(modules);

    // Assess
    expect(violations).toEqual([
      'infra/sweep.ts names a format in a string literal',
      'infra/lake-compactor.ts → infra/formats/delta/log-access.ts',
      'infra/lake-compactor-props.ts → functions/core/formats/iceberg/catalogs.ts',
    ]);
  });

  it("no infra module outside infra/formats/ names a format, or imports a format's module instead of the registry", () => {
    // Prepare
    const graph = importGraph(['functions', 'infra']);
    const modules = new Map(
      [...graph.entries()]
        .filter(([file]) => file.startsWith('infra/'))
        .map(([file, imports]) => [file, { code: code(file), imports }] as const),
    );

    // Act
    const violations = infraFormatViolations(modules);

    // Assess
    // The graph holds the construct, the registry and a format module (a moved tree would otherwise pass unchecked).
    expect(
      ['infra/lake-compactor.ts', REGISTRY, 'infra/formats/iceberg/index.ts'].every((f) => graph.has(f)),
    ).toBe(true);
    expect(violations).toEqual([]);
  });
});
