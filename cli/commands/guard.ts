import { Command } from 'commander';
import type { GuardRecord } from '../../producer/guard';
import { action, example, jsonOption, type CommandEnv } from '../command-kit';
import type { CliContext } from '../context';
import { printJson } from '../io';

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
 * can never matter), and the control table is created if this is the first thing ever run.
 */
async function guardDeps(ctx: CliContext, table: string) {
  await ctx.settingsStore.describe(table);
  const { ensureInternalTable } = await import('../../core/tables');
  await ensureInternalTable(ctx.ddb, ctx.config.tables.control);
  return { config: ctx.config, ddb: ctx.ddb };
}

export function guardCommand(env: CommandEnv): Command {
  const guard = new Command('guard').description(
    'the mass-deletion guard: see why a table is paused, resume it, or cancel',
  );
  const table = ['-t, --table <name>', 'the table'] as const;

  const status = new Command('status')
    .description("a table's guard state (ARMED, PAUSED, CONFIRMED)")
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(
      action<{ table: string; json?: boolean }>(env, async (ctx, opts) => {
        const { getGuard } = await import('../../producer/guard');
        const g = await getGuard(await guardDeps(ctx, opts.table), opts.table);
        if (opts.json) printJson(ctx.io, g);
        else printGuard(ctx, g);
      }),
    );
  example(status, 'ttlstream guard status --table orders', 'ttlstream guard status --table orders --json');

  const confirm = new Command('confirm')
    .description('resume deletions on a paused table (the guard stays quiet for this episode)')
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(
      action<{ table: string; json?: boolean }>(env, async (ctx, opts) => {
        const { confirmGuard } = await import('../../producer/guard');
        const g = await confirmGuard(await guardDeps(ctx, opts.table), opts.table, ctx.operator);
        if (opts.json) printJson(ctx.io, g);
        else printGuard(ctx, g);
      }),
    );
  example(confirm, 'ttlstream guard confirm --table orders');

  const cancel = new Command('cancel')
    .description("discard a paused table's pending deletion marks and keep it paused until confirm")
    .requiredOption(...table)
    .addOption(jsonOption())
    .action(
      action<{ table: string; json?: boolean }>(env, async (ctx, opts) => {
        const { cancelGuard } = await import('../../producer/guard');
        const r = await cancelGuard(await guardDeps(ctx, opts.table), opts.table, ctx.operator);
        if (opts.json) printJson(ctx.io, r);
        else printGuard(ctx, r.guard, [`discarded  ${r.discardedMarks} pending mark(s)`]);
      }),
    );
  example(cancel, 'ttlstream guard cancel --table orders');

  return guard.addCommand(status).addCommand(confirm).addCommand(cancel);
}
