// `report --html` on a sample lake after `compact`, rendered by headless Chromium: the DOM shows the
// before/after file counts and partitions, charts are laid out, and with a state table (DynamoDB Local) cost.
// Without Chromium the browser tests skip with a one-line notice, except in CI (CI=true), where they fail.
import { copyFile, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DynamoPartitionLease } from '../../functions/adapters/dynamodb-partition-lease.js';
import { runCompact } from '../../functions/cli/compact.js';
import { type CliIo, run } from '../../functions/cli/index.js';
import { REPORT_COLORS } from '../../functions/core/report/render.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { policiesOf } from '../../functions/handlers/profiler.js';
import { ManualClock } from '../../functions/ports/clock.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { createTablesFromTemplate, type DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import {
  browserTestsEnabled,
  countColor,
  decodePng,
  dumpDom,
  requireChromium,
  screenshot,
} from '../support/chromium.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

const START = Date.UTC(2024, 1, 1);

/** Whether Chromium renders here (or CI requires it to); decided once, with its notice printed once. */
const browser = browserTestsEnabled();
/** A test that needs the browser: skipped, after the notice, where {@link browser} says no. */
const itInBrowser = it.skipIf(!browser);

let root: string;
let reportPath: string;
let reportStdout: string;

function io(clock: ManualClock): CliIo & { stdout: string[]; stderr: string[] } {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return { stdout, stderr, out: (t) => stdout.push(t), err: (t) => stderr.push(t), clock, env: {} };
}

/** HTML entities Chromium's serializer uses in text nodes. */
function unescapeText(text: string): string {
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&nbsp;/g, ' ')
    .replace(/&amp;/g, '&');
}

/**
 * Appended to a copy of the report (the report itself has no script): measures what Chromium laid out
 * and writes it into the DOM, so `--dump-dom` carries it out.
 */
const PROBE = `<script>
const box = (el) => { const r = el.getBoundingClientRect(); return { width: r.width, height: r.height }; };
const probe = {
  figures: [...document.querySelectorAll('figure.partition')].map((f) => ({
    partition: f.dataset.partition,
    filesNow: f.dataset.filesNow,
    filesBefore: f.dataset.filesBefore,
    svg: box(f.querySelector('svg')),
    visibleBars: [...f.querySelectorAll('svg rect')].filter((r) => r.getBoundingClientRect().height > 0).length,
    text: f.innerText,
  })),
  summary: document.getElementById('summary').innerText,
  timeline: box(document.querySelector('#fragmentation svg')),
  runs: document.getElementById('runs-table').innerText,
};
const pre = document.createElement('pre');
pre.id = 'probe';
pre.textContent = JSON.stringify(probe);
document.body.appendChild(pre);
</script>`;

let probed: Promise<string> | undefined;

/** The DOM Chromium builds from a copy of the report with {@link PROBE} appended; launched once. */
function probedDom(): Promise<string> {
  probed ??= (async () => {
    const copy = join(root, 'probed.html');
    const html = await readFile(reportPath, 'utf8');
    await writeFile(copy, html.replace('</body>', `${PROBE}</body>`));
    return dumpDom(pathToFileURL(copy).href);
  })();
  return probed;
}

beforeAll(async () => {
  // When the browser tests run, fail early with the install hint if it is missing (CI without Chromium).
  if (browser) requireChromium();
  root = await mkdtemp(join(tmpdir(), 'lc-report-html-'));
  await writeSampleLake(localFolderSink(root), { days: 3, batches: 6, seed: 11, startDate: '2024-01-01' });
  const table = join(root, 'events');
  const clock = new ManualClock(START);
  const compact = io(clock);
  const compacted = await run(['compact', table, '--partition', 'date=2024-01-02'], compact);
  if (compacted !== 0) throw new Error(`compact failed: ${compact.stderr.join('\n')}`);
  clock.advance(3_600_000);
  reportPath = join(root, 'report.html');
  const report = io(clock);
  const code = await run(['report', table, '--html', reportPath], report);
  if (code !== 0) throw new Error(`report failed: ${report.stderr.join('\n')}`);
  reportStdout = report.stdout.join('\n');
});

