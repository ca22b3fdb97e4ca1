import {
  BatchWriteItemCommand,
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  ScanCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from '../../support/stack';

/**
 * The DynamoDB API calls the scanner and the deleter are built on, against the real server:
 * parallel scan segments that partition the table, and the conditional delete that returns the
 * deleted image (the REMOVE record's OldImage) or refuses when the item changed.
 */
describe('smoke: DynamoDB API', () => {
  const ddb = createDynamoClient(testConfig());
  const table = uniqueName('smoke-ddb');

  beforeAll(async () => {
    await createTestTable(ddb, table, { hashKey: 'pk', rangeKey: 'sk', rangeType: 'N' });
  });

  afterAll(async () => {
    await deleteTestTable(ddb, table);
    ddb.destroy();
  });

  it('puts items and a parallel scan sees each exactly once across its segments', async () => {
    const keys: string[] = [];
    for (let batch = 0; batch < 12; batch++) {
      const requests = Array.from({ length: 25 }, (_, i) => {
        const n = batch * 25 + i;
        keys.push(`p${n % 97}/${n}`);
        return {
          PutRequest: { Item: { pk: { S: `p${n % 97}` }, sk: { N: String(n) }, payload: { S: `v${n}` } } },
        };
      });
      const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: requests } }));
      expect(out.UnprocessedItems?.[table] ?? []).toHaveLength(0);
    }

    const totalSegments = 4;
    const perSegment = await Promise.all(
      Array.from({ length: totalSegments }, async (_, segment) => {
        const seen: string[] = [];
        let start: Record<string, AttributeValue> | undefined;
        let pages = 0;
        do {
          // Small pages so that pagination within a segment is exercised too.
          const page = await ddb.send(
            new ScanCommand({
              TableName: table,
              Segment: segment,
              TotalSegments: totalSegments,
              Limit: 17,
              ExclusiveStartKey: start,
            }),
          );
          for (const item of page.Items ?? []) seen.push(`${item.pk?.S}/${item.sk?.N}`);
          start = page.LastEvaluatedKey;
          pages++;
        } while (start);
        return { seen, pages };
      }),
    );

    const all = perSegment.flatMap((s) => s.seen);
    expect(all).toHaveLength(keys.length);
    expect(new Set(all)).toEqual(new Set(keys));
    // Every segment did part of the work, across several pages.
    for (const s of perSegment) expect(s.seen.length).toBeGreaterThan(0);
    expect(perSegment.reduce((n, s) => n + s.pages, 0)).toBeGreaterThan(totalSegments);
  });

  it('conditionally deletes an item and returns its old image', async () => {
    const key = { pk: { S: 'cond' }, sk: { N: '1' } };
    await ddb.send(
      new PutItemCommand({
        TableName: table,
        Item: { ...key, expiresAt: { N: '1000' }, body: { S: 'old' } },
      }),
    );

    const out = await ddb.send(
      new DeleteItemCommand({
        TableName: table,
        Key: key,
        ConditionExpression: '#e = :e',
        ExpressionAttributeNames: { '#e': 'expiresAt' },
        ExpressionAttributeValues: { ':e': { N: '1000' } },
        ReturnValues: 'ALL_OLD',
      }),
    );
    expect(out.Attributes).toEqual({ ...key, expiresAt: { N: '1000' }, body: { S: 'old' } });
    expect(
      (await ddb.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }))).Item,
    ).toBeUndefined();
  });

  it('refuses a conditional delete whose condition no longer holds, and keeps the item', async () => {
    const key = { pk: { S: 'cond' }, sk: { N: '2' } };
    // The item's TTL was extended after the scanner saw expiresAt = 1000.
    await ddb.send(
      new PutItemCommand({ TableName: table, Item: { ...key, expiresAt: { N: '999999999999' } } }),
    );

    const attempt = ddb.send(
      new DeleteItemCommand({
        TableName: table,
        Key: key,
        ConditionExpression: '#e = :e',
        ExpressionAttributeNames: { '#e': 'expiresAt' },
        ExpressionAttributeValues: { ':e': { N: '1000' } },
        ReturnValues: 'ALL_OLD',
      }),
    );
    await expect(attempt).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    const left = await ddb.send(new GetItemCommand({ TableName: table, Key: key, ConsistentRead: true }));
    expect(left.Item).toEqual({ ...key, expiresAt: { N: '999999999999' } });
  });

  it('refuses a conditional delete of an item that is already gone', async () => {
    const attempt = ddb.send(
      new DeleteItemCommand({
        TableName: table,
        Key: { pk: { S: 'never' }, sk: { N: '0' } },
        ConditionExpression: 'attribute_exists(pk)',
        ReturnValues: 'ALL_OLD',
      }),
    );
    await expect(attempt).rejects.toBeInstanceOf(ConditionalCheckFailedException);
  });
});
