import { Command } from 'commander';
import type { CliContext } from '../kit/context';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { EXIT } from '../kit/exit-codes';
import { printJson } from '../kit/io';
import { createProgress, untilInterrupted } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

interface PurgeFlags {
  table?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `ttlstream archive purge`: remove archive files past their table's retention (docs/compliance.md). */
export function archivePurgeCommand(env: CommandEnv): Command {
  const cmd = new Command('purge')
    .description(
      "remove archive data files whose records are all older than their table's retention (TTL settings archiveRetentionDays, else archive.retentionDays), recording each removal under _purge/ so `archive verify` still passes",
    )
    .option('-t, --table <name>', 'only this table')
    .option('--dry-run', 'list what would be removed; remove nothing')
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<PurgeFlags>(env, purge, { overrides: archiveOverrides }));
  return example(cmd, 'ttlstream archive purge --dry-run', 'ttlstream archive purge --table orders --json');
}

/** `archive purge`'s action: the files past their table's retention removed, or listed in a dry run. */
async function purge(ctx: CliContext, opts: PurgeFlags): Promise<number | void> {
  const { openStorage } = await import('./files');
  const { purgeArchive } = await import('../../archive-tools/purge');
  const { retentionResolver } = await import('../../archive/retention/resolve');
  const progress = createProgress(ctx.io, 'purge', { json: opts.json ?? false });
  // SIGINT stops between two files: each file is removed whole (record, index, data).
  const result = await untilInterrupted(progress, ctx.stopSignal, (signal) =>
    purgeArchive(openStorage(ctx), {
      retentionDays: retentionResolver(ctx.config.archive.retentionDays, ctx.settingsStore),
      actor: ctx.operator,
      ...(opts.table !== undefined ? { table: opts.table } : {}),
      dryRun: opts.dryRun ?? false,
      signal,
      onProgress: (done, total) => progress.update(done, total),
    }),
  );
  if (opts.json) {
    printJson(ctx.io, result);
  } else {
    const out = ctx.io.stdout;
    if (result.dryRun) for (const f of result.files) out.write(`would remove ${f.file}\n`);
    out.write(
      `${result.dryRun ? 'would remove' : 'removed'} ${result.files.length} file(s) with ${result.rows} row(s), ${result.bytes} byte(s)` +
        (result.alreadyPurged > 0 ? `; ${result.alreadyPurged} removed earlier` : '') +
        (result.stopped ? '; stopped by SIGINT before the end (run it again to go on)' : '') +
        '\n',
    );
  }
  return result.stopped ? EXIT.failure : EXIT.ok;
}
