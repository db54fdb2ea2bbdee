// The loader hooks of record-loads.mjs (they run on Node's hooks thread, hence a file of their own).
import { appendFileSync } from 'node:fs';

let log = '';

/** @param {{ log: string }} data */
export function initialize(data) {
  log = data.log;
}

/**
 * @param {string} specifier
 * @param {unknown} context
 * @param {(specifier: string, context: unknown) => Promise<{ url: string }>} next
 */
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(log, `${resolved.url}\n`);
  return resolved;
}
