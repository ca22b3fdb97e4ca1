import { Command } from 'commander';
import { ValidationError } from '../../core/errors';
import {
  action,
  argParser,
  example,
  positiveInt,
  failIfEmptyOption,
  jsonOption,
  type CommandEnv,
} from '../kit/command-kit';
import { EXIT } from '../kit/exit-codes';
import { parseKeyArg } from '../kit/key-arg';
import { printJson, renderTable, style, useColour } from '../kit/io';
import { archiveAckLossCommand } from './archive-ack-loss';
import { archiveCompactCommand } from './archive-compact';
import { archiveEraseCommand } from './archive-erase';
import { archiveLifecycleCommand } from './archive-lifecycle';
import { archiveMoveIndexesCommand } from './archive-move-indexes';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import { archivePurgeCommand } from './archive-purge';
import { archiveDdlCommand, archiveQueryCommand } from './archive-query';
import { archiveVerifyCommand } from './archive-verify';
import type { CliContext } from '../kit/context';
import { fromOption, toOption } from '../kit/window-flags';

interface LsFlags {
  table?: string;
  from?: number;
  to?: number;
  json?: boolean;
}

interface ShowFlags {
  table?: string;
  key?: string;
  keyPrefix?: string;
  from?: number;
  to?: number;
  limit: number;
  failIfEmpty?: boolean;
  json?: boolean;
}

export function archiveCommand(env: CommandEnv): Command {
  const archive = new Command('archive').description(
    'explore the archive of deleted items (config archive.url)',
  );
  archive.addCommand(lsCommand(env));
  archive.addCommand(showCommand(env));
  archive.addCommand(archiveVerifyCommand(env));
  archive.addCommand(archivePurgeCommand(env));
  archive.addCommand(archiveEraseCommand(env));
  archive.addCommand(archiveLifecycleCommand(env));
  archive.addCommand(archiveMoveIndexesCommand(env));
  archive.addCommand(archiveCompactCommand(env));
  archive.addCommand(archiveAckLossCommand(env));
  archive.addCommand(archiveQueryCommand(env));
  archive.addCommand(archiveDdlCommand(env));
  return archive;
}

/** `archive ls`: the data files with their record counts. */
function lsCommand(env: CommandEnv): Command {
  const ls = new Command('ls')
    .description('list archive data files with their record counts')
    .option('-t, --table <name>', 'only this table')
    .addOption(fromOption('deletion time from (inclusive; with --table)'))
    .addOption(toOption('deletion time to (exclusive; with --table)'))
    .addOption(archiveOption())
    .addOption(jsonOption())
    .action(action<LsFlags>(env, listFiles, { overrides: archiveOverrides }));
  example(
    ls,
    'ttlstream archive ls',
    'ttlstream archive ls --table orders --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --json',
  );
  return ls;
}

/** `archive show`: the records of one data file, or of a table. */
function showCommand(env: CommandEnv): Command {
  const show = new Command('show')
    .description(
      'print archived records: of one data file, or of a table (optionally one key, a key prefix, a time window)',
    )
    .argument('[file]', 'a data file path as listed by `archive ls`')
    .option('-t, --table <name>', 'records of this table (through the key indexes)')
    .option(
      '--key <json>',
      'with --table: one item key as DynamoDB JSON, e.g. \'{"pk":{"S":"order#1"}}\', or file://key.json, or - (stdin)',
      argParser((v) => JSON.stringify(parseKeyArg(v))),
    )
    .option('--key-prefix <prefix>', 'with --table: hash-key values starting with this')
    .addOption(fromOption('with --table: deletion time from (inclusive)'))
    .addOption(toOption('with --table: deletion time to (exclusive)'))
    .option('--limit <n>', 'print at most this many records', argParser(positiveInt), 1000)
    .addOption(archiveOption())
    .addOption(failIfEmptyOption())
    .addOption(jsonOption())
    .action(action<ShowFlags>(env, showRecords, { overrides: archiveOverrides }));
  example(
    show,
    'ttlstream archive show table=orders/date=2024-05-01/hour=12/ttlstream%2Eremove+3+00000000000000000100-00000000000000000180.avro',
    'ttlstream archive show --table orders --key \'{"id":{"S":"o-1"}}\' --json',
    'ttlstream archive show --table orders --from 2024-05-01T00:00:00Z --to 2024-05-01T06:00:00Z',
  );
  return show;
}

