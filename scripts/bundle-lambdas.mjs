// Pre-bundles every Lambda handler for the published package: dist/lambda/<handler>/index.mjs (+ source map), and
// the Parquet engine's files once, in dist/lambda/_parquet-wasm/ (parquet-wasm's .wasm and the rewrite engine's
// worker.js). An installed package has no handler sources to bundle, so the construct deploys these (see
// infra/node-function.ts); in this repository the construct still bundles from source at synth, as before.
//
// The esbuild options are the ones infra/node-function.ts hands NodejsFunction: keep the two in step. Source maps
// without the sources' content: the functions run with --enable-source-maps, and a stack trace needs only the maps'
// mappings and names to name the TypeScript file, line and function; the content (every bundled dependency's source
// again) doubled the package, 120 MB unpacked and 30.5 MB packed with it, 62 MB and 17.1 MB without.
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = dirname(dirname(fileURLToPath(import.meta.url)));
const out = join(root, 'dist', 'lambda');
const banner = [
  "import { createRequire } from 'module';",
  "import { fileURLToPath as __lcFileUrlToPath } from 'url';",
  "import { dirname as __lcDirname } from 'path';",
  'const require = createRequire(import.meta.url);',
  'const __filename = __lcFileUrlToPath(import.meta.url);',
  'const __dirname = __lcDirname(__filename);',
].join(' ');

await rm(out, { recursive: true, force: true });
const handlers = (await readdir(join(root, 'functions', 'handlers'))).filter((f) => f.endsWith('.ts'));
// One build for every handler: esbuild parses the modules they share (the engine, Powertools, the core) once, not
// once per handler (~20 s of CPU saved on a 2-core machine). Without code splitting each entry point is still bundled
// on its own, byte for byte as a build of that handler alone would write it.
await build({
  entryPoints: handlers.map((file) => ({
    in: join(root, 'functions', 'handlers', file),
    out: join(file.replace(/\.ts$/, ''), 'index'),
  })),
  outdir: out,
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node22',
  minify: true,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  banner: { js: banner },
  external: ['@aws-sdk/*'],
  logLevel: 'warning',
});
const engine = join(out, '_parquet-wasm');
await mkdir(engine, { recursive: true });
await copyFile(
  join(root, 'node_modules', 'parquet-wasm', 'node', 'parquet_wasm_bg.wasm'),
  join(engine, 'parquet_wasm_bg.wasm'),
);
await build({
  entryPoints: [join(root, 'functions', 'adapters', 'parquet-wasm', 'worker.ts')],
  outfile: join(engine, 'worker.js'),
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node22',
  minify: true,
  keepNames: true,
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
});
console.log(`bundled ${handlers.length} Lambda handlers into ${out}`);
