// The `rewrite` command's definition: its options and help, light to load; what it does is in rewrite-run.ts.
import { type Command, Option } from 'commander';
import { TABLE_FORMATS } from '../core/formats/index.js';
import { DEFAULT_TARGET_FILE_SIZE_MIB } from '../core/planning-choices.js';
import { CODECS, DEFAULT_CODEC } from '../ports/parquet-engine.js';
import { formatOption, positiveInteger, positiveNumber, workRootOption } from './args.js';
import { addFormatOptions } from './format-options.js';

import type * as Impl from './rewrite-run.js';
import type { RewriteIo, RewriteOptions } from './rewrite-run.js';

export type { RewriteHooks, RewriteIo, RewriteOptions, RewriteResult } from './rewrite-run.js';

/** Runs `rewrite`, its implementation (and the Parquet engine) loaded only when it runs. */
export const runRewrite: typeof Impl.runRewrite = async (...args) =>
  (await import('./rewrite-run.js')).runRewrite(...args);

/** Adds `rewrite` to the CLI program. */
export function registerRewriteCommand(program: Command, io: RewriteIo): void {
  const command = program
    .command('rewrite')
    .description(
      'Rewrite one partition through a transformation (cast, rename, drop, added columns): plan → rewrite → verify → commit, as compact',
    )
    .argument('<uri>', 'table location: s3://bucket/prefix or a local folder')
    .requiredOption('--partition <path>', 'the partition to rewrite, e.g. date=2024-01-15')
    .requiredOption(
      '--transform <file.json>',
      'the transformation file (JSON: {"steps": [...]}, see docs/operations.md)',
    )
    .option(
      '--confirm-drop <column>',
      'confirm that a drop step of the transformation may drop this column (repeatable; a drop without it is refused)',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .option('--dry-run', 'print the written schema and the first rows as rewritten; nothing is written')
    .option('--preview-rows <n>', 'rows the dry run prints', positiveInteger, 10)
    .addOption(new Option('--codec <codec>', 'output compression').choices(CODECS).default(DEFAULT_CODEC))
    .option(
      '--target-mb <n>',
      `target output size in MiB: the partition's files are packed into outputs of about this size (default: ${DEFAULT_TARGET_FILE_SIZE_MIB})`,
      positiveNumber,
    )
    .option('--table <name>', 'table name in the journal and summaries (default: last segment of the URI)')
    .addOption(workRootOption())
    .addOption(formatOption());
  addFormatOptions(command)
    .addHelpText(
      'after',
      `
Every file of the partition is one group, its files packed in key order into outputs of the target size as
compact packs a group (an output holds whole files). Each output is staged and verified against its own inputs —
row count equal, untouched columns equal row for row, cast and added columns re-derived from the inputs by an
independent reader and interpreter — and the group committed through the journal like compact's, the inputs copied
to trash first. A value a
cast or an expression cannot write exactly fails the rewrite naming file, row, column and value; nothing is published.
A run killed at any moment is settled by the next rewrite, compact or lake-compactor settle: the partition is then
all old or all new. ${rewriteFormatsHelp()}`,
    )
    .action(async (uri: string, opts: RewriteOptions) => {
      await runRewrite(uri, opts, io);
    });
}

/**
 * Which formats rewrite transforms and which it refuses, from each format's `partitionRewrite` capability: a format
 * whose schema belongs to the table is refused with its advice (its ALTER TABLE, then compact).
 */
function rewriteFormatsHelp(): string {
  const formats = [...TABLE_FORMATS.values()];
  const titles = (kind: 'transform' | 'table-schema') =>
    formats.filter((f) => f.partitionRewrite?.kind === kind).map((f) => f.title);
  const others = formats.filter((f) => f.partitionRewrite === undefined).map((f) => f.title);
  return `${titles('transform').join(', ')} only: a ${titles('table-schema').join(' or ')} table's schema belongs to the table (ALTER TABLE), and rewrite says what to run instead${others.length === 0 ? '' : `; ${others.join(', ')} is refused`}.`;
}
