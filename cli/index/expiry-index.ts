import { Command } from 'commander';
import { ConflictError, ValidationError } from '../../core/errors';
import { action, argParser, example, positiveInt, jsonOption, type CommandEnv } from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson } from '../kit/io';
import { createProgress } from '../kit/progress';

/** The table's TTL settings with the expiry index opted in (`ttl update --expiry-index`), or a ConflictError saying so. */
async function indexedSettings(ctx: CliContext, table: string) {
  const d = await ctx.settingsStore.describe(table);
  if (!d.settings?.expiryIndex)
    throw new ConflictError(
      `TTL on ${table} has no expiry index in its settings (status ${d.status}); run ttlstream ttl update --table ${table} --enable ... --expiry-index first`,
    );
  return d.settings;
}

const table = ['-t, --table <name>', 'the table'] as const;

/** `ttlstream index create|describe|drop|backfill`: the expiry index of one table (decision 0011). */
export function expiryIndexCommand(env: CommandEnv): Command {
  const index = new Command('index').description(
    "a table's expiry index: a sparse GSI the scanner queries for expired items instead of scanning the table",
  );
  return index
    .addCommand(describeCommand(env))
    .addCommand(createCommand(env))
    .addCommand(dropCommand(env))
    .addCommand(backfillCommand(env));
}

function describeCommand(env: CommandEnv): Command {
  const describe = new Command('describe')
    .description('the index status: NONE, CREATING, BACKFILLING, ACTIVE (discovery by index) or DELETING')
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(action<{ table: string; json?: boolean }>(env, describeIndex));
  example(describe, 'ttlstream index describe --table sessions');
  return describe;
}

function createCommand(env: CommandEnv): Command {
  const create = new Command('create')
    .description('create the GSI (UpdateTable); then run index backfill for the items already there')
    .requiredOption(...table)
    .option(
      '--read-capacity <units>',
      'provisioned tables only: the index read capacity',
      argParser(positiveInt),
    )
    .option(
      '--write-capacity <units>',
      'provisioned tables only: the index write capacity',
      argParser(positiveInt),
    )
    .action(action<{ table: string; readCapacity?: number; writeCapacity?: number }>(env, createIndex));
  example(create, 'ttlstream index create --table sessions');
  return create;
}

function dropCommand(env: CommandEnv): Command {
  const drop = new Command('drop')
    .description('delete the GSI; the scanner goes back to scanning the table')
    .requiredOption(...table)
    .action(action<{ table: string }>(env, dropIndex));
  example(drop, 'ttlstream index drop --table sessions');
  return drop;
}

function backfillCommand(env: CommandEnv): Command {
  const backfill = new Command('backfill')
    .description(
      'stamp existing items with the shard attribute (cosmos: and the derived expiry) so they join the index; resumable, any number of processes',
    )
    .requiredOption(...table)
    .option(
      '--rate <items/s>',
      'ceiling on items read plus written per second by this process',
      argParser(positiveInt),
      1000,
    )
    .option(
      '--segments <n>',
      'parallel scan segments (leased; keep the same value when resuming)',
      argParser(positiveInt),
      8,
    )
    .option('--dry-run', 'read and count what would be stamped; write nothing')
    .addOption(jsonOption())
    .action(
      action<{ table: string; rate: number; segments: number; dryRun?: boolean; json?: boolean }>(
        env,
        backfillIndex,
      ),
    );
  example(
    backfill,
    'ttlstream index backfill --table sessions --dry-run',
    'ttlstream index backfill --table sessions --rate 2000',
  );
  return backfill;
}

/** `index describe`'s action: the expiry index's state on the table. */
async function describeIndex(
  ctx: CliContext,
  opts: { table: string; json?: boolean },
): Promise<number | void> {
  const { describeExpiryIndex } = await import('../../control/expiry-index');
  const d = await describeExpiryIndex(ctx.ddb, ctx.config.tables.control, opts.table);
  if (opts.json) printJson(ctx.io, { table: opts.table, ...d });
  else
    ctx.io.stdout.write(
      `table       ${opts.table}\nstatus      ${d.status}\n` +
        (d.backfilledAt ? `backfilled  ${new Date(d.backfilledAt).toISOString()}\n` : ''),
    );
}

/** `index create`'s action: the GSI's creation started (UpdateTable). */
async function createIndex(
  ctx: CliContext,
  opts: { table: string; readCapacity?: number; writeCapacity?: number },
): Promise<number | void> {
  const settings = await indexedSettings(ctx, opts.table);
  const { createExpiryIndex } = await import('../../control/expiry-index');
  if ((opts.readCapacity === undefined) !== (opts.writeCapacity === undefined))
    throw new ValidationError('--read-capacity and --write-capacity go together');
  await createExpiryIndex(
    ctx.ddb,
    opts.table,
    settings,
    opts.readCapacity !== undefined && opts.writeCapacity !== undefined
      ? { readCapacityUnits: opts.readCapacity, writeCapacityUnits: opts.writeCapacity }
      : undefined,
  );
  ctx.io.stdout.write(
    `index creation started on ${opts.table} (CREATING); then: ttlstream index backfill --table ${opts.table}\n`,
  );
}

/** `index drop`'s action: the GSI's deletion started. */
async function dropIndex(ctx: CliContext, opts: { table: string }): Promise<number | void> {
  const { dropExpiryIndex } = await import('../../control/expiry-index');
  await dropExpiryIndex(ctx.ddb, ctx.config.tables.control, opts.table);
  ctx.io.stdout.write(`index deletion started on ${opts.table} (DELETING)\n`);
}

/** `index backfill`'s action: existing items stamped so they join the index. */
async function backfillIndex(
  ctx: CliContext,
  opts: { table: string; rate: number; segments: number; dryRun?: boolean; json?: boolean },
): Promise<number | void> {
  const settings = await indexedSettings(ctx, opts.table);
  const { backfillExpiryIndex } = await import('../../scanner/backfill');
  const bar = createProgress(ctx.io, opts.dryRun ? 'backfill (dry run)' : 'backfill', {
    json: opts.json === true,
  });
  const p = await backfillExpiryIndex({
    ddb: ctx.ddb,
    controlTable: ctx.config.tables.control,
    table: opts.table,
    settings,
    segments: opts.segments,
    ratePerSec: opts.rate,
    dryRun: opts.dryRun === true,
    leaseMs: ctx.config.scanner.leaseMs,
    logger: ctx.logger,
    onProgress: (q) => bar.update(q.scanned, Math.max(q.scanned, q.approximateItems)),
  });
  bar.stop();
  if (opts.json) printJson(ctx.io, { table: opts.table, dryRun: opts.dryRun === true, ...p });
  else
    ctx.io.stdout.write(
      `${opts.dryRun ? 'would stamp' : 'stamped'}  ${p.stamped}\nalready    ${p.alreadyStamped}\nskipped    ${p.skipped} (no expiry the index can sort by)\nconflicts  ${p.conflicts} (written or deleted meanwhile; left to the writer)\nread       ${p.scanned}\nsegments   ${p.segmentsDone}/${p.segments} done\n`,
    );
}
