import {
  BatchWriteItemCommand,
  PutItemCommand,
  TransactWriteItemsCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb';
import { PutTtlBodySchema } from '../../../control/api/schemas';
import { ValidationError } from '../../../core/errors';
import {
  EXPIRY_DERIVED_ATTRIBUTE as DERIVED,
  EXPIRY_SHARD_ATTRIBUTE as SHARD,
  TableTtlSettingsSchema,
  evaluate,
  expiryQueryRange,
  expiryShardOf,
  expirySortKey,
  expiryStampTables,
  type LastWriteStampOptions,
  type TableTtlSettings,
} from '../../../policy';
import { secondsText } from '../../../policy/expiry-index';
import { decodeKey, encodeKey, planStamp } from '../../../scanner/backfill';
import { capturingClient } from '../../support/write-stamp';

const NOW = Date.UTC(2030, 0, 1, 0, 0, 0, 250);
const dynamo: TableTtlSettings = {
  policy: { mode: 'dynamodb', attributeName: 'exp' },
  expiryIndex: { shards: 8 },
};
const cosmos: TableTtlSettings = {
  policy: { mode: 'cosmos', defaultTtl: 100, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
  expiryIndex: { shards: 8 },
};

describe('expiry index settings and query ranges', () => {
  it('is opt-in: absent by default, shards defaulted and bounded when given', () => {
    const base = { policy: { mode: 'dynamodb', attributeName: 'exp' } };
    expect(TableTtlSettingsSchema.parse(base).expiryIndex).toBeUndefined();
    expect(TableTtlSettingsSchema.parse({ ...base, expiryIndex: {} }).expiryIndex).toEqual({ shards: 16 });
    expect(TableTtlSettingsSchema.safeParse({ ...base, expiryIndex: { shards: 0 } }).success).toBe(false);
    expect(TableTtlSettingsSchema.safeParse({ ...base, expiryIndex: { shards: 257 } }).success).toBe(false);
    expect(TableTtlSettingsSchema.safeParse({ ...base, expiryIndex: { shard: 4 } }).success).toBe(false);
  });

  it('the REST body (PUT /tables/:table/ttl) accepts it through the settings schema', () => {
    const body = PutTtlBodySchema.parse({
      enabled: true,
      settings: { ...dynamo, expiryIndex: { shards: 8 } },
    });
    expect(body.settings?.expiryIndex).toEqual({ shards: 8 });
    expect(
      PutTtlBodySchema.safeParse({ enabled: true, settings: { ...dynamo, expiryIndex: { shards: -1 } } })
        .success,
    ).toBe(false);
  });

  it('dynamodb: sorts by the TTL attribute; range is (now − 5 years, now] in exact seconds', () => {
    expect(expirySortKey(dynamo)).toEqual({ attribute: 'exp', type: 'N' });
    expect(expiryQueryRange(dynamo, NOW)).toEqual({
      low: { N: secondsText(NOW - 157_766_400_000) },
      high: { N: '1893456000.25' },
    });
  });

  it('the range agrees with evaluate at the boundary: an item at high is expired, one a ms later is not', () => {
    const high = Number(expiryQueryRange(dynamo, NOW)?.high.N);
    expect(evaluate(dynamo, { exp: { N: String(high) } }, NOW)).toMatchObject({ expired: true });
    expect(evaluate(dynamo, { exp: { N: '1893456000.251' } }, NOW)).toMatchObject({ expired: false });
  });

  it('cosmos sorts by the derived attribute; TTL off has no range', () => {
    expect(expirySortKey(cosmos)).toEqual({ attribute: DERIVED, type: 'N' });
    expect(expiryQueryRange(cosmos, NOW)).toEqual({ high: { N: '1893456000.25' } });
    const off: TableTtlSettings = {
      policy: { ...cosmos.policy, defaultTtl: null } as TableTtlSettings['policy'],
    };
    expect(expiryQueryRange(off, NOW)).toBeNull();
  });

  it('mongo: time field ≤ now − expireAfterSeconds in the field format; ISO-8601 as UTC text', () => {
    const mongo = (timeFormat: 'epoch-seconds' | 'epoch-millis' | 'iso-8601'): TableTtlSettings => ({
      policy: { mode: 'mongo', expireAfterSeconds: 60, timeField: 'at', timeFormat },
    });
    expect(expiryQueryRange(mongo('epoch-seconds'), NOW)).toEqual({ high: { N: '1893455940.25' } });
    expect(expiryQueryRange(mongo('epoch-millis'), NOW)).toEqual({ high: { N: String(NOW - 60_000) } });
    expect(expiryQueryRange(mongo('iso-8601'), NOW)).toEqual({ high: { S: '2029-12-31T23:59:00.250Z' } });
    expect(expirySortKey(mongo('iso-8601'))).toEqual({ attribute: 'at', type: 'S' });
    // A UTC string without fraction at the cutoff second sorts after the cutoff text: found at most a second late.
    expect('2029-12-31T23:59:00Z' > '2029-12-31T23:59:00.250Z').toBe(true);
    expect('2029-12-31T23:58:59Z' <= '2029-12-31T23:59:00.250Z').toBe(true);
  });

  it('shards: deterministic per key, independent of attribute order, spread over all shards', () => {
    const a = expiryShardOf({ pk: { S: 'x' }, sk: { N: '1' } }, 16);
    expect(expiryShardOf({ sk: { N: '1' }, pk: { S: 'x' } }, 16)).toBe(a);
    const counts = new Array<number>(16).fill(0);
    for (let i = 0; i < 16_000; i++) {
      const s = expiryShardOf({ pk: { S: `item-${i}` } }, 16);
      counts[s] = (counts[s] ?? 0) + 1;
    }
    expect(Math.min(...counts)).toBeGreaterThan(800);
    expect(Math.max(...counts)).toBeLessThan(1200);
    // Types are part of the key: S '1' and N '1' are different items.
    const typed = Array.from({ length: 64 }, (_, i) => [
      expiryShardOf({ pk: { S: String(i) } }, 1024),
      expiryShardOf({ pk: { N: String(i) } }, 1024),
    ]);
    expect(typed.some(([s, n]) => s !== n)).toBe(true);
  });

  it('shards: a number key spelled otherwise (a writer sends 1e3, the server returns 1000) is the same shard', () => {
    for (let i = 1; i < 200; i++) {
      const shard = expiryShardOf({ pk: { S: 'p' }, sk: { N: String(i * 1000) } }, 1024);
      expect(expiryShardOf({ pk: { S: 'p' }, sk: { N: `${i}e3` } }, 1024)).toBe(shard);
      expect(expiryShardOf({ pk: { S: 'p' }, sk: { N: `${i}E+3` } }, 1024)).toBe(shard);
      expect(expiryShardOf({ pk: { S: 'p' }, sk: { N: `${i}000.00` } }, 1024)).toBe(shard);
    }
  });
});

describe('the write stamp with an expiry index', () => {
  const keys = { t: ['pk'], c: ['pk'] };
  const expiryIndex = expiryStampTables({ t: dynamo, c: cosmos, plain: { policy: dynamo.policy } }, keys);
  const options: LastWriteStampOptions = {
    tables: { c: { lastWriteAttribute: '_ts' } },
    expiryIndex,
    now: () => NOW,
  };
  const shardOf = (pk: string) => ({ N: String(expiryShardOf({ pk: { S: pk } }, 8)) });

  it('builds entries only for opted-in tables with a known key schema', () => {
    expect(Object.keys(expiryIndex).sort()).toEqual(['c', 't']);
    expect(expiryIndex.c?.cosmos).toEqual({ ttlAttribute: 'ttl', defaultTtl: 100 });
  });

  it('PutItem and BatchWriteItem Put get the shard; cosmos also the derived expiry (or none for ttl -1)', async () => {
    const { client, sent } = capturingClient(options);
    await client.send(new PutItemCommand({ TableName: 't', Item: { pk: { S: 'a' }, exp: { N: '5' } } }));
    await client.send(
      new BatchWriteItemCommand({
        RequestItems: {
          c: [
            { PutRequest: { Item: { pk: { S: 'b' }, ttl: { N: '10' } } } },
            { PutRequest: { Item: { pk: { S: 'n' }, ttl: { N: '-1' }, [DERIVED]: { N: '1' } } } },
            { DeleteRequest: { Key: { pk: { S: 'd' } } } },
          ],
          other: [{ PutRequest: { Item: { pk: { S: 'o' } } } }],
        },
      }),
    );
    expect(sent[0]).toEqual({
      TableName: 't',
      Item: { pk: { S: 'a' }, exp: { N: '5' }, [SHARD]: shardOf('a') },
    });
    expect(sent[1]).toEqual({
      RequestItems: {
        c: [
          {
            PutRequest: {
              Item: {
                pk: { S: 'b' },
                ttl: { N: '10' },
                _ts: { N: '1893456000' },
                [SHARD]: shardOf('b'),
                [DERIVED]: { N: '1893456010' },
              },
            },
          },
          {
            PutRequest: {
              Item: { pk: { S: 'n' }, ttl: { N: '-1' }, _ts: { N: '1893456000' }, [SHARD]: shardOf('n') },
            },
          },
          { DeleteRequest: { Key: { pk: { S: 'd' } } } },
        ],
        other: [{ PutRequest: { Item: { pk: { S: 'o' } } } }],
      },
    });
  });

  it('UpdateItem: shard added to SET; cosmos without a ttl change adds stored ttl (or default) to the new last write', async () => {
    const { client, sent } = capturingClient(options);
    await client.send(
      new UpdateItemCommand({
        TableName: 't',
        Key: { pk: { S: 'a' } },
        UpdateExpression: 'SET v = :v',
        ExpressionAttributeValues: { ':v': { S: 'x' } },
      }),
    );
    await client.send(
      new UpdateItemCommand({
        TableName: 'c',
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'SET v = :v',
        ExpressionAttributeValues: { ':v': { S: 'x' } },
      }),
    );
    expect(sent[0]).toMatchObject({
      UpdateExpression: 'SET #ttlstreamShard = :ttlstreamShard, v = :v',
      ExpressionAttributeNames: { '#ttlstreamShard': SHARD },
      ExpressionAttributeValues: { ':ttlstreamShard': shardOf('a') },
    });
    expect(sent[1]).toMatchObject({
      UpdateExpression: expect.stringContaining(
        '#ttlstreamExpires = if_not_exists(#ttlstreamTtl, :ttlstreamDefaultTtl) + :ttlstreamLastWriteSeconds',
      ) as unknown,
      ExpressionAttributeNames: { '#ttlstreamExpires': DERIVED, '#ttlstreamTtl': 'ttl' },
      ExpressionAttributeValues: {
        ':ttlstreamDefaultTtl': { N: '100' },
        ':ttlstreamLastWriteSeconds': { N: '1893456000' },
      },
    });
  });

  it('cosmos UpdateItem that sets or removes ttl gets the exact derived expiry; other ttl writes are refused', async () => {
    const { client, sent } = capturingClient(options);
    await client.send(
      new UpdateItemCommand({
        TableName: 'c',
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'SET #t = :t',
        ExpressionAttributeNames: { '#t': 'ttl' },
        ExpressionAttributeValues: { ':t': { N: '30' } },
      }),
    );
    await client.send(
      new UpdateItemCommand({ TableName: 'c', Key: { pk: { S: 'b' } }, UpdateExpression: 'REMOVE ttl' }),
    );
    await client.send(
      new UpdateItemCommand({
        TableName: 'c',
        Key: { pk: { S: 'b' } },
        UpdateExpression: 'SET ttl = :t',
        ExpressionAttributeValues: { ':t': { N: '-1' } },
      }),
    );
    expect(sent[0]).toMatchObject({
      ExpressionAttributeValues: { ':ttlstreamExpires': { N: '1893456030' } },
    });
    expect(sent[1]).toMatchObject({
      ExpressionAttributeValues: { ':ttlstreamExpires': { N: '1893456100' } },
    });
    expect(sent[2]).toMatchObject({
      UpdateExpression: expect.stringMatching(/REMOVE #ttlstreamExpires/) as unknown,
    });
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: 'c',
          Key: { pk: { S: 'b' } },
          UpdateExpression: 'ADD ttl :t',
          ExpressionAttributeValues: { ':t': { N: '1' } },
        }),
      ),
    ).rejects.toThrow(ValidationError);
    await expect(
      client.send(
        new UpdateItemCommand({
          TableName: 't',
          Key: { pk: { S: 'b' } },
          UpdateExpression: 'SET #s = :s',
          ExpressionAttributeNames: { '#s': SHARD },
          ExpressionAttributeValues: { ':s': { N: '1' } },
        }),
      ),
    ).rejects.toThrow(ValidationError);
  });

  it('TransactWriteItems: Put and Update stamped, ConditionCheck and Delete untouched', async () => {
    const { client, sent } = capturingClient(options);
    await client.send(
      new TransactWriteItemsCommand({
        TransactItems: [
          { Put: { TableName: 't', Item: { pk: { S: 'a' } } } },
          { Update: { TableName: 't', Key: { pk: { S: 'b' } }, UpdateExpression: 'REMOVE x' } },
          { Delete: { TableName: 't', Key: { pk: { S: 'c' } } } },
        ],
      }),
    );
    expect(sent[0]).toMatchObject({
      TransactItems: [
        { Put: { TableName: 't', Item: { pk: { S: 'a' }, [SHARD]: shardOf('a') } } },
        {
          Update: {
            TableName: 't',
            Key: { pk: { S: 'b' } },
            UpdateExpression: 'REMOVE x SET #ttlstreamShard = :ttlstreamShard',
            ExpressionAttributeNames: { '#ttlstreamShard': SHARD },
            ExpressionAttributeValues: { ':ttlstreamShard': shardOf('b') },
          },
        },
        { Delete: { TableName: 't', Key: { pk: { S: 'c' } } } },
      ],
    });
  });
});

