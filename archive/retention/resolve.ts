import { NotFoundError } from '../../core/errors';
import type { TableTtlSettings } from '../../policy/settings';
import { effectiveRetentionDays } from './policy';

/** What the resolver needs of the TTL settings store (control/settings-store.ts). */
export interface SettingsSource {
  describe(table: string): Promise<{ settings: TableTtlSettings | null }>;
}

/**
 * A table's archive retention: its TTL settings' `archiveRetentionDays`, else `archive.retentionDays`.
 * A table that no longer exists keeps the default (its archive outlives it).
 */
export function retentionResolver(
  defaultDays: number | undefined,
  settings: SettingsSource | null,
): (table: string) => Promise<number | null> {
  return async (table) => {
    let override: number | undefined;
    if (settings) {
      try {
        override = (await settings.describe(table)).settings?.archiveRetentionDays;
      } catch (err) {
        if (!(err instanceof NotFoundError)) throw err;
      }
    }
    return effectiveRetentionDays(defaultDays, override);
  };
}
