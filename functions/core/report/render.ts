// Renders a ReportModel as one self-contained HTML page (inline CSS and SVG; no script, font or network
// request) in which every text is HTML-escaped and every charted figure is also written out as text.
import { formatBytes } from '../stats.js';
import type { FileStats, PartitionReport, ReportModel, RunRow, TimelineSeries } from './model.js';

export interface RenderOptions {
  /** Partitions drawn as small multiples (the most fragmented first); the rest are named in a note. @default 60 */
  readonly maxPartitions?: number;
  /** Partitions drawn in the fragmentation chart. @default 10 */
  readonly maxSeries?: number;
  /** Rows of the runs table. @default 200 */
  readonly maxRuns?: number;
}

/** Colours of the histogram bars (tests look for them in screenshots). */
export const REPORT_COLORS = { before: '#d97706', now: '#2563eb' } as const;
const BEFORE_COLOR = REPORT_COLORS.before;
const NOW_COLOR = REPORT_COLORS.now;
const PALETTE = [
  '#2563eb',
  '#059669',
  '#7c3aed',
  '#dc2626',
  '#0891b2',
  '#db2777',
  '#65a30d',
  '#d97706',
  '#4b5563',
  '#b45309',
];

/** Escapes text for HTML element content and double- or single-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#39;');
}

const h = escapeHtml;

function count(n: number): string {
  return n.toLocaleString('en-US');
}

function percent(ratio: number): string {
  return `${(ratio * 100).toFixed(0)}%`;
}

function usd(value: number): string {
  return value === 0 ? '$0' : value < 0.01 ? `$${value.toFixed(4)}` : `$${value.toFixed(2)}`;
}

/** `2024-02-01 00:00 UTC`: unambiguous whatever the reader's time zone. */
export function formatTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

function card(id: string, label: string, value: string, sub: string, raw: string): string {
  return `<div class="card" id="${h(id)}" data-value="${h(raw)}"><div class="label">${h(label)}</div><div class="value">${h(value)}</div><div class="sub">${h(sub)}</div></div>`;
}

function summaryCards(model: ReportModel): string {
  const s = model.summary;
  const compared = s.filesBefore !== undefined;
  const cards = [
    card(
      'card-partitions',
      'Partitions',
      count(s.partitions),
      compared ? `${count(s.partitionsWithBefore)} with a compaction run` : 'none compacted yet',
      String(s.partitions),
    ),
    card(
      'card-files',
      'Data files now',
      count(s.filesNow),
      compared
        ? `${count(s.filesBefore ?? 0)} before → ${count(s.filesNowInCompared ?? 0)} now in compacted partitions`
        : 'no "before" to compare with',
      String(s.filesNow),
    ),
    card(
      'card-small',
      'Small-file ratio',
      percent(s.smallRatioNow),
      `${files(s.smallFilesNow)} below ${formatBytes(model.smallFileThresholdBytes)}${compared ? `; ${percent(s.smallRatioBefore ?? 0)} before` : ''}`,
      s.smallRatioNow.toFixed(4),
    ),
    card(
      'card-bytes',
      'Bytes now',
      formatBytes(s.bytesNow),
      compared ? `${formatBytes(s.bytesBefore ?? 0)} before, in compacted partitions` : 'listed data files',
      String(s.bytesNow),
    ),
    card(
      'card-rewritten',
      'Bytes rewritten',
      s.bytesRewritten === undefined ? '—' : formatBytes(s.bytesRewritten),
      s.bytesRewritten === undefined ? 'needs a state table' : `over ${count(s.runs)} recorded runs`,
      s.bytesRewritten === undefined ? '' : String(s.bytesRewritten),
    ),
    card(
      'card-cost',
      'Estimated cost',
      s.estimatedCostUsd === undefined ? '—' : usd(s.estimatedCostUsd),
      s.estimatedCostUsd === undefined ? 'needs a state table' : 'sum of the runs’ estimates (list prices)',
      s.estimatedCostUsd === undefined ? '' : s.estimatedCostUsd.toFixed(6),
    ),
  ];
  // Shown only when something is held: a file the compactor keeps leaving out is worth a look.
  if (s.quarantinedFiles > 0) {
    cards.push(
      card(
        'card-quarantined',
        'Quarantined files',
        count(s.quarantinedFiles),
        'left out of compaction since a rewrite failed on them; see below',
        String(s.quarantinedFiles),
      ),
    );
  }
  return `<section id="summary" class="cards">${cards.join('')}</section>`;
}

