import {
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceNotFoundException,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForActive } from '../../core/tables';
import { batchGetAll, batchWriteAll } from '../../pipeline/ddb-batch';
import type { DemoItem } from './items';
import { TimedOutError } from '../../core/errors';

/** The demo table's I/O: a fresh table each run, its items written, and which of them are still there. */

export async function recreateTable(ddb: DynamoDBClient, table: string): Promise<void> {
  try {
    await ddb.send(new DeleteTableCommand({ TableName: table }));
  } catch (err) {
    if (!(err instanceof ResourceNotFoundException)) throw err;
  }
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await ddb.send(new DescribeTableCommand({ TableName: table }));
    } catch (err) {
      if (err instanceof ResourceNotFoundException) break;
      throw err;
    }
    if (Date.now() > deadline) throw new TimedOutError(`table ${table} was not deleted within 30 s`);
    await sleep(100);
  }
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitForActive(ddb, table);
}

export async function putItems(ddb: DynamoDBClient, table: string, items: DemoItem[]): Promise<void> {
  await batchWriteAll(
    ddb,
    table,
    items.map((d) => ({ PutRequest: { Item: d.item } })),
  );
}

/** Which of these demo ids are in the table now (consistent reads). */
export async function presentIds(ddb: DynamoDBClient, table: string, ids: string[]): Promise<Set<string>> {
  const found = await batchGetAll(
    ddb,
    table,
    ids.map((id) => ({ pk: { S: id } })),
    { consistent: true, projection: { expression: '#pk', names: { '#pk': 'pk' } } },
  );
  const present = new Set<string>();
  for (const item of found) if (item.pk?.S) present.add(item.pk.S);
  return present;
}
