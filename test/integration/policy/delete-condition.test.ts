import {
  ConditionalCheckFailedException,
  DeleteItemCommand,
  GetItemCommand,
  PutItemCommand,
  UpdateItemCommand,
  type AttributeValue,
} from '@aws-sdk/client-dynamodb';
import { createDynamoClient } from '../../../core/clients';
import {
  addLastWriteStamp,
  evaluate,
  isExpired,
  stillExpiredCondition,
  type Item,
  type TableTtlSettings,
} from '../../../policy';
import { DYNAMO_SERVERS, serverConfig } from '../../support/dynamodb-servers';
import { createTestTable, deleteTestTable, uniqueName } from '../../support/stack';

/**
 * stillExpiredCondition in a real conditional DeleteItem: an unchanged expired item is deleted; a
 * writer who extends or removes the TTL, sets the legal hold or (cosmos) rewrites the item between
 * the verdict and the delete keeps it.
 */
describe.each(DYNAMO_SERVERS)('stillExpiredCondition in a real DeleteItem (%s)', (server) => {
  const config = serverConfig(server);
  const ddb = createDynamoClient(config);
  const stamped = createDynamoClient(config);
  const table = uniqueName('policy-cond');
  let clockMs = 0;
  const NOW = Date.now();
  const NOW_S = Math.floor(NOW / 1000);
  let seq = 0;

  beforeAll(async () => {
    await createTestTable(ddb, table);
    addLastWriteStamp(stamped, { tables: { [table]: { lastWriteAttribute: '_ts' } }, now: () => clockMs });
  });
  afterAll(async () => {
    await deleteTestTable(ddb, table);
    ddb.destroy();
    stamped.destroy();
  });

  const key = (item: Item) => ({ pk: item.pk as AttributeValue });
  const read = async (item: Item): Promise<Item | undefined> =>
    (await ddb.send(new GetItemCommand({ TableName: table, Key: key(item), ConsistentRead: true }))).Item;
  const put = async (item: Item): Promise<Item> => {
    await ddb.send(new PutItemCommand({ TableName: table, Item: item }));
    return (await read(item))!;
  };
  /** UpdateItem with every #name in the expression resolved (ttl and hold are reserved words). */
  const names = (expression: string): Record<string, string> | undefined => {
    const used = [...expression.matchAll(/#(\w+)/g)].map((m) => m[1]!);
    return used.length === 0
      ? undefined
      : Object.fromEntries(used.map((n) => [`#${n}`, n === 'ts' ? '_ts' : n]));
  };
  const updateWith = (
    client: typeof ddb,
    item: Item,
    expression: string,
    values?: Record<string, AttributeValue>,
  ) =>
    client.send(
      new UpdateItemCommand({
        TableName: table,
        Key: key(item),
        UpdateExpression: expression,
        ...(names(expression) ? { ExpressionAttributeNames: names(expression) } : {}),
        ...(values ? { ExpressionAttributeValues: values } : {}),
      }),
    );
  const update = (item: Item, expression: string, values?: Record<string, AttributeValue>) =>
    updateWith(ddb, item, expression, values);
  /** DeleteItem with the condition built from `seen`; true when deleted, false when refused. */
  const conditionalDelete = async (settings: TableTtlSettings, seen: Item, nowMs = NOW): Promise<boolean> => {
    const c = stillExpiredCondition(settings, seen, nowMs);
    try {
      await ddb.send(
        new DeleteItemCommand({
          TableName: table,
          Key: key(seen),
          ConditionExpression: c.expression,
          ExpressionAttributeNames: c.names,
          ...(Object.keys(c.values).length > 0 ? { ExpressionAttributeValues: c.values } : {}),
        }),
      );
      return true;
    } catch (err) {
      if (err instanceof ConditionalCheckFailedException) return false;
      throw err;
    }
  };
  const pk = (label: string) => ({ S: `${label}-${++seq}` });

  describe('dynamodb mode with a legal hold', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'dynamodb', attributeName: 'exp' },
      legalHoldAttribute: 'hold',
    };
    // Map and list attributes ride along: the condition never compares them (dynalite cannot).
    const expiredItem = (label: string, extra: Item = {}): Item => ({
      pk: pk(label),
      exp: { N: `${NOW_S - 30}.5` },
      doc: { M: { a: { L: [{ S: 'x' }] } } },
      list: { L: [{ N: '1' }] },
      ...extra,
    });

    it('deletes an unchanged expired item, also with hold false or a non-BOOL hold', async () => {
      for (const extra of [{}, { hold: { BOOL: false } }, { hold: { S: 'true' } }] as Item[]) {
        const seen = await put(expiredItem('unchanged', extra));
        expect(isExpired(evaluate(settings, seen, NOW))).toBe(true);
        expect(await conditionalDelete(settings, seen)).toBe(true);
        expect(await read(seen)).toBeUndefined();
      }
    });

    it('deletes after unrelated attributes changed', async () => {
      const seen = await put(expiredItem('unrelated'));
      await update(seen, 'SET #other = :v, #doc.#a = :l', { ':v': { S: 'y' }, ':l': { L: [] } });
      expect(await conditionalDelete(settings, seen)).toBe(true);
    });

    it.each<[string, string, Record<string, AttributeValue> | undefined]>([
      ['the TTL was extended', 'SET #exp = :v', { ':v': { N: String(NOW_S + 3600) } }],
      ['the TTL was removed', 'REMOVE #exp', undefined],
      ['the TTL became a string', 'SET #exp = :v', { ':v': { S: String(NOW_S - 30) } }],
      ['the TTL was moved earlier', 'SET #exp = :v', { ':v': { N: String(NOW_S - 60) } }],
      ['the legal hold was set', 'SET #hold = :v', { ':v': { BOOL: true } }],
    ])('refuses when %s, and the item stays', async (_why, expression, values) => {
      const seen = await put(expiredItem('changed', { hold: { BOOL: false } }));
      await update(seen, expression, values);
      const before = await read(seen);
      expect(await conditionalDelete(settings, seen)).toBe(false);
      expect(await read(seen)).toEqual(before);
    });

    it('refuses when the item is already gone (nothing to delete, nothing to announce)', async () => {
      const seen = await put(expiredItem('gone'));
      await ddb.send(new DeleteItemCommand({ TableName: table, Key: key(seen) }));
      expect(await conditionalDelete(settings, seen)).toBe(false);
    });

    it('refuses to build a condition for an item that is not expired', async () => {
      const seen = await put(expiredItem('future', { exp: { N: String(NOW_S + 60) } }));
      expect(() => stillExpiredCondition(settings, seen, NOW)).toThrow(/not expired/);
      expect(await read(seen)).toBeDefined();
    });
  });

  describe('cosmos mode, items written through the last-write stamp', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'cosmos', defaultTtl: 60, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
      legalHoldAttribute: 'hold',
    };
    const writeExpired = async (label: string, extra: Item = {}): Promise<Item> => {
      clockMs = NOW - 120_000;
      const item: Item = { pk: pk(label), v: { N: '1' }, ...extra };
      await stamped.send(new PutItemCommand({ TableName: table, Item: item }));
      const seen = (await read(item))!;
      expect(isExpired(evaluate(settings, seen, NOW))).toBe(true);
      return seen;
    };

    it('deletes an unchanged expired item, with the default ttl and with its own ttl', async () => {
      const byDefault = await writeExpired('c-default');
      expect(await conditionalDelete(settings, byDefault)).toBe(true);
      const own = await writeExpired('c-own', { ttl: { N: '10' } });
      expect(await conditionalDelete(settings, own)).toBe(true);
      expect(await read(own)).toBeUndefined();
    });

    it('refuses after a rewrite (PutItem or UpdateItem through the stamp): the TTL was reset', async () => {
      const a = await writeExpired('c-put');
      clockMs = NOW - 1000;
      await stamped.send(new PutItemCommand({ TableName: table, Item: { ...a, v: { N: '2' } } }));
      expect(await conditionalDelete(settings, a)).toBe(false);
      const b = await writeExpired('c-update');
      clockMs = NOW - 1000;
      await updateWith(stamped, b, 'ADD #v :one', { ':one': { N: '1' } });
      expect(await conditionalDelete(settings, b)).toBe(false);
      expect(await read(b)).toMatchObject({ v: { N: '2' } });
    });

    it.each<[string, Item, string, Record<string, AttributeValue> | undefined]>([
      ['an item ttl -1 was added', {}, 'SET #ttl = :v', { ':v': { N: '-1' } }],
      ['the item ttl was extended', { ttl: { N: '10' } }, 'SET #ttl = :v', { ':v': { N: '100000' } }],
      ['the item ttl was removed (the default now applies)', { ttl: { N: '10' } }, 'REMOVE #ttl', undefined],
      ['the stamp was removed', {}, 'REMOVE #ts', undefined],
      ['the legal hold was set', {}, 'SET #hold = :v', { ':v': { BOOL: true } }],
    ])('refuses when %s, written without the stamp', async (_why, extra, expression, values) => {
      const seen = await writeExpired('c-changed', extra);
      await update(seen, expression, values);
      expect(await conditionalDelete(settings, seen)).toBe(false);
      expect(await read(seen)).toBeDefined();
    });
  });

  describe('mongo mode', () => {
    const settings: TableTtlSettings = {
      policy: { mode: 'mongo', expireAfterSeconds: 3600, timeField: 'createdAt', timeFormat: 'iso-8601' },
    };
    const created = new Date(NOW - 7_200_000).toISOString();

    it('deletes an unchanged expired item and refuses once the time field moved', async () => {
      const a = await put({ pk: pk('m'), createdAt: { S: created } });
      expect(await conditionalDelete(settings, a)).toBe(true);
      const b = await put({ pk: pk('m'), createdAt: { S: created } });
      await update(b, 'SET #createdAt = :v', { ':v': { S: new Date(NOW).toISOString() } });
      expect(await conditionalDelete(settings, b)).toBe(false);
      const c = await put({ pk: pk('m'), createdAt: { S: created } });
      await update(c, 'REMOVE #createdAt');
      expect(await conditionalDelete(settings, c)).toBe(false);
    });
  });
});
