import { parseDataFilePath, tablePrefix } from '../storage/layout';

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
 * S3 rounding to the next midnight UTC. It expires the key indexes with their data files.
 */
export function lifecycleConfiguration(
  table: string,
  days: number,
  rootPrefix: string,
): { Rules: Array<Record<string, unknown>> } {
  const prefix = `${rootPrefix === '' || rootPrefix.endsWith('/') ? rootPrefix : `${rootPrefix}/`}${tablePrefix(table)}`;
  return {
    Rules: [
      {
        ID: `ttlstream-archive-retention-${table}`.slice(0, 255),
        Status: 'Enabled',
        Filter: { Prefix: prefix },
        Expiration: { Days: days + 1 },
        NoncurrentVersionExpiration: { NoncurrentDays: 1 },
      },
    ],
  };
}
