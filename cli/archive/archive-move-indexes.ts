import { Command } from 'commander';
import type { CliContext } from '../kit/context';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import { EXIT } from '../kit/exit-codes';
import { printJson, renderTable } from '../kit/io';
import { createProgress, untilInterrupted } from '../kit/progress';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

interface MoveFlags {
  table?: string;
  dryRun?: boolean;
  json?: boolean;
}

/** `ttlstream archive move-indexes`: key indexes beside their data files moved to `_index/` (docs/decisions/0033). */
export function archiveMoveIndexesCommand(env: CommandEnv): Command {
  const cmd = new Command('move-indexes')
    .description(
      'move the key indexes an archive written before the _index/ layout keeps beside its data files to _index/, each checked against its seal first, so Athena and Trino read the partition folders as they are; safe to stop and run again',
    )
    .option('-t, --table <name>', 'only this table')
    .option('--dry-run', 'check and list what would be moved; move nothing')
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<MoveFlags>(env, move, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive move-indexes --dry-run',
    'ttlstream archive move-indexes --table orders --json',
  );
}

/** `archive move-indexes`'s action: exit 1 when an index was left beside (it does not match its seal, or has none). */
async function move(ctx: CliContext, opts: MoveFlags): Promise<number | void> {
  const { openStorage } = await import('./files');
  const { moveIndexes } = await import('../../archive-tools/relayout');
  const progress = createProgress(ctx.io, 'move-indexes', { json: opts.json ?? false });
  // SIGINT stops between two indexes: each is at one place or both, never neither.
  const result = await untilInterrupted(progress, ctx.stopSignal, (signal) =>
    moveIndexes(openStorage(ctx), {
      ...(opts.table !== undefined ? { table: opts.table } : {}),
      dryRun: opts.dryRun ?? false,
      signal,
      onProgress: (done, total) => progress.update(done, total),
    }),
  );
  const code = result.stopped || result.refused.length > 0 ? EXIT.failure : EXIT.ok;
  if (opts.json) {
    printJson(ctx.io, { ok: code === EXIT.ok, ...result });
    return code;
  }
  const out = ctx.io.stdout;
  if (result.dryRun) for (const p of result.moved) out.write(`would move ${p}\n`);
  if (result.refused.length > 0)
    out.write(
      renderTable(
        ['LEFT BESIDE', 'WHY'],
        result.refused.map((r) => [r.path, r.reason]),
      ),
    );
  out.write(
    `${result.dryRun ? 'would move' : 'moved'} ${result.moved.length} key index(es) to _index/` +
      (result.refused.length > 0 ? `; ${result.refused.length} left beside (listed above)` : '') +
      (result.stopped ? '; stopped by SIGINT before the end (run it again to go on)' : '') +
      '\n',
  );
  return code;
}