describe('backfill: the conditional update per item (planStamp)', () => {
  it('dynamodb: adds only the shard, only to an item that exists and has none; skips what the index cannot hold', () => {
    const plan = planStamp(dynamo, ['pk'], { pk: { S: 'a' }, exp: { N: '5' } });
    expect(plan).toEqual({
      Key: { pk: { S: 'a' } },
      UpdateExpression: 'SET #s = :s',
      ConditionExpression: 'attribute_exists(#k) AND attribute_not_exists(#s)',
      ExpressionAttributeNames: { '#k': 'pk', '#s': SHARD },
      ExpressionAttributeValues: { ':s': { N: String(expiryShardOf({ pk: { S: 'a' } }, 8)) } },
    });
    expect(planStamp(dynamo, ['pk'], { pk: { S: 'a' }, exp: { N: '5' }, [SHARD]: { N: '1' } })).toBe(
      'stamped',
    );
    expect(planStamp(dynamo, ['pk'], { pk: { S: 'a' } })).toBe('skip');
    expect(planStamp(dynamo, ['pk'], { pk: { S: 'a' }, exp: { S: '5' } })).toBe('skip');
  });

  it('cosmos: derived expiry from the stored last write and ttl, pinned to both as read', () => {
    const plan = planStamp(cosmos, ['pk'], { pk: { S: 'a' }, _ts: { N: '1000.5' }, ttl: { N: '30' } });
    expect(plan).toMatchObject({
      UpdateExpression: 'SET #s = :s, #d = :d',
      ConditionExpression: 'attribute_exists(#k) AND #lw = :lw AND #ttl = :ttl',
      ExpressionAttributeValues: { ':d': { N: '1030.5' }, ':lw': { N: '1000.5' }, ':ttl': { N: '30' } },
    });
    // No item ttl: the default (100) counts, and a later write of a ttl must win.
    expect(planStamp(cosmos, ['pk'], { pk: { S: 'b' }, _ts: { N: '1000' } })).toMatchObject({
      ConditionExpression: 'attribute_exists(#k) AND #lw = :lw AND attribute_not_exists(#ttl)',
      ExpressionAttributeValues: { ':d': { N: '1100' } },
    });
    expect(planStamp(cosmos, ['pk'], { pk: { S: 'c' }, _ts: { N: '1000' }, ttl: { N: '-1' } })).toBe('skip');
    expect(planStamp(cosmos, ['pk'], { pk: { S: 'd' }, ttl: { N: '30' } })).toBe('skip');
  });

  it('checkpoints round-trip binary keys', () => {
    const key = { pk: { B: new Uint8Array([0, 255, 7]) }, sk: { N: '1' } };
    expect(decodeKey(encodeKey(key))).toEqual(key);
  });
});
