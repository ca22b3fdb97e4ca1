import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../core/logger';
import type { TtlSettingsStore } from '../../control/settings-store';
import {
  addLastWriteStamp,
  expiryIndexDefinition,
  expiryStampTables,
  relevantAttributes,
  type TableTtlSettings,
} from '../../policy';
import { backfillExpiryIndex } from '../../scanner/backfill';

/**
 * A table created together with its expiry index. dynalite cannot add a GSI to an existing table (UpdateTable with
 * GlobalSecondaryIndexUpdates), so the tests create the index with the table; the definition is the one
 * `ttlstream index create` sends to UpdateTable (docs/decisions/0011).
 */
export async function createTableWithExpiryIndex(
  ddb: DynamoDBClient,
  name: string,
  settings: TableTtlSettings,
  hashKey = 'pk',
): Promise<string> {
  const def = expiryIndexDefinition(settings, relevantAttributes(settings));
  await ddb.send(
    new CreateTableCommand({
      TableName: name,
      KeySchema: [{ AttributeName: hashKey, KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: hashKey, AttributeType: 'S' }, ...def.attributeDefinitions],
      GlobalSecondaryIndexes: [def.index],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  for (let i = 0; i < 300; i++) {
    const { Table } = await ddb.send(new DescribeTableCommand({ TableName: name }));
    if (
      Table?.TableStatus === 'ACTIVE' &&
      (Table.GlobalSecondaryIndexes ?? []).every((g) => g.IndexStatus === 'ACTIVE')
    )
      return name;
    await sleep(100);
  }
  throw new Error(`table ${name} did not become ACTIVE`);
}

/** Run the backfill to its end: it records completion, which turns the index ACTIVE (the scanner's index mode). */
export async function backfillForTest(
  ddb: DynamoDBClient,
  controlTable: string,
  table: string,
  settings: TableTtlSettings,
): Promise<void> {
  await backfillExpiryIndex({
    ddb,
    controlTable,
    table,
    settings,
    segments: 2,
    ratePerSec: 10_000,
    dryRun: false,
    leaseMs: 1000,
    logger: silentLogger,
  });
}

/**
 * A table in index mode from its first query: created with the index, TTL ENABLED with `settings` (which carry
 * `expiryIndex`), backfilled (ACTIVE). Returns the table's name.
 */
export async function createIndexedTtlTable(
  ddb: DynamoDBClient,
  store: TtlSettingsStore,
  controlTable: string,
  name: string,
  settings: TableTtlSettings,
): Promise<string> {
  if (!settings.expiryIndex) throw new Error(`settings of ${name} have no expiryIndex`);
  await createTableWithExpiryIndex(ddb, name, settings);
  await store.update(name, { enabled: true, settings }, 'test');
  const d = await store.describe(name);
  if (d.status !== 'ENABLED') throw new Error(`TTL on ${name} is ${d.status}, expected ENABLED`);
  await backfillForTest(ddb, controlTable, name, settings);
  return name;
}

/**
 * The application's writers go through the expiry-index stamp (shard attribute; in cosmos mode the derived expiry):
 * add it once to `client` for every table given (hash key `pk`).
 */
export function stampExpiryIndex(
  client: DynamoDBClient,
  settingsByTable: Record<string, TableTtlSettings>,
): void {
  const keys = Object.fromEntries(Object.keys(settingsByTable).map((t) => [t, ['pk']]));
  addLastWriteStamp(client, { tables: {}, expiryIndex: expiryStampTables(settingsByTable, keys) });
}
