// Renders a demo result as the text report `npm run demo` prints: before/after layout, every run with its
// verification, the read benchmark, visibility window, cost, vacuum dry-run and the checks. Pure formatting.
import { formatBytes } from '../core/stats.js';
import type { DemoResult, LayoutStats } from './demo-run.js';

function pct(ratio: number): string {
  return `${(ratio * 100).toFixed(0)}%`;
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function usd(value: number): string {
  return `$${value.toFixed(6)}`;
}

/** Left-aligned first column, right-aligned others. */
function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    for (const [i, cell] of row.entries()) widths[i] = Math.max(widths[i] ?? 0, cell.length);
  }
  return rows.map((row) =>
    row
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i] ?? 0) : cell.padStart(widths[i] ?? 0)))
      .join('   ')
      .trimEnd(),
  );
}

function layoutRows(before: LayoutStats, after: LayoutStats): string[][] {
  const ratio = (b: number, a: number) => (a === 0 ? '' : `${(b / a).toFixed(1)}x fewer`);
  return [
    ['', 'before', 'after', ''],
    ['partitions', String(before.partitions), String(after.partitions), ''],
    ['files', String(before.files), String(after.files), ratio(before.files, after.files)],
    [
      'avg file size',
      formatBytes(Math.round(before.avgFileBytes)),
      formatBytes(Math.round(after.avgFileBytes)),
      '',
    ],
    ['small-file ratio', pct(before.smallFileRatio), pct(after.smallFileRatio), ''],
    [
      'compression ratio',
      `${before.compressionRatio.toFixed(2)}x`,
      `${after.compressionRatio.toFixed(2)}x`,
      '',
    ],
    [
      'bytes',
      formatBytes(before.bytes),
      formatBytes(after.bytes),
      pct(after.bytes / Math.max(1, before.bytes)),
    ],
  ];
}

/** The human-readable report. */
export function formatDemoReport(result: DemoResult): string {
  const out: string[] = [];
  const { days, batches } = result.options;
  out.push('', `== Table events: ${days} days × ${batches} micro-batches ==`, '');
  out.push(...table(layoutRows(result.before, result.after)));
  out.push(
    '',
    'Small = below 0.75 × the 128 MiB target; a demo day holds well under 1 MiB, so its one compacted',
    'file is still "small" by size — the point is 1 file instead of many. Compression: uncompressed ÷',
    'compressed column bytes from the Parquet footers (snappy micro-batches → ZSTD, large row groups).',
  );

  out.push('', `== Runs (${result.runs.length}; ${result.historyItems} history items in the state table) ==`);
  out.push(
    ...table([
      ['partition', 'status', 'files', 'rows', 'verified', 'window', 'cost', 'took'],
      ...result.runs.map((r) => [
        r.partition,
        r.outcome ?? r.status,
        `${r.filesBefore}→${r.filesAfter}`,
        String(r.rows),
        `${r.groupsVerified}/${r.groups} groups, ${r.rowsVerified} rows`,
        `${r.visibilityWindowMs} ms`,
        usd(r.estimatedCostUsd),
        seconds(r.durationMs),
      ]),
    ]),
  );
  for (const r of result.runs.filter((run) => run.error !== undefined))
    out.push(`  ${r.execution}: ${r.error}`);

  out.push('', '== Read benchmark (DuckDB over local copies of the bucket, best of 3; not asserted) ==');
  out.push(
    ...table([
      ['query', 'before', 'after', 'speed-up'],
      ...result.benchmark.map((q) => [
        q.name,
        `${q.beforeMs.toFixed(1)} ms`,
        `${q.afterMs.toFixed(1)} ms`,
        `${q.speedup.toFixed(1)}x`,
      ]),
    ]),
  );

  out.push(
    '',
    `Reader-visibility window: at most ${result.visibilityWindowMs.max} ms per run (${result.visibilityWindowMs.total} ms over all runs) in which a listing reader could see a group's inputs and outputs together.`,
    `Estimated cost: ${usd(result.estimatedCostUsd)} for ${result.runs.length} runs (Lambda, S3 requests, Step Functions transitions; the runs' own estimates).`,
  );

  out.push('', '== Vacuum dry-run (the vacuum core the daily schedule runs, now and 168 h later) ==');
  const vacuum = result.vacuum;
  if (vacuum === undefined) out.push('not run');
  else if ('error' in vacuum) out.push(`failed: ${vacuum.error}`);
  else {
    const kinds = (byKind: Readonly<Record<string, number | undefined>>) =>
      Object.entries(byKind)
        .map(([k, n]) => `${n} ${k}`)
        .join(', ') || 'nothing';
    out.push(
      `now: ${vacuum.now.candidates} objects would go (${kinds(vacuum.now.byKind)}), ${vacuum.now.kept} kept${vacuum.now.keptReason === undefined ? '' : ` — e.g. ${vacuum.now.keptReason}`}`,
      `after the ${vacuum.afterRetention.retentionHours} h retention: ${vacuum.afterRetention.candidates} objects, ${formatBytes(vacuum.afterRetention.bytes)} would go (${kinds(vacuum.afterRetention.byKind)})`,
    );
  }

  out.push('', '== Checks ==');
  for (const check of result.checks) out.push(`${check.ok ? '✔' : '✘'} ${check.name}: ${check.detail}`);
  const t = result.timingsMs;
  out.push(
    '',
    `Time: ${seconds(t.total)} (local cloud start ${seconds(t.startup)}, streaming ${seconds(t.stream)}, last runs ${seconds(t.settle)}, read-back and checks ${seconds(t.checks)})`,
  );
  if (result.dataDir !== undefined)
    out.push(
      `Kept: ${result.dataDir}/before and ${result.dataDir}/after (copies of the lake before and after).`,
    );
  out.push(result.ok ? 'All checks held.' : 'FAILED: see the ✘ checks above.');
  return `${out.join('\n')}\n`;
}
