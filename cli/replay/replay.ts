import { Command, Option } from 'commander';
import { ValidationError } from '../../core/errors';
import { action, example, failIfEmptyOption, jsonOption, type CommandEnv } from '../kit/command-kit';
import { printJson } from '../kit/io';
import { printInterrupted } from '../kit/interrupt';
import { archiveOverrides, archiveOption } from '../kit/archive-overrides';
import type { CliContext } from '../kit/context';
import type { ArchiveStorage } from '../../archive/storage';
import { fromOption, toOption } from '../kit/window-flags';

interface ReplayFlags {
  table: string;
  from: number;
  to: number;
  topic: string;
  encoding: 'avro' | 'json';
  failIfEmpty?: boolean;
  json?: boolean;
  dryRun?: boolean;
}

export function replayCommand(env: CommandEnv): Command {
  const cmd = new Command('replay')
    .description(
      "re-publish a table's archived REMOVE records of a time window to a topic (original eventIDs, order per key " +
        'kept), encoded as the producer encodes them: with schemas.registry, Avro in the Confluent wire format',
    )
    .requiredOption('-t, --table <name>', 'the table')
    .addOption(fromOption('deleted at or after (ISO-8601)', true))
    .addOption(toOption('deleted before (ISO-8601)', true))
    .requiredOption('--topic <name>', 'the topic to publish to (must exist)')
    .addOption(
      new Option('--encoding <encoding>', 'record encoding').choices(['avro', 'json']).default('avro'),
    )
    .addOption(archiveOption())
    .option(
      '--dry-run',
      'list the records the replay would publish, in order, and publish nothing (the topic must exist)',
    )
    .addOption(failIfEmptyOption())
    .addOption(jsonOption())
    .action(action<ReplayFlags>(env, replayWindow, { overrides: archiveOverrides }));
  return example(
    cmd,
    'ttlstream replay --table orders --from 2024-05-01T00:00:00Z --to 2024-05-02T00:00:00Z --topic orders.ttl-replay',
    'ttlstream replay --table orders --from 2024-05-01 --to 2024-05-02 --topic orders.ttl-replay --encoding json --json',
    'ttlstream replay --table orders --from 2024-05-01 --to 2024-05-02 --topic orders.ttl-replay --dry-run',
  );
}

/** `replay`'s action: the window's archived REMOVE records re-published, in the producer's encoding. */
async function replayWindow(ctx: CliContext, opts: ReplayFlags): Promise<number> {
  if (opts.from > opts.to) throw new ValidationError('--from is after --to');
  const progress = ctx.progress('replay', { json: opts.json ?? false });
  ctx.onInterrupt((signal) =>
    printInterrupted(ctx.io, opts.json ?? false, {
      command: 'replay',
      signal,
      done: progress.done,
      total: progress.total,
      unit: 'record',
      did: opts.dryRun ? 'nothing was published (dry run)' : `published to ${opts.topic}`,
      rerun:
        'a rerun publishes the whole window again with the same eventIDs: safe for consumers that de-duplicate by eventID (docs/stream-contract.md)',
      writes: !opts.dryRun,
    }),
  );
  const { replay } = await import('../../archive-tools/replay');
  const { openExistingStorage } = await import('../kit/archive-root');
  const { streamSchemaIdsFor } = await import('../../schemas/schema-ids');
  const storage = await openExistingStorage(ctx);
  if (opts.dryRun) return planWindow(ctx, opts, storage);
  // What the producer writes: with schemas.registry, Avro in the Confluent wire format (decision 0025).
  const schemaIds = streamSchemaIdsFor(ctx.config.schemas.registry, ctx.logger);
  const format = opts.encoding === 'json' ? 'json' : schemaIds ? 'avro, Confluent wire format' : 'avro';
  let result;
  try {
    result = await replay(
      { storage, kafka: ctx.kafka('replay'), logger: ctx.logger, ...(schemaIds ? { schemaIds } : {}) },
      {
        table: opts.table,
        fromMs: opts.from,
        toMs: opts.to,
        topic: opts.topic,
        encoding: opts.encoding,
        onProgress: (done: number, total: number) => progress.update(done, total),
      },
    );
  } finally {
    progress.stop();
  }
  if (opts.json) printJson(ctx.io, { ...result, format });
  else
    ctx.io.stdout.write(
      `published ${result.published} record(s) to ${opts.topic} (${format}); skipped ${result.skippedRetracted} retracted\n`,
    );
  return result.published + result.skippedRetracted > 0 ? 0 : noMatch(ctx, storage, opts);
}

/** `replay --dry-run`: the records the replay would publish, in order, and nothing published. */
async function planWindow(ctx: CliContext, opts: ReplayFlags, storage: ArchiveStorage): Promise<number> {
  const { planReplay } = await import('../../archive-tools/replay');
  const plan = await planReplay(
    { storage, kafka: ctx.kafka('replay') },
    { table: opts.table, fromMs: opts.from, toMs: opts.to, topic: opts.topic, encoding: opts.encoding },
  );
  const records = plan.rows.map((r) => {
    const key: unknown = JSON.parse(r.key);
    return {
      eventID: r.eventID,
      deletedAt: new Date(r.deletedAtMs).toISOString(),
      key,
      file: r.file,
      row: r.row,
    };
  });
  if (opts.json)
    printJson(ctx.io, {
      dryRun: true,
      wouldPublish: records.length,
      skippedRetracted: plan.skippedRetracted,
      topic: opts.topic,
      records,
    });
  else {
    const lines = records.map((r) => `  ${r.deletedAt}  ${r.eventID}  ${JSON.stringify(r.key)}`);
    lines.unshift(
      `dry run: would publish ${records.length} record(s) to ${opts.topic}; skipped ${plan.skippedRetracted} retracted; nothing was published`,
    );
    ctx.io.stdout.write(lines.join('\n') + '\n');
  }
  return records.length + plan.skippedRetracted > 0 ? 0 : noMatch(ctx, storage, opts);
}

async function noMatch(ctx: CliContext, storage: ArchiveStorage, opts: ReplayFlags): Promise<number> {
  const { reportNoMatch } = await import('../kit/zero-match');
  return reportNoMatch(ctx, storage, opts);
}