function files(n: number): string {
  return `${count(n)} file${n === 1 ? '' : 's'}`;
}

function statsText(stats: FileStats): string {
  const unknown = stats.unknownSizeFiles > 0 ? ` (${count(stats.unknownSizeFiles)} of unknown size)` : '';
  return `${files(stats.files)}${unknown} · ${formatBytes(stats.bytes)}`;
}

/** Grouped bars per size bucket: before (when known) beside now, counts written above the bars. */
function histogramSvg(model: ReportModel, p: PartitionReport): string {
  const width = 320;
  const height = 170;
  const left = 10;
  const right = 10;
  const top = 18;
  const bottom = 36;
  const plotH = height - top - bottom;
  const slot = (width - left - right) / model.buckets.length;
  const max = Math.max(1, ...p.now.histogram, ...(p.before?.histogram ?? []));
  const bar = p.before ? slot * 0.36 : slot * 0.5;
  const parts: string[] = [];
  const drawBar = (x: number, n: number, color: string, series: string, bucket: string) => {
    const barH = n === 0 ? 0 : Math.max(1.5, (n / max) * plotH);
    const y = top + plotH - barH;
    parts.push(
      `<rect x="${x.toFixed(1)}" y="${y.toFixed(1)}" width="${bar.toFixed(1)}" height="${barH.toFixed(1)}" fill="${color}" rx="2"><title>${h(`${series}, ${bucket}: ${files(n)}`)}</title></rect>`,
      `<text x="${(x + bar / 2).toFixed(1)}" y="${(y - 3).toFixed(1)}" class="bar-label">${count(n)}</text>`,
    );
  };
  model.buckets.forEach((bucket, i) => {
    const x0 = left + i * slot;
    const now = p.now.histogram[i] ?? 0;
    if (p.before) {
      const gap = slot * 0.06;
      const start = x0 + (slot - 2 * bar - gap) / 2;
      drawBar(start, p.before.histogram[i] ?? 0, BEFORE_COLOR, 'before', bucket.label);
      drawBar(start + bar + gap, now, NOW_COLOR, 'now', bucket.label);
    } else {
      drawBar(x0 + (slot - bar) / 2, now, NOW_COLOR, 'now', bucket.label);
    }
    parts.push(
      `<text x="${(x0 + slot / 2).toFixed(1)}" y="${height - bottom + 14}" class="axis-label">${h(bucket.shortLabel)}</text>`,
    );
  });
  parts.push(
    `<line x1="${left}" x2="${width - right}" y1="${top + plotH}" y2="${top + plotH}" class="axis"/>`,
    `<text x="${width / 2}" y="${height - 6}" class="axis-title">file size (K = KiB, M = MiB, G = GiB)</text>`,
  );
  return `<svg viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="${h(`File-size histogram of ${p.label}`)}">${parts.join('')}</svg>`;
}

function bucketTable(model: ReportModel, p: PartitionReport): string {
  const head = model.buckets.map((b) => `<th scope="col">${h(b.label)}</th>`).join('');
  const row = (name: string, cls: string, values: readonly number[]) =>
    `<tr class="${cls}"><th scope="row">${h(name)}</th>${values.map((v) => `<td>${count(v)}</td>`).join('')}</tr>`;
  return `<table class="buckets"><thead><tr><th></th>${head}</tr></thead><tbody>${p.before ? row('before', 'before', p.before.histogram) : ''}${row('now', 'now', p.now.histogram)}</tbody></table>`;
}

