import {
  CreateTableCommand,
  DeleteItemCommand,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { withRetry, type RetryOptions } from '../core/retry';
import { waitForActive } from '../core/tables';
import { stillExpiredCondition, type TableTtlSettings } from '../policy';

type Item = Record<string, AttributeValue>;

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

/**
 * The raw limit of the deleter's writes: a conditional DeleteItem per item (the producer's condition, keyed by `pk`),
 * `inFlight` at a time, each retried on throttling as the producer retries. Resolves when every item is done.
 */
export async function conditionalDeletes(
  ddb: DynamoDBClient,
  table: string,
  items: readonly Item[],
  o: { settings: TableTtlSettings; nowMs: number; inFlight: number; retry: RetryOptions },
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: o.inFlight }, async () => {
      for (;;) {
        const item = items[next++];
        if (!item) return;
        const cond = stillExpiredCondition(o.settings, item, o.nowMs);
        const Key = { pk: item.pk as AttributeValue };
        await withRetry(
          () =>
            ddb.send(
              new DeleteItemCommand({
                TableName: table,
                Key,
                ConditionExpression: cond.expression,
                ExpressionAttributeNames: cond.names,
                ExpressionAttributeValues: cond.values,
                ReturnValues: 'ALL_OLD',
              }),
            ),
          o.retry,
        );
      }
    }),
  );
}
