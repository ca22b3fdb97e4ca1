import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../../core/logger';
import { registry } from '../../../core/metrics';
import { apiOptionsFrom, buildApiServer } from '../../../control/api/server';
import { confirmGuard, getGuard, guardActionOptionsFrom } from '../../../pipeline/guard/actions';
import { messageKey } from '../../../schemas';
import { DISCOVERY_MODES } from '../../support/discovery-mode';
import {
  Collector,
  createEnv,
  createTableIn,
  ensureStreamTopic,
  pipelineConfig,
  putItems,
  scanAll,
  startInProcess,
  type Env,
  type InProcess,
  expiredAndAlive,
} from '../../support/pipeline-harness';
import { waitFor } from '../../support/wait-for';
import { marksOf } from '../../support/marks';

const TOKEN = 'guard-test-token-0123456789';

/**
 * The guard in both discovery modes (scan and index). In index mode there is no pass over the table: the expired backlog
 * of the held index shards is counted before they mark and judged against the table's ItemCount, each rewind
 * (`indexRewindMs`, short here) a window; the rate guard is the producers' and the same in both.
 */
const INDEX_TIMINGS = { indexRewindMs: 2000, indexPollMs: 100 };
const DYNAMODB_TTL = { policy: { mode: 'dynamodb', attributeName: 'ttl' } } as const;

async function guardGauge(table: string): Promise<number | undefined> {
  const m = await registry.getSingleMetric('ttlstream_guard_paused')?.get();
  return m?.values.find((v) => v.labels.table === table)?.value;
}

describe.each(DISCOVERY_MODES.map((m) => [m]))('mass-deletion guard, %s mode: expired fraction', (mode) => {
  let env: Env;
  let collector: Collector;
  let pipeline: InProcess | undefined;

  beforeAll(async () => {
    // One segment and a page that holds the whole table: the pass is judged before any of its marks is written.
    env = await createEnv(
      pipelineConfig({
        scanner: { totalSegments: 1, pageSize: 1000, ...INDEX_TIMINGS },
        guard: { maxExpiredFraction: 0.5, minItemsForFraction: 10, gaugeRefreshMs: 1000 },
        api: { tokens: [TOKEN] },
      }),
    );
    collector = new Collector(env.kafka);
  });
  afterAll(async () => {
    await pipeline?.stop();
    await collector.stop();
    await env.cleanup();
  });

  it('pauses, keeps the marks, and deletes after an operator confirms over REST; cancel discards marks', async () => {
    const a = await createTableIn(env, mode, 'guard-a', DYNAMODB_TTL);
    const b = await createTableIn(env, mode, 'guard-b', DYNAMODB_TTL);
    const [tableA, tableB] = [a.table, b.table];
    await collector.start(await ensureStreamTopic(env));
    const nowS = Math.floor(Date.now() / 1000);
    await putItems(a.writer, tableA, expiredAndAlive('ttl', 12, 8, { nowS }));
    await putItems(b.writer, tableB, expiredAndAlive('ttl', 12, 8, { nowS }));

    const app = buildApiServer({
      options: apiOptionsFrom(env.config),
      ddb: env.ddb,
      store: env.store,
      logger: silentLogger,
    });
    const base = await app.listen({ port: 0, host: '127.0.0.1' });
    const call = async (method: 'GET' | 'POST', path: string, token?: string) => {
      const res = await fetch(base + path, {
        method,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      });
      return { statusCode: res.status, json: (await res.json()) as unknown };
    };
    try {
      pipeline = await startInProcess(env, ['scanner', 'producer']);
      const deps = { ddb: env.ddb, options: guardActionOptionsFrom(env.config) };
      for (const t of [tableA, tableB]) {
        await waitFor(`${t} paused`, async () => (await getGuard(deps, t)).state === 'PAUSED', 20_000);
      }
      const paused = await getGuard(deps, tableA);
      // Index mode: the backlog is counted before anything is marked, so all 12 are in the judgment. (dynalite
      // never updates ItemCount: the table's size is not known there.)
      expect(paused.reason).toMatch(
        mode === 'scan' ? /12 of 20 items scanned are expired/ : /^12 expired items due in the expiry index/,
      );
      // The producer reports the stored state (pipeline/guard/gauge.ts), whoever paused.
      await waitFor('the gauge of A at 1', async () => (await guardGauge(tableA)) === 1, 10_000);

      // Paused: the scanner keeps marking, the producer keeps its hands off.
      await waitFor('marks of A', async () => (await marksOf(env, tableA)).length === 12, 10_000);
      await sleep(1500);
      expect((await scanAll(env.ddb, tableA)).size).toBe(20);
      expect((await scanAll(env.ddb, tableB)).size).toBe(20);
      expect(await marksOf(env, tableA)).toHaveLength(12);

      // The REST face: reads and POSTs need the token, unknown tables are 404.
      expect((await call('GET', `/tables/${tableA}/guard`)).statusCode).toBe(401);
      const get = await call('GET', `/tables/${tableA}/guard`, TOKEN);
      expect(get.statusCode).toBe(200);
      expect(get.json).toMatchObject({ table: tableA, state: 'PAUSED', cancelled: false });
      expect((await call('POST', `/tables/${tableA}/guard/confirm`)).statusCode).toBe(401);
      expect(
        (await call('POST', `/tables/${tableA}/guard/confirm`, 'wrong-token-0123456789')).statusCode,
      ).toBe(401);
      expect((await call('GET', '/tables/no-such-table-xyz/guard', TOKEN)).statusCode).toBe(404);
      expect((await getGuard(deps, tableA)).state).toBe('PAUSED');

      // Cancel B: its pending marks go, it stays paused, and the scanner does not mark it again.
      const cancel = await call('POST', `/tables/${tableB}/guard/cancel`, TOKEN);
      expect(cancel.statusCode).toBe(200);
      expect(cancel.json).toMatchObject({ guard: { state: 'PAUSED', cancelled: true }, discardedMarks: 12 });

      // Confirm A: deletions resume.
      const confirm = await call('POST', `/tables/${tableA}/guard/confirm`, TOKEN);
      expect(confirm.statusCode).toBe(200);
      expect(confirm.json).toMatchObject({ state: 'CONFIRMED', confirmedBy: 'token#0' });

      // Within seconds: the confirm rings the shards' doorbells. (In index mode this once failed to happen at all: a
      // guard window with no rewind in it re-armed the episode, and the next census counted the 12 still due and
      // paused A again; a confirmed episode now re-arms only on a complete pass, scanner/guard-watch.ts.)
      await waitFor(
        'the 12 expired items of A deleted',
        async () => {
          const left = await scanAll(env.ddb, tableA);
          return left.size === 8 && [...left.keys()].every((k) => k.startsWith('a'));
        },
        20_000,
      );
      // The episode is over once a complete pass looks normal: the guard re-arms by itself.
      await waitFor('A re-armed', async () => (await getGuard(deps, tableA)).state === 'ARMED', 20_000);
      // Confirmed over REST, seen by the producer from the row: A reads 0, B (cancelled, still paused) 1.
      await waitFor('the gauge of A at 0', async () => (await guardGauge(tableA)) === 0, 10_000);
      expect(await guardGauge(tableB)).toBe(1);

      // B meanwhile: still paused, untouched, no new marks.
      expect((await getGuard(deps, tableB)).state).toBe('PAUSED');
      expect(await marksOf(env, tableB)).toHaveLength(0);
      expect((await scanAll(env.ddb, tableB)).size).toBe(20);

      // Confirming B later deletes its expired items (the scanner marks them again first).
      await confirmGuard(deps, tableB, 'test');
      await waitFor('B deleted', async () => (await scanAll(env.ddb, tableB)).size === 8, 20_000);

      await waitFor('records', async () => collector.effectiveByKey().size === 24, 20_000);
      const effective = collector.effectiveByKey();
      for (const t of [tableA, tableB]) {
        for (let i = 0; i < 12; i++)
          expect(effective.get(messageKey(t, { pk: { S: `x${i}` } }))).toHaveLength(1);
      }
    } finally {
      await app.close();
    }
  }, 240_000);
});

