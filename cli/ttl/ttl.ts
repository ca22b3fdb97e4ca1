import { Command } from 'commander';
import type { TtlDescription } from '../../control/settings-store';
import { ValidationError } from '../../core/errors';
import { action, argParser, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson, renderTable, style, useColour, type CliIo } from '../kit/io';
import {
  addTtlSettingsOptions,
  describeSettings,
  parseExpireAfterSeconds,
  carriedByFlags,
  settingsFromFlags,
  type TtlSettingsFlags,
} from '../kit/ttl-flags';

function isoOrDash(ms: number): string {
  return ms > 0 ? new Date(ms).toISOString() : '-';
}

function statusText(io: CliIo, status: string): string {
  const s = style(useColour(io));
  return status === 'ENABLED' ? s.green(status) : status === 'DISABLED' ? s.dim(status) : s.yellow(status);
}

function printDescription(io: CliIo, d: TtlDescription): void {
  const rows = [
    ['table', d.table],
    ['status', statusText(io, d.status)],
    ['settings', describeSettings(d.settings)],
    ['changed', d.changedAt > 0 ? `${isoOrDash(d.changedAt)} by ${d.changedBy}` : 'never'],
  ];
  if (d.status === 'ENABLING' || d.status === 'DISABLING')
    rows.push(['settles at', isoOrDash(d.statusSettlesAt)]);
  if (d.expiryIndex) rows.push(['index', `${d.expiryIndex.status} (${d.expiryIndex.shards} shards)`]);
  io.stdout.write(rows.map(([k, v]) => `${(k as string).padEnd(10)} ${v as string}`).join('\n') + '\n');
}

interface UpdateFlags extends TtlSettingsFlags {
  table: string;
  enable?: boolean;
  disable?: boolean;
  json?: boolean;
}

export function ttlCommand(env: CommandEnv): Command {
  return new Command('ttl')
    .description("set and inspect tables' TTL (like UpdateTimeToLive / DescribeTimeToLive)")
    .addCommand(describeTtlCommand(env))
    .addCommand(listTtlCommand(env))
    .addCommand(updateTtlCommand(env));
}

function describeTtlCommand(env: CommandEnv): Command {
  const describe = new Command('describe')
    .description("a table's TTL status and settings")
    .requiredOption('-t, --table <name>', 'the table')
    .addOption(jsonOption())
    .action(action(env, describeTtl));
  return example(
    describe,
    'ttlstream ttl describe --table orders',
    'ttlstream ttl describe --table orders --json',
  );
}

async function describeTtl(ctx: CliContext, opts: { table: string; json?: boolean }): Promise<void> {
  const d = await ctx.settingsStore.describe(opts.table);
  if (opts.json) printJson(ctx.io, d);
  else printDescription(ctx.io, d);
}

function listTtlCommand(env: CommandEnv): Command {
  const list = new Command('list')
    .description('every table with its TTL status')
    .addOption(jsonOption())
    .action(action(env, listTtl));
  return example(list, 'ttlstream ttl list', 'ttlstream ttl list --json');
}

async function listTtl(ctx: CliContext, opts: { json?: boolean }): Promise<void> {
  const all = await ctx.settingsStore.list();
  if (opts.json) return printJson(ctx.io, all);
  ctx.io.stdout.write(
    renderTable(
      ['TABLE', 'STATUS', 'SETTINGS', 'CHANGED'],
      all.map((d) => [
        d.table,
        statusText(ctx.io, d.status),
        describeSettings(d.settings),
        isoOrDash(d.changedAt),
      ]),
    ),
  );
}

function updateTtlCommand(env: CommandEnv): Command {
  const update = addTtlSettingsOptions(
    new Command('update')
      .description('enable or disable TTL on a table, or change a mongo-mode expireAfterSeconds in place')
      .requiredOption('-t, --table <name>', 'the table')
      .option('--enable', 'enable TTL with the settings given by the flags below')
      .option('--disable', 'disable TTL (items stop expiring once DISABLED)'),
  )
    .addOption(jsonOption())
    .action(action(env, updateTtl));
  // Validate the number early, so a typo is a usage error before any service is contacted.
  update.options
    .find((o) => o.long === '--expire-after-seconds')
    ?.argParser(argParser((v) => (parseExpireAfterSeconds(v), v)));
  return example(
    update,
    'ttlstream ttl update --table orders --enable --attribute expiresAt',
    'ttlstream ttl update --table sessions --enable --mode cosmos --default-ttl 3600 --legal-hold-attribute hold',
    'ttlstream ttl update --table events --enable --mode mongo --time-field createdAt --time-format iso-8601 --expire-after-seconds 86400',
    'ttlstream ttl update --table events --expire-after-seconds 3600   # mongo collMod, in place',
    'ttlstream ttl update --table orders --disable',
  );
}

/** `ttl update`'s action: enable, disable, or change a mongo expireAfterSeconds in place. */
async function updateTtl(ctx: CliContext, opts: UpdateFlags): Promise<void> {
  if (opts.enable && opts.disable)
    throw new ValidationError('--enable and --disable cannot be used together');
  const store = ctx.settingsStore;
  let result: TtlDescription;
  if (opts.enable) {
    result = await store.update(
      opts.table,
      { enabled: true, settings: await settingsFromFlags(opts), carry: carriedByFlags(opts) },
      ctx.operator,
    );
  } else if (opts.disable) {
    result = await store.update(opts.table, { enabled: false }, ctx.operator);
  } else if (opts.expireAfterSeconds !== undefined) {
    result = await store.modifyMongo(
      opts.table,
      parseExpireAfterSeconds(opts.expireAfterSeconds),
      ctx.operator,
    );
  } else {
    throw new ValidationError('one of --enable, --disable or --expire-after-seconds is required');
  }
  if (opts.json) printJson(ctx.io, result);
  else printDescription(ctx.io, result);
}
