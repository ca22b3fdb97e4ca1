import { Command } from 'commander';
import { ValidationError } from '../../core/errors';
import type { CliContext } from '../kit/context';
import { action, example, type CommandEnv } from '../kit/command-kit';
import { printJson } from '../kit/io';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

/** `ttlstream archive lifecycle`: the table's retention as an S3 lifecycle configuration (JSON). */
export function archiveLifecycleCommand(env: CommandEnv): Command {
  const cmd = new Command('lifecycle')
    .description(
      "print the S3 lifecycle configuration that expires the table's archive files after its retention (the S3-native alternative to `archive purge`; see docs/compliance.md: S3 records no purge, so verify reports those files missing)",
    )
    .requiredOption('-t, --table <name>', 'the table')
    .addOption(archiveOption('s3://bucket/prefix'))
    .action(action<{ table: string }>(env, printLifecycle, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive lifecycle --table orders > lifecycle.json',
    'aws s3api put-bucket-lifecycle-configuration --bucket my-archive --lifecycle-configuration file://lifecycle.json',
  );
}

/** `archive lifecycle`'s action: the table's retention as an S3 lifecycle configuration. */
async function printLifecycle(ctx: CliContext, opts: { table: string }): Promise<number | void> {
  const { parseArchiveUrl } = await import('../../archive/storage');
  const { lifecycleConfiguration } = await import('../../archive/retention/policy');
  const { retentionResolver } = await import('../../archive/retention/resolve');
  const url = parseArchiveUrl(ctx.config.archive.url);
  if (url.kind !== 's3')
    throw new ValidationError(
      `archive lifecycle: archive.url (TTLSTREAM_ARCHIVE_URL) is ${ctx.config.archive.url}; lifecycle rules exist for s3:// archives only (use \`ttlstream archive purge\`)`,
    );
  const days = await retentionResolver(ctx.config.archive.retentionDays, ctx.settingsStore)(opts.table);
  if (days === null)
    throw new ValidationError(
      `archive lifecycle: table ${opts.table} has no archive retention (set archive.retentionDays or the table's TTL settings archiveRetentionDays)`,
    );
  printJson(ctx.io, lifecycleConfiguration(opts.table, days, url.prefix));
}
