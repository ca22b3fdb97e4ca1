import { CreateTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { waitForActive } from '../core/tables';

/** A bench table keyed by a string `pk`, on demand, once it is ACTIVE. */
export async function createPkTable(ddb: DynamoDBClient, table: string): Promise<void> {
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitForActive(ddb, table);
}
