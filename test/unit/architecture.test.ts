// The module graph of functions/ and infra/ has no import cycle (type-only imports included), and the layout
// rules of DESIGN.md that a regex can check hold: core/ is pure, ports/ and core/ never reach into adapters, and a
// table format is one folder: nothing outside its folders and the registries names it or imports its modules (in
// functions/, not even in a comment).
import { existsSync, readdirSync, readFileSync } from 'node:fs';
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
  return withoutComments(readFileSync(join(REPO_ROOT, file), 'utf8'));
}

/** `text` without its comment lines and blocks (see {@link code}). */
function withoutComments(text: string): string {
  return text.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/^\s*\/\/.*$/gm, '');
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

describe('a table format is one folder (issue #27 item 5)', () => {
  /** Where the rule looks: the functions, the construct, the bin and any scripts (absent folders are skipped). */
  const ROOTS = ['functions', 'infra', 'bin', 'scripts'] as const;
  /** A format named in code: the whole string literal is its name (prose such as 'a Delta table' is not). */
  const FORMAT_LITERAL = /(['"`])(delta|iceberg|hudi)\1/;
  /**
   * A module of a format's own folder: its core (settings, maintenance, foreign-table advice), its adapters (I/O)
   * or its infra (grants, props). The modules directly in those folders (the registries and what is shared beside
   * them) are not a format's.
   */
  const FORMAT_FOLDER = /^(?:functions\/core\/formats|functions\/adapters\/formats|infra\/formats)\/[^/]+\//;

  /**
   * The modules outside the format folders that may name a format or import a format's folder, each with why. A
   * module listed here that no longer needs it fails the rule, so the list only shrinks; anything else beside the
   * registries (core/formats/cli.ts, format-settings.ts, infra/formats/format-infra.ts …) is checked like the rest.
   */
  const EXEMPT_MODULES: ReadonlyMap<string, string> = new Map([
    [
      'functions/core/formats/index.ts',
      "the registry: one line per format, importing the format's TableFormat",
    ],
    [
      'functions/adapters/formats/index.ts',
      "the adapter registry: one line per format with I/O, keyed by the format's name",
    ],
    [
      'infra/formats/index.ts',
      "the infra registry: one line per format with infra, keyed by the format's name",
    ],
    [
      'functions/core/formats/foreign-formats.ts',
      "lists each format's foreign-table words (<format>/foreign-table.ts) apart from the registry: core/errors.ts reads them, and the registry's formats import errors.ts (a cycle)",
    ],
    [
      'functions/core/formats/foreign-tables.ts',
      "recognises every format's layout (_delta_log/, metadata/, .hoodie/) in one pass over a listing and names what it found, Hudi included, which has no TableFormat to ask",
    ],
    [
      'functions/core/formats/plan-options.ts',
      "lists the plan-options schema of each format with a planner of its own apart from the registry: planning.ts reads it, and the formats' planners import planning.ts (a cycle)",
    ],
  ]);

  /** Folders exempt as a whole, each with why. */
  const EXEMPT_FOLDERS: ReadonlyMap<string, string> = new Map([
    [
      'functions/tools/',
      "dev tooling (npm run demo / generate), imported by no product module: the demo takes --format and runs each format's own demo, and the sample-table generators write a format's files with its own modules",
    ],
  ]);

  /**
   * A format named in words, in a comment or in code: its name as people write it, or its id as a word (`delta`
   * alone is not one: it is also a difference, an encoding, a variable). The code rule above catches a format id
   * used as a value; this one catches the prose that still describes a format where none should be described.
   */
  const FORMAT_WORD = /\b(?:Delta|Iceberg|Hudi)\b|\b(?:iceberg|hudi)\b/;
  /** Where the words rule looks: the functions and the construct, comments included. */
  const WORD_ROOTS = ['functions/', 'infra/'] as const;

  /**
   * The modules of functions/ outside the format folders and the exempt places that may still name a format in
   * words, each with exactly how many lines do and why they must. The count must match: a line more fails (say it
   * in the format's folder, or by capability), a line fewer fails too (lower the count), so the list only shrinks.
   */
  const NAMED_IN_WORDS: ReadonlyMap<string, { readonly lines: number; readonly why: string }> = new Map([
    [
      'functions/core/avro/container.ts',
      {
        lines: 9,
        why: "the Avro codec reads and writes the formats' own files byte for byte (manifests, timeline files): whose writer convention each rule follows is the why of the rule",
      },
    ],
    [
      'functions/core/avro/datum.ts',
      {
        lines: 6,
        why: "the datum walker's limits (long width, nesting depth, short type names) are set by the schemas those writers emit, named as such",
      },
    ],
    [
      'functions/core/deletes/roaring.ts',
      {
        lines: 2,
        why: 'the bitmap decoder implements the serialization two published deletion-vector specs share; the specs are named by their formats',
      },
    ],
    [
      'functions/core/deletes/deleted-rows.ts',
      { lines: 1, why: 'names the two published deletion-vector specs the decoded positions come from' },
    ],
    [
      'functions/ports/parquet-engine.ts',
      {
        lines: 3,
        why: "row lineage's reserved columns and field ids are defined by one format's published spec (v3 Row Lineage); the port cites it",
      },
    ],
    [
      'functions/ports/journal.ts',
      { lines: 1, why: 'cites the row-lineage spec the journaled values follow' },
    ],
    [
      'functions/adapters/parquet-wasm/lineage.ts',
      { lines: 1, why: 'cites the row-lineage spec whose inheritance rule it implements' },
    ],
    [
      'functions/core/parquet/key-value.ts',
      {
        lines: 2,
        why: "a writer's footer key (`org.apache.hudi.bloomfilter`) is matched by its literal name, which contains the format's",
      },
    ],
  ]);

  /** Lines of `text` that name a format in words. */
  function wordLines(text: string): number {
    return text.split('\n').filter((line) => FORMAT_WORD.test(line)).length;
  }

  /** Every module of functions/ (outside the exempt places) whose lines naming a format differ from its allowance. */
  function wordViolations(texts: ReadonlyMap<string, string>): string[] {
    return [...texts.entries()]
      .filter(([file]) => WORD_ROOTS.some((root) => file.startsWith(root)) && exemption(file) === undefined)
      .flatMap(([file, text]) => {
        const lines = wordLines(text);
        const allowed = NAMED_IN_WORDS.get(file)?.lines ?? 0;
        return lines === allowed ? [] : [`${file}: ${lines} line(s) name a format, ${allowed} allowed`];
      });
  }

  /** A module as the rule reads it: its code (comments dropped) and the paths its relative imports name. */
  interface SeamModule {
    readonly code: string;
    readonly imports: readonly string[];
  }

  /** Why `file` may name a format, or undefined when the rule applies to it. */
  function exemption(file: string): string | undefined {
    if (FORMAT_FOLDER.test(file)) return "a format's own folder";
    return (
      EXEMPT_MODULES.get(file) ??
      [...EXEMPT_FOLDERS.entries()].find(([folder]) => file.startsWith(folder))?.[1]
    );
  }

  /** What in `module` names a format: a format literal, or an import of a format's folder. */
  function breaches(file: string, module: SeamModule): string[] {
    return [
      ...(FORMAT_LITERAL.test(module.code) ? [`${file} names a format in a string literal`] : []),
      ...module.imports.filter((target) => FORMAT_FOLDER.test(target)).map((target) => `${file} → ${target}`),
    ];
  }

  /** Every breach among `modules` outside the format folders and the exempt places. */
  function seamViolations(modules: ReadonlyMap<string, SeamModule>): string[] {
    return [...modules.entries()]
      .filter(([file]) => exemption(file) === undefined)
      .flatMap(([file, module]) => breaches(file, module));
  }

  /** Every source file under the roots (`.ts`, `.js`, `.mjs`, `.cjs`), repository-relative with `/`. */
  function seamFiles(): string[] {
    const found: string[] = [];
    const walk = (absolute: string): void => {
      for (const entry of readdirSync(absolute, { withFileTypes: true })) {
        const path = join(absolute, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.[cm]?[jt]s$/.test(entry.name))
          found.push(relative(REPO_ROOT, path).split('\\').join('/'));
      }
    };
    for (const root of ROOTS) if (existsSync(join(REPO_ROOT, root))) walk(join(REPO_ROOT, root));
    return found.sort();
  }

  /** The real tree as the rule reads it; an import's path is what its specifier names (`.js` read as `.ts`). */
  function realModules(): Map<string, SeamModule> {
    return new Map(
      seamFiles().map((file) => {
        const text = code(file);
        const imports = specifiers(text)
          .filter((s) => s.startsWith('.'))
          .map((s) => posix.normalize(posix.join(posix.dirname(file), s)).replace(/\.js$/, '.ts'));
        return [file, { code: text, imports }] as const;
      }),
    );
  }

  it("the rule catches a format literal and a format folder's import in an ordinary module, and spares prose, comments, the format folders, the registries and the exempt places", () => {
    // Prepare
    const module = (text: string, imports: readonly string[] = []) => ({
      code: withoutComments(text),
      imports,
    });
    const modules = new Map<string, SeamModule>([
      // Caught: ordinary modules of core, the CLI, the shared runtime, the construct, the bin, and a module beside
      // the registry that is not listed.
      ['functions/core/maintenance/vacuum.ts', module("if (table.format === 'iceberg') return;")],
      ['functions/cli/compact.ts', module('', ['functions/core/formats/iceberg/catalogs.ts'])],
      ['functions/shared/table-stores.ts', module('', ['functions/adapters/formats/delta/services.ts'])],
      ['infra/lake-compactor.ts', module('', ['infra/formats/delta/log-access.ts'])],
      ['bin/lake-compactor.js', module('const format = `hudi`;')],
      ['functions/core/formats/cli.ts', module("const fallback = 'delta';")],
      // Spared: a format's folders (core, adapters, infra), the registries and the listed modules beside them.
      ['functions/core/formats/iceberg/format.ts', module("name: 'iceberg',")],
      ['functions/adapters/formats/delta/services.ts', module("format: 'delta',")],
      [
        'infra/formats/iceberg/index.ts',
        module("format: 'iceberg',", ['functions/core/formats/iceberg/catalogs.ts']),
      ],
      ['functions/core/formats/index.ts', module('', ['functions/core/formats/delta/format.ts'])],
      ['infra/formats/index.ts', module("['delta', delta],", ['infra/formats/delta/index.ts'])],
      [
        'functions/core/formats/plan-options.ts',
        module('', ['functions/core/formats/iceberg/rewrite-options.ts']),
      ],
      ['functions/tools/demo.ts', module("if (opts.format === 'iceberg') run();")],
      // Spared: prose, an encoding's name, a comment, and the registries' own modules.
      ['functions/adapters/open-store.ts', module("const note = 'an Iceberg table at ' + root;")],
      ['functions/adapters/parquet-wasm/wasm.ts', module("how === 'delta-binary-packed'")],
      ['functions/core/errors.ts', module("// a format === 'delta' branch used to live here\nconst x = 1;")],
      [
        'infra/profiler.ts',
        module('', [
          'infra/formats/index.ts',
          'infra/formats/format-infra.ts',
          'functions/core/formats/index.ts',
        ]),
      ],
    ]);

    // Act
    const found = seamViolations(modules);

    // Assess
    expect(found).toEqual([
      'functions/core/maintenance/vacuum.ts names a format in a string literal',
      'functions/cli/compact.ts → functions/core/formats/iceberg/catalogs.ts',
      'functions/shared/table-stores.ts → functions/adapters/formats/delta/services.ts',
      'infra/lake-compactor.ts → infra/formats/delta/log-access.ts',
      'bin/lake-compactor.js names a format in a string literal',
      'functions/core/formats/cli.ts names a format in a string literal',
    ]);
  });

  it('outside the format folders, the registries and the listed exceptions, nothing under functions/, infra/, bin/ or scripts/ names a format or imports a format folder', () => {
    // Prepare
    const modules = realModules();

    // Act
    const found = seamViolations(modules);
    const unneeded = [...EXEMPT_MODULES.keys()].filter((file) => {
      const module = modules.get(file);
      return module !== undefined && breaches(file, module).length === 0;
    });
    const toolsImporters = [...modules.entries()]
      .filter(([file]) => !file.startsWith('functions/tools/'))
      .flatMap(([file, { imports }]) =>
        imports.filter((t) => t.startsWith('functions/tools/')).map((t) => `${file} → ${t}`),
      );

    // Assess
    // The walk saw the real tree: the CLI, the construct, the bin, the three registries, a folder of each kind, and
    // hundreds of modules (a moved or renamed tree would otherwise pass unchecked).
    const known = [
      'functions/cli/index.ts',
      'functions/cli/compact.ts',
      'functions/core/maintenance/vacuum.ts',
      'functions/handlers/vacuum.ts',
      'functions/shared/format-services.ts',
      'infra/lake-compactor.ts',
      'bin/lake-compactor.js',
      'functions/core/formats/iceberg/format.ts',
      'functions/adapters/formats/delta/services.ts',
      'infra/formats/iceberg/index.ts',
      ...EXEMPT_MODULES.keys(),
    ];
    expect(known.filter((file) => !modules.has(file))).toEqual([]);
    expect(modules.size).toBeGreaterThan(250);
    expect(found, 'a format is reached through its registry: move what names it into its folder').toEqual([]);
    expect(unneeded, 'these exempt modules no longer name a format: remove them from EXEMPT_MODULES').toEqual(
      [],
    );
    // The tooling's exemption holds only while no product module imports it.
    expect(toolsImporters).toEqual([]);
  });

  it('the words rule catches a comment or message naming a format in an ordinary module or the construct, and spares a difference called delta, the format folders, the exempt places and the listed lines', () => {
    // Prepare
    const texts = new Map<string, string>([
      // Caught: a doc comment, a log message, a path to a format folder in a comment, a format id as a word.
      ['functions/core/workflow/cost.ts', '/** LISTs that probe for a Delta log. */\nconst n = 3;'],
      ['functions/handlers/profiler.ts', "logger.error('recording an Iceberg table failed');"],
      ['functions/core/policy.ts', '// see formats/hudi/trigger-rule.ts'],
      // Caught: a listed module with a line more than its allowance, and one with a line fewer.
      ['functions/core/deletes/roaring.ts', '// Delta\n// Iceberg\n// Hudi'],
      ['functions/core/deletes/deleted-rows.ts', '// deletion vectors'],
      // Spared: a difference, an encoding, the format folders, the registries, the tooling, a listed module at its count.
      ['functions/core/parquet/stitch.ts', '/** Offsets moved by `delta`. */\nconst delta = 4;'],
      ['functions/adapters/parquet-wasm/wasm.ts', '// DELTA_BINARY_PACKED where smaller'],
      ['functions/core/formats/iceberg/format.ts', "// Apache Iceberg\nconst title = 'Apache Iceberg';"],
      ['functions/adapters/formats/delta/services.ts', '// Delta Lake services'],
      ['functions/core/formats/index.ts', '// Hudi, Delta and Iceberg register here'],
      ['functions/tools/demo.ts', '// runs the Hudi demo'],
      ['functions/ports/journal.ts', '// row lineage (Iceberg v3)'],
      // Caught in the construct too; spared in a format's infra folder and outside the roots.
      ['infra/observability.ts', '// a Delta or Iceberg table'],
      ['infra/formats/hudi/index.ts', '// Hudi tables opting in'],
      ['bin/app.ts', '// an Iceberg table'],
    ]);

    // Act
    const found = wordViolations(texts);

    // Assess
    expect(found).toEqual([
      'functions/core/workflow/cost.ts: 1 line(s) name a format, 0 allowed',
      'functions/handlers/profiler.ts: 1 line(s) name a format, 0 allowed',
      'functions/core/policy.ts: 1 line(s) name a format, 0 allowed',
      'functions/core/deletes/roaring.ts: 3 line(s) name a format, 2 allowed',
      'functions/core/deletes/deleted-rows.ts: 0 line(s) name a format, 1 allowed',
      'infra/observability.ts: 1 line(s) name a format, 0 allowed',
    ]);
  });

  it('outside the format folders and the exempt places, no line of functions/ or infra/ names a format in words but the listed ones, each with why', () => {
    // Prepare
    const texts = new Map(
      seamFiles().map((file) => [file, readFileSync(join(REPO_ROOT, file), 'utf8')] as const),
    );

    // Act
    const found = wordViolations(texts);
    const unlisted = [...NAMED_IN_WORDS.keys()].filter((file) => !texts.has(file));

    // Assess: the walk read the modules the brief named (the CLI's compact, the planner, the workflow's cost,
    // commit and compact), and every listed module still exists.
    for (const file of [
      'functions/cli/compact.ts',
      'functions/core/planning.ts',
      'functions/core/workflow/cost.ts',
      'functions/core/workflow/commit.ts',
      'functions/core/workflow/compact.ts',
    ])
      expect(texts.has(file), file).toBe(true);
    expect(unlisted).toEqual([]);
    expect(
      found,
      "say it in the format's folder (its help, settings or descriptions the registry exposes) or by capability",
    ).toEqual([]);
  });
});