/** `archive ls`'s action: the data files and their record counts, as a table or JSON. */
async function listFiles(ctx: CliContext, opts: LsFlags): Promise<void> {
  const { listArchiveFiles } = await import('./files');
  const { openExistingStorage, rangeOf } = await import('../kit/archive-root');
  const range = rangeOf(opts);
  if (range && opts.table === undefined) throw new ValidationError('--from/--to need --table');
  const files = await listArchiveFiles(await openExistingStorage(ctx), {
    ...(opts.table ? { table: opts.table } : {}),
    range,
  });
  if (opts.json) return printJson(ctx.io, files);
  if (files.length === 0) {
    ctx.io.stdout.write(
      `no archive files under ${ctx.config.archive.url}${opts.table ? ` for ${opts.table}` : ''}\n`,
    );
    return;
  }
  const n = (v: number | null): string => (v === null ? '?' : String(v));
  ctx.io.stdout.write(
    renderTable(
      ['TABLE', 'HOUR (UTC)', 'PARTITION', 'OFFSETS', 'REMOVES', 'RETRACTIONS', 'FILE'],
      files.map((f) => [
        f.table,
        f.hour,
        f.compaction ? '*' : String(f.partition),
        f.compaction
          ? `compaction ${f.compaction.number} (${f.compaction.file}/${f.compaction.files})`
          : `${f.firstOffset}-${f.lastOffset}`,
        n(f.removes),
        n(f.retractions),
        f.path,
      ]),
    ),
  );
  const total = files.reduce((a, f) => a + (f.removes ?? 0), 0);
  ctx.io.stdout.write(`${files.length} file(s), ${total} REMOVE record(s) under ${ctx.config.archive.url}\n`);
}

/** `archive show`'s action: the records of a file or of a table, one per line. */
async function showRecords(ctx: CliContext, opts: ShowFlags, command: Command): Promise<number | void> {
  const file = command.args[0];
  if ((file === undefined) === (opts.table === undefined)) {
    throw new ValidationError('give either a file or --table');
  }
  if (
    file !== undefined &&
    (opts.key || opts.keyPrefix || opts.from !== undefined || opts.to !== undefined)
  ) {
    throw new ValidationError('--key, --key-prefix, --from and --to go with --table, not with a file');
  }
  if (opts.key !== undefined && opts.keyPrefix !== undefined) {
    throw new ValidationError('--key and --key-prefix cannot be used together');
  }
  const { describeRow, recordsOfFile, recordsOfTable } = await import('./files');
  const { openExistingStorage } = await import('../kit/archive-root');
  const { archivedToJson } = await import('./archive-read');
  const storage = await openExistingStorage(ctx);
  const rows = file !== undefined ? await recordsOfFile(storage, file) : await recordsOfTable(storage, opts);
  const shown = rows.slice(0, opts.limit);
  // One JSON object per line, like kcat: a listing can be piped into jq or head as it goes.
  if (opts.json) for (const row of shown) ctx.io.stdout.write(JSON.stringify(archivedToJson(row)) + '\n');
  else {
    const s = style(useColour(ctx.io));
    for (const row of shown) ctx.io.stdout.write(describeRow(row, s) + '\n');
    const more = rows.length > shown.length ? ` (${rows.length - shown.length} more; raise --limit)` : '';
    ctx.io.stdout.write(s.dim(`${shown.length} record(s)${more}`) + '\n');
  }
  if (rows.length > 0) return;
  if (opts.table === undefined) return opts.failIfEmpty ? EXIT.empty : EXIT.ok;
  const { reportNoMatch } = await import('../kit/zero-match');
  return reportNoMatch(ctx, storage, { ...opts, table: opts.table });
}
