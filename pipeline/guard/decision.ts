/**
 * The mass-deletion guard's decisions, pure. A table's guard is ARMED (watching), PAUSED (the producer leaves the
 * table's marks alone until an operator confirms) or CONFIRMED (an operator said this episode is intended; the
 * guard stays quiet until a complete pass looks normal again, then re-arms).
 */

export type GuardState = 'ARMED' | 'PAUSED' | 'CONFIRMED';

export interface GuardLimits {
  maxExpiredFraction: number;
  minItemsForFraction: number;
  maxDeletesPerMinute: number;
}

export type GuardVerdict = { action: 'none' } | { action: 'pause'; reason: string } | { action: 'rearm' };

export interface ScanSample {
  scanned: number;
  expired: number;
  /** True when the sample covers a whole pass (every segment this process owns finished one). */
  complete: boolean;
}

const NONE: GuardVerdict = { action: 'none' };

export function overFraction(sample: Pick<ScanSample, 'scanned' | 'expired'>, limits: GuardLimits): boolean {
  return (
    sample.scanned > 0 &&
    sample.scanned >= limits.minItemsForFraction &&
    sample.expired / sample.scanned > limits.maxExpiredFraction
  );
}

/** Deletions counted (by every producer) in the current clock minute and in the one before it. */
export interface DeletionRate {
  current: number;
  previous: number;
}

export const NO_DELETIONS: DeletionRate = { current: 0, previous: 0 };

/**
 * Judge what a scanner has seen so far. Called after every page (not only at the end of a pass) so that a mass
 * expiry pauses the table while most of it is still only marked, not deleted. A CONFIRMED episode ends (re-arm)
 * only when a complete pass looks normal AND deletions ran within the limit in this minute and the previous one,
 * so a confirmed backlog is worked off without re-pausing every minute.
 */
export function judgeScan(
  state: GuardState,
  sample: ScanSample,
  limits: GuardLimits,
  rate: DeletionRate = NO_DELETIONS,
): GuardVerdict {
  const over = overFraction(sample, limits);
  switch (state) {
    case 'ARMED':
      if (!over) return NONE;
      return {
        action: 'pause',
        reason:
          `${sample.expired} of ${sample.scanned} items scanned are expired ` +
          `(${formatPct(sample.expired / sample.scanned)} > ${formatPct(limits.maxExpiredFraction)})`,
      };
    case 'CONFIRMED': {
      const calm = rate.current <= limits.maxDeletesPerMinute && rate.previous <= limits.maxDeletesPerMinute;
      return sample.complete && !over && calm ? { action: 'rearm' } : NONE;
    }
    case 'PAUSED':
      return NONE;
  }
}

/**
 * Judge a producer's planned deletions: `deletesThisMinute` already includes the batch about to be deleted, so the
 * table pauses before the limit is crossed rather than after.
 */
export function judgeDeletes(
  state: GuardState,
  deletesThisMinute: number,
  limits: GuardLimits,
): GuardVerdict {
  if (state !== 'ARMED' || deletesThisMinute <= limits.maxDeletesPerMinute) return NONE;
  return {
    action: 'pause',
    reason: `${deletesThisMinute} deletions in the current minute exceed maxDeletesPerMinute ${limits.maxDeletesPerMinute}`,
  };
}

/** The counts of a guard row's two minute buckets as seen at `nowMinute` (epoch ms / 60000, floored). */
export function deletionRate(
  counter: { minute: number; count: number; prevMinute?: number; prevCount?: number } | undefined,
  nowMinute: number,
): DeletionRate {
  if (!counter) return NO_DELETIONS;
  const current = counter.minute === nowMinute ? counter.count : 0;
  const previous =
    counter.minute === nowMinute - 1
      ? counter.count
      : counter.minute === nowMinute && counter.prevMinute === nowMinute - 1
        ? (counter.prevCount ?? 0)
        : 0;
  return { current, previous };
}

/** The producer acts on a table's marks only when this is true. */
export function mayDelete(state: GuardState): boolean {
  return state !== 'PAUSED';
}

export function formatPct(x: number): string {
  return `${Math.round(x * 1000) / 10}%`;
}
