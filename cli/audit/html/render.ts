import type { AuditRow } from '../../../archive-tools/audit';
import { droppedSettingsNote, droppedTableNote } from '../../../archive-tools/audit/report';
import { formatDuration } from '../../kit/duration';
import type { AuditReport } from '../report';
import type { AuditFigures } from './figures';
import { barChartSvg, escapeHtml as e, tickPositions } from './svg';

/** `archive verify` over the files that hold the window's deletions, run when the report was made. */
export type VerifyOutcome =
  | {
      ok: boolean;
      files: number;
      rows: number;
      findings: Array<{ kind: string; path: string; detail: string }>;
    }
  | { error: string };

export interface AuditHtmlInput {
  report: AuditReport;
  figures: AuditFigures;
  verify: VerifyOutcome;
  hashKeys: boolean;
  generatedAt: string;
  version: string;
  /** The command line that made the report, as typed (quoted for a POSIX shell). */
  command: string;
}

const HOUR_MS = 3_600_000;
const isoSeconds = (ms: number | null): string =>
  ms === null ? '' : new Date(ms).toISOString().replace('.000Z', 'Z');
const dur = (ms: number): string => formatDuration(Math.max(0, Math.round(ms)));

/** A figure of the summary: its text for people, and `data-figure` so a test can find it in the rendered page. */
function figure(name: string, label: string, value: string, extra = ''): string {
  return `<tr><th scope="row">${e(label)}</th><td data-figure="${name}">${value}</td><td class="note">${extra}</td></tr>`;
}

function lagFigure(name: string, label: string, ms: number | undefined): string {
  if (ms === undefined) return figure(name, label, '–');
  return figure(name, label, `${e(dur(ms))} <span class="exact">(${ms} ms)</span>`);
}

function rowsTable(
  caption: string,
  rows: AuditRow[],
  unlisted: number,
  kind: 'late' | 'present',
  keyHead: string,
): string {
  if (rows.length === 0) return `<p class="none" data-table="${kind}" data-rows="0">${e(caption)}: none.</p>`;
  const head =
    kind === 'late'
      ? ['Key', 'TTL instant', 'Published', 'Lag', 'Event ID', 'Archive file#row']
      : ['Key', 'TTL instant', 'Status', 'Overdue by'];
  const body = rows
    .map((r) => {
      const cells =
        kind === 'late'
          ? [
              r.key,
              isoSeconds(r.ttlAtMs),
              isoSeconds(r.publishedAtMs),
              r.lagMs === null ? '' : `${dur(r.lagMs)} (${r.lagMs} ms)`,
              r.eventID ?? '',
              r.file === null ? '' : `${r.file}#${r.row ?? ''}`,
            ]
          : [
              r.key,
              isoSeconds(r.ttlAtMs),
              r.status,
              r.lagMs === null ? '' : `${dur(r.lagMs)} (${r.lagMs} ms)`,
            ];
      return `<tr data-status="${e(r.status)}">${cells.map((c, i) => `<td${i === 0 ? ' class="key"' : ''}>${e(c)}</td>`).join('')}</tr>`;
    })
    .join('\n');
  const more =
    unlisted > 0
      ? `<p class="note">${unlisted} more not listed (raise --limit, or use --csv or --json for every row).</p>`
      : '';
  return (
    `<table class="rows ${kind}" data-table="${kind}" data-rows="${rows.length}"><caption>${e(caption)} (${rows.length}${unlisted > 0 ? ` of ${rows.length + unlisted}` : ''}; ${e(keyHead)})</caption>` +
    `<thead><tr>${head.map((h) => `<th scope="col">${e(h)}</th>`).join('')}</tr></thead><tbody>\n${body}\n</tbody></table>${more}`
  );
}

function verifySection(v: VerifyOutcome): string {
  if ('error' in v) return `<p data-figure="verify" class="bad">not run: ${e(v.error)}</p>`;
  const head = v.ok
    ? `<p><span data-figure="verify" class="ok">passed</span>: ${v.files} data file(s), ${v.rows} row(s) checked against their seals and hash chains, no finding.</p>`
    : `<p><span data-figure="verify" class="bad">failed</span>: ${v.findings.length} finding(s) in ${v.files} data file(s).</p>`;
  const findings = v.findings
    .slice(0, 100)
    .map((f) => `<tr><td>${e(f.kind)}</td><td class="key">${e(f.path)}</td><td>${e(f.detail)}</td></tr>`)
    .join('');
  return (
    head +
    (v.findings.length > 0
      ? `<table class="rows"><thead><tr><th>Finding</th><th>Path</th><th>Detail</th></tr></thead><tbody>${findings}</tbody></table>`
      : '')
  );
}

