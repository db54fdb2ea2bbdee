// esbuild bundles of the project's TypeScript for processes and threads the tests start with plain `node`:
// the same source, without paying tsx's transpiling (and Node's loading of thousands of package files) at
// every start. Used by the global setup (the engine worker) and by tests that spawn many CLI processes.
import { symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Absolute path of a file of the repository. */
export function repoPath(relative: string): string {
  return join(REPO, relative);
}

/**
 * Bundles `entryPoints` (name → repository-relative source) into `outdir` as ESM for Node 20, and returns
 * each output's path by name. Dependencies are bundled too (loading one file instead of each package's
 * hundreds halves a process's start), except parquet-wasm, which loads its `.wasm` from beside its own
 * module: it resolves from the repository's node_modules, linked into `outdir`. CommonJS dependencies
 * get a `require` (the bundle is ESM). The engine's worker must be bundled as `worker` beside a bundle
 * that starts engine workers (parallel.ts looks for `./worker.js` next to the running file).
 */
export async function bundleForNode(
  outdir: string,
  entryPoints: Readonly<Record<string, string>>,
): Promise<Record<string, string>> {
  const { build } = await import('esbuild');
  await build({
    entryPoints: Object.fromEntries(Object.entries(entryPoints).map(([name, src]) => [name, repoPath(src)])),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['parquet-wasm'],
    // ESM builds of packages that ship both (the AWS SDK): what Node itself would load for `import`.
    mainFields: ['module', 'main'],
    banner: {
      js: "import { createRequire as __bundleCreateRequire } from 'node:module'; const require = __bundleCreateRequire(import.meta.url);",
    },
    outdir,
    logLevel: 'warning',
  });
  await symlink(join(REPO, 'node_modules'), join(outdir, 'node_modules'), 'dir');
  return Object.fromEntries(Object.keys(entryPoints).map((name) => [name, join(outdir, `${name}.js`)]));
}
