import { Command, Option } from 'commander';
import type { AuditRow, DroppedTable } from '../../archive-tools/audit';
import type { AuditReport } from './report';
import type { ArchiveStorage } from '../../archive/storage';
import type { AuditFigures } from './html/figures';
import type { VerifyOutcome } from './html/render';
import type { CliContext } from '../kit/context';
import { VERSION } from '../../core/version';
import { ValidationError } from '../../core/errors';
import { action, argParser, example, positiveInt, jsonOption, type CommandEnv } from '../kit/command-kit';
import { formatDuration, parseDuration, parseInstantOrEpoch } from '../kit/duration';
import { EXIT, UsageError } from '../kit/exit-codes';
import { printInterrupted } from '../kit/interrupt';
import { renderTable, style, useColour, type CliIo } from '../kit/io';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

interface AuditFlags {
  table: string;
  from: number;
  to: number;
  sla?: number;
  hashKeys?: boolean;
  scan?: boolean;
  readRate?: number;
  limit: number;
  csv?: boolean;
  json?: boolean;
  html?: string;
  output?: 'json' | 'csv' | 'table' | 'text';
}

type Format = 'json' | 'csv' | 'text';

function positiveNumber(text: string): number {
  const n = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || !(n > 0))
    throw new ValidationError(`expected a positive number, got "${text}"`);
  return n;
}

/** --csv and --json are aliases of --output csv|json (command-kit already refuses --json with another --output). */
function formatOf(opts: AuditFlags): Format {
  if (opts.json && opts.csv) throw new UsageError('--json contradicts --csv');
  if (opts.csv && opts.output !== undefined && opts.output !== 'csv')
    throw new UsageError(`--csv contradicts --output ${opts.output}`);
  if (opts.json) return 'json';
  return opts.csv || opts.output === 'csv' ? 'csv' : 'text';
}

/** Text output lists only what needs a look; every row is in --csv and --json. */
const NOTEWORTHY = new Set(['late', 'retracted', 'no-ttl', 'present', 'pending', 'held']);

export function auditCommand(env: CommandEnv): Command {
  const cmd = declareAuditOptions(new Command('audit'));
  cmd.action(
    action<AuditFlags>(env, (ctx, opts) => auditAction(cmd, ctx, opts), { overrides: archiveOverrides }),
  );
  return example(
    cmd,
    'ttlstream audit --table orders --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --sla 60s',
    'ttlstream audit --table orders --from 1714521600 --to 1714608000 --sla 5m --csv --hash-keys > audit.csv',
    'ttlstream audit --table orders --from 2024-05-01 --to 2024-05-02 --json | jq -c \'select(.status == "late")\'',
  );
}

function declareAuditOptions(cmd: Command): Command {
  return cmd
    .description(
      'proof of deletion: every deletion whose TTL instant falls in the window (from the archive), its lag, and the items whose TTL passed in the window but that still exist; exits 4 on a breach',
    )
    .requiredOption('-t, --table <name>', 'the table')
    .requiredOption(
      '--from <time>',
      'TTL instants from (inclusive): ISO-8601 or epoch seconds',
      argParser((v) => parseInstantOrEpoch(v, '--from')),
    )
    .requiredOption(
      '--to <time>',
      'TTL instants to (exclusive): ISO-8601 or epoch seconds',
      argParser((v) => parseInstantOrEpoch(v, '--to')),
    )
    .addOption(
      new Option(
        '--sla <duration>',
        'a deletion published later than this after its TTL instant is a breach, and so is an item still present this long after it (30s, 15m, 1h)',
      ).argParser(argParser(parseDuration)),
    )
    .option(
      '--hash-keys',
      "print each key's SHA-256 (keyDigest, as in the erasure ledger) instead of the key",
    )
    .option('--scan', 'read the table by a Scan even when it has an ACTIVE expiry index')
    .option(
      '--read-rate <items/s>',
      'items per second the table read takes at most (default scanner.readRateLimit)',
      argParser(positiveNumber),
    )
    .option(
      '--limit <n>',
      'text output: list at most this many rows that need a look',
      argParser(positiveInt),
      100,
    )
    .option(
      '--html <file>',
      'also write the report as one self-contained HTML page to this file: summary, lag histogram with the SLA, deletions per hour, late deletions and items still present (at most --limit rows each, default 10000 here), and `archive verify` of the files holding the window',
    )
    .addOption(archiveOption())
    .option('--csv', 'CSV on stdout, one row per line (same as --output csv); the summary goes to stderr')
    .addOption(jsonOption())
    .addOption(
      new Option('-o, --output <format>', 'output format').choices(['json', 'csv', 'table', 'text']),
    );
}

