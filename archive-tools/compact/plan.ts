import { HOUR_MS, hourStartMs } from '../../archive/catalog/range';
import { dayIndexCover, newestDayIndex } from '../../archive/catalog/day-index';
import type { AreaPath } from '../../archive/storage/key-index';
import { decodeSegment } from '../../archive/storage/safe-segment';
import {
  hourFolderOf,
  parseCompactPath,
  parseDataFilePath,
  parseDayIndexPath,
} from '../../archive/storage/layout';

/**
 * Pure: what a compaction run does (docs/decisions/0037, 0038), from one listing of the data area. An hour is a
 * unit when it is closed (ended `afterMs` ago), inside the run's window, not about to be purged, and holds a roll's
 * file (not yet compacted, a late roll, or what an interrupted compaction left), a compacted file not in place, or
 * a staged file of an interrupted compaction.
 * A day gets its key index once it is closed and every hour of it holds compacted files only, unless its newest
 * index covers exactly those files already.
 */

export interface HourUnit {
  /** `table=…/date=…/hour=…/`. */
  hour: string;
  tableSegment: string;
  /** The table's name, when its folder says it (a shortened segment does not: the key index then does). */
  table: string | null;
  date: string;
  startMs: number;
  /** Roll files (generation 0 names) in the hour, by the listing. */
  rolls: number;
}

export interface DayBuild {
  tableSegment: string;
  table: string | null;
  date: string;
  /** The compacted files of the day (generation 0 names), in path order: what the index will cover. */
  files: string[];
}

export interface CompactionPlan {
  units: HourUnit[];
  days: DayBuild[];
  /** Start of the oldest closed hour still holding a roll's file (the lag metric), or null. */
  oldestPendingMs: number | null;
}

export interface PlanInput {
  nowMs: number;
  afterMs: number;
  /** Only hours overlapping [fromMs, toMs). */
  fromMs?: number;
  toMs?: number;
  /**
   * The table's retention cutoff (deletion times before it are due for purge), or null to keep for ever. An hour
   * that ends within a day of it is left to the purge.
   */
  cutoffMs: (tableSegment: string) => number | null;
}

const DAY_MS = 24 * HOUR_MS;

/** What the listing says of one hour folder. */
export interface HourSummary {
  hour: string;
  tableSegment: string;
  date: string;
  startMs: number;
  /** Roll files (generation 0 names) present, data or key index. */
  rolls: number;
  /** Compacted files (generation 0 names) present. */
  compacted: string[];
  /** Compacted files with a key index but no data file in the folder (switched, not yet moved in). */
  notInPlace: number;
}

/**
 * One pass over the data area's listing (`listWithIndexes`, in path order), keeping per hour only counts and the
 * compacted files' names: a year of rolls is millions of names, none of which needs to stay in memory.
 */
export class ListingSummary {
  readonly hours: HourSummary[] = [];
  readonly dayIndexes = new Map<string, string[]>();
  /** Hours with a staged file left (a compaction stopped between its steps): each is a unit to finish. */
  readonly staged = new Set<string>();
  private current: { summary: HourSummary; rolls: Set<string>; data: Set<string> } | null = null;

  add(p: AreaPath): void {
    const day = parseDayIndexPath(p.path);
    if (day) {
      const k = `table=${day.tableSegment}/date=${day.date}/`;
      this.dayIndexes.set(k, [...(this.dayIndexes.get(k) ?? []), p.path]);
      return;
    }
    const parsed = parseDataFilePath(p.dataPath);
    if (!parsed) return;
    const folder = hourFolderOf(parsed.base);
    if (this.current?.summary.hour !== folder) {
      this.close();
      this.current = {
        summary: {
          hour: folder,
          tableSegment: parsed.tableSegment,
          date: parsed.date,
          startMs: hourStartMs(parsed.date, parsed.hour),
          rolls: 0,
          compacted: [],
          notInPlace: 0,
        },
        rolls: new Set(),
        data: new Set(),
      };
    }
    const c = this.current;
    if (parsed.compaction) {
      if (!c.summary.compacted.includes(parsed.base)) c.summary.compacted.push(parsed.base);
    } else c.rolls.add(parsed.base);
    if (!p.isIndex) c.data.add(parsed.base);
  }

  /** A path of the `_compact/` listing: a staged file marks its hour as one to finish. */
  addCompactPath(path: string): void {
    const parsed = parseCompactPath(path);
    if (parsed?.staged) this.staged.add(parsed.hour);
  }

  /** The hours summed up so far, the last one included. */
  finish(): this {
    this.close();
    return this;
  }

  private close(): void {
    if (!this.current) return;
    const { summary, rolls, data } = this.current;
    summary.rolls = rolls.size;
    summary.notInPlace = summary.compacted.filter((c) => !data.has(c)).length;
    this.hours.push(summary);
    this.current = null;
  }
}

export function planCompaction(listing: ListingSummary, input: PlanInput): CompactionPlan {
  const { hours, dayIndexes } = listing;
  const closedBefore = input.nowMs - input.afterMs;
  const plan: CompactionPlan = { units: [], days: [], oldestPendingMs: null };
  const days = new Map<string, { state: HourSummary[]; busy: boolean }>();
  for (const h of hours) {
    const { hour } = h;
    const closed = h.startMs + HOUR_MS <= closedBefore;
    const pending = h.rolls > 0 || h.notInPlace > 0 || listing.staged.has(hour);
    const dayKey = `table=${h.tableSegment}/date=${h.date}/`;
    const day = days.get(dayKey) ?? { state: [], busy: false };
    day.state.push(h);
    days.set(dayKey, day);
    if (!pending) continue;
    day.busy = true;
    if (!closed) continue;
    const cutoff = input.cutoffMs(h.tableSegment);
    if (cutoff !== null && h.startMs + HOUR_MS <= cutoff + DAY_MS) continue;
    if (plan.oldestPendingMs === null || h.startMs < plan.oldestPendingMs) plan.oldestPendingMs = h.startMs;
    if (input.fromMs !== undefined && h.startMs + HOUR_MS <= input.fromMs) continue;
    if (input.toMs !== undefined && h.startMs >= input.toMs) continue;
    plan.units.push({
      hour,
      tableSegment: h.tableSegment,
      table: decodeSegment(h.tableSegment),
      date: h.date,
      startMs: h.startMs,
      rolls: h.rolls,
    });
  }
  for (const [dayKey, day] of days) {
    const first = day.state[0] as HourSummary;
    const dayStart = Date.parse(`${first.date}T00:00:00Z`);
    if (day.busy || dayStart + DAY_MS > closedBefore) continue;
    if (input.fromMs !== undefined && dayStart + DAY_MS <= input.fromMs) continue;
    if (input.toMs !== undefined && dayStart >= input.toMs) continue;
    const files = day.state.flatMap((h) => h.compacted).sort();
    if (files.length === 0) continue;
    const newest = newestDayIndex(dayIndexes.get(dayKey) ?? []);
    if (newest && newest.version.endsWith(`-${dayIndexCover(files)}`)) continue;
    plan.days.push({
      tableSegment: first.tableSegment,
      table: decodeSegment(first.tableSegment),
      date: first.date,
      files,
    });
  }
  plan.units.sort((a, b) => (a.hour < b.hour ? -1 : 1));
  return plan;
}
