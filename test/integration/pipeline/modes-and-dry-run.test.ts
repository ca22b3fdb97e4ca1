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
  topicMessageCount,
  type Env,
  type Item,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { marksOf } from '../../support/marks';

function checkRecords(
  collector: Collector,
  table: string,
  seeded: Map<string, Item>,
  deleted: string[],
): void {
  const effective = collector.effectiveByKey();
  for (const pk of deleted) {
    const records = effective.get(messageKey(table, { pk: { S: pk } })) ?? [];
    expect({ pk, count: records.length }).toEqual({ pk, count: 1 });
    expect(sameImage(records[0]!.dynamodb.OldImage, seeded.get(pk) as Item)).toBe(true);
    expect(records[0]!.userIdentity?.principalId).toBe('dynamodb.amazonaws.com');
  }
  for (const pk of seeded.keys()) {
    if (!deleted.includes(pk)) expect(effective.get(messageKey(table, { pk: { S: pk } }))).toBeUndefined();
  }
}

describe('cosmos and mongo mode tables end to end', () => {
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

  it('applies each mode: cosmos (default + item ttl from the last write), mongo (time field + expireAfterSeconds)', async () => {
    const cosmos = await createTable(env, 'ttl-cosmos', {
      policy: { mode: 'cosmos', defaultTtl: 100, ttlAttribute: 'ttl', lastWriteAttribute: '_ts' },
    });
    const mongo = await createTable(env, 'ttl-mongo', {
      policy: { mode: 'mongo', expireAfterSeconds: 3600, timeField: 'createdAt', timeFormat: 'iso-8601' },
    });
    await collector.start(await ensureStreamTopic(env));

    const nowS = Math.floor(Date.now() / 1000);
    const iso = (s: number) => ({ S: new Date(s * 1000).toISOString() });
    const cosmosItems = new Map<string, Item>(
      (
        [
          ['default-expired', { _ts: { N: String(nowS - 200) } }], // default 100 s after the last write
          ['default-alive', { _ts: { N: String(nowS - 50) } }],
          ['item-ttl-expired', { _ts: { N: String(nowS - 200) }, ttl: { N: '10' } }],
          ['item-ttl-alive', { _ts: { N: String(nowS - 200) }, ttl: { N: '1000' } }], // item ttl overrides the default
          ['item-never', { _ts: { N: String(nowS - 99_999) }, ttl: { N: '-1' } }],
          ['item-ttl-null', { _ts: { N: String(nowS - 99_999) }, ttl: { NULL: true } }], // not allowed: ignored
          ['item-ttl-zero', { _ts: { N: String(nowS - 99_999) }, ttl: { N: '0' } }], // malformed at item level
          ['no-last-write', { ttl: { N: '10' } }], // cannot be aged: kept
        ] as Array<[string, Item]>
      ).map(([pk, attrs]) => [pk, { pk: { S: pk }, ...attrs }]),
    );
    const mongoItems = new Map<string, Item>(
      (
        [
          ['old', { createdAt: iso(nowS - 7200) }],
          ['older', { createdAt: iso(nowS - 86_400) }],
          ['young', { createdAt: iso(nowS - 60) }],
          ['not-a-date', { createdAt: { S: 'yesterday' } }],
          ['number-not-iso', { createdAt: { N: String(nowS - 7200) } }],
          ['no-field', { other: { S: 'x' } }],
        ] as Array<[string, Item]>
      ).map(([pk, attrs]) => [pk, { pk: { S: pk }, ...attrs }]),
    );
    await putItems(env.ddb, cosmos, [...cosmosItems.values()]);
    await putItems(env.ddb, mongo, [...mongoItems.values()]);

    const cosmosGone = ['default-expired', 'item-ttl-expired'];
    const mongoGone = ['old', 'older'];
    const pipeline = await startInProcess(env, ['scanner', 'producer']);
    try {
      await waitFor(
        'cosmos and mongo expired items to be deleted',
        async () => {
          const c = await scanAll(env.ddb, cosmos);
          const m = await scanAll(env.ddb, mongo);
          return cosmosGone.every((k) => !c.has(k)) && mongoGone.every((k) => !m.has(k));
        },
        30_000,
      );
      await waitFor(
        'marks to drain',
        async () => (await marksOf(env, cosmos)).length + (await marksOf(env, mongo)).length === 0,
        30_000,
      );
      // A few more passes: nothing else may go.
      await sleep(1000);
    } finally {
      await pipeline.stop();
    }
    await waitFor('records', async () => collector.removes.length >= 4, 15_000);
    await sleep(500);

    const c = await scanAll(env.ddb, cosmos);
    const m = await scanAll(env.ddb, mongo);
    expect([...cosmosItems.keys()].filter((k) => !c.has(k)).sort()).toEqual([...cosmosGone].sort());
    expect([...mongoItems.keys()].filter((k) => !m.has(k)).sort()).toEqual([...mongoGone].sort());
    checkRecords(collector, cosmos, cosmosItems, cosmosGone);
    checkRecords(collector, mongo, mongoItems, mongoGone);
  });
});

describe('dry run', () => {
  let env: Env;

  beforeAll(async () => {
    env = await createEnv(pipelineConfig({ producer: { dryRun: true } }));
  });
  afterAll(() => env.cleanup());

  it('evaluates and logs but never publishes and never deletes', async () => {
    const table = await createTable(env, 'ttl-dry', { policy: { mode: 'dynamodb', attributeName: 'ttl' } });
    const topic = await ensureStreamTopic(env);
    const nowS = Math.floor(Date.now() / 1000);
    const items: Item[] = Array.from({ length: 30 }, (_, i) => ({
      pk: { S: `k${i}` },
      ttl: { N: String(nowS - 100) },
    }));
    await putItems(env.ddb, table, items);

    const pipeline = await startInProcess(env, ['scanner', 'producer']);
    try {
      // The scanner did its part: every expired item is marked...
      await waitFor(
        'marks for every expired item',
        async () => (await marksOf(env, table)).length === 30,
        20_000,
      );
      // ...and the producer had many sweeps over them.
      await sleep(2000);
    } finally {
      await pipeline.stop();
    }
    expect((await scanAll(env.ddb, table)).size).toBe(30);
    expect(await topicMessageCount(env, topic)).toBe(0);
    // Marks stay (a later real run acts on them) and no intent was written.
    const rows = await marksOf(env, table);
    expect(rows).toHaveLength(30);
    expect(rows.filter((r) => r.kind === 'intent')).toHaveLength(0);
  });
});
