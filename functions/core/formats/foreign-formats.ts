// The formats lake-compactor recognises by their own log or metadata, and the refusal of a location that is, lies in
// or holds a table of one (UnsupportedTableFormatError): each format's folder declares its words
// (`<format>/foreign-table.ts`), listed here once. A leaf beside the registry (index.ts) because core/errors.ts
// composes the refusal from it, and the registry's formats import errors.ts: going through the registry would be an
// import cycle.
import { deltaForeignTable } from './delta/foreign-table.js';
import type { ForeignTableKind, ForeignTableRelation } from './foreign-table-kind.js';
import { hudiForeignTable } from './hudi/foreign-table.js';
import { icebergForeignTable } from './iceberg/foreign-table.js';

/** Every format recognised by its own metadata, one line each, in the order a probe looks for them. */
const RECOGNISED = [deltaForeignTable, icebergForeignTable, hudiForeignTable] as const;

/** The name of a format recognised by its own metadata. */
export type ForeignFormat = (typeof RECOGNISED)[number]['name'];

/** The recognised formats' names, in declaration order. */
export const FOREIGN_FORMATS: readonly ForeignFormat[] = RECOGNISED.map((k) => k.name);

const KINDS: ReadonlyMap<string, ForeignTableKind> = new Map(RECOGNISED.map((k) => [k.name, k]));

/** What `format` declares about its tables met as foreign ones. */
export function foreignTableKind(format: ForeignFormat): ForeignTableKind {
  return KINDS.get(format) as ForeignTableKind;
}

/** How the formats are named in messages. */
export const FORMAT_NAMES: Readonly<Record<ForeignFormat, string>> = Object.fromEntries(
  RECOGNISED.map((k) => [k.name, k.title]),
) as Record<ForeignFormat, string>;

/** `a Delta Lake` / `an Apache Iceberg` / `an Apache Hudi`. */
export function aFormat(format: ForeignFormat): string {
  const kind = foreignTableKind(format);
  return `${kind.article} ${kind.title}`;
}

/**
 * THE refusal of `location` because it is, lies inside or contains the `format` table at `root` (found by
 * `evidenceKey`): what was found, why its listing cannot be trusted, and what to do (`advice`, else the format's).
 */
export function foreignTableRefusal(
  format: ForeignFormat,
  root: string,
  evidenceKey: string,
  location: string,
  advice: string | undefined,
): string {
  const kind = foreignTableKind(format);
  const at = withoutTrailingSlash(location);
  const table = withoutTrailingSlash(root);
  const inside = table.endsWith('/') ? table : `${table}/`;
  const relation: ForeignTableRelation =
    at === table ? 'is' : at.startsWith(inside) ? 'is inside' : 'contains';
  return `${at} ${relation} ${kind.article} ${kind.title} table (found ${kind.evidence(table, evidenceKey)}): ${kind.whyNotPlainParquet}${advice ?? kind.refusalAdvice(table, relation)}. Nothing was changed.`;
}

/** `s3://b/t/` → `s3://b/t`, but a bare scheme root (`memory://`) stays as it is. */
function withoutTrailingSlash(location: string): string {
  return location.endsWith('://') ? location : location.replace(/\/+$/, '');
}
