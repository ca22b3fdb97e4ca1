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
  spawnPipeline,
  type Env,
  type Item,
  type Spawned,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { marksOf } from '../../support/marks';
import { liveLeases, ownersOf } from '../../support/leases';

describe('two scanner+producer processes on one table', () => {
  let env: Env;
  let collector: Collector;
  const procs: Spawned[] = [];

  beforeAll(async () => {
    env = await createEnv(
      pipelineConfig({ scanner: { totalSegments: 8 }, producer: { shards: 8, batchSize: 25 } }),
    );
    collector = new Collector(env.kafka);
  });
  afterAll(async () => {
    for (const p of procs) await p.stop();
    await collector.stop();
    await env.cleanup();
  });

  it('share segments and shards, delete everything expired once, and stop gracefully', async () => {
    const table = await createTable(env, 'ttl-two', { policy: { mode: 'dynamodb', attributeName: 'ttl' } });
    await collector.start(await ensureStreamTopic(env));

    procs.push(spawnPipeline(env.config, ['scanner', 'producer'], { TTLSTREAM_OWNER_ID: 'proc-1' }));
    procs.push(spawnPipeline(env.config, ['scanner', 'producer'], { TTLSTREAM_OWNER_ID: 'proc-2' }));
    await Promise.all(procs.map((p) => p.ready));

    // Both processes hold a share of both kinds of leases before any work arrives.
    await waitFor(
      'leases balanced over both processes',
      async () => {
        const leases = await liveLeases(env);
        return ['scan', 'marks'].every((k) => ownersOf(leases, k).size === 2);
      },
      30_000,
    );

    const nowS = Math.floor(Date.now() / 1000);
    const seeded = new Map<string, Item>();
    for (let i = 0; i < 300; i++) {
      seeded.set(`e${i}`, {
        pk: { S: `e${i}` },
        ttl: { N: String(nowS - 10 - (i % 50)) },
        n: { N: String(i) },
      });
    }
    for (let i = 0; i < 50; i++) seeded.set(`f${i}`, { pk: { S: `f${i}` }, ttl: { N: String(nowS + 3600) } });
    await putItems(env.ddb, table, [...seeded.values()]);

    await waitFor(
      'all 300 expired items deleted',
      async () => {
        const present = await scanAll(env.ddb, table);
        return present.size === 50 && [...present.keys()].every((k) => k.startsWith('f'));
      },
      60_000,
    );
    await waitFor('the marks table to drain', async () => (await marksOf(env, table)).length === 0, 20_000);

    const codes = await Promise.all(procs.map((p) => p.stop()));
    expect(codes).toEqual([0, 0]);
    // Graceful stop released the leases rather than leaving them to expire.
    expect((await liveLeases(env)).size).toBe(0);

    await waitFor('records', async () => collector.effectiveByKey().size >= 300, 20_000);
    const effective = collector.effectiveByKey();
    for (const [pk, item] of seeded) {
      const records = effective.get(messageKey(table, { pk: { S: pk } })) ?? [];
      if (pk.startsWith('f')) {
        expect(records).toHaveLength(0);
        continue;
      }
      expect({ pk, count: records.length }).toEqual({ pk, count: 1 });
      expect(sameImage(records[0]!.dynamodb.OldImage, item)).toBe(true);
    }
  });
});
