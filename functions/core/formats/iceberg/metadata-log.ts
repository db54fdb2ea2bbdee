// The metadata log every new metadata file carries: the file it replaces appended, trimmed to what the table keeps.
// One definition for every writer of a metadata file (a commit, expire_snapshots, an undo's rollback), so they trim
// the history alike.
import type { LoadedTable } from './catalog.js';

/** Default of `write.metadata.previous-versions-max`: how many earlier metadata files the metadata log keeps. */
const PREVIOUS_VERSIONS_MAX = 100;

/**
 * Sets `raw['metadata-log']` (the next metadata file's JSON, parsed keeping longs) to `base`'s log with `base` itself
 * appended, keeping the newest `write.metadata.previous-versions-max` entries (100 when unset or not a positive
 * integer), as Iceberg's TableMetadata builder does.
 */
export function appendMetadataLog(raw: Record<string, unknown>, base: LoadedTable): void {
  const keepRaw = Number(
    base.metadata.properties['write.metadata.previous-versions-max'] ?? PREVIOUS_VERSIONS_MAX,
  );
  const keep = Number.isInteger(keepRaw) && keepRaw > 0 ? keepRaw : PREVIOUS_VERSIONS_MAX;
  const log = [
    ...((raw['metadata-log'] as unknown[] | undefined) ?? []),
    { 'timestamp-ms': base.metadata.lastUpdatedMs, 'metadata-file': base.paths.path(base.metadataKey) },
  ];
  raw['metadata-log'] = log.slice(Math.max(0, log.length - keep));
}