/** One audit: the archive pass and the table pass of runAudit, written as the chosen format, and the HTML page. */
async function auditAction(cmd: Command, ctx: CliContext, opts: AuditFlags): Promise<number> {
  const format = formatOf(opts);
  if (opts.from >= opts.to) throw new ValidationError('--from must be before --to');
  const { openExistingStorage } = await import('../kit/archive-root');
  const { runAudit } = await import('./report');
  const storage = await openExistingStorage(ctx);
  const progress = ctx.progress('audit', { json: format !== 'text' });
  let phase: 'archive' | 'table' = 'archive';
  ctx.onInterrupt((signal) =>
    printInterrupted(ctx.io, format === 'json', {
      command: 'audit',
      signal,
      done: progress.done,
      total: progress.total,
      unit: phase === 'archive' ? 'archive data file' : 'table item',
      did: 'read only; nothing was written',
      rerun: 'a rerun is safe: audit only reads',
      writes: false,
    }),
  );
  // An HTML report is for filing: it lists many more rows than a terminal should unless --limit says otherwise.
  const htmlLimit = cmd.getOptionValueSource('limit') === 'default' ? HTML_ROW_LIMIT : opts.limit;
  const figures =
    opts.html === undefined
      ? undefined
      : new (await import('./html/figures')).AuditFigureCollector(htmlLimit);
  const rows = await rowWriter(ctx, format, opts.limit);
  let report;
  try {
    report = await runAudit(
      ctx,
      storage,
      {
        table: opts.table,
        fromMs: opts.from,
        toMs: opts.to,
        ...(opts.sla !== undefined ? { slaMs: opts.sla } : {}),
        hashKeys: opts.hashKeys ?? false,
        scan: opts.scan ?? false,
        readRate: opts.readRate ?? ctx.config.scanner.readRateLimit,
      },
      {
        onRow(row) {
          figures?.add(row);
          rows.write(row);
        },
        onProgress(at, done, total) {
          // The archive pass counts data files; the table pass counts items read (a total it cannot know).
          phase = at;
          progress.update(done, at === 'archive' ? total : done);
        },
      },
    );
  } finally {
    progress.stop();
  }
  if (opts.html !== undefined && figures)
    await writeHtmlReport(ctx, storage, {
      file: opts.html,
      report,
      figures: figures.figures(report.slaMs),
      hashKeys: opts.hashKeys ?? false,
      command: commandLine(cmd),
    });
  rows.end(report);
  return report.breach ? EXIT.breach : EXIT.ok;
}

/**
 * The audit's rows as they come: a JSON line or a CSV line each, or (text) the noteworthy ones kept for the list
 * under the summary, at most `limit`; `end` writes the summary (on stderr for CSV).
 */
async function rowWriter(ctx: CliContext, format: Format, limit: number) {
  const { AUDIT_COLUMNS, auditRecord, droppedSettingsNote, droppedTableNote } =
    await import('../../archive-tools/audit');
  const { csvLine } = await import('../kit/csv');
  const listed: AuditRow[] = [];
  let unlisted = 0;
  if (format === 'csv') ctx.io.stdout.write(csvLine(AUDIT_COLUMNS));
  return {
    write(row: AuditRow): void {
      if (format === 'json') ctx.io.stdout.write(JSON.stringify(auditRecord(row)) + '\n');
      else if (format === 'csv') {
        const record = auditRecord(row);
        ctx.io.stdout.write(csvLine(AUDIT_COLUMNS.map((c) => record[c])));
      } else if (NOTEWORTHY.has(row.status) && listed.length < limit) listed.push(row);
      else if (NOTEWORTHY.has(row.status)) unlisted++;
    },
    end(report: AuditReport): void {
      if (format === 'json') {
        ctx.io.stdout.write(JSON.stringify({ summary: report }) + '\n');
        return;
      }
      const out = format === 'csv' ? ctx.io.stderr : ctx.io.stdout;
      if (format === 'text') printRows(ctx.io, listed, unlisted);
      out.write(
        summaryText(report, useColour(ctx.io, out), {
          table: droppedTableNote,
          settings: droppedSettingsNote,
        }),
      );
    },
  };
}

/** Rows per table of the HTML report when --limit is not given. */
const HTML_ROW_LIMIT = 10_000;

/** The command line as typed, quoted for a POSIX shell where needed. */
function commandLine(cmd: Command): string {
  let root = cmd;
  while (root.parent) root = root.parent;
  const raw = (root as unknown as { rawArgs?: unknown }).rawArgs;
  const args = Array.isArray(raw) ? raw.map(String) : process.argv.slice(2);
  const quote = (a: string): string =>
    /^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
  return ['ttlstream', ...args].map(quote).join(' ');
}

/**
 * Verifies the archive files that can hold the window's deletions (deletion hours from --from to now), renders the
 * page and writes it. A verify that cannot run is said in the page, not an error of the audit.
 */
