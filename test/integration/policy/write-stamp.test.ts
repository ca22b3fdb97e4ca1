import {
  BatchWriteItemCommand,
  TransactWriteItemsCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import { ValidationError } from '../../../core/errors';
import { addLastWriteStamp, evaluate, isExpired, type TableTtlSettings } from '../../../policy';
import { DYNAMO_SERVERS, caseOn, serverConfig } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, uniqueName } from '../../support/stack';

/**
 * The last-write stamp middleware against the real DynamoDB API servers: each write style lands with the stamp and
 * with the application's own changes intact. TransactWriteItems runs on moto's server only, because dynalite does
 * not implement it (the unit test checks the serialized request too).
 */
describe.each(DYNAMO_SERVERS)('lastWriteStampMiddleware against the DynamoDB API (%s)', (server) => {
  const config = serverConfig(server);
  const plain = createDynamoClient(config);
  const stamped = createDynamoClient(config);
  const table = uniqueName('policy-stamp');
  const unstampedTable = uniqueName('policy-nostamp');
  let clockMs = Date.UTC(2030, 0, 1, 12, 0, 0, 250);

  const get = async (t: string, pk: string): Promise<Record<string, AttributeValue> | undefined> =>
    (await plain.send(new GetItemCommand({ TableName: t, Key: { pk: { S: pk } }, ConsistentRead: true })))
      .Item;
  const stampAt = (ms: number) => ({ N: String(Math.floor(ms / 1000)) });

  beforeAll(async () => {
    await createTestTable(plain, table);
    await createTestTable(plain, unstampedTable);
    addLastWriteStamp(stamped, { tables: { [table]: { lastWriteAttribute: '_ts' } }, now: () => clockMs });
  });

  afterAll(async () => {
    await deleteTestTable(plain, table);
    await deleteTestTable(plain, unstampedTable);
    plain.destroy();
    stamped.destroy();
  });

  it('PutItem stores the stamp, overriding a copied-in one', async () => {
    await stamped.send(
      new PutItemCommand({ TableName: table, Item: { pk: { S: 'put' }, v: { S: 'a' }, _ts: { N: '1' } } }),
    );
    expect(await get(table, 'put')).toEqual({ pk: { S: 'put' }, v: { S: 'a' }, _ts: stampAt(clockMs) });
  });

  it('UpdateItem adds the stamp to an existing SET clause, to a REMOVE/ADD-only expression, and with none', async () => {
    await plain.send(
      new PutItemCommand({
        TableName: table,
        Item: { pk: { S: 'upd' }, n: { N: '1' }, gone: { S: 'x' }, tags: { SS: ['a'] } },
      }),
    );
    clockMs += 5000;
    await stamped.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'upd' } },
        UpdateExpression: 'SET #v = :v, l = list_append(if_not_exists(l, :empty), :one) REMOVE gone',
        ExpressionAttributeNames: { '#v': 'v' },
        ExpressionAttributeValues: { ':v': { S: 'set' }, ':empty': { L: [] }, ':one': { L: [{ N: '1' }] } },
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
    expect(await get(table, 'upd')).toEqual({
      pk: { S: 'upd' },
      n: { N: '1' },
      tags: { SS: ['a'] },
      v: { S: 'set' },
      l: { L: [{ N: '1' }] },
      _ts: stampAt(clockMs),
    });

    clockMs += 5000;
    await stamped.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'upd' } },
        UpdateExpression: 'ADD n :two DELETE tags :a',
        ExpressionAttributeValues: { ':two': { N: '2' }, ':a': { SS: ['a'] } },
      }),
    );
    expect(await get(table, 'upd')).toMatchObject({ n: { N: '3' }, _ts: stampAt(clockMs) });
    expect(await get(table, 'upd')).not.toHaveProperty('tags');

    clockMs += 5000;
    await stamped.send(new UpdateItemCommand({ TableName: table, Key: { pk: { S: 'upd-new' } } }));
    expect(await get(table, 'upd-new')).toEqual({ pk: { S: 'upd-new' }, _ts: stampAt(clockMs) });
  });

  it('UpdateItem with legacy AttributeUpdates is stamped too', async () => {
    clockMs += 5000;
    await stamped.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'legacy' } },
        AttributeUpdates: { v: { Action: 'PUT', Value: { S: 'x' } } },
      }),
    );
    expect(await get(table, 'legacy')).toEqual({ pk: { S: 'legacy' }, v: { S: 'x' }, _ts: stampAt(clockMs) });
  });

  it('an UpdateItem that writes the stamp itself is refused before it is sent', async () => {
    await plain.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'own' }, _ts: { N: '7' } } }));
    await expect(
      stamped.send(
        new UpdateItemCommand({
          TableName: table,
          Key: { pk: { S: 'own' } },
          UpdateExpression: 'SET #t = :t',
          ExpressionAttributeNames: { '#t': '_ts' },
          ExpressionAttributeValues: { ':t': { N: '9' } },
        }),
      ),
    ).rejects.toThrow(ValidationError);
    expect(await get(table, 'own')).toEqual({ pk: { S: 'own' }, _ts: { N: '7' } });
  });

  it('BatchWriteItem stamps PutRequests of configured tables and leaves deletes and other tables alone', async () => {
    await plain.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 'b-del' } } }));
    clockMs += 5000;
    const result = await stamped.send(
      new BatchWriteItemCommand({
        RequestItems: {
          [table]: [
            { PutRequest: { Item: { pk: { S: 'b1' }, v: { N: '1' } } } },
            { PutRequest: { Item: { pk: { S: 'b2' }, _ts: { N: '1' } } } },
            { DeleteRequest: { Key: { pk: { S: 'b-del' } } } },
          ],
          [unstampedTable]: [{ PutRequest: { Item: { pk: { S: 'b3' } } } }],
        },
      }),
    );
    expect(result.UnprocessedItems ?? {}).toEqual({});
    expect(await get(table, 'b1')).toEqual({ pk: { S: 'b1' }, v: { N: '1' }, _ts: stampAt(clockMs) });
    expect(await get(table, 'b2')).toEqual({ pk: { S: 'b2' }, _ts: stampAt(clockMs) });
    expect(await get(table, 'b-del')).toBeUndefined();
    expect(await get(unstampedTable, 'b3')).toEqual({ pk: { S: 'b3' } });
  });

  caseOn(server, { dynalite: 'dynalite does not implement TransactWriteItems' })(
    'TransactWriteItems stamps Puts and Updates of configured tables, leaves ConditionChecks and Deletes alone',
    async () => {
      await plain.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 't-upd' }, n: { N: '1' } } }));
      await plain.send(
        new PutItemCommand({ TableName: table, Item: { pk: { S: 't-check' }, _ts: { N: '3' } } }),
      );
      await plain.send(new PutItemCommand({ TableName: table, Item: { pk: { S: 't-del' } } }));
      clockMs += 5000;
      await stamped.send(
        new TransactWriteItemsCommand({
          TransactItems: [
            { Put: { TableName: table, Item: { pk: { S: 't-put' }, v: { S: 'a' }, _ts: { N: '1' } } } },
            {
              Update: {
                TableName: table,
                Key: { pk: { S: 't-upd' } },
                UpdateExpression: 'SET v = :v',
                ExpressionAttributeValues: { ':v': { S: 'b' } },
              },
            },
            {
              ConditionCheck: {
                TableName: table,
                Key: { pk: { S: 't-check' } },
                ConditionExpression: 'attribute_exists(pk)',
              },
            },
            { Delete: { TableName: table, Key: { pk: { S: 't-del' } } } },
            { Put: { TableName: unstampedTable, Item: { pk: { S: 't-other' } } } },
          ],
        }),
      );
      expect(await get(table, 't-put')).toEqual({ pk: { S: 't-put' }, v: { S: 'a' }, _ts: stampAt(clockMs) });
      expect(await get(table, 't-upd')).toEqual({
        pk: { S: 't-upd' },
        n: { N: '1' },
        v: { S: 'b' },
        _ts: stampAt(clockMs),
      });
      expect(await get(table, 't-check')).toEqual({ pk: { S: 't-check' }, _ts: { N: '3' } });
      expect(await get(table, 't-del')).toBeUndefined();
      expect(await get(unstampedTable, 't-other')).toEqual({ pk: { S: 't-other' } });
    },
  );

  it('gives Cosmos semantics end to end: a rewrite resets the TTL', async () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
    };
    const written = clockMs;
    await stamped.send(
      new PutItemCommand({ TableName: table, Item: { pk: { S: 'cosmos' }, v: { N: '1' } } }),
    );
    const first = (await get(table, 'cosmos'))!;
    expect(isExpired(evaluate(settings, first, written + 60_000))).toBe(true);

    clockMs = written + 30_000;
    await stamped.send(
      new UpdateItemCommand({
        TableName: table,
        Key: { pk: { S: 'cosmos' } },
        UpdateExpression: 'SET v = :v',
        ExpressionAttributeValues: { ':v': { N: '2' } },
      }),
    );
    const rewritten = (await get(table, 'cosmos'))!;
    expect(isExpired(evaluate(settings, rewritten, written + 60_000))).toBe(false);
    expect(evaluate(settings, rewritten, written + 60_000)).toMatchObject({
      expiresAtMs: Math.floor((written + 30_000) / 1000) * 1000 + 60_000,
    });
  });
});
