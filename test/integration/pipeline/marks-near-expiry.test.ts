import { addressOf, ensureMarksTable, writeMarks } from '../../../pipeline/marks';
import { metrics } from '../../../core/metrics';
import {
  createEnv,
  createTable,
  ensureStreamTopic,
  pipelineConfig,
  putItems,
  scanAll,
  startInProcess,
  type Env,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { marksOf } from '../../support/marks';

/**
 * A mark the producer finds not quite expired (a scanner whose clock runs ahead) is kept for a later sweep, because
 * the scanner does not write the same mark again for a while; a mark of an item that is far from expired (its TTL
 * was extended) is dropped.
 */
describe('marks of items that are not expired yet', () => {
  let env: Env;
  beforeAll(async () => {
    env = await createEnv(pipelineConfig({ producer: { shards: 1, idleSweepMs: 1000 } }));
  });
  afterAll(async () => env.cleanup());

  it('keeps a mark that expires within a minute, drops one that does not, and deletes the first once expired', async () => {
    const table = await createTable(env, 'ttl-near', { policy: { mode: 'dynamodb', attributeName: 'ttl' } });
    await ensureStreamTopic(env);
    const nowS = Math.floor(Date.now() / 1000);
    const soonS = nowS + 4;
    await putItems(env.ddb, table, [
      { pk: { S: 'soon' }, ttl: { N: String(soonS) } },
      { pk: { S: 'later' }, ttl: { N: String(nowS + 7200) } },
    ]);
    // As a scanner with a fast clock would write them (no scanner runs in this test).
    await ensureMarksTable(env.ddb, env.config.tables.marks);
    await writeMarks(
      env.ddb,
      env.config.tables.marks,
      table,
      ['soon', 'later'].map((pk) => ({
        address: addressOf(table, { pk: { S: pk } }, env.config.producer.shards),
        markedAtMs: Date.now(),
        expiresAtMs: Date.now(),
      })),
    );
    const skippedBefore = (await metrics.deletesSkipped.get()).values.find(
      (v) => v.labels.table === table && v.labels.reason === 'not-expired',
    )?.value;
    expect(skippedBefore ?? 0).toBe(0);

    const pipeline = await startInProcess(env, ['producer']);
    try {
      // The far one is dropped at the first sweep; the near one stays marked.
      await waitFor(
        'the mark of the far item dropped',
        async () =>
          (await metrics.deletesSkipped.get()).values.some(
            (v) => v.labels.table === table && v.labels.reason === 'not-expired' && v.value === 1,
          ),
        15_000,
      );
      expect((await marksOf(env, table)).length).toBe(1);
      expect((await scanAll(env.ddb, table)).size).toBe(2);
      // Once it expires, a later sweep deletes it from the kept mark.
      await waitFor(
        'the near item deleted',
        async () => !(await scanAll(env.ddb, table)).has('soon'),
        20_000,
      );
      expect(Date.now() / 1000).toBeGreaterThanOrEqual(soonS);
      expect([...(await scanAll(env.ddb, table)).keys()]).toEqual(['later']);
      await waitFor('no marks left', async () => (await marksOf(env, table)).length === 0, 10_000);
    } finally {
      await pipeline.stop();
    }
  });
});
