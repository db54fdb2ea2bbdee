// The HTML renderer: user data (partition values, table names, run ids) is escaped everywhere, the page is
// self-contained, an empty table renders without NaN, and every charted figure is also in the text.
import { describe, expect, it } from 'vitest';
import { buildReportModel, type ReportInput } from '../../functions/core/report/model.js';
import { escapeHtml, renderReportHtml } from '../../functions/core/report/render.js';

const MiB = 1024 * 1024;
const NOW = Date.UTC(2024, 1, 1, 12);

function input(overrides: Partial<ReportInput> = {}): ReportInput {
  return {
    table: 'events',
    location: '/data/events',
    tableRoot: '',
    generatedAt: NOW,
    targetFileSizeBytes: 128 * MiB,
    smallFileRatio: 0.75,
    listing: [],
    plans: [],
    ...overrides,
  };
}

/** One partition compacted by run `r1` from six 100 KiB files into one 500 KiB file, with history. */
function compactedInput(partition: string): ReportInput {
  return input({
    listing: [
      { partition, files: [{ key: `${partition}/part-r1-0001-00000.zstd.parquet`, size: 500 * 1024 }] },
    ],
    plans: [
      {
        runId: 'r1',
        partition,
        listedAt: NOW - 3_600_000,
        inputFiles: 6,
        inputBytes: 600 * 1024,
        groupFiles: Array.from({ length: 6 }, (_, i) => ({
          key: `${partition}/in-${i}.parquet`,
          size: 100 * 1024,
        })),
        skippedKeys: [],
        groups: 1,
      },
    ],
    history: [
      {
        runId: 'r1',
        partition,
        outcome: 'compacted',
        status: 'SUCCEEDED',
        startedAt: NOW - 3_600_000,
        finishedAt: NOW - 3_540_000,
        groupsDone: 1,
        filesBefore: 6,
        filesAfter: 1,
        bytesBefore: 600 * 1024,
        bytesAfter: 500 * 1024,
        bytesRewritten: 600 * 1024,
        estimatedCostUsd: 0.0421,
      },
    ],
  });
}

describe('escapeHtml', () => {
  it('escapes the five characters that can break out of text or a quoted attribute', () => {
    // Prepare
    const text = `<a href="x" onclick='y'>&</a>`;

    // Act
    const escaped = escapeHtml(text);

    // Assess
    expect(escaped).toBe('&lt;a href=&quot;x&quot; onclick=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });
});

describe('renderReportHtml', () => {
  it('escapes partition values, the table name and the location in text and attributes', () => {
    // Prepare
    const evil = `city=<script>alert("x")</script>'`;
    const model = buildReportModel({
      ...compactedInput(evil),
      table: '<b>t</b>',
      location: '/data/"><img src=x>',
    });

    // Act
    const html = renderReportHtml(model);

    // Assess
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<b>t</b>');
    expect(html).not.toContain('<img');
    expect(html).toContain('city=&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;');
    expect(html).toContain(`data-partition="city=&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;"`);
    expect(html).toContain('&lt;b&gt;t&lt;/b&gt;');
  });

  it('is self-contained: no script, stylesheet link, font or network URL', () => {
    // Prepare
    const model = buildReportModel(compactedInput('date=2024-01-01'));

    // Act
    const html = renderReportHtml(model);

    // Assess
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script|<link|@import|@font-face|url\(/i);
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain('<meta charset="utf-8">');
  });

  it('writes the figures as text and data attributes: files, bytes, buckets, cost', () => {
    // Prepare
    const model = buildReportModel(compactedInput('date=2024-01-01'));

    // Act
    const html = renderReportHtml(model);

    // Assess
    expect(html).toContain('data-partition="date=2024-01-01" data-files-now="1" data-files-before="6"');
    expect(html).toContain('<span data-field="files-before">6 files · 600.0 KiB</span>');
    expect(html).toContain('<span data-field="files-now">1 file · 500.0 KiB</span>');
    expect(html).toMatch(/<tr class="before"><th scope="row">before<\/th><td>6<\/td><td>0<\/td>/);
    expect(html).toMatch(/<tr class="now"><th scope="row">now<\/th><td>1<\/td><td>0<\/td>/);
    expect(html).toMatch(/id="card-files" data-value="1">.*?<div class="value">1<\/div>/);
    expect(html).toMatch(/id="card-cost" data-value="0.042100">.*?<div class="value">\$0.04<\/div>/);
    expect(html).toMatch(/id="card-rewritten" data-value="614400">.*?600.0 KiB/);
    expect(html).toContain(
      'data-run-id="r1" data-partition="date=2024-01-01" data-source="history" data-files-before="6" data-files-after="1"',
    );
    expect(html).toContain('6 → 1');
    expect(html).toContain('2024-02-01 11:00 UTC');
  });

  it('renders an empty table with zeros and explicit empty states, and no NaN or Infinity', () => {
    // Prepare
    const model = buildReportModel(input());

    // Act
    const html = renderReportHtml(model);

    // Assess
    expect(html).toContain('id="no-partitions"');
    expect(html).toContain('No data files are listed under /data/events.');
    expect(html).toContain('id="no-runs"');
    expect(html).toMatch(/id="card-partitions" data-value="0"/);
    expect(html).toMatch(/id="card-small" data-value="0.0000">.*?0%/);
    expect(html).not.toMatch(/NaN|Infinity|undefined/);
  });

  it('says a state table is needed where history figures would be, instead of showing zeros', () => {
    // Prepare
    const { history: _history, ...withoutHistory } = compactedInput('date=2024-01-01');
    const model = buildReportModel(withoutHistory);

    // Act
    const html = renderReportHtml(model);

    // Assess
    expect(html).toMatch(/id="card-cost" data-value="">.*?—.*?needs a state table/);
    expect(html).toContain('No state table given');
    expect(html).toContain('data-source="plan" data-files-before="6"');
    expect(html).not.toMatch(/NaN|Infinity|undefined/);
  });

  it('draws only the most fragmented partitions when there are many, and says how many are left out', () => {
    // Prepare
    const listing = Array.from({ length: 5 }, (_, i) => ({
      partition: `p=${i}`,
      files: Array.from({ length: i + 1 }, (_, j) => ({ key: `p=${i}/f${j}.parquet`, size: 10 })),
    }));
    const model = buildReportModel(input({ listing }));

    // Act
    const html = renderReportHtml(model, { maxPartitions: 2 });

    // Assess
    expect(html.match(/<figure class="partition"/g)).toHaveLength(2);
    expect(html).toContain('data-partition="p=4"');
    expect(html).toContain('data-partition="p=3"');
    expect(html).not.toContain('<figure class="partition" data-partition="p=0"');
    expect(html).toContain('3 more partitions with fewer files are not drawn');
  });
});
