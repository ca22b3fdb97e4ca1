import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDynamoClient } from '../../../core/clients';
import { figureText, tableKeys } from '../../support/html-figures';
import { requireBinary } from '../../support/observability-tools';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';
import { putItems, scanAll, type Item } from '../../support/pipeline-harness';
import { isolatedRunEnv, runCli, spawnCli, type CliResult } from '../../support/cli-process';
import { waitFor } from '../../support/wait-for';

interface JsonRow {
  status: string;
  key: string;
}
interface JsonSummary {
  deletions: number;
  late: number;
  present: number;
  pending: number;
  held: number;
  retracted: number;
  noTtl: number;
  slaMs: number;
  lagMs: { p50: number; p99: number; max: number };
  breach: boolean;
}

/** Headless Chromium with its own profile directory; resolves with its stdout, fails on a non-zero exit. */
function chromium(dir: string, args: string[]): Promise<string> {
  const binary = requireBinary('chromium');
  return new Promise((done, fail) => {
    const child = spawn(
      binary,
      ['--headless', '--no-sandbox', '--disable-gpu', `--user-data-dir=${join(dir, 'profile')}`, ...args],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (err += b.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (code === 0) done(out);
      else fail(new Error(`chromium exited ${code}:\n${err.slice(-3000)}`));
    });
  });
}

/**
 * `ttlstream audit --html` on what a real `ttlstream run` deleted and archived, opened in headless Chromium (Debian's
 * package): the page the browser rendered (--dump-dom) shows the same figures, late deletions and items still present
 * as `audit --json`; a screenshot and an A4 PDF are taken of it.
 */
