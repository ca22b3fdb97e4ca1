import { inTtlWindow, type TtlWindow } from '../../policy/window';
import { ValidationError } from '../../core/errors';
import type { DeletedBy } from '../../schemas';

/**
 * `ttlstream audit` (docs/compliance.md), the pure part: what one archived deletion or one item still in the table means for
 * a window of TTL instants, and the summary. No I/O: `deletions.ts` reads the archive, the scanner's
 * `present-expired.ts` reads the table, the CLI prints.
 */

/**
 * - deleted: a deletion of the window (on time, or no SLA given);
 * - late: a deletion later than the SLA;
 * - retracted: a REMOVE whose eventID a RETRACT withdrew: the deletion never happened (not counted as one);
 * - no-ttl: a REMOVE deleted in the window whose image gives no TTL instant under today's settings (they changed);
 * - present: an item whose TTL passed in the window and that still exists (beyond the SLA, when one is given);
 * - pending: the same, but still within the SLA;
 * - held: an item whose TTL passed in the window, kept by the legal hold (legitimately).
 */
export type AuditStatus = 'deleted' | 'late' | 'retracted' | 'no-ttl' | 'present' | 'pending' | 'held';

/** One archived REMOVE, as read through the catalog. */
export interface ArchivedDeletion {
  /** The key as printed: canonical JSON of the item key, or its keyDigest with --hash-keys. */
  key: string;
  /** The TTL instant (ms) from the image and the table's policy; null when the policy gives none. */
  ttlAtMs: number | null;
  /** The record's ApproximateCreationDateTime (whole seconds, in ms): when the deletion was decided. */
  deletedAtMs: number;
  /** The Kafka timestamp: when the REMOVE was published, right before the conditional delete. */
  publishedAtMs: number;
  eventID: string;
  topic: string;
  partition: number;
  offset: string;
  file: string;
  row: number;
  retracted: boolean;
  /** Who deleted the item: ttlstream's deleter, DynamoDB's own TTL (streams role), or an application. */
  deletedBy: DeletedBy;
}

/** An item that exists now and whose TTL passed in the window. */
export interface PresentItem {
  key: string;
  expiresAtMs: number;
  held: boolean;
}

export interface AuditRow {
  status: AuditStatus;
  key: string;
  ttlAtMs: number | null;
  deletedAtMs: number | null;
  publishedAtMs: number | null;
  /** Deletions: publish − TTL instant. Items still present: now − TTL instant. */
  lagMs: number | null;
  eventID: string | null;
  topic: string | null;
  partition: number | null;
  offset: string | null;
  file: string | null;
  row: number | null;
  /** Who deleted the item (schemas deletedBy); null for an item still present. */
  deletedBy: DeletedBy | null;
}

/**
 * The row of an archived REMOVE for the window, or null when its TTL instant is outside it. A REMOVE without a TTL
 * instant is placed by its deletion time instead, so settings changed since the deletion cannot hide it.
 */
export function classifyDeletion(d: ArchivedDeletion, window: TtlWindow, slaMs?: number): AuditRow | null {
  const common = {
    key: d.key,
    ttlAtMs: d.ttlAtMs,
    deletedAtMs: d.deletedAtMs,
    publishedAtMs: d.publishedAtMs,
    eventID: d.eventID,
    topic: d.topic,
    partition: d.partition,
    offset: d.offset,
    file: d.file,
    deletedBy: d.deletedBy,
    row: d.row,
  };
  if (d.ttlAtMs === null) {
    return inTtlWindow(d.deletedAtMs, window) ? { ...common, status: 'no-ttl', lagMs: null } : null;
  }
  if (!inTtlWindow(d.ttlAtMs, window)) return null;
  const lagMs = d.publishedAtMs - d.ttlAtMs;
  const status: AuditStatus = d.retracted
    ? 'retracted'
    : slaMs !== undefined && lagMs > slaMs
      ? 'late'
      : 'deleted';
  return { ...common, status, lagMs };
}

/** The row of an item still in the table; without an SLA every expired one is overdue. */
export function classifyPresent(p: PresentItem, nowMs: number, slaMs?: number): AuditRow {
  const lagMs = nowMs - p.expiresAtMs;
  const status: AuditStatus = p.held ? 'held' : slaMs !== undefined && lagMs <= slaMs ? 'pending' : 'present';
  return {
    status,
    key: p.key,
    ttlAtMs: p.expiresAtMs,
    deletedAtMs: null,
    publishedAtMs: null,
    lagMs,
    eventID: null,
    topic: null,
    partition: null,
    offset: null,
    file: null,
    row: null,
    deletedBy: null,
  };
}

export interface LagStats {
  p50: number;
  p99: number;
  max: number;
}

