import {
  BatchWriteItemCommand,
  DynamoDBClient,
  ExecuteStatementCommand,
  ExecuteTransactionCommand,
  GetItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
  type PutItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import { ConfigError, ValidationError } from '../../../core/errors';
import { addLastWriteStamp, lastWriteStampTables, type LastWriteStampOptions } from '../../../policy';
import { capturingClient } from '../../support/write-stamp';

/**
 * These tests run the real SDK client and stop each request after serialization, so they check the
 * JSON the server would receive (TransactWriteItems included, which dynalite cannot run). The
 * integration test sends the same writes to the real DynamoDB API.
 */
const NOW = Date.UTC(2025, 0, 1, 0, 0, 0, 789);
const STAMP = { N: '1735689600' };

const tables = { events: { lastWriteAttribute: '_ts' }, other: { lastWriteAttribute: 'modified' } };

describe('lastWriteStampMiddleware', () => {
  it('stamps PutItem on a configured table, replacing a copied-in stamp, without touching the caller input', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    const input: PutItemCommandInput = { TableName: 'events', Item: { pk: { S: 'a' }, _ts: { N: '1' } } };
    await client.send(new PutItemCommand(input));
    expect(sent[0]).toEqual({ TableName: 'events', Item: { pk: { S: 'a' }, _ts: STAMP } });
    expect(input.Item).toEqual({ pk: { S: 'a' }, _ts: { N: '1' } });
  });

  it('leaves other tables and read commands alone', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await client.send(new PutItemCommand({ TableName: 'unstamped', Item: { pk: { S: 'a' } } }));
    await client.send(new GetItemCommand({ TableName: 'events', Key: { pk: { S: 'a' } } }));
    expect(sent).toEqual([
      { TableName: 'unstamped', Item: { pk: { S: 'a' } } },
      { TableName: 'events', Key: { pk: { S: 'a' } } },
    ]);
  });

  it('recognises a table given by ARN', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    const arn = 'arn:aws:dynamodb:us-east-1:123456789012:table/events';
    await client.send(new PutItemCommand({ TableName: arn, Item: { pk: { S: 'a' } } }));
    expect(sent[0]).toMatchObject({ Item: { _ts: STAMP } });
  });

  it('adds to the SET clause of UpdateItem, or creates one', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    const key = { pk: { S: 'a' } };
    await client.send(
      new UpdateItemCommand({
        TableName: 'events',
        Key: key,
        UpdateExpression: 'SET #c = :c REMOVE gone',
        ExpressionAttributeNames: { '#c': 'count' },
        ExpressionAttributeValues: { ':c': { N: '1' } },
        ConditionExpression: 'attribute_exists(pk)',
      }),
    );
    await client.send(
      new UpdateItemCommand({ TableName: 'events', Key: key, UpdateExpression: 'REMOVE gone' }),
    );
    await client.send(new UpdateItemCommand({ TableName: 'events', Key: key }));
    expect(sent[0]).toEqual({
      TableName: 'events',
      Key: key,
      UpdateExpression: 'SET #ttlstreamLastWrite = :ttlstreamLastWrite, #c = :c REMOVE gone',
      ExpressionAttributeNames: { '#c': 'count', '#ttlstreamLastWrite': '_ts' },
      ExpressionAttributeValues: { ':c': { N: '1' }, ':ttlstreamLastWrite': STAMP },
      ConditionExpression: 'attribute_exists(pk)',
    });
    expect(sent[1]).toMatchObject({
      UpdateExpression: 'REMOVE gone SET #ttlstreamLastWrite = :ttlstreamLastWrite',
      ExpressionAttributeNames: { '#ttlstreamLastWrite': '_ts' },
      ExpressionAttributeValues: { ':ttlstreamLastWrite': STAMP },
    });
    expect(sent[2]).toMatchObject({ UpdateExpression: 'SET #ttlstreamLastWrite = :ttlstreamLastWrite' });
  });

  it('picks free placeholders when the caller already uses ours', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await client.send(
      new UpdateItemCommand({
        TableName: 'events',
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET #ttlstreamLastWrite = :ttlstreamLastWrite',
        ExpressionAttributeNames: { '#ttlstreamLastWrite': 'x' },
        ExpressionAttributeValues: { ':ttlstreamLastWrite': { S: 'y' } },
      }),
    );
    expect(sent[0]).toMatchObject({
      UpdateExpression:
        'SET #ttlstreamLastWrite2 = :ttlstreamLastWrite2, #ttlstreamLastWrite = :ttlstreamLastWrite',
      ExpressionAttributeNames: { '#ttlstreamLastWrite': 'x', '#ttlstreamLastWrite2': '_ts' },
    });
  });

  it('stamps legacy AttributeUpdates in their own style', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await client.send(
      new UpdateItemCommand({
        TableName: 'events',
        Key: { pk: { S: 'a' } },
        AttributeUpdates: { n: { Action: 'ADD', Value: { N: '1' } } },
      }),
    );
    expect(sent[0]).toMatchObject({
      AttributeUpdates: { n: { Action: 'ADD', Value: { N: '1' } }, _ts: { Action: 'PUT', Value: STAMP } },
    });
    expect(sent[0]).not.toHaveProperty('UpdateExpression');
  });

  it('refuses an UpdateItem that writes the stamp attribute itself', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    const key = { pk: { S: 'a' } };
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: 'events',
          Key: key,
          UpdateExpression: 'SET #t = :t',
          ExpressionAttributeNames: { '#t': '_ts' },
          ExpressionAttributeValues: { ':t': { N: '1' } },
        }),
      ),
    ).rejects.toThrow(ValidationError);
    await expect(
      client.send(new UpdateItemCommand({ TableName: 'events', Key: key, UpdateExpression: 'REMOVE _ts' })),
    ).rejects.toThrow(/names _ts, which the last-write stamp owns/);
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: 'events',
          Key: key,
          AttributeUpdates: { _ts: { Action: 'DELETE' } },
        }),
      ),
    ).rejects.toThrow(ValidationError);
    expect(sent).toEqual([]);
  });

  it('stamps the PutRequests of BatchWriteItem for configured tables only', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          events: [
            { PutRequest: { Item: { pk: { S: 'a' } } } },
            { DeleteRequest: { Key: { pk: { S: 'b' } } } },
          ],
          other: [{ PutRequest: { Item: { pk: { S: 'c' } } } }],
          plain: [{ PutRequest: { Item: { pk: { S: 'd' } } } }],
        },
      }),
    );
    expect(sent[0]).toEqual({
      RequestItems: {
        events: [
          { PutRequest: { Item: { pk: { S: 'a' }, _ts: STAMP } } },
          { DeleteRequest: { Key: { pk: { S: 'b' } } } },
        ],
        other: [{ PutRequest: { Item: { pk: { S: 'c' }, modified: STAMP } } }],
        plain: [{ PutRequest: { Item: { pk: { S: 'd' } } } }],
      },
    });
  });

  it('stamps Put and Update inside TransactWriteItems (serialized request)', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: 'events', Item: { pk: { S: 'a' } } } },
          {
            Update: {
              TableName: 'other',
              Key: { pk: { S: 'b' } },
              UpdateExpression: 'ADD n :one',
              ExpressionAttributeValues: { ':one': { N: '1' } },
            },
          },
          { Delete: { TableName: 'events', Key: { pk: { S: 'c' } } } },
          {
            ConditionCheck: {
              TableName: 'events',
              Key: { pk: { S: 'd' } },
              ConditionExpression: 'attribute_exists(pk)',
            },
          },
          { Put: { TableName: 'plain', Item: { pk: { S: 'e' } } } },
        ],
      }),
    );
    const items = (sent[0] as { TransactItems: unknown[] }).TransactItems;
    expect(items[0]).toEqual({ Put: { TableName: 'events', Item: { pk: { S: 'a' }, _ts: STAMP } } });
    expect(items[1]).toEqual({
      Update: {
        TableName: 'other',
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'ADD n :one SET #ttlstreamLastWrite = :ttlstreamLastWrite',
        ExpressionAttributeNames: { '#ttlstreamLastWrite': 'modified' },
        ExpressionAttributeValues: { ':one': { N: '1' }, ':ttlstreamLastWrite': STAMP },
      },
    });
    expect(items[2]).toEqual({ Delete: { TableName: 'events', Key: { pk: { S: 'c' } } } });
    expect(items[3]).toMatchObject({ ConditionCheck: { TableName: 'events' } });
    expect(items[4]).toEqual({ Put: { TableName: 'plain', Item: { pk: { S: 'e' } } } });
  });

  it('refuses PartiQL INSERT and UPDATE on a stamped table, and lets other statements through', async () => {
    const { client, sent } = capturingClient({ tables, now: () => NOW });
    await expect(
      client.send(new ExecuteStatementCommand({ Statement: `UPDATE "events" SET x = 1 WHERE pk = 'a'` })),
    ).rejects.toThrow(/PartiQL INSERT\/UPDATE on events cannot carry the last-write stamp/);
    await expect(
      client.send(
        new ExecuteTransactionCommand({
          TransactStatements: [{ Statement: `insert into other value {'pk': 'a'}` }],
        }),
      ),
    ).rejects.toThrow(ValidationError);
    await client.send(new ExecuteStatementCommand({ Statement: `SELECT * FROM "events"` }));
    await client.send(new ExecuteStatementCommand({ Statement: `UPDATE plain SET x = 1 WHERE pk = 'a'` }));
    expect(sent).toHaveLength(2);
  });

  it('stamps millisecond resolution on request and keeps one stamp per send', async () => {
    let calls = 0;
    const { client, sent } = capturingClient({
      tables,
      resolution: 'milliseconds',
      now: () => {
        calls += 1;
        return NOW + 1000 * calls;
      },
    });
    await client.send(new PutItemCommand({ TableName: 'events', Item: { pk: { S: 'a' } } }));
    await client.send(new PutItemCommand({ TableName: 'events', Item: { pk: { S: 'a' } } }));
    expect(sent.map((body) => (body as { Item: { _ts: unknown } }).Item._ts)).toEqual([
      { N: '1735689601.789' },
      { N: '1735689602.789' },
    ]);
  });

  it('rejects bad options with a ConfigError', () => {
    const client = new DynamoDBClient({ region: 'us-east-1' });
    expect(() => addLastWriteStamp(client, { tables: { t: { lastWriteAttribute: '' } } })).toThrow(
      ConfigError,
    );
    expect(() => addLastWriteStamp(client, {} as LastWriteStampOptions)).toThrow(
      /options.tables is required/,
    );
    expect(() => addLastWriteStamp(client, { tables: {}, resolution: 'minutes' as 'seconds' })).toThrow(
      ConfigError,
    );
  });

  it('derives the tables option from cosmos-mode settings', () => {
    expect(
      lastWriteStampTables({
        a: { policy: { mode: 'cosmos', defaultTtl: -1, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' } },
        b: { policy: { mode: 'dynamodb', attributeName: 'exp' } },
      }),
    ).toEqual({ a: { lastWriteAttribute: '_ts' } });
  });
});
