// An independent replay of a Hudi table's completed timeline for tests: which base files are live, read straight
// from the completed instant files (v6 JSON, v8 Avro) without the format's own reader, so a test of the format does
// not check it against itself.
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeTimelineAvro } from '../../functions/core/formats/hudi/timeline-writer/index.js';

/** A completed write as the test reads it itself: its file stats and the file groups it replaced. */
interface CompletedWrite {
  readonly name: string;
  readonly stats: readonly { readonly fileId: string; readonly path: string }[];
  readonly replaced: readonly string[];
}

/**
 * The completed writes of the timeline, in completion order, read independently of the format's reader: v6 commit
 * metadata is JSON in `.hoodie/T.<action>`, v8's is Avro in `.hoodie/timeline/T_C.<action>`.
 */
export async function completedWrites(root: string, version: 6 | 8): Promise<CompletedWrite[]> {
  const folder = join(root, version === 6 ? '.hoodie' : '.hoodie/timeline');
  const pattern =
    version === 6 ? /^(\d{17})\.(commit|replacecommit)$/ : /^\d{17}_(\d{17})\.(commit|replacecommit)$/;
  const names = (await readdir(folder))
    .filter((n) => pattern.test(n))
    .sort((a, b) => ((pattern.exec(a)?.[1] ?? '') < (pattern.exec(b)?.[1] ?? '') ? -1 : 1));
  const out: CompletedWrite[] = [];
  for (const name of names) {
    const bytes = await readFile(join(folder, name));
    const meta = (
      version === 6
        ? JSON.parse(bytes.toString('utf8'))
        : decodeTimelineAvro(new Uint8Array(bytes)).records[0]
    ) as {
      partitionToWriteStats: Record<string, { fileId: string; path: string }[]>;
      partitionToReplaceFileIds?: Record<string, string[]> | null;
    };
    out.push({
      name,
      stats: Object.values(meta.partitionToWriteStats).flat(),
      replaced: Object.values(meta.partitionToReplaceFileIds ?? {}).flat(),
    });
  }
  return out;
}

/** The live base files by an independent replay: each file group's latest written file, less replaced groups. */
export async function liveFiles(root: string, version: 6 | 8): Promise<string[]> {
  const latest = new Map<string, string>();
  const replaced = new Set<string>();
  for (const write of await completedWrites(root, version)) {
    for (const s of write.stats) latest.set(s.fileId, s.path);
    for (const id of write.replaced) replaced.add(id);
  }
  return [...latest]
    .filter(([id]) => !replaced.has(id))
    .map(([, path]) => path)
    .sort();
}
