// The repository is self-contained: no file under test/, functions/ or infra/ reaches for a `shared` folder
// beside the repository (where the fixture tables used to live), so `npm test` passes on a fresh clone.
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The folders whose files build or test the project. */
const SCANNED = ['test', 'functions', 'infra'];

/** NOTICE.md says where the vendored tables were copied from: naming that folder is its job. */
const EXEMPT = new Set([join('test', 'fixtures', 'NOTICE.md')]);

// The patterns are built from pieces so that this file holds none of the spellings it looks for (it is
// scanned like any other, and so are the project's own checks of the tree).
const FOLDER = 'shared';
/** The old fixture folder, in any spelling. */
const FIXTURES_FOLDER = new RegExp(`${FOLDER}[/\\\\]fixtures`, 'g');
/** Path segments given one by one to `resolve` or `join`: the parent, then the folder. */
const SEGMENTS = new RegExp(`['"\`]\\.\\.['"\`]\\s*,\\s*['"\`]${FOLDER}['"\`]`, 'g');
/** A relative path climbing up to a folder of that name. */
const RELATIVE = new RegExp(`(?:\\.\\.[/\\\\])+${FOLDER}(?![\\w-])`, 'g');

/**
 * What in `text` (the file at `file`, relative to `root`) points at a `shared` folder that is not one of
 * the repository's own. Why relative paths are resolved rather than banned: `functions/shared/` is a real
 * module folder, and its importers rightly write the parent-relative path to it.
 */
function foreignSharedReferences(root: string, file: string, text: string): string[] {
  const found = [...text.matchAll(FIXTURES_FOLDER), ...text.matchAll(SEGMENTS)].map((m) => m[0]);
  for (const match of text.matchAll(RELATIVE)) {
    const target = resolve(root, dirname(file), match[0].replaceAll('\\', '/'));
    const fromRoot = relative(root, target);
    const ours = !fromRoot.startsWith('..') && !isAbsolute(fromRoot) && existsSync(target);
    if (!ours) found.push(match[0]);
  }
  return found;
}

async function filesUnder(root: string, folders: readonly string[]): Promise<string[]> {
  const files: string[] = [];
  for (const folder of folders) {
    const entries = await readdir(join(root, folder), { recursive: true, withFileTypes: true });
    for (const e of entries) if (e.isFile()) files.push(relative(root, join(e.parentPath, e.name)));
  }
  return files.sort();
}

describe('the repository is self-contained', () => {
  it('has no file under test/, functions/ or infra/ that points at a shared folder beside the repository', async () => {
    // Prepare
    const files = (await filesUnder(REPO_ROOT, SCANNED)).filter((f) => !EXEMPT.has(f));

    // Act
    const offenders: string[] = [];
    for (const file of files) {
      const text = (await readFile(join(REPO_ROOT, file))).toString('latin1');
      for (const reference of foreignSharedReferences(REPO_ROOT, file, text))
        offenders.push(`${file}: ${reference}`);
    }

    // Assess
    expect(files.length, 'the walk found the source, test and fixture files').toBeGreaterThan(300);
    expect(offenders).toEqual([]);
  });

  it('recognises each way the old fixture path was written and allows imports of functions/shared', () => {
    // Prepare: built from pieces so that this file itself holds none of the forbidden spellings.
    const up = '..';
    const q = (s: string) => `'${s}'`;
    const forbidden: [string, string][] = [
      ['test/support/fixtures.ts', `resolve(repoRoot, ${q(up)}, ${q('shared')}, ${q('fixtures')})`],
      ['test/support/fixtures.ts', `const root = ${q(`${up}/${up}/${up}/shared`)};`],
      ['test/unit/x.test.ts', `join(REPO_ROOT, ${q(`${up}/shared`)})`],
      ['test/unit/x.test.ts', `// reads /work/${FOLDER}/${'fixtures'}/delta`],
      ['infra/app.ts', `readFileSync(${q(`${up}\\${up}\\shared\\x.json`)})`],
    ];
    const allowed: [string, string][] = [
      ['functions/handlers/plan.ts', `import { x } from ${q(`${up}/shared/workflow-runtime.js`)};`],
      ['test/unit/shared/x.test.ts', `import { x } from ${q(`${up}/${up}/${up}/functions/shared/env.js`)};`],
      ['test/unit/x.test.ts', `const name = ${q('shared')}; // a table called shared`],
    ];

    // Act
    const flagged = forbidden.map(([file, text]) => foreignSharedReferences(REPO_ROOT, file, text).length);
    const passed = allowed.map(([file, text]) => foreignSharedReferences(REPO_ROOT, file, text));

    // Assess
    expect(
      flagged.every((n) => n > 0),
      `flag counts ${flagged.join(', ')}`,
    ).toBe(true);
    expect(passed).toEqual(allowed.map(() => []));
  });
});
