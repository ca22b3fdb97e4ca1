import type { LeaseHandle } from '../core/leases';
import { evaluate } from '../policy';
import type { TableTtlSettings } from '../policy/settings';
import { expiryPages } from './index-query';
import type { ScannerContext } from './segment-worker';

/** One census at a time per table and process: a shard that waits for it marks only once it has been judged. */
const running = new WeakMap<ScannerContext, Map<string, Promise<void>>>();

/**
 * Index mode's expired-fraction guard, before marking. A query of the expiry index reads only what is due, page by
 * page, and marks each page as it goes: judging only the expired items found so far would let `maxExpiredFraction`
 * of the table be marked (and deleted) before the guard fired, and never fire when the backlog takes longer than a
 * window to read. So once per guard window, before any shard of the table marks in it, this process counts the
 * table's expired backlog in every shard of the index (not only those it holds: leases are taken one by one, and
 * a shard's work starts before the process knows its whole share), reading as the queries read, paced by the same
 * bucket, and judges it against the table's item count. The count stops as soon as it would pause: a mass expiry
 * costs at most `maxExpiredFraction` × items reads before anything is marked; a normal backlog costs a page per
 * shard per window. Not counted when the fraction cannot be exceeded (`maxExpiredFraction` ≥ 1) nor when the guard
 * is not ARMED.
 */
export async function censusBeforeMarking(
  ctx: ScannerContext,
  table: string,
  settings: TableTtlSettings,
  tableItems: number,
  windowMs: number,
  lease: LeaseHandle,
): Promise<void> {
  const { maxExpiredFraction, minItemsForFraction } = ctx.options.guard;
  if (maxExpiredFraction >= 1) return;
  let perTable = running.get(ctx);
  if (!perTable) running.set(ctx, (perTable = new Map()));
  const previous = perTable.get(table) ?? Promise.resolve();
  const mine = previous.then(async () => {
    if (!ctx.guard.indexCensusDue(table, windowMs)) return;
    // Only an ARMED guard can pause: a paused or confirmed table's backlog is not read again every window (on a mass
    // expiry that would be most of the read rate); a confirmed episode re-arms on a complete pass of the shards
    // (GuardWatch.indexShardRead).
    if ((await ctx.guard.state(table)).state !== 'ARMED') return;
    // Enough to exceed the fraction (judged only from minItemsForFraction items on): no need to read further.
    const enough = Math.max(Math.floor(maxExpiredFraction * tableItems) + 1, minItemsForFraction);
    const now = ctx.now();
    let expired = 0;
    for (let shard = 0; shard < (settings.expiryIndex?.shards ?? 0) && expired < enough; shard++) {
      for await (const page of expiryPages(ctx, table, shard, settings, undefined, lease)) {
        for (const item of page.items) {
          const verdict = evaluate(settings, item, now);
          if (verdict.kind === 'expires' && verdict.expired) expired++;
        }
        if (expired >= enough) break;
      }
    }
    // A census cut short by a lost lease judges nothing: the next query counts again.
    if (lease.signal.aborted) return;
    await ctx.guard.indexCensus(table, expired, tableItems, windowMs);
  });
  const settled = mine.catch(() => undefined);
  perTable.set(table, settled);
  try {
    await mine;
  } finally {
    if (perTable.get(table) === settled) perTable.delete(table);
  }
}
