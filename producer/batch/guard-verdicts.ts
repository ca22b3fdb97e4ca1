import { judgeDeletes, mayDelete, type GuardLimits, type GuardRecord } from '../../pipeline/guard';
import { deleting, type BatchRun, type Entry } from './state';

/** The entries this batch may act on, and the guard records of their tables (read fresh for every batch). */
export interface LiveEntries {
  live: Entry[];
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
  const guards = await ctx.guard.getMany(tableNames.filter((t) => enabled.has(t)));
  const active = (t: string): boolean => enabled.has(t) && mayDelete((guards.get(t) as GuardRecord).state);
  const waiting = (e: Entry): boolean => !e.intent && (input.skip?.has(e.address.sk) ?? false);
  const live = entries.filter((e) => active(e.address.table) && !waiting(e));
  for (const e of live) e.settings = enabled.get(e.address.table);
  run.stats.left += entries.length - live.length;
  return { live, guards };
}

/**
 * The deletion-rate guard, before anything is written: a table over its limit is paused and keeps all its marks.
 * Returns the entries of the tables still allowed to delete.
 */
export async function applyRateGuard(
  run: BatchRun,
  live: Entry[],
  guards: Map<string, GuardRecord>,
): Promise<Entry[]> {
  const { ctx } = run;
  const limits: GuardLimits = ctx.options.guard;
  const plannedByTable = new Map<string, number>();
  for (const e of live.filter(deleting)) {
    plannedByTable.set(e.address.table, (plannedByTable.get(e.address.table) ?? 0) + 1);
  }
  const paused = new Set<string>();
  for (const [table, n] of plannedByTable) {
    const g = guards.get(table) as GuardRecord;
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
