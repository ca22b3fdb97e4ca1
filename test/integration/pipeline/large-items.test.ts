import { randomBytes } from 'node:crypto';
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
 * Items near DynamoDB's 400 KB limit: ten of them in one batch are several MB of records, more than the broker
 * takes in one request, and incompressible binaries do not fit an intent row even gzipped.
 */
describe('large items', () => {
  let env: Env;
  let collector: Collector;

  beforeAll(async () => {
    env = await createEnv(pipelineConfig({ producer: { shards: 1, batchSize: 100 } }));
    collector = new Collector(env.kafka);
  });
  afterAll(async () => {
    await collector.stop();
    await env.cleanup();
  });

  it('are deleted with full records, in both the compressible and the incompressible case', async () => {
    const table = await createTable(env, 'ttl-large', { policy: { mode: 'dynamodb', attributeName: 'ttl' } });
    await collector.start(await ensureStreamTopic(env));
    const nowS = Math.floor(Date.now() / 1000);
    const seeded = new Map<string, Item>();
    for (let i = 0; i < 6; i++) {
      seeded.set(`text-${i}`, {
        pk: { S: `text-${i}` },
        ttl: { N: String(nowS - 10) },
        body: { S: randomBytes(280 * 1024).toString('base64') }, // ~373 KB of text
      });
    }
    for (let i = 0; i < 4; i++) {
      seeded.set(`bin-${i}`, {
        pk: { S: `bin-${i}` },
        ttl: { N: String(nowS - 10) },
        body: { B: new Uint8Array(randomBytes(380 * 1024)) },
      });
    }
    await putItems(env.ddb, table, [...seeded.values()]);

    const pipeline = await startInProcess(env, ['scanner', 'producer']);
    try {
      await waitFor(
        'all large items deleted',
        async () => (await scanAll(env.ddb, table)).size === 0,
        60_000,
      );
      await waitFor('marks drained', async () => (await marksOf(env, table)).length === 0, 20_000);
    } finally {
      await pipeline.stop();
    }
    await waitFor('records', async () => collector.effectiveByKey().size === 10, 30_000);
    const effective = collector.effectiveByKey();
    for (const [pk, item] of seeded) {
      const records = effective.get(messageKey(table, { pk: { S: pk } })) ?? [];
      expect({ pk, count: records.length }).toEqual({ pk, count: 1 });
      expect(sameImage(records[0]!.dynamodb.OldImage, item)).toBe(true);
    }
  });
});