function partitionFigure(model: ReportModel, p: PartitionReport): string {
  const before = p.before;
  const beforeLine = before
    ? `<div class="figures before-figures"><span class="swatch" style="background:${BEFORE_COLOR}"></span>before: <span data-field="files-before">${statsText(before)}</span> <span class="muted">(${h(formatTime(before.at))}, run ${h(before.runId)})</span></div>`
    : `<div class="figures before-figures muted">before: ${h(p.beforeNote ?? 'unknown')}</div>`;
  const nowLine = `<div class="figures now-figures"><span class="swatch" style="background:${NOW_COLOR}"></span>now: <span data-field="files-now">${statsText(p.now)}</span>, ${count(p.now.smallFiles)} small</div>`;
  return `<figure class="partition" data-partition="${h(p.partition)}" data-files-now="${p.now.files}" data-files-before="${before ? before.files : ''}" data-bytes-now="${p.now.bytes}" data-bytes-before="${before ? before.bytes : ''}"><figcaption><span class="partition-name">${h(p.label)}</span></figcaption>${histogramSvg(model, p)}${beforeLine}${nowLine}${bucketTable(model, p)}</figure>`;
}

function histogramsSection(model: ReportModel, max: number): string {
  const shown = model.partitions.slice(0, max);
  const hidden = model.partitions.length - shown.length;
  const body =
    model.partitions.length === 0
      ? `<p class="empty" id="no-partitions">No data files are listed under ${h(model.location)}.</p>`
      : `<div class="grid">${shown.map((p) => partitionFigure(model, p)).join('')}</div>${
          hidden > 0
            ? `<p class="muted" id="partitions-hidden">${count(hidden)} more partitions with fewer files are not drawn; the totals above include them.</p>`
            : ''
        }`;
  return `<section id="histograms"><h2>File sizes per partition</h2><p class="legend"><span class="swatch" style="background:${BEFORE_COLOR}"></span>before the latest compaction run <span class="swatch" style="background:${NOW_COLOR}"></span>now (this listing) · most files first</p>${body}</section>`;
}

/** Round tick values covering [0, max]. */
function niceTicks(max: number, count = 5): number[] {
  if (max <= 0) return [0, 1];
  const raw = max / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = ([1, 2, 5, 10].find((m) => m * mag >= raw) ?? 10) * mag;
  const ticks: number[] = [];
  for (let v = 0; v <= max + step / 2; v += step) ticks.push(Math.round(v));
  return ticks;
}

