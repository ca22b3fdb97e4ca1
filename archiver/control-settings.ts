import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { TtlSettingsStore } from '../control/settings-store';
import { createDynamoClient } from '../core/clients';
import type { TtlstreamConfig } from '../core/config';
import { labelTable } from '../core/metrics';
import type { SettingsSource } from './retention/resolve';

/**
 * Tables' TTL settings read from the control table, for the archiver's parts that need them (the
 * purge's per-table retention, Parquet's expired_at): a DynamoDB client made at the first read,
 * not at start (most archiver members never need one).
 */
export function controlTableSettings(config: TtlstreamConfig): { source: SettingsSource; destroy(): void } {
  let ddb: DynamoDBClient | null = null;
  let store: TtlSettingsStore | null = null;
  const source: SettingsSource = {
    describe: (table) => {
      // A table in the archive had TTL: its requests are counted under its name, as the other roles count theirs.
      labelTable(table);
      ddb ??= createDynamoClient(config);
      store ??= new TtlSettingsStore(ddb, {
        controlTable: config.tables.control,
        propagationMs: config.api.ttlPropagationMs,
        internalTables: [config.tables.marks],
      });
      return store.describe(table);
    },
  };
  return { source, destroy: () => ddb?.destroy() };
}