export interface AuditCounts {
  /** Deletions of the window (deleted + late). */
  deletions: number;
  late: number;
  retracted: number;
  noTtl: number;
  present: number;
  pending: number;
  held: number;
}

/**
 * A table that no longer exists, as the audit found it: its deletions are still in the archive, and no item of it can
 * be present. When it was dropped is not recorded anywhere ttlstream can read; its last archived deletion bounds it.
 */
export interface DroppedTable {
  /** The latest archived deletion of the table among those read (deleted from the window's start on): it existed then. */
  lastDeletionAt: string | null;
  /** The TTL settings its deletions were read with are the last the control table recorded, changed then by that. */
  settingsChangedAt: string;
  settingsChangedBy: string;
  /** Whether TTL was still enabled in that record (its settings are kept when TTL is disabled). */
  ttlEnabled: boolean;
}

/** What the audit says of a dropped table's existence (text summary, HTML page): "no longer exists (dropped after …)". */
export function droppedTableNote(d: DroppedTable): string {
  return d.lastDeletionAt === null
    ? "no longer exists (dropped; no deletion of it archived since the window's start)"
    : `no longer exists (dropped after its last archived deletion, ${d.lastDeletionAt})`;
}

/** Which TTL settings a dropped table's deletions were read with. */
export function droppedSettingsNote(d: DroppedTable): string {
  const by = d.settingsChangedBy === '' ? '' : ` by ${d.settingsChangedBy}`;
  const off = d.ttlEnabled ? '' : '; TTL was disabled then';
  return `deletions read with the table's last recorded TTL settings (changed ${d.settingsChangedAt}${by}${off})`;
}

export interface AuditSummary extends AuditCounts {
  /** Lag of the deletions (publish − TTL instant), ms; null without deletions. */
  lagMs: LagStats | null;
  /** True when the audit must fail a compliance job: a deletion later than the SLA, or an overdue item present. */
  breach: boolean;
}

/** Nearest-rank percentile of ascending values (`p` in 0..100]; the value below which p % of them lie. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new ValidationError('percentile of no values');
  if (!(p > 0 && p <= 100)) throw new ValidationError(`percentile ${p} is not in (0, 100]`);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, rank) - 1] as number;
}

/** Counts rows as they are printed; keeps only the deletions' lags (numbers) for the percentiles. */
export class AuditTally {
  private readonly counts: AuditCounts = {
    deletions: 0,
    late: 0,
    retracted: 0,
    noTtl: 0,
    present: 0,
    pending: 0,
    held: 0,
  };
  private readonly lags: number[] = [];

  add(row: AuditRow): void {
    switch (row.status) {
      case 'deleted':
      case 'late':
        this.counts.deletions++;
        if (row.status === 'late') this.counts.late++;
        if (row.lagMs !== null) this.lags.push(row.lagMs);
        break;
      case 'retracted':
        this.counts.retracted++;
        break;
      case 'no-ttl':
        this.counts.noTtl++;
        break;
      case 'present':
      case 'pending':
      case 'held':
        this.counts[row.status]++;
        break;
    }
  }

  summary(): AuditSummary {
    const sorted = Float64Array.from(this.lags).sort();
    const values = Array.from(sorted);
    return {
      ...this.counts,
      lagMs:
        values.length === 0
          ? null
          : {
              p50: percentile(values, 50),
              p99: percentile(values, 99),
              max: values[values.length - 1] as number,
            },
      breach: this.counts.late > 0 || this.counts.present > 0,
    };
  }
}

/** The printed form of a row, one field per column, in column order: JSON lines and CSV share it. */
export interface AuditRecord {
  status: AuditStatus;
  key: string;
  ttlAt: string | null;
  deletedAt: string | null;
  publishedAt: string | null;
  lagMs: number | null;
  eventID: string | null;
  topic: string | null;
  partition: number | null;
  offset: string | null;
  file: string | null;
  row: number | null;
  deletedBy: DeletedBy | null;
}

export const AUDIT_COLUMNS: ReadonlyArray<keyof AuditRecord> = [
  'status',
  'key',
  'ttlAt',
  'deletedAt',
  'publishedAt',
  'lagMs',
  'eventID',
  'topic',
  'partition',
  'offset',
  'file',
  'row',
  'deletedBy',
];

const isoOrNull = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function auditRecord(row: AuditRow): AuditRecord {
  return {
    status: row.status,
    key: row.key,
    ttlAt: isoOrNull(row.ttlAtMs),
    deletedAt: isoOrNull(row.deletedAtMs),
    publishedAt: isoOrNull(row.publishedAtMs),
    lagMs: row.lagMs,
    eventID: row.eventID,
    topic: row.topic,
    partition: row.partition,
    offset: row.offset,
    file: row.file,
    row: row.row,
    deletedBy: row.deletedBy,
  };
}
