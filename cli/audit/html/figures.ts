import type { AuditRow } from '../../../archive-tools/audit';

/** What the HTML report draws besides the summary: collected row by row as the audit streams them. */
export interface AuditFigures {
  /** Deletion lags (publish − TTL instant, ms, negatives as 0) in bins of equal width from 0. */
  lagHistogram: { binMs: number; counts: number[] };
  /** Deletions of the window per hour of publication, every hour from the first to the last (ms of the hour). */
  perHour: Array<{ hourMs: number; count: number }>;
  /** Rows that need a look, as listed: late deletions, and items still present (overdue, pending, held). */
  late: AuditRow[];
  stillPresent: AuditRow[];
  /** Rows of each kind not listed because of the row limit. */
  lateUnlisted: number;
  stillPresentUnlisted: number;
}

const HOUR_MS = 3_600_000;
const BINS = 30;

/** The smallest of 1, 2 and 5 times a power of ten (at least 1 ms) that is at least `ms`. */
export function niceWidth(ms: number): number {
  if (!(ms > 1)) return 1;
  const power = 10 ** Math.floor(Math.log10(ms));
  for (const f of [1, 2, 5, 10]) if (f * power >= ms) return f * power;
  return 10 * power;
}

/**
 * Collects the figures of the HTML report. Memory: one number per deletion (the lags, as the summary's percentiles
 * already keep), one counter per hour, and at most `limit` rows per table.
 */
export class AuditFigureCollector {
  private readonly lags: number[] = [];
  private readonly hours = new Map<number, number>();
  private readonly late: AuditRow[] = [];
  private readonly stillPresent: AuditRow[] = [];
  private lateUnlisted = 0;
  private stillPresentUnlisted = 0;

  constructor(private readonly limit: number) {}

  add(row: AuditRow): void {
    if (row.status === 'deleted' || row.status === 'late') {
      if (row.lagMs !== null) this.lags.push(Math.max(0, row.lagMs));
      if (row.publishedAtMs !== null) {
        const hour = Math.floor(row.publishedAtMs / HOUR_MS) * HOUR_MS;
        this.hours.set(hour, (this.hours.get(hour) ?? 0) + 1);
      }
    }
    if (row.status === 'late') {
      if (this.late.length < this.limit) this.late.push(row);
      else this.lateUnlisted++;
    } else if (row.status === 'present' || row.status === 'pending' || row.status === 'held') {
      if (this.stillPresent.length < this.limit) this.stillPresent.push(row);
      else this.stillPresentUnlisted++;
    }
  }

  /** The figures; the histogram's range reaches the SLA too, so its line is always on the chart. */
  figures(slaMs: number | null): AuditFigures {
    let max = slaMs ?? 0;
    for (const lag of this.lags) if (lag > max) max = lag;
    const binMs = niceWidth(max / BINS);
    const counts = new Array<number>(Math.max(1, Math.floor(max / binMs) + 1)).fill(0);
    for (const lag of this.lags) {
      const bin = Math.floor(lag / binMs);
      counts[bin] = (counts[bin] ?? 0) + 1;
    }
    const perHour: AuditFigures['perHour'] = [];
    const known = [...this.hours.keys()];
    if (known.length > 0) {
      const last = Math.max(...known);
      for (let h = Math.min(...known); h <= last; h += HOUR_MS)
        perHour.push({ hourMs: h, count: this.hours.get(h) ?? 0 });
    }
    return {
      lagHistogram: { binMs, counts },
      perHour,
      late: this.late,
      stillPresent: this.stillPresent,
      lateUnlisted: this.lateUnlisted,
      stillPresentUnlisted: this.stillPresentUnlisted,
    };
  }
}
