import { Command, Option } from 'commander';
import { ValidationError } from '../../core/errors';
import type { CliContext } from '../kit/context';
import {
  action,
  argParser,
  example,
  failIfEmptyOption,
  jsonOption,
  type CommandEnv,
} from '../kit/command-kit';
import { EXIT, UsageError } from '../kit/exit-codes';
import { printJson } from '../kit/io';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';

interface AckLossFlags {
  topic?: string;
  table?: string;
  partition?: number;
  note?: string;
  dryRun?: boolean;
  failIfEmpty?: boolean;
  json?: boolean;
}

function partitionNumber(text: string): number {
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n))
    throw new ValidationError(`--partition: expected a partition number (0, 1, ...), got "${text}"`);
  return n;
}

/**
 * `ttlstream archive ack-loss`: acknowledge the losses of a topic's partitions (docs/operations.md,
 * TtlstreamArchiveLoss), which ends the alert on every archiver; a loss detected later fires again.
 */
export function archiveAckLossCommand(env: CommandEnv): Command {
  const cmd = new Command('ack-loss')
    .description(
      "acknowledge the archive losses of a topic's partitions (records that aged out of Kafka unarchived), or of a followed table's DynamoDB stream (--table: records that left the stream unread): writes a record under _loss-ack/ (_stream-loss-ack/) naming who, when and which losses, and TtlstreamArchiveLoss clears for them; a loss detected later fires again",
    )
    .addOption(
      new Option('--topic <name>', 'the stream topic of the loss (the alert\'s "topic" label)').conflicts(
        'table',
      ),
    )
    .option(
      '--table <name>',
      'a followed table whose DynamoDB stream lost records before the streams role read them (the alert\'s "table" label)',
    )
    .option(
      '--partition <n>',
      'only this partition (default: every partition of the topic with an unacknowledged loss)',
      argParser(partitionNumber),
    )
    .option('--note <text>', 'why, or where it is handled (a ticket), kept in the record')
    .option('--dry-run', 'list what would be acknowledged; write nothing')
    .addOption(archiveOption())
    .addOption(failIfEmptyOption())
    .addOption(jsonOption())
    .action(action<AckLossFlags>(env, acknowledge, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream archive ack-loss --topic ttlstream.remove --partition 3 --dry-run',
    'ttlstream archive ack-loss --topic ttlstream.remove --partition 3 --note "INC-1234: archiver down for a day"',
    'ttlstream archive ack-loss --table sessions --note "INC-1235: streams role down for a day"',
  );
}

/** `archive ack-loss`'s action: the losses acknowledged (or listed, in a dry run). */
async function acknowledge(ctx: CliContext, opts: AckLossFlags): Promise<number | void> {
  if ((opts.topic === undefined) === (opts.table === undefined))
    throw new UsageError('give either --topic (a Kafka loss) or --table (a stream loss)');
  if (opts.table !== undefined && opts.partition !== undefined)
    throw new UsageError('--partition goes with --topic, not with --table');
  if (opts.table !== undefined) return acknowledgeStream(ctx, { ...opts, table: opts.table });
  const { openExistingStorage } = await import('../kit/archive-root');
  const { acknowledgeLoss } = await import('../../archive-tools/loss-ack');
  const result = await acknowledgeLoss(await openExistingStorage(ctx), {
    topic: opts.topic ?? '',
    ...(opts.partition !== undefined ? { partition: opts.partition } : {}),
    actor: ctx.operator,
    ...(opts.note !== undefined ? { note: opts.note } : {}),
    dryRun: opts.dryRun ?? false,
  });
  if (opts.json) printJson(ctx.io, result);
  else {
    const out = ctx.io.stdout;
    const verb = result.dryRun ? 'would acknowledge' : 'acknowledged';
    for (const { path, ack } of result.acks) {
      const records = ack.losses.reduce((n, l) => n + BigInt(l.records), 0n);
      const ranges = ack.losses.map((l) => `${l.from}-${l.to}`).join(', ');
      out.write(
        `${verb} the loss of ${ack.topic} partition ${ack.partition}: offsets ${ranges} (${records} records), through offset ${ack.through}${result.dryRun ? '' : ` (${path})`}\n`,
      );
    }
    if (result.acks.length === 0) {
      const where = opts.partition !== undefined ? ` partition ${opts.partition}` : '';
      out.write(`no unacknowledged loss of ${opts.topic}${where} in ${ctx.config.archive.url}\n`);
    }
  }
  return result.acks.length === 0 && opts.failIfEmpty ? EXIT.empty : EXIT.ok;
}

/** `archive ack-loss --table`: the table's stream losses acknowledged (or listed, in a dry run). */
async function acknowledgeStream(ctx: CliContext, opts: AckLossFlags & { table: string }): Promise<number> {
  const { openExistingStorage } = await import('../kit/archive-root');
  const { acknowledgeStreamLoss } = await import('../../archive-tools/loss-ack');
  const result = await acknowledgeStreamLoss(await openExistingStorage(ctx), {
    table: opts.table,
    actor: ctx.operator,
    ...(opts.note !== undefined ? { note: opts.note } : {}),
    dryRun: opts.dryRun ?? false,
  });
  if (opts.json) printJson(ctx.io, result);
  else if (result.ack === undefined)
    ctx.io.stdout.write(`no unacknowledged stream loss of ${opts.table} in ${ctx.config.archive.url}\n`);
  else {
    const verb = result.dryRun ? 'would acknowledge' : 'acknowledged';
    const shards = result.ack.losses.map((l) => `${l.shardId} after ${l.after ?? 'its start'} (${l.reason})`);
    ctx.io.stdout.write(
      `${verb} ${shards.length} stream loss(es) of ${opts.table}: ${shards.join(', ')}${result.dryRun ? '' : ` (${result.ack.path})`}\n`,
    );
  }
  return result.ack === undefined && opts.failIfEmpty ? EXIT.empty : EXIT.ok;
}