function lagChart(r: AuditReport, f: AuditFigures): string {
  const { binMs, counts } = f.lagHistogram;
  if (r.deletions === 0) return '<p class="none">No deletions in the window: no lag to show.</p>';
  return barChartSvg({
    title: `Deletions by lag from TTL instant to REMOVE record, bins of ${dur(binMs)}`,
    counts,
    ticks: tickPositions(counts.length).map((at) => ({ at, label: dur(at * binMs) })),
    ...(r.slaMs !== null ? { line: { at: r.slaMs / binMs, label: `SLA ${dur(r.slaMs)}` } } : {}),
  });
}

function hourChart(f: AuditFigures): string {
  if (f.perHour.length === 0) return '<p class="none">No deletions in the window.</p>';
  const first = f.perHour[0]?.hourMs ?? 0;
  return barChartSvg({
    title: 'Deletions per hour (UTC) of publication',
    counts: f.perHour.map((h) => h.count),
    ticks: tickPositions(f.perHour.length).map((at) => ({
      at,
      label: new Date(first + at * HOUR_MS).toISOString().slice(5, 13).replace('T', ' ') + 'h',
    })),
  });
}

const CSS = `
:root { color-scheme: light; }
body { font: 10.5pt/1.4 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; color: #111; margin: 24px auto; max-width: 190mm; padding: 0 8px; }
h1 { font-size: 16pt; margin: 0 0 4px; } h2 { font-size: 12pt; margin: 18px 0 6px; border-bottom: 1px solid #ccc; }
.verdict { font-size: 13pt; font-weight: 600; padding: 6px 10px; border-radius: 4px; display: inline-block; }
.verdict.ok, .ok { color: #0a6b2d; } .verdict.ok { background: #e3f5e9; }
.verdict.bad, .bad { color: #a4161a; } .verdict.bad { background: #fbe4e4; }
.dropped { padding: 4px 8px; border-left: 4px solid #b26b00; background: #fff4e0; }
table { border-collapse: collapse; width: 100%; }
table.summary th { text-align: left; font-weight: normal; width: 38%; } table.summary td { font-weight: 600; }
table.summary td.note, .note { font-weight: normal; color: #555; font-size: 9pt; }
.exact { font-weight: normal; color: #555; font-size: 9pt; }
table.rows { table-layout: fixed; font-size: 8.5pt; margin-top: 4px; }
table.rows caption { text-align: left; font-weight: 600; padding: 4px 0; }
table.rows th, table.rows td { border: 1px solid #ccc; padding: 2px 4px; vertical-align: top; overflow-wrap: anywhere; word-break: break-word; }
table.rows th { background: #f2f2f2; text-align: left; }
table.late th:nth-child(1) { width: 30%; } table.present th:nth-child(1) { width: 50%; }
td.key { font-family: ui-monospace, "DejaVu Sans Mono", monospace; }
svg { width: 100%; height: auto; display: block; }
svg .bar { fill: #3b6ea8; } svg .grid { stroke: #e3e3e3; } svg .axis { stroke: #333; }
svg .sla { stroke: #a4161a; stroke-width: 2; stroke-dasharray: 5 3; }
svg text { font-size: 10px; fill: #333; } svg .ylabel { text-anchor: end; } svg .xlabel { text-anchor: middle; }
svg .slalabel { fill: #a4161a; font-weight: 600; }
footer { margin-top: 18px; font-size: 8.5pt; color: #444; border-top: 1px solid #ccc; padding-top: 6px; }
footer code { overflow-wrap: anywhere; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { margin: 0; max-width: none; padding: 0; }
  h2 { break-after: avoid; } figure, svg, table.summary { break-inside: avoid; }
  thead { display: table-header-group; } tr { break-inside: avoid; }
}
`;

/** Whether the table exists, stated in the header: a dropped table's audit rests on the archive alone. */
function tableState(r: AuditReport): string {
  if (!r.dropped)
    return `<p>Table <span data-figure="table-exists" data-value="yes">exists</span>: items still present read by ${e(r.tableReadVia)}.</p>`;
  return (
    `<p class="dropped">Table <span data-figure="table-exists" data-value="no">${e(droppedTableNote(r.dropped))}</span>: ` +
    `its deletions are read from the archive; no item of it can be present. ${e(capitalised(droppedSettingsNote(r.dropped)))}.</p>`
  );
}

const capitalised = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

function presentSection(r: AuditReport, f: AuditFigures, keyHead: string): string {
  if (r.dropped)
    return `<p class="none" data-table="present" data-rows="0">None: the table no longer exists, so no item of it can be present.</p>`;
  return rowsTable(
    'Items whose TTL passed in the window and that still exist',
    f.stillPresent,
    f.stillPresentUnlisted,
    'present',
    keyHead,
  );
}

