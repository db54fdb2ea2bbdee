// Which test files may run in a shared worker process (vitest `isolate: false`) instead of a fresh fork each.
//
// Why: a fresh fork re-imports the module graph (the AWS SDK, aws-cdk-lib, the Parquet engine): ~1.5 s of CPU per
// file, more than most unit files take to run; a full run paid ~530 s of it. Files that share a worker import
// those modules once per worker.
//
// What makes sharing safe: a file that changes nothing process-wide leaves nothing for the next file in the same
// worker to see. So a file shares only if neither its source nor any test module it imports (relative imports
// inside test/, followed transitively) shows one of the ways this suite changes or depends on the process: module
// mocks and spies (they replace exports or methods for everyone), stubbed globals or fake timers, process.env
// (read or written: a file that reads it may depend on what another file left), the working directory, exit codes
// and process listeners, globalThis, and the engine's process-wide worker counters (engineWorkerStats counts every
// file's workers), and the local cloud's function runner (infra/local/functions.ts, local-cloud.ts), which puts each
// function's environment in process.env. Anything else stays in a fresh fork, as before. The rule runs on the files' text each time the
// config loads, so a file that gains one of these moves back to isolation by itself;
// test/unit/shared-worker-files.test.ts proves the rule catches each marker and follows imports.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative, sep } from 'node:path';

/** The ways a test file can change its process for the files after it, or depend on it (see the module comment). */
export const PROCESS_WIDE =
  /\bvi\.(mock|doMock|unmock|doUnmock|spyOn|stubGlobal|stubEnv|unstubAllGlobals|unstubAllEnvs|useFakeTimers|setSystemTime|resetModules|hoisted|importActual|importMock)\b|\bprocess\.(env|chdir|exitCode|exit|on|once|off|addListener|removeListener|removeAllListeners|umask|setUncaughtExceptionCaptureCallback)\b|\bglobalThis\b|\bengineWorkerStats\b|\binfra\/local\/(functions|local-cloud)\.js\b/;

/** Relative module specifiers a source imports (static, dynamic and re-exports). */
function relativeImports(source: string): string[] {
  const found: string[] = [];
  for (const match of source.matchAll(/(?:from|import)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    if (match[1] !== undefined) found.push(match[1]);
  }
  return found;
}

/** The file a relative specifier names: `.js` written for a `.ts` source, as this repository imports. */
function resolveSource(fromFile: string, specifier: string): string | undefined {
  const base = normalize(join(dirname(fromFile), specifier));
  for (const candidate of [base, base.replace(/\.js$/, '.ts'), base.replace(/\.mjs$/, '.mts')]) {
    if (statSync(candidate, { throwIfNoEntry: false })?.isFile() && !candidate.endsWith('.json'))
      return candidate;
  }
  return undefined;
}

/**
 * Whether the test file at `file` may share a worker: neither it nor a module under `testRoot` it imports,
 * transitively, matches {@link PROCESS_WIDE}. Product modules (outside `testRoot`) are not followed: the same
 * code is loaded whichever test file imports it first, and no sharing file changes the process it reads.
 */
export function mayShareProcess(file: string, testRoot: string, seen = new Set<string>()): boolean {
  if (seen.has(file)) return true;
  seen.add(file);
  const source = readFileSync(file, 'utf8');
  if (PROCESS_WIDE.test(source)) return false;
  return relativeImports(source).every((specifier) => {
    const target = resolveSource(file, specifier);
    if (target === undefined || !target.startsWith(testRoot + sep)) return true;
    return mayShareProcess(target, testRoot, seen);
  });
}

/** `*.test.ts` files under `dir`, recursively. */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The test files under `dirs` (relative to `root`) that may share a worker, relative to `root` with `/`. */
export function sharedWorkerFiles(root: string, dirs: readonly string[]): string[] {
  const testRoot = join(root, 'test');
  return dirs
    .flatMap((dir) => testFiles(join(root, dir)))
    .filter((file) => mayShareProcess(file, testRoot))
    .map((file) => relative(root, file).split(sep).join('/'))
    .sort();
}