async function writeHtmlReport(
  ctx: CliContext,
  storage: ArchiveStorage,
  r: { file: string; report: AuditReport; figures: AuditFigures; hashKeys: boolean; command: string },
): Promise<void> {
  const { verifyArchive } = await import('../../archive-tools/verify');
  const { renderAuditHtml } = await import('./html/render');
  const { writeFile } = await import('node:fs/promises');
  const fromMs = Date.parse(r.report.from);
  let verify: VerifyOutcome;
  try {
    const v = await verifyArchive(storage, { table: r.report.table, fromMs, toMs: Date.now() + 3_600_000 });
    verify = { ok: v.findings.length === 0, files: v.files, rows: v.rows, findings: v.findings };
  } catch (err) {
    verify = { error: err instanceof Error ? err.message : String(err) };
  }
  const page = renderAuditHtml({
    report: r.report,
    figures: r.figures,
    verify,
    hashKeys: r.hashKeys,
    generatedAt: new Date().toISOString(),
    version: VERSION,
    command: r.command,
  });
  await writeFile(r.file, page);
  ctx.io.stderr.write(`audit: HTML report written to ${r.file} (${page.length} bytes)\n`);
}

function printRows(io: CliIo, rows: AuditRow[], unlisted: number): void {
  if (rows.length === 0) return;
  const at = (ms: number | null): string => (ms === null ? '' : new Date(ms).toISOString());
  io.stdout.write(
    renderTable(
      ['STATUS', 'TTL INSTANT', 'LAG', 'KEY', 'EVENT ID', 'KAFKA', 'ARCHIVE'],
      rows.map((r) => [
        r.status.toUpperCase(),
        at(r.ttlAtMs),
        r.lagMs === null ? '' : formatDuration(Math.max(0, r.lagMs)),
        r.key,
        r.eventID ?? '',
        r.topic === null ? '' : `${r.topic} p${r.partition}@${r.offset}`,
        r.file === null ? '' : `${r.file}#${r.row}`,
      ]),
    ),
  );
  if (unlisted > 0) io.stdout.write(`(${unlisted} more; raise --limit, or use --csv or --json)\n`);
}

/** The sentences about a dropped table (archive-tools/audit/report.ts), passed in: command files load no archiver code. */
interface DroppedNotes {
  table(d: DroppedTable): string;
  settings(d: DroppedTable): string;
}

function summaryText(r: AuditReport, colour: boolean, notes: DroppedNotes): string {
  const s = style(colour);
  const dropped = r.dropped;
  const presentNote = dropped
    ? '  (the table no longer exists: no item of it can be present)'
    : `  (expired in the window, not deleted; table read by ${r.tableReadVia})`;
  const d = (ms: number): string => formatDuration(Math.max(0, ms));
  const lag = r.lagMs ? `   lag p50 ${d(r.lagMs.p50)}  p99 ${d(r.lagMs.p99)}  max ${d(r.lagMs.max)}` : '';
  const sla = r.slaMs === null ? 'no SLA given' : `SLA ${d(r.slaMs)}`;
  const lines = [
    `${s.bold(r.table)}: TTL instants ${r.from} .. ${r.to} (${sla})`,
    ...(dropped ? [`table                ${s.yellow(notes.table(dropped))}`] : []),
    `deletions            ${r.deletions}${lag}`,
    `later than the SLA   ${r.late > 0 ? s.red(String(r.late)) : r.late}`,
    `retracted            ${r.retracted}${s.dim('  (withdrawn by a RETRACT: not deletions)')}`,
    `TTL unknown          ${r.noTtl}${r.noTtl > 0 ? s.dim("  (deleted in the window; today's TTL settings give the image no instant)") : ''}`,
    `still present        ${r.present > 0 ? s.red(String(r.present)) : r.present}${s.dim(presentNote)}`,
    `pending              ${r.pending}${s.dim('  (still present, within the SLA)')}`,
    `held (legal hold)    ${r.held}${s.dim('  (kept legitimately)')}`,
    s.dim(
      dropped
        ? `read ${r.archiveRecordsRead} archived REMOVE record(s), no table (found missing at ${r.evaluatedAt}); ${notes.settings(dropped)}`
        : `read ${r.archiveRecordsRead} archived REMOVE record(s) and ${r.tableItemsRead} table item(s); judged at ${r.evaluatedAt}`,
    ),
    ...r.losses.map((l) =>
      (l.acknowledged ? s.yellow : s.red)(
        `loss                 ${l.detail}; detected ${l.detectedAt}${l.acknowledged ? ', acknowledged' : ', NOT acknowledged'}: deletions of the window may be missing here (${l.record})`,
      ),
    ),
    r.breach
      ? s.red(
          'BREACH: a deletion later than the SLA, an expired item still present, or a loss not acknowledged',
        )
      : s.green('OK'),
  ];
  return lines.join('\n') + '\n';
}
