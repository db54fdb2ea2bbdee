// A native ZSTD for page compression outside the wasm encoder (see core/parquet/page-compress.ts): node:zlib's where
// the runtime has it (Node.js >= 22.15, so Lambda's nodejs22.x), else the @mongodb-js/zstd package (napi-rs binaries
// installed from the npm registry per platform, linux x64 and arm64 among them), else none — and the encoder
// compresses as before. Both run each call on libuv's thread pool, so pages compress beside the encoding thread.

import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as zlib from 'node:zlib';
import { PARQUET_ZSTD, type PageCodec } from '../../core/parquet/page-compress.js';

/** Which native ZSTD compresses the pages. */
export type NativeZstdSource = 'node:zlib' | '@mongodb-js/zstd';

export interface NativeZstd extends PageCodec {
  readonly source: NativeZstdSource;
}

/**
 * parquet-rs's ZSTD level when none is set (its `ZstdLevel::default()`), which is what the encoder wrote before:
 * the same level keeps output sizes where the measurements in docs/benchmarks.md put them.
 */
export const DEFAULT_ZSTD_LEVEL = 1;

/** node:zlib's ZSTD surface (Node.js >= 22.15; absent from Node 20's types). */
interface ZlibZstd {
  zstdCompress(
    buffer: Uint8Array,
    options: { params: Record<number, number> },
    callback: (err: Error | null, result: Buffer) => void,
  ): void;
  constants: { ZSTD_c_compressionLevel: number };
}

function zlibZstd(level: number): NativeZstd | undefined {
  const z = zlib as unknown as Partial<ZlibZstd>;
  const levelParam = (zlib.constants as unknown as Partial<ZlibZstd['constants']>).ZSTD_c_compressionLevel;
  const compress = z.zstdCompress;
  if (typeof compress !== 'function' || levelParam === undefined) return undefined;
  const options = { params: { [levelParam]: level } };
  return {
    source: 'node:zlib',
    codecId: PARQUET_ZSTD,
    compress: (bytes) =>
      new Promise((resolve, reject) =>
        compress(bytes, options, (err, out) => (err === null ? resolve(out) : reject(err))),
      ),
  };
}

interface MongoZstd {
  compress(data: Buffer, level?: number): Promise<Buffer>;
}

/**
 * The package, loaded by a name the bundler cannot follow: the Lambda bundles (esbuild) do not carry a `.node`
 * binary, and there node:zlib has ZSTD anyway; an unbundled install (the CLI, tests) finds it in node_modules.
 */
const PACKAGE: string = ['@mongodb-js', 'zstd'].join('/');

let packageModule: Promise<MongoZstd | undefined> | undefined;

/**
 * The package from beside this module, else from the working directory's node_modules: an engine worker bundled
 * into a temporary folder (the tests' worker bundle) has no node_modules above it.
 */
function loadPackage(): Promise<MongoZstd | undefined> {
  const from = (m: { compress?: MongoZstd['compress']; default?: MongoZstd }) =>
    typeof m.compress === 'function' ? { compress: m.compress } : m.default;
  packageModule ??= import(PACKAGE).then(from, async () => {
    try {
      const path = createRequire(join(process.cwd(), 'index.js')).resolve(PACKAGE);
      return from(await import(pathToFileURL(path).href));
    } catch {
      return undefined;
    }
  });
  return packageModule;
}

async function packageZstd(level: number): Promise<NativeZstd | undefined> {
  const mod = await loadPackage();
  if (mod === undefined) return undefined;
  return {
    source: '@mongodb-js/zstd',
    codecId: PARQUET_ZSTD,
    compress: (bytes) => mod.compress(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), level),
  };
}

/**
 * A native ZSTD at `level`, from `prefer` if given (tests pin each one), else node:zlib's, else the package's;
 * undefined when the one asked for (or every one) is missing here.
 */
export async function nativeZstd(
  options: { readonly level?: number; readonly prefer?: NativeZstdSource } = {},
): Promise<NativeZstd | undefined> {
  const level = options.level ?? DEFAULT_ZSTD_LEVEL;
  if (options.prefer === '@mongodb-js/zstd') return packageZstd(level);
  if (options.prefer === 'node:zlib') return zlibZstd(level);
  return zlibZstd(level) ?? (await packageZstd(level));
}
