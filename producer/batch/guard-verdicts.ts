import { judgeDeletes, mayDelete, type GuardLimits, type GuardRecord } from '../../pipeline/guard';
import { deleting, type BatchRun, type DecidedEntry, type Entry, type LiveEntry } from './state';

/** The entries this batch may act on, and the guard records of their tables (read fresh for every batch). */
export interface LiveEntries {
  live: LiveEntry[];
  guards: Map<string, GuardRecord>;
}

/**
 * Which tables may be acted on: ENABLED now, and not paused by the guard. An item the journal carries to the next
 * sweep (no intent in this batch: it is not a recovery) waits for it. The rest are left.
 */
export async function liveEntries(run: BatchRun): Promise<LiveEntries> {
  const { ctx, input, entries } = run;
  const enabled = await ctx.tables.get();
  const tableNames = [...new Set(entries.map((e) => e.address.table))];
  // A record for every table asked for (ARMED when it has no row).
  const guards = await ctx.guard.getMany(tableNames.filter((t) => enabled.has(t)));
  const waiting = (e: Entry): boolean => !e.intent && (input.skip?.has(e.address.sk) ?? false);
  const live: LiveEntry[] = [];
  for (const e of entries) {
    const settings = enabled.get(e.address.table);
    const guard = guards.get(e.address.table);
    if (settings && guard && mayDelete(guard.state) && !waiting(e)) live.push(Object.assign(e, { settings }));
  }
  run.stats.left += entries.length - live.length;
  return { live, guards };
}

/**
 * The deletion-rate guard, before anything is written: a table over its limit is paused and keeps all its marks.
 * Returns the entries of the tables still allowed to delete.
 */
export async function applyRateGuard(
  run: BatchRun,
  live: DecidedEntry[],
  guards: Map<string, GuardRecord>,
): Promise<DecidedEntry[]> {
  const { ctx } = run;
  const limits: GuardLimits = ctx.options.guard;
  const plannedByTable = new Map<string, number>();
  for (const e of live.filter(deleting)) {
    plannedByTable.set(e.address.table, (plannedByTable.get(e.address.table) ?? 0) + 1);
  }
  const paused = new Set<string>();
  for (const [table, g] of guards) {
    const n = plannedByTable.get(table);
    if (n === undefined) continue;
    // Counted while CONFIRMED too: the scanner re-arms the guard only once the rate is back under the limit.
    const verdict = judgeDeletes(g.state, await ctx.guard.countDeletes(table, n), limits);
    if (verdict.action !== 'pause') continue;
    if (await ctx.guard.pause(table, verdict.reason)) {
      ctx.logger.error(
        { table, reason: verdict.reason },
        'mass-deletion guard: table paused; confirm or cancel via the control plane',
      );
    }
    paused.add(table);
  }
  const work = live.filter((e) => !paused.has(e.address.table));
  run.stats.left += live.length - work.length;
  return work;
}
