import { Command, Option } from 'commander';
import type { PreviewResult } from '../../control/preview';
import { ConflictError } from '../../core/errors';
import type { CliContext } from '../kit/context';
import { action, argParser, example, positiveInt, jsonOption, type CommandEnv } from '../kit/command-kit';
import { formatDuration, parseDuration } from '../kit/duration';
import { printJson, style, useColour, type CliIo } from '../kit/io';
import {
  addTtlSettingsOptions,
  describeSettings,
  hasSettingsFlags,
  settingsFromFlags,
  type TtlSettingsFlags,
} from '../kit/ttl-flags';

interface PreviewFlags extends TtlSettingsFlags {
  table: string;
  within: number;
  limit: number;
  json?: boolean;
}

function printPreview(io: CliIo, r: PreviewResult, settings: string, withinMs: number): void {
  const s = style(useColour(io));
  const lines = [
    `${s.bold(r.table)}: ${settings}`,
    `scanned             ${r.scanned}${r.truncated ? s.yellow(' (stopped at --limit; the table has more)') : ''}`,
    `expired now         ${r.expiredNow}`,
    `expiring within ${formatDuration(withinMs).padEnd(3)} ${r.expiringWithin}`,
    `held (legal hold)   ${r.held}`,
    `no TTL attribute    ${r.withoutTtlAttribute}${r.withoutTtlAttribute > 0 ? s.dim('  (never deleted)') : ''}`,
    `ignored TTL values  ${Object.values(r.ignored).reduce((a, b) => a + b, 0)} ` +
      s.dim(
        `(${Object.entries(r.ignored)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')})`,
      ),
    `looks like millis   ${r.looksLikeMillis}${r.looksLikeMillis > 0 ? s.yellow('  ← epoch milliseconds? these expire thousands of years late') : ''}`,
  ];
  if (r.notInExpiryIndex !== undefined)
    lines.push(
      `not in expiry index ${r.notInExpiryIndex}${r.notInExpiryIndex > 0 ? s.yellow('  ← expired, found only by the sweep: a writer without the stamp?') : ''}`,
    );
  if (r.sampleKeys.length > 0)
    lines.push('sample keys:', ...r.sampleKeys.map((k) => `  ${JSON.stringify(k)}`));
  io.stdout.write(lines.join('\n') + '\n');
}

export function previewCommand(env: CommandEnv): Command {
  const cmd = addTtlSettingsOptions(
    new Command('preview')
      .description(
        "read-only: what TTL would delete now and soon (the table's settings, or the settings flags to try before enabling)",
      )
      .requiredOption('-t, --table <name>', 'the table')
      .addOption(
        new Option(
          '-w, --within <duration>',
          'also count items expiring within this duration (30s, 15m, 1h, 2d)',
        )
          .argParser(argParser(parseDuration))
          .default(3_600_000, '1h'),
      )
      .option('--limit <items>', 'read at most this many items', argParser(positiveInt), 100_000),
  )
    .addOption(jsonOption())
    .action(action<PreviewFlags>(env, previewTable));
  return example(
    cmd,
    'ttlstream preview --table orders --within 1h',
    'ttlstream preview --table orders --within 2d --attribute expiresAt --json   # before enabling TTL',
  );
}

/** `preview`'s action: what TTL would delete in the window, read only. */
async function previewTable(ctx: CliContext, opts: PreviewFlags): Promise<number | void> {
  let settings;
  if (hasSettingsFlags(opts)) {
    settings = await settingsFromFlags(opts);
  } else {
    const d = await ctx.settingsStore.describe(opts.table);
    if (!d.settings) {
      throw new ConflictError(
        `TTL is ${d.status} on ${opts.table}; pass settings flags (e.g. --attribute expiresAt) to preview before enabling`,
      );
    }
    settings = d.settings;
  }
  const { previewExpiring } = await import('../../control/preview');
  const progress = ctx.progress('preview', { json: opts.json ?? false });
  const detach = progress.active
    ? await (await import('./scan-progress')).trackScanProgress(ctx.ddb, opts.table, opts.limit, progress)
    : () => undefined;
  let result;
  try {
    result = await previewExpiring(ctx.ddb, opts.table, settings, {
      withinSeconds: Math.floor(opts.within / 1000),
      limit: opts.limit,
      nowMs: Date.now(),
    });
  } finally {
    detach();
  }
  if (opts.json) printJson(ctx.io, { ...result, settings });
  else printPreview(ctx.io, result, describeSettings(settings), opts.within);
}
