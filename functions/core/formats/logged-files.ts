// The object behind a data file a table's log names (a log's `add`, a manifest entry), as the plan records it:
// its real ETag and size from storage, its footer's rows and schema — or why it is left alone.
//
// Why the ETag: the log identifies a file by path and size, but a rewrite that fails has to tell "this object is
// bad" from "a writer replaced it since planning", and only the object's identity at planning can answer that.

import type { SchemaElement } from 'hyparquet';
import type { ObjectStore } from '../../ports/object-store.js';
import { CorruptInputError, ObjectNotFoundError } from '../errors.js';
import {
  type ParquetFooter,
  parseFooterWithMetadata,
  readFooter,
  readFooterBytes,
} from '../parquet/footer.js';
import type { PlanInputFile } from '../planning.js';

/** What a plan records of a file's footer: rows, schema, and the bytes of the entries its rewrite recomputes. */
function footerFacts(footer: ParquetFooter): Partial<PlanInputFile> {
  return {
    rows: footer.rows,
    schemaFingerprint: footer.schemaFingerprint,
    ...(footer.ownedEntryBytes !== undefined && { recomputedFooterBytes: footer.ownedEntryBytes }),
  };
}

/**
 * `file` (as the log names it: key, the log's size) with the object's ETag, version id and storage class from a
 * HEAD, and its footer's rows and schema fingerprint. The plan then records what the object was, so the compact
 * step compares by ETag like any other input, and a stitched copy is conditioned on it. Left alone with why
 * (`unreadable`): a file missing from storage, an object whose size is not the log's (replaced or damaged: the
 * footer would be read at the wrong offset), a footer that cannot be read. Other errors (throttling, network) fail
 * the snapshot rather than hide files. `owner` names what lists the file, for the reasons: "the table's log".
 */
export async function withStoredFooter(
  store: ObjectStore,
  file: PlanInputFile,
  owner: string,
  check: string,
  /** Footer entries the format's rewrite recomputes per output (see `parseFooterWithMetadata`). */
  ownedKeys?: readonly string[],
  /**
   * What the format learns from the footer's schema elements beyond rows and fingerprint (its projection onto the
   * table's schema), from the same reads.
   */
  inspect?: (schema: readonly SchemaElement[]) => Partial<PlanInputFile>,
): Promise<PlanInputFile> {
  const { rows: _rows, schemaFingerprint: _fingerprint, ...base } = file;
  const missing = {
    ...base,
    unreadable: `live in ${owner} but missing from storage (the table is damaged; check it with ${check})`,
  };
  const head = await store.head(file.key);
  if (head === undefined) return missing;
  const stored: PlanInputFile = {
    ...base,
    etag: head.etag,
    ...(head.versionId === undefined ? {} : { versionId: head.versionId }),
    ...(head.storageClass === undefined ? {} : { storageClass: head.storageClass }),
  };
  if (head.size !== file.size) {
    return {
      ...stored,
      unreadable: `${owner} records ${file.size} bytes but the object holds ${head.size}: it was replaced or damaged after it was committed, so it is left alone (check the table with ${check})`,
    };
  }
  try {
    if (inspect !== undefined) {
      const { size, tail } = await readFooterBytes(store, file.key, file.size);
      const { footer, metadata } = parseFooterWithMetadata(file.key, size, tail, ownedKeys);
      return { ...stored, ...footerFacts(footer), ...inspect(metadata.schema) };
    }
    return { ...stored, ...footerFacts(await readFooter(store, file.key, file.size, ownedKeys)) };
  } catch (err) {
    if (err instanceof CorruptInputError) return { ...stored, unreadable: err.reason };
    if (err instanceof ObjectNotFoundError) return missing;
    throw err;
  }
}
