import type { AuditRow, AuditStatus } from '../../../../../archive-tools/audit';
import { AuditFigureCollector, niceWidth } from '../../../../../cli/audit/html/figures';
import { renderAuditHtml, type AuditHtmlInput } from '../../../../../cli/audit/html/render';
import type { AuditReport } from '../../../../../cli/audit/report';
import { figureText, tableKeys } from '../../../../support/html-figures';

const T0 = Date.parse('2026-11-30T00:00:00Z');

function row(status: AuditStatus, key: string, ttlAtMs: number, lagMs: number | null): AuditRow {
  const deletion = status === 'deleted' || status === 'late' || status === 'retracted';
  return {
    status,
    key,
    ttlAtMs,
    deletedAtMs: deletion && lagMs !== null ? ttlAtMs + lagMs : null,
    publishedAtMs: deletion && lagMs !== null ? ttlAtMs + lagMs : null,
    lagMs,
    eventID: deletion ? `ev-${key}` : null,
    topic: deletion ? 'ttlstream.remove' : null,
    partition: deletion ? 0 : null,
    offset: deletion ? '7' : null,
    file: deletion ? 'orders/2026-11-30/00/f.avro' : null,
    row: deletion ? 3 : null,
    deletedBy: deletion ? 'ttlstream' : null,
  };
}

const auditReport = (over: Partial<AuditReport> = {}): AuditReport => ({
  table: 'orders',
  from: '2026-11-30T00:00:00.000Z',
  to: '2026-12-01T00:00:00.000Z',
  slaMs: 60_000,
  evaluatedAt: '2026-12-01T00:05:00.000Z',
  tableExists: true,
  dropped: null,
  tableReadVia: 'scan',
  archiveRecordsRead: 4,
  tableItemsRead: 100,
  deletions: 3,
  late: 1,
  retracted: 1,
  noTtl: 0,
  present: 1,
  pending: 0,
  held: 0,
  lagMs: { p50: 2_000, p99: 90_000, max: 90_000 },
  breach: true,
  losses: [],
  ...over,
});

function input(over: Partial<AuditHtmlInput> = {}): AuditHtmlInput {
  const c = new AuditFigureCollector(100);
  for (const r of [
    row('deleted', '{"pk":{"S":"a"}}', T0, 1_000),
    row('deleted', '{"pk":{"S":"b"}}', T0 + 2 * 3_600_000, 2_000),
    row('late', '{"pk":{"S":"<script>alert(1)</script>"}}', T0, 90_000),
    row('present', '{"pk":{"S":"still"}}', T0 + 3_600_000, 300_000),
  ])
    c.add(r);
  return {
    report: auditReport(),
    figures: c.figures(60_000),
    verify: { ok: true, files: 2, rows: 4, findings: [] },
    hashKeys: false,
    generatedAt: '2026-12-01T00:06:00.000Z',
    version: '0.1.0',
    command:
      "ttlstream audit --table orders --from 2026-11-30 --to 2026-12-01 --sla 60s --html 'my report.html'",
    ...over,
  };
}

describe('AuditFigureCollector', () => {
  it('bins the lags of deletions from 0 in nice widths, counts deletions per hour with empty hours filled in', () => {
    const c = new AuditFigureCollector(10);
    c.add(row('deleted', 'a', T0, 500));
    c.add(row('deleted', 'b', T0, 1_500));
    c.add(row('late', 'c', T0 + 3 * 3_600_000, 61_000));
    c.add(row('deleted', 'd', T0, -20)); // published a little before its TTL instant (clocks): counted as 0
    c.add(row('retracted', 'e', T0, 5_000)); // not a deletion
    c.add(row('present', 'f', T0, 9_000));
    const f = c.figures(60_000);
    expect(f.lagHistogram.binMs).toBe(niceWidth(61_000 / 30));
    expect(f.lagHistogram.counts.reduce((a, b) => a + b, 0)).toBe(4);
    expect(f.lagHistogram.counts[0]).toBe(3); // 500, 1500 and 0 in the first bin of 5 s
    // By hour of publication: d was published 20 ms before T0, in the hour before.
    expect(f.perHour).toEqual([
      { hourMs: T0 - 3_600_000, count: 1 },
      { hourMs: T0, count: 2 },
      { hourMs: T0 + 3_600_000, count: 0 },
      { hourMs: T0 + 2 * 3_600_000, count: 0 },
      { hourMs: T0 + 3 * 3_600_000, count: 1 },
    ]);
    expect(f.late.map((r) => r.key)).toEqual(['c']);
    expect(f.stillPresent.map((r) => r.key)).toEqual(['f']);
  });

  it('the histogram reaches the SLA even when every lag is below it; lists at most `limit` rows and counts the rest', () => {
    const c = new AuditFigureCollector(2);
    for (let i = 0; i < 5; i++) c.add(row('late', `k${i}`, T0, 100));
    for (let i = 0; i < 3; i++) c.add(row('pending', `p${i}`, T0, 1));
    const f = c.figures(3_600_000);
    expect(f.lagHistogram.binMs * f.lagHistogram.counts.length).toBeGreaterThan(3_600_000);
    expect([f.late.length, f.lateUnlisted, f.stillPresent.length, f.stillPresentUnlisted]).toEqual([
      2, 3, 2, 1,
    ]);
  });

  it('niceWidth: 1, 2 or 5 times a power of ten, at least the asked width', () => {
    expect([0, 1, 3, 7, 12, 2_000, 2_001, 49_000].map(niceWidth)).toEqual([
      1, 1, 5, 10, 20, 2_000, 5_000, 50_000,
    ]);
  });
});