afterAll(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

describe('lake-compactor report --html in headless Chromium', () => {
  it('prints where it wrote the page and the before/after counts', () => {
    // Prepare: the sample lake has 6 files per day; compact turned date=2024-01-02's six into one.
    const expected = '3 partitions, 13 data files now (6 before → 1 now in 1 compacted partition), 1 run';

    // Act
    const line = reportStdout.split('\n')[0];

    // Assess
    expect(line).toBe(`wrote ${reportPath}: ${expected}`);
  });

  itInBrowser('shows the partitions and their before/after file counts in the rendered DOM', async () => {
    // Prepare: the report as written, plus the probe script (one browser launch serves both tests).
    const rendering = probedDom();

    // Act
    const dom = await rendering;

    // Assess
    expect(dom).toContain('<span id="table-name">events</span>');
    for (const day of ['2024-01-01', '2024-01-03'])
      expect(dom).toContain(`data-partition="date=${day}" data-files-now="6" data-files-before=""`);
    expect(dom).toContain('data-partition="date=2024-01-02" data-files-now="1" data-files-before="6"');
    expect(dom).toMatch(/<span data-field="files-before">6 files · [\d.]+ KiB<\/span>/);
    expect(dom).toMatch(/<span data-field="files-now">1 file · [\d.]+ KiB<\/span>/);
    expect(dom).toMatch(/id="card-files" data-value="13">/);
    expect(dom).toMatch(
      /<tr data-run-id="cli-[^"]+" data-partition="date=2024-01-02" data-source="journal" data-files-before="6" data-files-after="1">/,
    );
    expect(dom).toContain('No state table given');
  });

  itInBrowser('lays the charts out with a size and renders the figures as visible text', async () => {
    // Prepare
    const rendering = probedDom();

    // Act
    const dom = await rendering;

    // Assess
    const json = /<pre id="probe">([\s\S]*?)<\/pre>/.exec(dom)?.[1];
    expect(json, 'the probe script ran and wrote its measurements').toBeDefined();
    const probe = JSON.parse(unescapeText(json ?? '{}')) as {
      figures: {
        partition: string;
        filesNow: string;
        filesBefore: string;
        svg: { width: number; height: number };
        visibleBars: number;
        text: string;
      }[];
      summary: string;
      timeline: { width: number; height: number };
      runs: string;
    };
    expect(probe.figures.map((f) => f.partition).sort()).toEqual([
      'date=2024-01-01',
      'date=2024-01-02',
      'date=2024-01-03',
    ]);
    const compacted = probe.figures.find((f) => f.partition === 'date=2024-01-02');
    expect(compacted?.svg.width).toBeGreaterThan(200);
    expect(compacted?.svg.height).toBeGreaterThan(80);
    expect(compacted?.visibleBars).toBe(2);
    expect(compacted?.text).toMatch(/before: 6 files/);
    expect(compacted?.text).toMatch(/now: 1 file ·/);
    expect(probe.summary).toMatch(/data files now\s+13\s/i);
    expect(probe.summary).toMatch(/6 before → 1 now/);
    expect(probe.timeline.width).toBeGreaterThan(600);
    expect(probe.runs).toMatch(/date=2024-01-02\s+committed\s+6 → 1/);
  });
});

