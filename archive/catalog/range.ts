import { ValidationError } from '../../core/errors';
import { hourPrefix, tablePrefix, utcDateHour } from '../storage/layout';

/** A deletion-time window, `fromMs` inclusive and `toMs` exclusive; either end may be open. */
export interface TimeRange {
  fromMs?: number;
  toMs?: number;
}

export const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Windows up to this many hours are listed hour by hour, up to MAX_DAYS day by day, else whole. */
const MAX_HOURS = 72;
const MAX_DAYS = 400;
/** The last instant the layout can name (year 9999). */
const LAST_LISTABLE_MS = 253_402_300_799_999;

export function assertRange(range: TimeRange | undefined): void {
  if (!range) return;
  for (const [name, v] of [
    ['fromMs', range.fromMs],
    ['toMs', range.toMs],
  ] as const) {
    if (v !== undefined && (!Number.isSafeInteger(v) || v < 0))
      throw new ValidationError(`${name} must be a non-negative integer of epoch milliseconds, got ${v}`);
  }
  if (range.fromMs !== undefined && range.toMs !== undefined && range.fromMs > range.toMs)
    throw new ValidationError(`fromMs (${range.fromMs}) is after toMs (${range.toMs})`);
}

export function inRange(ms: number, range: TimeRange | undefined): boolean {
  if (!range) return true;
  return (range.fromMs === undefined || ms >= range.fromMs) && (range.toMs === undefined || ms < range.toMs);
}

/** Start of the UTC hour named by a `date=` and `hour=` pair of path segments. */
export function hourStartMs(date: string, hour: string): number {
  return Date.parse(`${date}T${hour}:00:00.000Z`);
}

/** Whether the hour starting at `startMs` can hold deletions inside the window. */
export function hourOverlaps(startMs: number, range: TimeRange | undefined): boolean {
  if (!range) return true;
  return (
    (range.toMs === undefined || startMs < range.toMs) &&
    (range.fromMs === undefined || startMs + HOUR_MS > range.fromMs)
  );
}

/**
 * The listing prefixes that cover the window, in lexicographic (= time) order: a few hour
 * directories for short windows, day directories for longer ones, the whole table when open-ended.
 * Callers still filter each path by its hour, so the prefixes only need to cover, not to be exact.
 */
export function listingPrefixes(table: string, range: TimeRange | undefined): string[] {
  const whole = [tablePrefix(table)];
  if (range?.fromMs === undefined || range.toMs === undefined) return whole;
  if (range.toMs <= range.fromMs) return [];
  if (range.toMs > LAST_LISTABLE_MS) return whole;
  const first = Math.floor(range.fromMs / HOUR_MS) * HOUR_MS;
  const hours = Math.ceil((range.toMs - first) / HOUR_MS);
  if (hours <= MAX_HOURS) {
    const out: string[] = [];
    for (let t = first; t < range.toMs; t += HOUR_MS) {
      const { date, hour } = utcDateHour(t);
      out.push(hourPrefix(table, date, hour));
    }
    return out;
  }
  const firstDay = Math.floor(range.fromMs / DAY_MS) * DAY_MS;
  if (Math.ceil((range.toMs - firstDay) / DAY_MS) <= MAX_DAYS) {
    const out: string[] = [];
    for (let t = firstDay; t < range.toMs; t += DAY_MS)
      out.push(`${tablePrefix(table)}date=${utcDateHour(t).date}/`);
    return out;
  }
  return whole;
}