describe('ttlstream audit --html in headless Chromium', () => {
  const table = uniqueName('audit-html');
  const control = uniqueName('audit-html-ctl');
  const marks = uniqueName('audit-html-marks');
  const topic = uniqueName('audit-html-rm');
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-audit-html-'));
  let ddb: DynamoDBClient;
  let env: NodeJS.ProcessEnv;
  let run: ReturnType<typeof spawnCli> | undefined;

  beforeAll(async () => {
    ddb = createDynamoClient(testConfig());
    env = isolatedRunEnv({ control, marks, topic }, join(dir, 'archive'));
    await createTestTable(ddb, table);
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);
  });

  afterAll(async () => {
    if (run && run.exitCode === null && run.signalCode === null) {
      run.kill('SIGKILL');
      await run.result;
    }
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the same figures, late deletions and items still present as --json, and prints on A4', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const item = (pk: string, exp: number): Item => ({ pk: { S: pk }, exp: { N: String(exp) } });
    // Late: expired 10 minutes ago (SLA 60 s). On time: expiring in 3 s while the run is up. Alive: tomorrow.
    const late = Array.from({ length: 6 }, (_, i) => item(`late-${i}`, nowS - 600));
    const onTime = Array.from({ length: 6 }, (_, i) => item(`soon-${i}`, nowS + 3));
    const alive = Array.from({ length: 20 }, (_, i) => item(`alive-${i}`, nowS + 86_400));
    await putItems(ddb, table, [...late, ...onTime, ...alive]);
    const window = [
      '--from',
      String(nowS - 3600),
      '--to',
      String(nowS + 3600),
      '--sla',
      '60s',
      '--hash-keys',
    ];
    const audit = (extra: string[]): Promise<CliResult> =>
      runCli(['audit', '--table', table, ...window, ...extra], env, 120_000);

    run = spawnCli(['run', '--roles', 'scanner,producer,archiver'], env);
    const started = run;
    await waitFor(
      'the 12 expired items deleted',
      async () => started.exitCode === null && (await scanAll(ddb, table)).size === 20,
      90_000,
      250,
    );
    // Archived: the audit reads deletions from the archive only.
    await waitFor(
      'the 12 deletions archived',
      async () => {
        const r = await audit(['--json']);
        const summary = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { summary?: JsonSummary };
        return summary.summary?.deletions === 12;
      },
      90_000,
      1000,
    );
    started.kill('SIGTERM');
    expect((await started.result).code).toBe(0);
    // Expired 5 minutes ago, after the run stopped: still present, overdue.
    await putItems(ddb, table, [item('present-0', nowS - 300), item('present-1', nowS - 300)]);

    const json = await audit(['--json']);
    expect(json.code).toBe(4); // a breach: late deletions and overdue items
    const lines = json.stdout.trim().split('\n');
    const summary = (JSON.parse(lines.pop() ?? '{}') as { summary: JsonSummary }).summary;
    const rows = lines.map((l) => JSON.parse(l) as JsonRow);
    // The scenario produced what the page must show.
    expect(summary.late).toBeGreaterThanOrEqual(6);
    expect(summary.present).toBe(2);

    const file = join(dir, 'report.html');
    const html = await audit(['--html', file]);
    expect(html.code).toBe(4);
    const page = readFileSync(file, 'utf8');
    expect(page).not.toMatch(/<script|<link|\bsrc=|\bhref=|url\(|https?:/i);

    const dom = await chromium(dir, ['--dump-dom', `file://${file}`]);
    expect(dom).toContain('<svg');
    const counts = ['deletions', 'late', 'present', 'pending', 'held', 'retracted'] as const;
    for (const name of counts)
      expect({ name, shown: figureText(dom, name) }).toEqual({ name, shown: String(summary[name]) });
    expect(figureText(dom, 'no-ttl')).toBe(String(summary.noTtl));
    expect(figureText(dom, 'sla')).toContain(`(${summary.slaMs} ms)`);
    expect(figureText(dom, 'lag-p50')).toContain(`(${summary.lagMs.p50} ms)`);
    expect(figureText(dom, 'lag-p99')).toContain(`(${summary.lagMs.p99} ms)`);
    expect(figureText(dom, 'lag-max')).toContain(`(${summary.lagMs.max} ms)`);
    expect(dom).toMatch(new RegExp(`data-figure="breach" data-value="${summary.breach ? 'yes' : 'no'}"`));
    expect(figureText(dom, 'verify')).toBe('passed');
    expect(figureText(dom, 'table')).toBe(table);
    expect(figureText(dom, 'command')).toBe(
      ['ttlstream', 'audit', '--table', table, ...window, '--html', file].join(' '),
    );
    // The tables list the same keys (SHA-256 digests under --hash-keys) as the JSON rows.
    const keysOf = (...statuses: string[]): string[] =>
      rows
        .filter((r) => statuses.includes(r.status))
        .map((r) => r.key)
        .sort();
    expect(tableKeys(dom, 'late').sort()).toEqual(keysOf('late'));
    expect(tableKeys(dom, 'present').sort()).toEqual(keysOf('present', 'pending', 'held'));
    expect(keysOf('late').every((k) => /^[0-9a-f]{64}$/.test(k))).toBe(true);

    // A screenshot of the rendered page, and the page printed to A4.
    const png = join(dir, 'report.png');
    await chromium(dir, [
      '--hide-scrollbars',
      '--window-size=1240,1754',
      `--screenshot=${png}`,
      `file://${file}`,
    ]);
    const shot = readFileSync(png);
    expect(shot.subarray(1, 4).toString()).toBe('PNG');
    expect(shot.length).toBeGreaterThan(20_000);
    const pdf = join(dir, 'report.pdf');
    await chromium(dir, ['--no-pdf-header-footer', `--print-to-pdf=${pdf}`, `file://${file}`]);
    const printed = readFileSync(pdf);
    expect(printed.subarray(0, 5).toString()).toBe('%PDF-');
    // Every page A4: 595 x 842 points (Chromium writes 594.96 x 841.92).
    const boxes = [...printed.toString('latin1').matchAll(/\/MediaBox \[0 0 ([\d.]+) ([\d.]+)\]/g)].map(
      (m) => [Math.round(Number(m[1])), Math.round(Number(m[2]))],
    );
    expect(boxes.length).toBeGreaterThan(0);
    expect(boxes.filter(([w, h]) => w !== 595 || h !== 842)).toEqual([]);
  }, 360_000);
});