describe.each(DISCOVERY_MODES.map((m) => [m]))('mass-deletion guard, %s mode: deletion rate', (mode) => {
  let env: Env;
  let pipeline: InProcess | undefined;

  beforeAll(async () => {
    env = await createEnv(pipelineConfig({ scanner: INDEX_TIMINGS, guard: { maxDeletesPerMinute: 5 } }));
  });
  afterAll(async () => {
    await pipeline?.stop();
    await env.cleanup();
  });

  it('pauses before the rate is exceeded and resumes on confirm', async () => {
    // The counter is per clock minute: do not start in the last seconds of one.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await sleep(60_000 - intoMinute + 100);

    const { table, writer } = await createTableIn(env, mode, 'guard-rate', DYNAMODB_TTL);
    await ensureStreamTopic(env);
    await putItems(writer, table, expiredAndAlive('ttl', 30, 0));
    const deps = { ddb: env.ddb, options: guardActionOptionsFrom(env.config) };

    pipeline = await startInProcess(env, ['scanner', 'producer']);
    await waitFor('paused by rate', async () => (await getGuard(deps, table)).state === 'PAUSED', 20_000);
    expect((await getGuard(deps, table)).reason).toMatch(/exceed maxDeletesPerMinute 5/);
    await sleep(1000);
    const left = (await scanAll(env.ddb, table)).size;
    expect(left).toBeGreaterThanOrEqual(25);

    await confirmGuard(deps, table, 'test');
    await waitFor(
      'all deleted after confirm',
      async () => (await scanAll(env.ddb, table)).size === 0,
      20_000,
    );
  });
});