function timelineSvg(series: readonly TimelineSeries[]): string {
  const width = 960;
  const height = 300;
  const left = 64;
  const right = 24;
  const top = 16;
  const bottom = 40;
  const all = series.flatMap((s) => s.points);
  let t0 = Math.min(...all.map((p) => p.at));
  let t1 = Math.max(...all.map((p) => p.at));
  if (t0 === t1) {
    t0 -= 3_600_000;
    t1 += 3_600_000;
  }
  const ticks = niceTicks(Math.max(1, ...all.map((p) => p.files)));
  const yMax = ticks[ticks.length - 1] ?? 1;
  const x = (t: number) => left + ((t - t0) / (t1 - t0)) * (width - left - right);
  const y = (n: number) => top + (1 - n / yMax) * (height - top - bottom);
  const parts: string[] = [];
  for (const v of ticks) {
    parts.push(
      `<line x1="${left}" x2="${width - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" class="grid-line"/>`,
      `<text x="${left - 8}" y="${(y(v) + 4).toFixed(1)}" class="y-label">${count(v)}</text>`,
    );
  }
  for (let i = 0; i <= 4; i += 1) {
    const t = t0 + ((t1 - t0) * i) / 4;
    parts.push(
      `<text x="${x(t).toFixed(1)}" y="${height - bottom + 18}" class="x-label">${h(formatTime(t).replace(' UTC', ''))}</text>`,
    );
  }
  parts.push(
    `<text x="14" y="${top + (height - top - bottom) / 2}" class="axis-title" transform="rotate(-90 14 ${top + (height - top - bottom) / 2})">data files</text>`,
  );
  series.forEach((s, i) => {
    const color = PALETTE[i % PALETTE.length] ?? NOW_COLOR;
    // Solid: a run's own drop (its start and end are both measured). Dotted: only the two ends are known.
    s.points.forEach((p, j) => {
      const next = s.points[j + 1];
      if (next === undefined) return;
      const run = p.kind === 'before' && next.kind === 'after' && p.runId === next.runId;
      parts.push(
        `<line x1="${x(p.at).toFixed(1)}" y1="${y(p.files).toFixed(1)}" x2="${x(next.at).toFixed(1)}" y2="${y(next.files).toFixed(1)}" stroke="${color}" stroke-width="2"${run ? '' : ' stroke-dasharray="3 4"'}/>`,
      );
    });
    for (const p of s.points) {
      const tip = h(
        `${s.label}: ${files(p.files)} ${p.kind === 'now' ? 'now' : `${p.kind} run ${p.runId ?? ''}`} (${formatTime(p.at)})`,
      );
      parts.push(
        `<circle cx="${x(p.at).toFixed(1)}" cy="${y(p.files).toFixed(1)}" r="${p.kind === 'now' ? 5 : 4}" fill="${p.kind === 'after' ? '#fff' : color}" stroke="${color}" stroke-width="2"><title>${tip}</title></circle>`,
      );
    }
  });
  return `<svg viewBox="0 0 ${width} ${height}" width="100%" height="${height}" preserveAspectRatio="xMidYMid meet" role="img" aria-label="Data files per partition over time">${parts.join('')}</svg>`;
}

function timelineSection(model: ReportModel, maxSeries: number): string {
  const series = [...model.timeline]
    .sort((a, b) => b.points.length - a.points.length || (a.partition < b.partition ? -1 : 1))
    .slice(0, maxSeries);
  const runsKnown = model.timeline.some((s) => s.points.some((p) => p.kind !== 'now'));
  if (series.length === 0)
    return `<section id="fragmentation"><h2>Fragmentation over time</h2><p class="empty">No partitions to chart.</p></section>`;
  const legend = series
    .map(
      (s, i) =>
        `<li><span class="swatch" style="background:${PALETTE[i % PALETTE.length]}"></span>${h(s.label)}</li>`,
    )
    .join('');
  const rows = series
    .flatMap((s) =>
      s.points.map(
        (p) =>
          `<tr data-partition="${h(s.partition)}" data-kind="${p.kind}" data-files="${p.files}"><td>${h(formatTime(p.at))}</td><td>${h(s.label)}</td><td>${h(p.kind === 'now' ? 'now (listing)' : p.kind === 'before' ? 'before run' : 'after run')}</td><td class="num">${count(p.files)}</td><td class="mono">${h(p.runId ?? '')}</td></tr>`,
      ),
    )
    .join('');
  const hidden = model.timeline.length - series.length;
  return `<section id="fragmentation"><h2>Fragmentation over time</h2><p class="legend">Data files per partition: filled dots are counts when a run started (or planned), hollow dots when it ended, the last dot is now. Solid lines are a run’s own drop; dotted lines join counts whose in-between is not recorded (writers adding files, or a run without history).${runsKnown ? '' : ' <strong>No runs are recorded yet</strong>: only today’s counts are shown.'}</p>${timelineSvg(series)}<ul class="series-legend">${legend}</ul>${hidden > 0 ? `<p class="muted">${count(hidden)} more partitions are not drawn.</p>` : ''}<details><summary>Data points</summary><table class="points"><thead><tr><th>time</th><th>partition</th><th>point</th><th>files</th><th>run</th></tr></thead><tbody>${rows}</tbody></table></details></section>`;
}

function arrow(before: number | undefined, after: number | undefined, f: (n: number) => string): string {
  if (before === undefined && after === undefined) return '—';
  return `${before === undefined ? '?' : f(before)} → ${after === undefined ? '?' : f(after)}`;
}

