import { CreateTableCommand, DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { expiryIndexDefinition, relevantAttributes, type TableTtlSettings } from '../../policy';

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
