import { Command } from 'commander';
import type { CliContext } from '../kit/context';
import { action, argParser, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { parseDuration } from '../kit/duration';
import { EXIT } from '../kit/exit-codes';
import { printJson, renderTable, type OutStream } from '../kit/io';
import { createProgress, untilInterrupted } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import type { CompactResult } from '../../archive-tools/compact';
import { fromOption, toOption } from '../kit/window-flags';

interface CompactFlags {
  table?: string;
  from?: number;
  to?: number;
  after?: number;
  dryRun?: boolean;
  json?: boolean;
}

/** `ttlstream archive compact`: merge closed hours' rolls into few files in key order (docs/decisions/0037). */
export function archiveCompactCommand(env: CommandEnv): Command {
  const cmd = new Command('compact')
    .description(
      "merge each closed hour's data files of a table, across partitions, into files of archive.compactTargetBytes in the archive's format (rows in key order), give each compacted day a key index, and remove what they replace: each compaction recorded and sealed first under _compact/, so `archive verify` follows it; one process at a time per table; safe to stop and run again (the archivers do it every archive.compactIntervalMs)",
    )
    .option('-t, --table <name>', 'only this table')
    .addOption(fromOption('only hours from this deletion time (inclusive)'))
    .addOption(toOption('only hours before this deletion time (exclusive)'))
    .option(
      '--after <duration>',
      'compact an hour once it ended this long ago (default archive.compactAfterMs, 2h)',
      argParser(parseDuration),
    )
    .option(
      '--dry-run',
      'list the hours that would be compacted and the days that would get a key index; write nothing',
    )
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<CompactFlags>(env, compact, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive compact --dry-run',
    'ttlstream archive compact --table orders --from 2026-11-01T00:00Z --to 2026-11-08T00:00Z --json',
  );
}

/** `archive compact`'s action: exit 1 when an hour failed, a table was busy, or a stop ended the run early. */
async function compact(ctx: CliContext, opts: CompactFlags): Promise<number> {
  const { openExistingStorage, rangeOf } = await import('../kit/archive-root');
  const { compactArchive } = await import('../../archive-tools/compact');
  const { retentionResolver } = await import('../../archive/retention/resolve');
  const range = rangeOf(opts);
  const storage = await openExistingStorage(ctx);
  const { archive } = ctx.config;
  const progress = createProgress(ctx.io, 'compact', { json: opts.json ?? false });
  // SIGINT stops between two hours: each hour is compacted whole or picked up by the next run where it stopped.
  const result = await untilInterrupted(progress, ctx.stopSignal, (signal) =>
    compactArchive(storage, {
      ...(opts.table !== undefined ? { table: opts.table } : {}),
      ...(range?.fromMs !== undefined ? { fromMs: range.fromMs } : {}),
      ...(range?.toMs !== undefined ? { toMs: range.toMs } : {}),
      afterMs: opts.after ?? archive.compactAfterMs,
      targetBytes: archive.compactTargetBytes,
      maxRows: archive.compactMaxRows,
      format: archive.format,
      levels: { zstdLevel: archive.parquetZstdLevel, deflateLevel: archive.avroDeflateLevel },
      retentionDays: retentionResolver(archive.retentionDays, ctx.settingsStore),
      actor: ctx.operator,
      dryRun: opts.dryRun ?? false,
      signal,
      onProgress: (done, total) => progress.update(done, total),
    }),
  );
  const code = result.stopped || result.failed.length > 0 || result.busy.length > 0 ? EXIT.failure : EXIT.ok;
  if (opts.json) printJson(ctx.io, { ok: code === EXIT.ok, ...result });
  else printCompacted(ctx.io.stdout, result);
  return code;
}

function printCompacted(out: OutStream, r: CompactResult): void {
  if (r.dryRun) {
    if (r.planned.length > 0)
      out.write(
        renderTable(
          ['TABLE', 'HOUR', 'ROLL FILES'],
          r.planned.map((u) => [u.table, u.hour, String(u.rolls)]),
        ),
      );
    for (const d of r.days) out.write(`would index ${d.table} ${d.date}\n`);
    out.write(`would compact ${r.planned.length} hour(s) and index ${r.days.length} day(s)\n`);
    return;
  }
  if (r.failed.length > 0)
    out.write(
      renderTable(
        ['TABLE', 'HOUR', 'FAILED'],
        r.failed.map((f) => [f.table, f.hour, f.error]),
      ),
    );
  for (const b of r.busy)
    out.write(`${b.table}: its archive lock is held by ${b.holder ?? 'another process'}; run again later\n`);
  const t = r.totals;
  const compacted = r.units.filter((u) => u.number !== null).length;
  out.write(
    `compacted ${compacted} hour(s): ${t.inputs} file(s) of ${t.bytesIn} byte(s) into ${t.outputs} of ${t.bytesOut}, ${t.rowsOut} row(s)` +
      `; indexed ${r.days.length} day(s)` +
      (r.failed.length > 0 ? `; ${r.failed.length} failed (listed above; run again)` : '') +
      (r.stopped ? '; stopped by SIGINT before the end (run it again to go on)' : '') +
      '\n',
  );
}
