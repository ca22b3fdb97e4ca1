import { indexListingPrefix, parseDataFilePath, tablePrefix } from '../storage/layout';

/**
 * Pure: which archive files a retention rule removes, and the same rule as an S3 lifecycle
 * configuration (docs/compliance.md). A data file holds the rows of one UTC deletion hour, so a
 * file whose hour ended before the cutoff holds only records older than the retention.
 */

export const DAY_MS = 86_400_000;
const HOUR_MS = 3_600_000;

/** Deletion times before this are past a `days` retention at `nowMs`. */
export function retentionCutoffMs(nowMs: number, days: number): number {
  return nowMs - days * DAY_MS;
}

/** True when every record of the data file at `path` was deleted before `cutoffMs`. */
export function fileDueForPurge(path: string, cutoffMs: number): boolean {
  const parsed = parseDataFilePath(path);
  if (!parsed) return false;
  return Date.parse(`${parsed.date}T${parsed.hour}:00:00Z`) + HOUR_MS <= cutoffMs;
}

/** The table's archive retention: its TTL settings' override, else the configured default, else none (keep). */
export function effectiveRetentionDays(
  defaultDays: number | undefined,
  override: number | undefined,
): number | null {
  return override ?? defaultDays ?? null;
}

/**
 * The S3 lifecycle configuration that expires the table's archive objects. S3 counts from an
 * object's creation (when the archiver wrote it, at or after the deletion time), so objects go
 * up to a roll later than `archive purge` would remove them, never earlier; the extra day covers
 * S3 rounding to the next midnight UTC. Two rules, as a rule has one prefix: the data files (and the key indexes
 * an archive before docs/decisions/0033 keeps beside them) under `table=…/`, and the key indexes under
 * `_index/table=…/`. An index `archive move-indexes` moved counts from its move, so it may outlive its data file
 * by up to that delay; `archive purge` removes both on time.
 */
export function lifecycleConfiguration(
  table: string,
  days: number,
  rootPrefix: string,
): { Rules: Array<Record<string, unknown>> } {
  const root = rootPrefix === '' || rootPrefix.endsWith('/') ? rootPrefix : `${rootPrefix}/`;
  const rule = (id: string, rulePrefix: string): Record<string, unknown> => ({
    ID: id.slice(0, 255),
    Status: 'Enabled',
    Filter: { Prefix: rulePrefix },
    Expiration: { Days: days + 1 },
    NoncurrentVersionExpiration: { NoncurrentDays: 1 },
  });
  return {
    Rules: [
      rule(`ttlstream-archive-retention-${table}`, `${root}${tablePrefix(table)}`),
      rule(`ttlstream-archive-index-retention-${table}`, `${root}${indexListingPrefix(tablePrefix(table))}`),
    ],
  };
}