function runRow(r: RunRow): string {
  return `<tr data-run-id="${h(r.runId)}" data-partition="${h(r.partition)}" data-source="${r.source}"${r.filesBefore === undefined ? '' : ` data-files-before="${r.filesBefore}"`}${r.filesAfter === undefined ? '' : ` data-files-after="${r.filesAfter}"`}><td>${h(formatTime(r.startedAt))}</td><td>${h(r.label)}</td><td>${h(r.outcome)}${r.status && r.status !== 'SUCCEEDED' ? ` <strong class="bad">${h(r.status)}</strong>` : ''}</td><td class="num">${arrow(r.filesBefore, r.filesAfter, count)}</td><td class="num">${arrow(r.bytesBefore, r.bytesAfter, formatBytes)}</td><td class="num">${r.bytesRewritten === undefined ? '—' : formatBytes(r.bytesRewritten)}</td><td class="num">${r.estimatedCostUsd === undefined ? '—' : usd(r.estimatedCostUsd)}</td><td class="num">${r.finishedAt === undefined ? '—' : `${((r.finishedAt - r.startedAt) / 1000).toFixed(1)} s`}</td><td class="mono">${h(r.runId)}</td><td>${r.source}</td></tr>`;
}

function runsSection(model: ReportModel, maxRuns: number): string {
  if (model.runs.length === 0)
    return `<section id="runs"><h2>Runs</h2><p class="empty" id="no-runs">No compaction run is recorded for this table${model.hasHistory ? '' : ' (no state table given, and no stored plan found)'}.</p></section>`;
  const shown = model.runs.slice(0, maxRuns);
  return `<section id="runs"><h2>Runs</h2><p class="legend">Newest first. Rows from <em>history</em> are the state table’s run summaries; rows from the <em>journal</em> are runs the CLI made, as its journal in the location records them (files and bytes are the run’s inputs → outputs); rows from a <em>plan</em> are stored plans (files and bytes when planned; “bytes rewritten” is what the plan grouped).</p><table id="runs-table"><thead><tr><th>started</th><th>partition</th><th>outcome</th><th>files</th><th>bytes</th><th>bytes rewritten</th><th>est. cost</th><th>took</th><th>run</th><th>source</th></tr></thead><tbody>${shown.map(runRow).join('')}</tbody></table>${model.runs.length > shown.length ? `<p class="muted">${count(model.runs.length - shown.length)} older runs are not shown.</p>` : ''}</section>`;
}

/** The quarantined files (every record, held or about to be released), or why none are shown. */
function quarantineSection(model: ReportModel): string {
  const q = model.quarantine;
  if (q === undefined) return '';
  const head = `<section id="quarantine"><h2>Quarantined files</h2>`;
  if (q.files.length === 0)
    return `${head}<p class="empty" id="no-quarantine">No file is quarantined (${h(q.source)}).</p></section>`;
  const rows = q.files
    .map(
      (f) =>
        `<tr data-partition="${h(f.partition)}" data-key="${h(f.key)}" data-held="${f.held}"><td>${h(f.label)}</td><td class="mono">${h(f.key)}</td><td>${h(formatTime(f.since))}</td><td class="mono">${h(f.runId)}</td><td>${h(f.errorName)}</td><td>${h(f.reason)}</td><td>${f.held ? 'left out of every run' : 'replaced or removed since: released on the next run'}</td></tr>`,
    )
    .join('');
  return `${head}<p class="legend">Files a rewrite failed on (read from ${h(q.source)}). Runs leave a quarantined file out and compact the rest of its partition, until the file is replaced or removed, or an operator releases it with <code>lake-compactor quarantine &lt;uri&gt; --clear &lt;key&gt;</code>.</p><table id="quarantine-table"><thead><tr><th>partition</th><th>key</th><th>since</th><th>run</th><th>error</th><th>reason</th><th>state</th></tr></thead><tbody>${rows}</tbody></table></section>`;
}