describe('renderAuditHtml', () => {
  it('shows the summary figures as the JSON summary has them', () => {
    const html = renderAuditHtml(input());
    expect(figureText(html, 'deletions')).toBe('3');
    expect(figureText(html, 'late')).toBe('1');
    expect(figureText(html, 'present')).toBe('1');
    expect(figureText(html, 'retracted')).toBe('1');
    expect(figureText(html, 'sla')).toBe('1m (60000 ms)');
    expect(figureText(html, 'lag-p50')).toBe('2s (2000 ms)');
    expect(figureText(html, 'lag-p99')).toBe('1m30s (90000 ms)');
    expect(figureText(html, 'lag-max')).toBe('1m30s (90000 ms)');
    expect(html).toContain('data-figure="breach" data-value="yes"');
    expect(figureText(html, 'verify')).toBe('passed');
    expect(figureText(html, 'version')).toBe('0.1.0');
    expect(figureText(html, 'generated-at')).toBe('2026-12-01T00:06:00.000Z');
    expect(figureText(html, 'command')).toBe(
      "ttlstream audit --table orders --from 2026-11-30 --to 2026-12-01 --sla 60s --html 'my report.html'",
    );
  });

  it('is self-contained: no script, no outside resource, keys escaped', () => {
    const html = renderAuditHtml(input());
    expect(html).not.toMatch(/<script|<link|<img|<iframe|@import|url\(|\bsrc=|\bhref=|https?:/i);
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect((html.match(/<svg /g) ?? []).length).toBe(2);
  });

  it('draws the SLA line on the lag histogram, only when an SLA is given', () => {
    expect(renderAuditHtml(input())).toMatch(
      /<line class="sla"[^>]*\/><text class="slalabel"[^>]*>SLA 1m<\/text>/,
    );
    const noSla = input({ report: auditReport({ slaMs: null }) });
    expect(renderAuditHtml(noSla)).not.toContain('class="sla"');
    expect(figureText(renderAuditHtml(noSla), 'sla')).toBe('none given');
  });

  it('lists late deletions and items still present as tables with every row, and says no breach when there is none', () => {
    const html = renderAuditHtml(input());
    expect(html).toMatch(/data-table="late" data-rows="1"/);
    expect(html).toMatch(/data-table="present" data-rows="1"/);
    expect(tableKeys(html, 'present')).toEqual(['{"pk":{"S":"still"}}']);
    expect(tableKeys(html, 'late')).toEqual(['{"pk":{"S":"<script>alert(1)</script>"}}']);
    const clean = renderAuditHtml(
      input({
        report: auditReport({ late: 0, present: 0, breach: false }),
        figures: new AuditFigureCollector(5).figures(60_000),
      }),
    );
    expect(clean).toContain('data-figure="breach" data-value="no"');
    expect(clean).toMatch(/data-table="late" data-rows="0"/);
  });

  it('prints on A4 with table headers repeated and rows kept whole', () => {
    const html = renderAuditHtml(input());
    expect(html).toContain('@page { size: A4;');
    expect(html).toContain('thead { display: table-header-group; }');
    expect(html).toContain('tr { break-inside: avoid; }');
    expect(html).toContain('table-layout: fixed');
  });

  it('says the table exists, or that it no longer does and that nothing of it can be present', () => {
    expect(renderAuditHtml(input())).toContain('data-figure="table-exists" data-value="yes"');
    const dropped = renderAuditHtml(
      input({
        report: auditReport({
          late: 1,
          present: 0,
          tableExists: false,
          tableReadVia: 'none',
          tableItemsRead: 0,
          dropped: {
            lastDeletionAt: '2026-11-30T05:00:00.000Z',
            settingsChangedAt: '2026-11-01T00:00:00.000Z',
            settingsChangedBy: 'ops',
            ttlEnabled: false,
          },
        }),
      }),
    );
    expect(figureText(dropped, 'table-exists')).toBe(
      'no longer exists (dropped after its last archived deletion, 2026-11-30T05:00:00.000Z)',
    );
    expect(dropped).toContain('data-figure="table-exists" data-value="no"');
    expect(dropped).toContain(
      'Deletions read with the table&#39;s last recorded TTL settings (changed 2026-11-01T00:00:00.000Z by ops; TTL was disabled then).',
    );
    expect(figureText(dropped, 'present')).toBe('0');
    expect(dropped).toContain('the table no longer exists: no item of it can be present');
    expect(figureText(dropped, 'records-read')).toBe(
      '4 archived REMOVE record(s), no table (it no longer exists)',
    );
    // No rows of items present, whatever was collected; the late deletions (and the breach) stay.
    expect(dropped).toMatch(/data-table="present" data-rows="0">None: the table no longer exists/);
    expect(dropped).toMatch(/data-table="late" data-rows="1"/);
    expect(dropped).toContain('data-figure="breach" data-value="yes"');
    expect(dropped).toContain('table found missing at');
  });

  it('says when archive verify failed or could not run', () => {
    const failed = renderAuditHtml(
      input({
        verify: {
          ok: false,
          files: 2,
          rows: 4,
          findings: [{ kind: 'altered', path: 'x.avro', detail: 'sha' }],
        },
      }),
    );
    expect(figureText(failed, 'verify')).toBe('failed');
    expect(failed).toContain('<td>altered</td>');
    const error = renderAuditHtml(input({ verify: { error: 'access denied' } }));
    expect(figureText(error, 'verify')).toBe('not run: access denied');
  });
});