describe.skipIf(!browser)('lake-compactor report --html with a state table', () => {
  const HOUR = 3_600_000;
  let dynamo: DynamoDbLocalEndpoint | undefined;
  let dir: string;
  let page: string;
  let rewritten = 0;
  let cost = 0;

  /**
   * Two runs on a sample lake (date=2024-01-02, then date=2024-01-03 an hour later), each recorded in the
   * state table exactly as finalize records it (its RunSummary plus start and end), then the report.
   */
  beforeAll(async () => {
    requireChromium();
    const starting = startTestDynamoDb();
    dir = await mkdtemp(join(tmpdir(), 'lc-report-history-'));
    await writeSampleLake(localFolderSink(dir), { days: 3, batches: 6, seed: 7, startDate: '2024-01-01' });
    const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
    const stack = new LakeCompactorStack(app, 'ReportTest', {
      compactor: {
        tables: [{ name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] }],
      },
    });
    const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate);
    dynamo = await starting;
    const client = dynamo.client();
    const tableName = [...(await createTablesFromTemplate(client, model)).values()][0] as string;
    const tables = parseTableConfigs([
      { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
    ]);
    const leases = new DynamoPartitionLease({ client, tableName, tables, policies: policiesOf(tables) });
    const clock = new ManualClock(START);
    const env = {
      AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'local',
      AWS_SECRET_ACCESS_KEY: 'local',
    };
    for (const partition of ['date=2024-01-02', 'date=2024-01-03']) {
      const startedAt = clock.now();
      const [result] = await runCompact(join(dir, 'events'), { partition }, { ...io(clock), env });
      if (result === undefined) throw new Error(`compact did nothing for ${partition}`);
      const ref = { table: 'events', partition };
      await leases.acquire(ref, { runId: result.summary.runId, now: startedAt });
      await leases.putHistory({
        ...result.summary,
        table: 'events',
        startedAt,
        finishedAt: startedAt + result.summary.durationMs,
      });
      await leases.release(ref, result.summary.runId, { lastCompactedAt: startedAt });
      rewritten += result.summary.bytesRewritten;
      cost += result.summary.estimatedCost?.usd ?? 0;
      clock.advance(HOUR);
    }
    page = join(dir, 'report.html');
    const report = { ...io(clock), env };
    const code = await run(
      ['report', join(dir, 'events'), '--html', page, '--state-table', tableName],
      report,
    );
    if (code !== 0) throw new Error(`report failed: ${report.stderr.join('\n')}`);
  }, 240_000);

  afterAll(async () => {
    await dynamo?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  it('shows bytes rewritten, estimated cost and each run’s before → after from the history', async () => {
    // Prepare
    const url = pathToFileURL(page).href;

    // Act
    const dom = await dumpDom(url);

    // Assess
    expect(rewritten).toBeGreaterThan(0);
    expect(cost).toBeGreaterThan(0);
    expect(dom).toContain(`id="card-rewritten" data-value="${rewritten}"`);
    expect(dom).toContain(`id="card-cost" data-value="${cost.toFixed(6)}"`);
    expect(dom).toMatch(
      /id="card-cost" data-value="[\d.]+"><div class="label">Estimated cost<\/div><div class="value">\$[\d.]+<\/div>/,
    );
    for (const partition of ['date=2024-01-02', 'date=2024-01-03']) {
      expect(dom).toMatch(
        new RegExp(
          `data-partition="${partition}" data-source="history" data-files-before="6" data-files-after="1"`,
        ),
      );
      expect(dom).toContain(`data-partition="${partition}" data-files-now="1" data-files-before="6"`);
      expect(dom).toContain(`<tr data-partition="${partition}" data-kind="after" data-files="1">`);
    }
    expect(dom).not.toContain('No state table given');
  });

  it('takes a 1280×2000 screenshot in which both compacted partitions’ before and after bars show', async () => {
    // Prepare
    const png = join(dir, 'report.png');

    // Act
    await screenshot(pathToFileURL(page).href, png, { width: 1280, height: 2000 });

    // Assess
    expect((await stat(png)).size).toBeGreaterThan(20_000);
    const image = decodePng(await readFile(png));
    expect([image.width, image.height]).toEqual([1280, 2000]);
    // Two compacted partitions: two amber before-bars and their blue now-bars.
    expect(countColor(image, REPORT_COLORS.before)).toBeGreaterThan(2000);
    expect(countColor(image, REPORT_COLORS.now)).toBeGreaterThan(2000);
    if (process.env.REPORT_SCREENSHOT_OUT) await copyFile(png, process.env.REPORT_SCREENSHOT_OUT);
  });
});
