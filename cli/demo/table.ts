import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DescribeTableCommand,
  ResourceNotFoundException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { waitForActive } from '../../core/tables';
import type { DemoItem } from './items';
import { RetryableError, TimedOutError } from '../../core/errors';

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
  for (let i = 0; i < items.length; i += 25) {
    let requests: Record<string, Array<{ PutRequest: { Item: Record<string, AttributeValue> } }>> = {
      [table]: items.slice(i, i + 25).map((d) => ({ PutRequest: { Item: d.item } })),
    };
    for (let attempt = 0; Object.keys(requests).length > 0; attempt++) {
      if (attempt > 10) throw new RetryableError('BatchWriteItem kept returning unprocessed items');
      const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: requests }));
      requests = (out.UnprocessedItems ?? {}) as typeof requests;
      if (Object.keys(requests).length > 0) await sleep(100 * (attempt + 1));
    }
  }
}

/** Which of these demo ids are in the table now (consistent reads). */
export async function presentIds(ddb: DynamoDBClient, table: string, ids: string[]): Promise<Set<string>> {
  const present = new Set<string>();
  for (let i = 0; i < ids.length; i += 100) {
    let keys: Array<Record<string, AttributeValue>> = ids.slice(i, i + 100).map((id) => ({ pk: { S: id } }));
    for (let attempt = 0; keys.length > 0; attempt++) {
      if (attempt > 10) throw new RetryableError('BatchGetItem kept returning unprocessed keys');
      const out = await ddb.send(
        new BatchGetItemCommand({
          RequestItems: { [table]: { Keys: keys, ConsistentRead: true, ProjectionExpression: 'pk' } },
        }),
      );
      for (const item of out.Responses?.[table] ?? []) if (item.pk?.S) present.add(item.pk.S);
      keys = out.UnprocessedKeys?.[table]?.Keys ?? [];
    }
  }
  return present;
}
