/**
 * The size and the render time of `ttlstream audit --html` for a large window (method and bounds: bench/README.md).
 *
 *   npx tsx bench/audit-html.ts [--deletions 100000] [--late-fraction 0.01] [--present 100] [--limit 10000]
 *                               [--rounds 3] [--browser]
 *
 * Feeds `--deletions` deletion rows (lags around 20 s, `--late-fraction` of them beyond the 60 s SLA) spread over 24
 * hours, and `--present` items still present, through what `audit --html` runs after the archive and table passes:
 * the figure collector (per row) and the page renderer, `--rounds` times; prints the best round's time and the page's
 * bytes. `--browser` also times headless Chromium (`chromium --headless --dump-dom`, process start included) opening
 * the page once. Needs no service: the archive and table passes are bench/audit.ts's.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AuditTally, type AuditRow } from '../archive-tools/audit';
import { AuditFigureCollector } from '../cli/audit/html/figures';
import { renderAuditHtml } from '../cli/audit/html/render';
import { VERSION } from '../core/version';

const { values } = parseArgs({
  options: {
    deletions: { type: 'string', default: '100000' },
    'late-fraction': { type: 'string', default: '0.01' },
    present: { type: 'string', default: '100' },
    limit: { type: 'string', default: '10000' },
    rounds: { type: 'string', default: '3' },
    browser: { type: 'boolean', default: false },
  },
});
const DELETIONS = Number(values.deletions);
const LATE_FRACTION = Number(values['late-fraction']);
const PRESENT = Number(values.present);
const LIMIT = Number(values.limit);
const ROUNDS = Number(values.rounds);
const SLA_MS = 60_000;
const FROM_MS = Date.UTC(2026, 10, 30);
const TO_MS = FROM_MS + 86_400_000;

/** Deterministic rows: a digest-like key (as with --hash-keys), an archive file and offset like real ones. */
function rows(): AuditRow[] {
  const out: AuditRow[] = [];
  const lateEvery = LATE_FRACTION > 0 ? Math.round(1 / LATE_FRACTION) : Infinity;
  for (let i = 0; i < DELETIONS; i++) {
    const ttlAtMs = FROM_MS + Math.floor((i / DELETIONS) * 86_400_000);
    const lagMs = i % lateEvery === 0 ? SLA_MS + 1_000 + (i % 50_000) : 1_000 + ((i * 7919) % 40_000);
    out.push({
      status: lagMs > SLA_MS ? 'late' : 'deleted',
      key: (i * 2654435761).toString(16).padStart(16, '0').repeat(4).slice(0, 64),
      ttlAtMs,
      deletedAtMs: ttlAtMs + lagMs,
      publishedAtMs: ttlAtMs + lagMs,
      lagMs,
      eventID: `${i.toString(16).padStart(8, '0')}-0000-4000-8000-000000000000`,
      topic: 'ttlstream.remove',
      partition: i % 12,
      offset: String(i),
      file: `data/orders/${new Date(ttlAtMs).toISOString().slice(0, 13).replace('T', '/')}/p${i % 12}-${i}.avro`,
      row: i % 2000,
      deletedBy: 'ttlstream',
    });
  }
  for (let i = 0; i < PRESENT; i++)
    out.push({
      status: 'present',
      key: (i * 40503).toString(16).padStart(64, 'a'),
      ttlAtMs: TO_MS - 3_600_000,
      deletedAtMs: null,
      publishedAtMs: null,
      lagMs: 3_600_000,
      eventID: null,
      topic: null,
      partition: null,
      offset: null,
      file: null,
      row: null,
      deletedBy: null,
    });
  return out;
}

function once(all: AuditRow[]): { ms: number; page: string } {
  const started = process.hrtime.bigint();
  const tally = new AuditTally();
  const figures = new AuditFigureCollector(LIMIT);
  for (const r of all) {
    tally.add(r);
    figures.add(r);
  }
  const page = renderAuditHtml({
    report: {
      table: 'orders',
      from: new Date(FROM_MS).toISOString(),
      to: new Date(TO_MS).toISOString(),
      slaMs: SLA_MS,
      evaluatedAt: new Date(TO_MS).toISOString(),
      tableExists: true,
      dropped: null,
      losses: [],
      tableReadVia: 'index',
      archiveRecordsRead: DELETIONS,
      tableItemsRead: PRESENT,
      ...tally.summary(),
    },
    figures: figures.figures(SLA_MS),
    verify: { ok: true, files: 288, rows: DELETIONS, findings: [] },
    hashKeys: true,
    generatedAt: new Date().toISOString(),
    version: VERSION,
    command:
      'ttlstream audit --table orders --from 2026-11-30 --to 2026-12-01 --sla 60s --hash-keys --html r.html',
  });
  return { ms: Number(process.hrtime.bigint() - started) / 1e6, page };
}

const loadStart = loadavg()[0] ?? 0;
const all = rows();
let best = Infinity;
let page = '';
for (let round = 0; round < ROUNDS; round++) {
  const r = once(all);
  if (r.ms < best) best = r.ms;
  page = r.page;
}
let browserMs: number | null = null;
if (values.browser) {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-html-'));
  try {
    const file = join(dir, 'report.html');
    writeFileSync(file, page);
    const started = Date.now();
    execFileSync(
      'chromium',
      [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        `--user-data-dir=${join(dir, 'profile')}`,
        '--dump-dom',
        `file://${file}`,
      ],
      { stdio: ['ignore', 'ignore', 'ignore'], maxBuffer: 1 << 30 },
    );
    browserMs = Date.now() - started;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
const bytes = Buffer.byteLength(page);
const late = Math.round(DELETIONS * LATE_FRACTION);
console.log('figure                             value');
console.log(
  `deletions                          ${DELETIONS} (${late} late, ${PRESENT} present; at most ${LIMIT} rows listed per table)`,
);
console.log(`page size                          ${(bytes / 1024).toFixed(0)} KiB`);
console.log(`collect + render (best of ${ROUNDS})       ${best.toFixed(0)} ms`);
if (browserMs !== null) console.log(`chromium --dump-dom (with start)   ${browserMs} ms`);
console.log(
  JSON.stringify({
    bench: 'audit-html',
    deletions: DELETIONS,
    lateFraction: LATE_FRACTION,
    present: PRESENT,
    limit: LIMIT,
    bytes,
    renderMs: Math.round(best),
    browserMs,
    load: { start: loadStart, end: loadavg()[0] ?? 0 },
  }),
);
