import { Command } from 'commander';
import type { GuardRecord } from '../../pipeline/guard';
import { action, example, jsonOption, type CommandEnv } from '../kit/command-kit';
import type { CliContext } from '../kit/context';
import { printJson } from '../kit/io';

function printGuard(ctx: CliContext, g: GuardRecord, extra: string[] = []): void {
  const at = (ms?: number): string => (ms ? new Date(ms).toISOString() : '-');
  const lines = [
    `table      ${g.table}`,
    `state      ${g.state}${g.cancelled ? ' (cancelled: pending marks discarded; paused until confirm)' : ''}`,
  ];
  if (g.reason) lines.push(`reason     ${g.reason}`);
  if (g.pausedAt) lines.push(`paused     ${at(g.pausedAt)}`);
  if (g.confirmedAt) lines.push(`confirmed  ${at(g.confirmedAt)} by ${g.confirmedBy ?? '?'}`);
  if (g.cancelledAt) lines.push(`cancelled  ${at(g.cancelledAt)} by ${g.cancelledBy ?? '?'}`);
  ctx.io.stdout.write([...lines, ...extra].join('\n') + '\n');
}

/**
 * The guard functions for an existing table: an unknown table is NotFoundError (not a guard row that
 * can never matter). Nothing is created: status is read-only, and confirm/cancel need a paused table,
 * whose guard row exists.
 */
async function guardDeps(ctx: CliContext, table: string) {
  const ttl = await ctx.settingsStore.describe(table);
  const { guardActionOptionsFrom } = await import('../../pipeline/guard/actions');
  return { deps: { ddb: ctx.ddb, options: guardActionOptionsFrom(ctx.config) }, ttl: ttl.status };
}

/** Why the guard does not watch a table at all, or undefined when it does. */
function notGuarded(ctx: CliContext, table: string, ttl: string): string | undefined {
  const { control, marks } = ctx.config.tables;
  if (table === control || table === marks) return "ttlstream's own table: no TTL, no guard";
  if (ttl === 'DISABLED') return 'TTL is DISABLED on this table: nothing to guard';
  return undefined;
}

export function guardCommand(env: CommandEnv): Command {
  const guard = new Command('guard').description(
    'the mass-deletion guard: see why a table is paused, resume it, or cancel',
  );
  const table = ['-t, --table <name>', 'the table'] as const;

  const status = new Command('status')
    .description(
      "a table's guard state: ARMED, PAUSED, CONFIRMED, or NOT GUARDED (TTL off, or ttlstream's own table)",
    )
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(action<{ table: string; json?: boolean }>(env, guardStatus));
  example(status, 'ttlstream guard status --table orders', 'ttlstream guard status --table orders --json');

  const confirm = new Command('confirm')
    .description(
      'resume deletions on a paused table (the guard stays quiet for this episode); refused unless paused',
    )
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(action<{ table: string; json?: boolean }>(env, confirmPaused));
  example(confirm, 'ttlstream guard confirm --table orders');

  const cancel = new Command('cancel')
    .description(
      "discard a paused table's pending deletion marks and keep it paused until confirm; refused unless paused",
    )
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(action<{ table: string; json?: boolean }>(env, cancelPaused));
  example(cancel, 'ttlstream guard cancel --table orders');

  return guard.addCommand(status).addCommand(confirm).addCommand(cancel);
}

/** `guard status`'s action: the table's guard state, or why it is not guarded. */
async function guardStatus(ctx: CliContext, opts: { table: string; json?: boolean }): Promise<number | void> {
  const { getGuard } = await import('../../pipeline/guard/actions');
  const { deps, ttl } = await guardDeps(ctx, opts.table);
  const g = await getGuard(deps, opts.table);
  // A guard row that says ARMED for a table nobody deletes from would be a false reassurance.
  const why = g.state === 'ARMED' ? notGuarded(ctx, opts.table, ttl) : undefined;
  if (why) {
    if (opts.json) printJson(ctx.io, { table: opts.table, state: 'NOT_GUARDED', ttl, reason: why });
    else ctx.io.stdout.write(`table      ${opts.table}\nstate      NOT GUARDED (${why})\n`);
    return;
  }
  if (opts.json) printJson(ctx.io, g);
  else printGuard(ctx, g);
}

/** `guard confirm`'s action: deletions on the paused table resumed. */
async function confirmPaused(
  ctx: CliContext,
  opts: { table: string; json?: boolean },
): Promise<number | void> {
  const { confirmGuard } = await import('../../pipeline/guard/actions');
  const g = await confirmGuard((await guardDeps(ctx, opts.table)).deps, opts.table, ctx.operator);
  if (opts.json) printJson(ctx.io, g);
  else printGuard(ctx, g);
}

/** `guard cancel`'s action: the paused table's pending marks discarded; it stays paused. */
async function cancelPaused(
  ctx: CliContext,
  opts: { table: string; json?: boolean },
): Promise<number | void> {
  const { cancelGuard } = await import('../../pipeline/guard/actions');
  const r = await cancelGuard((await guardDeps(ctx, opts.table)).deps, opts.table, ctx.operator);
  if (opts.json) printJson(ctx.io, r);
  else printGuard(ctx, r.guard, [`discarded  ${r.discardedMarks} pending mark(s)`]);
}
