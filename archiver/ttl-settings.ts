import type { Logger } from '../core/logger';
import { labelTable } from '../core/metrics';
import type { TableTtlSettings } from '../policy/settings';
import type { SettingsSource } from '../archive/retention/resolve';

/** A table's TTL settings as the archiver knows them when it writes a file; null: unknown. */
export type TtlSettingsOf = (table: string) => Promise<TableTtlSettings | null>;

/**
 * `source`, counting each table it is asked about under its own name in the DynamoDB request metrics, as the other
 * roles count theirs: a table in the archive had TTL.
 */
export function labelledSettings(source: SettingsSource): SettingsSource {
  return {
    describe: (table) => {
      labelTable(table);
      return source.describe(table);
    },
  };
}

/** How long a table's settings are reused before they are read again. */
const TTL_SETTINGS_CACHE_MS = 60_000;

/**
 * The TTL settings the Parquet columns `expired_at` and `ttl_mode` come from, read from the
 * control table once a minute per table. Never fails a roll: settings that cannot be read are
 * unknown (null columns, a warning), because archiving must not wait for the control table.
 */
export function cachedTtlSettings(source: SettingsSource, log: Logger): TtlSettingsOf {
  const cache = new Map<string, { atMs: number; settings: Promise<TableTtlSettings | null> }>();
  return (table) => {
    const now = Date.now();
    const hit = cache.get(table);
    if (hit && now - hit.atMs < TTL_SETTINGS_CACHE_MS) return hit.settings;
    const settings = source.describe(table).then(
      (d) => d.settings,
      (err: unknown) => {
        log.warn({ err, table }, 'TTL settings unreadable: expired_at and ttl_mode left null in this file');
        return null;
      },
    );
    cache.set(table, { atMs: now, settings });
    return settings;
  };
}
