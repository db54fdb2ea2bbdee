// The Parquet engine port: the vocabulary every layer shares with the engine (codecs and other engine
// enums, each defined once as a tuple, its type and its zod schema), so config, CLI and engine never disagree.
import { z } from 'zod';

/**
 * Output codecs the engine writes. One tuple: the table config, the run input, the construct's props and
 * the CLI's `--codec` all derive from it, so a codec added here is accepted everywhere at once (and one
 * the engine cannot write is refused everywhere at once).
 */
export const CODECS = ['zstd', 'snappy'] as const;
export type Codec = (typeof CODECS)[number];
export const codecSchema = z.enum(CODECS);
/** ZSTD: on compacted files it is both smaller and faster to scan than snappy (parquet-rs level 1). */
export const DEFAULT_CODEC: Codec = 'zstd';

/** What the engine does with Spark's legacy INT96 timestamps: refuse the input, or write INT64 micros. */
export const INT96_MODES = ['refuse', 'convert'] as const;
export type Int96Mode = (typeof INT96_MODES)[number];
