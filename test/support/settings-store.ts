import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { TtlstreamConfig } from '../../core/config';
import { settingsStoreOptionsFrom, TtlSettingsStore } from '../../control/settings-store';

/** The TTL settings store of `config`, opened as the pipeline and the CLI open it (the marks table is internal). */
export function settingsStoreOf(ddb: DynamoDBClient, config: TtlstreamConfig): TtlSettingsStore {
  return new TtlSettingsStore(ddb, settingsStoreOptionsFrom(config));
}
