import { Command, Option } from 'commander';
import { ValidationError } from '../../core/errors';
import {
  action,
  argParser,
  example,
  failIfEmptyOption,
  jsonOption,
  type CommandEnv,
} from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson, style, useColour } from '../kit/io';
import { printInterrupted } from '../kit/interrupt';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import { parseKeyArg, parseKeyJson } from '../kit/key-arg';
import type { RestoreResult } from '../../archive-tools/restore';
import { fromOption, toOption } from '../kit/window-flags';

export { parseKeyJson };

export type TtlHandling = 'keep' | 'remove' | { extendSeconds: number };

/** `keep`, `remove` or `extend=<seconds>`. */
export function parseTtlHandling(text: string): TtlHandling {
  if (text === 'keep' || text === 'remove') return text;
  const m = /^extend=(\d+)$/.exec(text);
  if (m && Number(m[1]) > 0 && Number.isSafeInteger(Number(m[1]))) return { extendSeconds: Number(m[1]) };
  throw new ValidationError(`expected keep, remove or extend=<seconds>, got "${text}"`);
}

/** A DynamoDB attribute name (1-255 characters), checked here so a typo is a usage error. */
export function parseTtlAttribute(text: string): string {
  if (text.length < 1 || text.length > 255)
    throw new ValidationError(`expected an attribute name of 1-255 characters, got "${text}"`);
  return text;
}

interface RestoreFlags {
  table: string;
  key?: Record<string, unknown>;
  keyPrefix?: string;
  from?: number;
  to?: number;
  targetTable?: string;
  ttl: TtlHandling;
  ttlAttribute?: string;
  overwrite?: boolean;
  dryRun?: boolean;
  failIfEmpty?: boolean;
  json?: boolean;
}

export function restoreCommand(env: CommandEnv): Command {
  const cmd = new Command('restore')
    .description(
      'bring deleted items back from the archive (the latest archived deletion of each key, retractions honoured)',
    )
    .requiredOption('-t, --table <name>', 'the table the items were deleted from')
    .addOption(
      new Option('--key <json>', 'one item key as DynamoDB JSON, or file://key.json, or - (stdin)')
        .argParser(argParser(parseKeyArg))
        .conflicts('keyPrefix'),
    )
    .option('--key-prefix <prefix>', 'items whose hash-key value starts with this')
    .addOption(fromOption('deleted at or after (ISO-8601)'))
    .addOption(toOption('deleted before (ISO-8601)'))
    .option('--target-table <name>', 'write into this table instead (same key schema)')
    .option(
      '--ttl <handling>',
      'keep (as deleted: expires again at once if past), remove (default: the restore sticks), extend=<seconds>',
      argParser(parseTtlHandling),
      'remove' as TtlHandling,
    )
    .option(
      '--ttl-attribute <name>',
      "the attribute --ttl acts on (DynamoDB semantics: a Number of epoch seconds), instead of the tables' TTL settings; needed when those are not available, e.g. restoring into another table",
      argParser(parseTtlAttribute),
    )
    .option('--overwrite', 'replace items that exist now (default: never overwrite)')
    .option('--dry-run', 'show what would be written, write nothing')
    .addOption(archiveOption())
    .addOption(failIfEmptyOption())
    .addOption(jsonOption())
    .action(action<RestoreFlags>(env, runRestore, { overrides: archiveOverrides }));
  return example(
    cmd,
    `ttlstream restore --table orders --key '{"id":{"S":"o-1"}}'`,
    'ttlstream restore --table orders --key-prefix customer#42 --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --dry-run',
    'ttlstream restore --table orders --target-table orders_restored --ttl extend=86400 --json',
    'ttlstream restore --table orders --target-table orders_copy --ttl-attribute expiresAt --ttl remove',
  );
}

/** The restore itself: the archive's latest deletion of each matching key written back, then the summary. */
async function runRestore(ctx: CliContext, opts: RestoreFlags): Promise<number> {
  if (opts.from !== undefined && opts.to !== undefined && opts.from > opts.to) {
    throw new ValidationError('--from is after --to');
  }
  const progress = ctx.progress('restore', { json: opts.json ?? false });
  ctx.onInterrupt((signal) =>
    printInterrupted(ctx.io, opts.json ?? false, {
      command: 'restore',
      signal,
      done: progress.done,
      total: progress.total,
      unit: 'key',
      did: opts.dryRun ? 'nothing was written (dry run)' : 'each one restored or skipped',
      rerun: opts.dryRun
        ? 'a rerun is safe: a dry run writes nothing'
        : 'a rerun of the same command is safe: restore is idempotent (items restored so far exist now and are skipped' +
          (opts.overwrite ? ', or, with --overwrite, written again with the same archived image)' : ')'),
      writes: !opts.dryRun,
    }),
  );
  const { restore } = await import('../../archive-tools/restore');
  const { openExistingStorage } = await import('../kit/archive-root');
  const storage = await openExistingStorage(ctx);
  let result;
  try {
    result = await restore(
      {
        storage,
        ddb: ctx.ddb,
        // An explicit --ttl-attribute wins: restore() consults the TTL settings first and falls back to
        // the attribute only when it has no settings store.
        ...(opts.ttlAttribute === undefined ? { settingsStore: ctx.settingsStore } : {}),
        logger: ctx.logger,
      },
      {
        table: opts.table,
        ...(opts.targetTable !== undefined ? { targetTable: opts.targetTable } : {}),
        ...(opts.key !== undefined ? { key: JSON.stringify(opts.key) } : {}),
        ...(opts.keyPrefix !== undefined ? { keyPrefix: opts.keyPrefix } : {}),
        ...(opts.from !== undefined ? { fromMs: opts.from } : {}),
        ...(opts.to !== undefined ? { toMs: opts.to } : {}),
        ttl: opts.ttl,
        ...(opts.ttlAttribute !== undefined ? { ttlAttribute: opts.ttlAttribute } : {}),
        overwrite: opts.overwrite ?? false,
        dryRun: opts.dryRun ?? false,
        onProgress: (done: number, total: number) => progress.update(done, total),
      },
    );
  } finally {
    progress.stop();
  }
  if (opts.json) printJson(ctx.io, result);
  else printRestored(ctx, opts, result);
  if (result.failed.length > 0) return 1;
  const matched =
    result.restored + result.skippedPresent + result.skippedRetracted + (result.wouldWrite?.length ?? 0);
  if (matched > 0) return 0;
  const { reportNoMatch } = await import('../kit/zero-match');
  return reportNoMatch(ctx, storage, opts);
}

function printRestored(ctx: CliContext, opts: RestoreFlags, result: RestoreResult): void {
  const s = style(useColour(ctx.io));
  const target = opts.targetTable ?? opts.table;
  const lines = [
    opts.dryRun
      ? `dry run: would write ${result.wouldWrite?.length ?? 0} item(s) to ${target}`
      : `restored ${s.green(String(result.restored))} item(s) to ${target}`,
    `skipped ${result.skippedPresent} already present${opts.overwrite ? '' : ' (use --overwrite to replace)'}, ${result.skippedRetracted} retracted`,
  ];
  if (result.expiresAgain > 0) {
    lines.push(
      s.yellow(`${result.expiresAgain} item(s) kept an expired TTL (--ttl keep) and will be deleted again`),
    );
  }
  if (opts.dryRun)
    for (const w of result.wouldWrite ?? []) lines.push(`  ${w.key}  ${JSON.stringify(w.item)}`);
  for (const f of result.failed) lines.push(s.red(`failed ${f.key}: ${f.reason}`));
  ctx.io.stdout.write(lines.join('\n') + '\n');
}