/** The losses in scope, one line each, when there are any. */
function lossList(r: AuditReport): string {
  if (r.losses.length === 0) return '';
  const items = r.losses.map(
    (l) =>
      `<li data-figure="loss">${e(l.detail)}; detected ${e(l.detectedAt)}; ${l.acknowledged ? 'acknowledged' : '<strong>not acknowledged</strong>'} (<code>${e(l.record)}</code>)</li>`,
  );
  return `<ul class="losses">\n${items.join('\n')}\n</ul>`;
}

/** The report as one self-contained HTML page: inline CSS and SVG, no script, nothing fetched. */
export function renderAuditHtml(input: AuditHtmlInput): string {
  const { report: r, figures: f } = input;
  const keyHead = input.hashKeys ? 'keys as SHA-256 digests (--hash-keys)' : 'keys as canonical JSON';
  const sla =
    r.slaMs === null ? 'none given' : `${e(dur(r.slaMs))} <span class="exact">(${r.slaMs} ms)</span>`;
  const verdict = r.breach
    ? '<span class="verdict bad" data-figure="breach" data-value="yes">BREACH: a deletion later than the SLA, an expired item still present, or a loss not acknowledged</span>'
    : '<span class="verdict ok" data-figure="breach" data-value="no">No breach: every deletion within the SLA, no overdue item present</span>';
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ttlstream audit: ${e(r.table)} ${e(r.from)} – ${e(r.to)}</title>
<style>${CSS}</style></head>
<body>
<header>
<h1>Proof of deletion: <span data-figure="table">${e(r.table)}</span></h1>
<p>TTL instants from <strong data-figure="from">${e(r.from)}</strong> to <strong data-figure="to">${e(r.to)}</strong> (exclusive); table ${r.dropped ? 'found missing' : 'judged'} at <span data-figure="evaluated-at">${e(r.evaluatedAt)}</span>.</p>
${tableState(r)}
<p>${verdict}</p>
</header>
<h2>Summary</h2>
<table class="summary">
${figure('deletions', 'Deletions', String(r.deletions), 'REMOVE records in the archive whose TTL instant is in the window')}
${figure('late', 'Later than the SLA', String(r.late))}
${figure('sla', 'SLA', sla)}
${lagFigure('lag-p50', 'Lag p50', r.lagMs?.p50)}
${lagFigure('lag-p99', 'Lag p99', r.lagMs?.p99)}
${lagFigure('lag-max', 'Lag max', r.lagMs?.max)}
${figure('present', 'Still present (overdue)', String(r.present), r.dropped ? 'the table no longer exists: no item of it can be present' : `expired in the window, not deleted; table read by ${e(r.tableReadVia)}`)}
${figure('pending', 'Still present (within the SLA)', String(r.pending))}
${figure('held', 'Held (legal hold)', String(r.held), 'kept legitimately')}
${figure('retracted', 'Retracted', String(r.retracted), 'withdrawn by a RETRACT: not deletions')}
${figure('no-ttl', 'TTL unknown', String(r.noTtl), "deleted in the window; today's TTL settings give the image no instant")}
${figure('records-read', 'Read', `${r.archiveRecordsRead} archived REMOVE record(s), ${r.dropped ? 'no table (it no longer exists)' : `${r.tableItemsRead} table item(s)`}`)}
${figure('losses', 'Losses', String(r.losses.length), 'records that left Kafka or a DynamoDB stream unread since the window began: deletions of the window may be missing')}
</table>
${lossList(r)}
<h2>Archive integrity</h2>
${verifySection(input.verify)}
<h2>Lag from TTL instant to deletion</h2>
<figure>${lagChart(r, f)}</figure>
<h2>Deletions per hour</h2>
<figure>${hourChart(f)}</figure>
<h2>Late deletions</h2>
${rowsTable('Deletions later than the SLA', f.late, f.lateUnlisted, 'late', keyHead)}
<h2>Items still present</h2>
${presentSection(r, f, keyHead)}
<footer>
<p>Generated <span data-figure="generated-at">${e(input.generatedAt)}</span> by ttlstream <span data-figure="version">${e(input.version)}</span> with:</p>
<p><code data-figure="command">${e(input.command)}</code></p>
<p>Every row is in the same command's <code>--json</code> and <code>--csv</code> output. Lag = Kafka publish time − TTL instant; an item still present is overdue once its TTL instant is older than the SLA.</p>
</footer>
</body></html>
`;
}