function notesSection(model: ReportModel): string {
  const sources = [
    'Now: the data files listed under the table’s location when this report was made.',
    'Before: the files the partition’s latest carried-out compaction run found — its plan’s grouped inputs (sizes from the plan) and the files it left alone (sizes from today’s listing).',
    `Small file: below ${formatBytes(model.smallFileThresholdBytes)} (the planner’s threshold).`,
  ];
  const items = [...sources, ...model.notes].map((n) => `<li>${h(n)}</li>`).join('');
  return `<section id="notes"><h2>Sources and caveats</h2><ul>${items}</ul></section>`;
}

const STYLE = `
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;padding:24px 32px 48px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;color:#111827;background:#f3f4f6}
h1{font-size:24px;margin:0 0 4px}
h2{font-size:18px;margin:32px 0 8px}
.meta,.muted,.legend{color:#4b5563}
.legend{margin:0 0 12px}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(180px,1fr));gap:12px;margin-top:20px}
.card{background:#fff;border-radius:10px;padding:14px 16px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.card .label{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:#6b7280}
.card .value{font-size:28px;font-weight:650;margin:2px 0}
.card .sub{font-size:12px;color:#4b5563}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:12px}
figure.partition{margin:0;background:#fff;border-radius:10px;padding:12px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.partition-name{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.figures{font-size:12px;margin-top:2px}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin:0 5px 0 10px;vertical-align:baseline}
.figures .swatch{margin-left:0}
svg text{font-family:inherit}
.bar-label{font-size:10px;text-anchor:middle;fill:#111827}
.axis-label,.x-label{font-size:10px;text-anchor:middle;fill:#4b5563}
.y-label{font-size:10px;text-anchor:end;fill:#4b5563}
.axis-title{font-size:10px;text-anchor:middle;fill:#6b7280}
.axis{stroke:#9ca3af}
.grid-line{stroke:#e5e7eb}
table{border-collapse:collapse}
table.buckets{font-size:11px;margin-top:6px;width:100%}
table.buckets th,table.buckets td{padding:1px 4px;text-align:right;border-bottom:1px solid #f3f4f6;font-weight:400}
table.buckets thead th{color:#6b7280}
table.buckets tbody th{text-align:left;color:#4b5563}
#fragmentation svg{background:#fff;border-radius:10px;box-shadow:0 1px 2px rgba(0,0,0,.08)}
.series-legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:4px 8px;font-size:12px}
#runs-table,#quarantine-table,table.points{background:#fff;width:100%;font-size:12px;border-radius:10px;overflow:hidden;box-shadow:0 1px 2px rgba(0,0,0,.08)}
#runs-table th,#runs-table td,#quarantine-table th,#quarantine-table td,table.points th,table.points td{padding:6px 8px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
#runs-table thead th,#quarantine-table thead th{background:#f9fafb;color:#374151}
.num{text-align:right!important;white-space:nowrap}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:11px;word-break:break-all}
.bad{color:#b91c1c}
.empty{background:#fff;border-radius:10px;padding:16px}
details{margin-top:8px}
#notes ul{color:#374151;padding-left:20px}
`;

/** The whole page. Pure: the same model gives the same bytes. */
export function renderReportHtml(model: ReportModel, options: RenderOptions = {}): string {
  const title = `Compaction report: ${model.table}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="generator" content="lake-compactor report"><title>${h(title)}</title><style>${STYLE}</style></head>
<body data-generated-at="${model.generatedAt}">
<header><h1>Compaction report: <span id="table-name">${h(model.table)}</span></h1><p class="meta"><span id="location">${h(model.location)}</span> · listed ${h(formatTime(model.generatedAt))} · small file = below ${h(formatBytes(model.smallFileThresholdBytes))}</p></header>
${summaryCards(model)}
${histogramsSection(model, options.maxPartitions ?? 60)}
${timelineSection(model, options.maxSeries ?? 10)}
${runsSection(model, options.maxRuns ?? 200)}
${quarantineSection(model)}
${notesSection(model)}
</body></html>
`;
}
