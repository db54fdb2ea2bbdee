// Runs Debian's headless Chromium for tests (fresh profile per launch, removed; its process group killed on
// timeout or exit) and decodes its PNG screenshots; without the browser its tests skip locally, fail in CI.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';

/** Where Debian's `chromium` package installs the browser; CHROMIUM_PATH overrides it. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** The install command the notices and errors name. */
const INSTALL = 'apt-get update && apt-get install -y --no-install-recommends chromium';

/** Flags for a quiet, offline, throw-away headless run as root in a container. */
const BASE_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  '--hide-scrollbars',
];

/**
 * The browser's path.
 * @throws Error saying how to install it: a browser test that runs must fail, not pass unseen, without it.
 */
export function requireChromium(path: string = CHROMIUM_PATH): string {
  if (!existsSync(path)) {
    throw new Error(
      `Headless Chromium is needed at ${path} to render the HTML report: install it with ` +
        `\`${INSTALL}\` (Debian), or set CHROMIUM_PATH`,
    );
  }
  return path;
}

/**
 * Whether this run exercises the browser, for `describe.skipIf(!…)` / `it.skipIf(!…)`. Yes when Chromium is
 * installed. Yes in CI (`CI=true`) even without it: there the tests run and fail with the install hint, so a
 * CI image that lost the browser cannot pass unseen. Otherwise (a developer's machine without Chromium) no,
 * and `warn` gets one line saying how to run them, so `npm test` passes on a fresh clone with a visible notice.
 */
export function browserTestsEnabled(
  options: {
    readonly path?: string;
    readonly env?: Readonly<Record<string, string | undefined>>;
    readonly warn?: (line: string) => void;
  } = {},
): boolean {
  const path = options.path ?? CHROMIUM_PATH;
  if (existsSync(path)) return true;
  const env = options.env ?? process.env;
  if (/^(true|1)$/i.test(env.CI ?? '')) return true;
  (options.warn ?? console.warn)(
    `Skipping the headless-Chromium tests: no browser at ${path}. To run them: \`${INSTALL}\` (Debian), ` +
      'or set CHROMIUM_PATH to a Chromium binary. With CI=true they fail instead of skipping.',
  );
  return false;
}

export interface ChromiumRun {
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs Chromium with `args` (after the base flags and a fresh `--user-data-dir`) and resolves with its
 * output when it exits 0. Why a process group: Chromium forks zygote and utility processes; killing the
 * group is the only way to be sure none outlives the test, on timeout and after a normal exit alike.
 */
export async function runChromium(
  args: readonly string[],
  options: { readonly timeoutMs?: number } = {},
): Promise<ChromiumRun> {
  const binary = requireChromium();
  const profile = await mkdtemp(join(tmpdir(), 'lc-chromium-'));
  const timeoutMs = options.timeoutMs ?? 60_000;
  try {
    return await new Promise<ChromiumRun>((resolve, reject) => {
      const child = spawn(binary, [...BASE_FLAGS, `--user-data-dir=${profile}`, ...args], {
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const stdout: Buffer[] = [];
      const stderr: Buffer[] = [];
      child.stdout.on('data', (b: Buffer) => stdout.push(b));
      child.stderr.on('data', (b: Buffer) => stderr.push(b));
      const killGroup = () => {
        if (child.pid === undefined) return;
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // ESRCH: the group is already gone.
        }
      };
      const timer = setTimeout(() => {
        killGroup();
        reject(new Error(`chromium did not finish within ${timeoutMs} ms (killed): ${args.join(' ')}`));
      }, timeoutMs);
      child.on('error', (err) => {
        clearTimeout(timer);
        killGroup();
        reject(err);
      });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        killGroup();
        const out = Buffer.concat(stdout).toString('utf8');
        const err = Buffer.concat(stderr).toString('utf8');
        if (code === 0) resolve({ stdout: out, stderr: err });
        else reject(new Error(`chromium exited with ${code ?? signal}: ${err.slice(-2000)}`));
      });
    });
  } finally {
    await rm(profile, { recursive: true, force: true });
  }
}

/** The DOM of `url` after load (scripts run), serialized by Chromium. */
export async function dumpDom(url: string, options: { readonly timeoutMs?: number } = {}): Promise<string> {
  return (await runChromium(['--dump-dom', url], options)).stdout;
}

/** Saves a PNG of `url` rendered in a window of the given size. */
export async function screenshot(
  url: string,
  png: string,
  size: { readonly width: number; readonly height: number },
  options: { readonly timeoutMs?: number } = {},
): Promise<void> {
  await runChromium([`--screenshot=${png}`, `--window-size=${size.width},${size.height}`, url], options);
}

export interface DecodedPng {
  readonly width: number;
  readonly height: number;
  /** RGBA, 4 bytes per pixel, row after row. */
  readonly rgba: Uint8Array;
}

/**
 * Decodes the PNGs Chromium's `--screenshot` writes (8-bit RGB or RGBA, not interlaced), so a test can
 * count the pixels of a chart's colours instead of trusting that a non-empty file shows anything.
 * @throws Error for any other PNG flavour (the test should then be taught it, not pass blindly).
 */
export function decodePng(png: Buffer): DecodedPng {
  if (png.subarray(0, 8).toString('hex') !== '89504e470d0a1a0a') throw new Error('not a PNG file');
  let offset = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const idat: Buffer[] = [];
  while (offset < png.length) {
    const length = png.readUInt32BE(offset);
    const type = png.toString('latin1', offset + 4, offset + 8);
    const data = png.subarray(offset + 8, offset + 8 + length);
    if (type === 'IHDR') {
      width = data.readUInt32BE(0);
      height = data.readUInt32BE(4);
      const [depth, colorType, , , interlace] = [data[8], data[9], data[10], data[11], data[12]];
      if (depth !== 8 || interlace !== 0 || (colorType !== 2 && colorType !== 6))
        throw new Error(`unsupported PNG: depth ${depth}, colour type ${colorType}, interlace ${interlace}`);
      channels = colorType === 6 ? 4 : 3;
    } else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') break;
    offset += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const pixels = new Uint8Array(stride * height);
  for (let y = 0; y < height; y += 1) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x += 1) {
      const a = x >= channels ? (pixels[y * stride + x - channels] ?? 0) : 0;
      const b = y > 0 ? (pixels[(y - 1) * stride + x] ?? 0) : 0;
      const c = x >= channels && y > 0 ? (pixels[(y - 1) * stride + x - channels] ?? 0) : 0;
      const predictor =
        filter === 0 ? 0 : filter === 1 ? a : filter === 2 ? b : filter === 3 ? (a + b) >> 1 : paeth(a, b, c);
      pixels[y * stride + x] = ((line[x] ?? 0) + predictor) & 0xff;
    }
  }
  if (channels === 4) return { width, height, rgba: pixels };
  const rgba = new Uint8Array(width * height * 4);
  for (let i = 0; i < width * height; i += 1) {
    rgba.set(pixels.subarray(i * 3, i * 3 + 3), i * 4);
    rgba[i * 4 + 3] = 255;
  }
  return { width, height, rgba };
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** Pixels within `tolerance` (per channel) of the `#rrggbb` colour. */
export function countColor(image: DecodedPng, hex: string, tolerance = 6): number {
  const target = [1, 3, 5].map((i) => Number.parseInt(hex.slice(i, i + 2), 16));
  let n = 0;
  for (let i = 0; i < image.rgba.length; i += 4) {
    if (target.every((v, c) => Math.abs((image.rgba[i + c] ?? 0) - v) <= tolerance)) n += 1;
  }
  return n;
}
