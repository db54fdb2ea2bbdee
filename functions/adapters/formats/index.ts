// The registry of the table formats' adapters — the one place the entry points (the workflow's runtime, the sweep,
// the profiler, vacuum, the CLI) get the I/O the formats need: the `FormatServices` core's registry composes from
// each format's `forTable`, built here from each format's adapter folder. Beside core's registry
// (core/formats/index.ts), which says which formats exist, this one says how their I/O is built.
//
// Adding a format with I/O of its own: a folder `adapters/formats/<name>/` exporting its `FormatAdapter`, and one
// line in REGISTERED. A format without (Hive) has no line.
import type { FormatServices } from '../../core/formats/index.js';
import type { Env } from '../../shared/aws-env.js';
import type { FormatAdapter, FormatServicesContext, TableLocation } from '../../shared/format-services.js';
import { deltaAdapter } from './delta/services.js';
import { hudiAdapter } from './hudi/services.js';
import { icebergAdapter } from './iceberg/catalog-services.js';

/** Every format's adapters, one registration line each. */
const REGISTERED = [
  deltaAdapter, // format: "delta"
  icebergAdapter, // format: "iceberg"
  hudiAdapter, // format: "hudi"
] as const satisfies readonly FormatAdapter[];

/** The own clients (`Options`) of every adapter of a registration list, merged. */
type MergedClients<T extends readonly unknown[]> = T extends readonly [infer Head, ...infer Rest]
  ? (Head extends FormatAdapter<infer Options, object> ? Options : unknown) & MergedClients<Rest>
  : unknown;
/** The services every adapter of a registration list builds, merged. */
type MergedServices<T extends readonly unknown[]> = T extends readonly [infer Head, ...infer Rest]
  ? (Head extends FormatAdapter<object, infer Services> ? Services : unknown) & MergedServices<Rest>
  : unknown;

/** The formats' own clients, as {@link formatClientsFromEnv} builds them (each optional: a test omits some). */
export type FormatClients = Partial<MergedClients<typeof REGISTERED>>;

/** What an entry point hands {@link formatServices}: the shared clients, and the formats' own. */
export type FormatServicesOptions = FormatServicesContext & FormatClients;

/**
 * The formats' own clients for an entry point running with `env` (Iceberg's catalog clients …), each built once:
 * call it once per cold start and spread it into every {@link formatServices} call, so an entry point names no
 * format's clients.
 */
export function formatClientsFromEnv(env: Env): FormatClients {
  const adapters: readonly FormatAdapter[] = REGISTERED;
  return Object.assign({}, ...adapters.map((adapter) => adapter.clientsFromEnv?.(env) ?? {}));
}

/** `T`, which must be `never`: a type that is not fails to compile where it is used, naming itself. */
type None<T extends never> = T;

/**
 * The services some registered format's `forTable` takes that no adapter builds — a format added to core's registry
 * with services of its own but no line here. Always `never`: otherwise this fails to compile, naming the service,
 * rather than the format refusing every table that needs it at run time.
 */
export type UnbuiltFormatService = None<
  Exclude<keyof FormatServices, keyof MergedServices<typeof REGISTERED>>
>;

/**
 * The services for tables at `location`: every format's adapters given the shared clients and its own (each
 * format's settings then pick what a table's config names: a Delta table's DynamoDB log store, an Iceberg
 * table's Glue or REST catalog).
 */
export function formatServices(options: FormatServicesOptions, location: TableLocation): FormatServices {
  const adapters: readonly FormatAdapter[] = REGISTERED;
  const services: MergedServices<typeof REGISTERED> = Object.assign(
    {},
    ...adapters.map((adapter) => adapter.services(options, location)),
  );
  return services;
}
