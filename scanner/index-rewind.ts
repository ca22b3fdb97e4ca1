/**
 * When a shard of the expiry index is read again from its lowest expiry (a *rewind*), pure; the I/O is in
 * ./index-worker.ts. A shard's query continues after the last item it read, so a rewind every `indexRewindMs` is what
 * finds items that reached the eventually consistent index late, were written behind the cursor (put back, a TTL
 * moved into the past), or were kept and became deletable. But a rewind re-reads everything due and still present,
 * and while the producers work off a backlog that is the backlog: a backlog of B items deleted at D/s cost
 * B² / (120·D) extra reads, ≈ 8 per deletion for a million-item mass expiry at 1,000/s (docs/decisions/0011).
 *
 * So a due rewind first reads the head of the due range (a few items, one page). It is put off when that head is the
 * backlog this worker marked and the producers are working through it:
 * - every expired item at the head was marked by this process since the shard was last read from its lowest expiry
 *   (an item marked before that, or unknown to this process, may have arrived behind the cursor: rewind);
 * - and the head moved since the last probe (some of the items at the head then are gone): a head that does not move
 *   is stuck (a table paused by the guard, an item no producer can delete), not a backlog being worked off;
 * - and the rewind has not been put off for `maxDeferMs` already: whatever arrived behind the cursor during a backlog
 *   waits at most that long (it would have waited behind the backlog's marks anyway).
 * A head with nothing expired (empty, held or not yet due items) costs the rewind no more than the probe: rewind.
 */

export interface HeadItem {
  /** The item's mark identity (its mark sk) and the expiry it was judged by. */
  id: string;
  /** Expired now by the table's policy (a held or not yet due item is not). */
  expired: boolean;
  /** When this process last marked this verdict (durably), if it remembers. */
  markedAtMs?: number;
}

export interface RewindState {
  /** When the shard was last read from its lowest expiry (its worker's start, or the last rewind). */
  epochStartMs: number;
  /** The first rewind put off since then. */
  deferredSinceMs?: number;
  /** The expired items at the head at the last probe that put the rewind off. */
  head?: readonly string[];
}

export type RewindVerdict =
  | { rewind: true; reason: 'nothing-expired' | 'not-marked-here' | 'no-progress' | 'deferred-too-long' }
  | { rewind: false; head: string[] };

export function decideRewind(
  head: readonly HeadItem[],
  state: RewindState,
  nowMs: number,
  maxDeferMs: number,
): RewindVerdict {
  const expired = head.filter((h) => h.expired);
  if (expired.length === 0) return { rewind: true, reason: 'nothing-expired' };
  if (expired.some((h) => h.markedAtMs === undefined || h.markedAtMs < state.epochStartMs))
    return { rewind: true, reason: 'not-marked-here' };
  if (state.deferredSinceMs !== undefined && nowMs - state.deferredSinceMs >= maxDeferMs)
    return { rewind: true, reason: 'deferred-too-long' };
  const ids = expired.map((h) => h.id);
  if (state.head !== undefined) {
    const now = new Set(ids);
    if (state.head.every((id) => now.has(id))) return { rewind: true, reason: 'no-progress' };
  }
  return { rewind: false, head: ids };
}
