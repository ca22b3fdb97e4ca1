import { ConditionalCheckFailedException, UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { setTimeout as sleep } from 'node:timers/promises';
import { messageKey } from '../../../schemas';
import {
  Collector,
  createEnv,
  createTable,
  ensureStreamTopic,
  pipelineConfig,
  putItems,
  sameImage,
  scanAll,
  startInProcess,
  type Env,
  type Item,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { marksOf } from '../../support/marks';

/**
 * The pipeline end to end on a dynamodb-mode table: exactly the expired items are deleted, each with exactly one
 * effective REMOVE record carrying the item as seeded; malformed, future, held and extended items stay.
 */
describe('scanner + producer on a dynamodb-mode table', () => {
  let env: Env;
  let collector: Collector;

  beforeAll(async () => {
    env = await createEnv(pipelineConfig());
    collector = new Collector(env.kafka);
  });
  afterAll(async () => {
    await collector.stop();
    await env.cleanup();
  });

  it('deletes exactly the expired items, each with one effective REMOVE; writers who extend in time win', async () => {
    const table = await createTable(env, 'ttl-ddb', {
      policy: { mode: 'dynamodb', attributeName: 'expiresAt' },
      legalHoldAttribute: 'hold',
    });
    const topic = await ensureStreamTopic(env);
    await collector.start(topic);

    const nowS = Math.floor(Date.now() / 1000);
    const n = (v: number) => ({ N: String(v) });
    const rich = (i: number): Item => ({
      payload: { S: `payload-${i}` },
      bin: { B: new Uint8Array([i, 0, 255]) },
      tags: { SS: ['x', `t${i}`] },
      doc: { M: { a: { L: [{ N: '1' }, { NULL: true }, { BOOL: true }] } } },
    });
    const seeded = new Map<string, Item>();
    const add = (pk: string, attrs: Item) => seeded.set(pk, { pk: { S: pk }, ...attrs });
    for (let i = 0; i < 20; i++) add(`expired-${i}`, { expiresAt: n(nowS - 60 - i), ...rich(i) });
    for (let i = 0; i < 10; i++) add(`future-${i}`, { expiresAt: n(nowS + 3600), ...rich(i) });
    add('malformed-string', { expiresAt: { S: String(nowS - 60) } });
    add('malformed-null', { expiresAt: { NULL: true } });
    add('malformed-too-old', { expiresAt: n(nowS - 6 * 365 * 86400) });
    add('malformed-millis', { expiresAt: n(Date.now() - 60_000) });
    add('no-ttl', { payload: { S: 'none' } });
    for (let i = 0; i < 3; i++) add(`held-${i}`, { expiresAt: n(nowS - 60), hold: { BOOL: true } });
    add('hold-false', { expiresAt: n(nowS - 60), hold: { BOOL: false } });
    // Expire a few seconds into the run; a writer extends half of them before that.
    for (let i = 0; i < 10; i++) add(`soon-${i}`, { expiresAt: n(nowS + 4) });
    // Already expired; a writer races the pipeline to extend them.
    for (let i = 0; i < 10; i++) add(`race-${i}`, { expiresAt: n(nowS - 30), ...rich(i) });
    await putItems(env.ddb, table, [...seeded.values()]);

    const extendedTo = nowS + 7200;
    const extend = async (pk: string): Promise<boolean> => {
      try {
        await env.ddb.send(
          new UpdateItemCommand({
            TableName: table,
            Key: { pk: { S: pk } },
            UpdateExpression: 'SET expiresAt = :v',
            ConditionExpression: 'attribute_exists(pk)',
            ExpressionAttributeValues: { ':v': n(extendedTo) },
          }),
        );
        return true;
      } catch (err) {
        if (err instanceof ConditionalCheckFailedException) return false;
        throw err;
      }
    };

    const pipeline = await startInProcess(env, ['scanner', 'producer']);
    const raceWon = new Set<string>();
    try {
      // The racing writer, concurrently with the pipeline's first passes.
      const racer = (async () => {
        for (let i = 0; i < 10; i++) {
          if (await extend(`race-${i}`)) raceWon.add(`race-${i}`);
          await sleep(20);
        }
      })();
      await sleep(1000);
      for (let i = 0; i < 5; i++) expect(await extend(`soon-${i}`)).toBe(true);
      await racer;

      const mustGo = [...seeded.keys()].filter(
        (k) => k.startsWith('expired-') || /^soon-[5-9]$/.test(k) || k === 'hold-false',
      );
      await waitFor(
        'the expired items to be deleted',
        async () => {
          const present = await scanAll(env.ddb, table);
          return mustGo.every((k) => !present.has(k));
        },
        30_000,
      );
      // Let marks written by a pass that overlapped the deletes drain, then the records settle.
      await waitFor('the marks table to drain', async () => (await marksOf(env, table)).length === 0, 15_000);
    } finally {
      await pipeline.stop();
    }
    await waitFor('records to arrive', async () => collector.removes.length >= 25, 15_000);
    await sleep(1000);

    const present = await scanAll(env.ddb, table);
    const effective = collector.effectiveByKey();
    const deleted = [...seeded.keys()].filter((k) => !present.has(k));

    // Exactly the expected items are gone.
    const expectedDeleted = [...seeded.keys()].filter(
      (k) =>
        k.startsWith('expired-') ||
        /^soon-[5-9]$/.test(k) ||
        k === 'hold-false' || // a hold attribute that is not BOOL true holds nothing
        (k.startsWith('race-') && !raceWon.has(k)),
    );
    expect(deleted.sort()).toEqual(expectedDeleted.sort());

    // Survivors are untouched, apart from the writer's extensions.
    for (const [pk, item] of present) {
      const want = seeded.get(pk) as Item;
      if (raceWon.has(pk) || /^soon-[0-4]$/.test(pk)) {
        expect(item.expiresAt).toEqual(n(extendedTo));
      } else {
        expect(sameImage(item, want)).toBe(true);
      }
      expect(effective.get(messageKey(table, { pk: { S: pk } }))).toBeUndefined();
    }

    // Each deleted item: exactly one effective REMOVE, with the image as deleted and the service identity.
    for (const pk of deleted) {
      const records = effective.get(messageKey(table, { pk: { S: pk } })) ?? [];
      expect({ pk, count: records.length }).toEqual({ pk, count: 1 });
      const r = records[0]!;
      expect(sameImage(r.dynamodb.OldImage, seeded.get(pk) as Item)).toBe(true);
      expect(r.dynamodb.Keys).toEqual({ pk: { S: pk } });
      expect(r.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
      expect(r.eventName).toBe('REMOVE');
      expect(r.dynamodb.SequenceNumber).toMatch(/^\d{21}$/);
      expect(r.eventSourceARN).toBe(
        `arn:aws:dynamodb:${env.config.region}:000000000000:table/${table}/stream/ttlstream`,
      );
      expect(Math.abs(r.dynamodb.ApproximateCreationDateTime - nowS)).toBeLessThan(120);
    }
    // No record of any kind names a survivor without being retracted.
    expect(collector.removes.every((r) => seeded.has(r.dynamodb.Keys.pk?.S ?? ''))).toBe(true);
  });
});
