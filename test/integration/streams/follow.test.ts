import {
  BatchWriteItemCommand,
  DeleteTableCommand,
  type DynamoDBClient,
  type StreamViewType,
} from '@aws-sdk/client-dynamodb';
import type { Kafka } from 'kafkajs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FsArchiveStorage } from '../../../archive/storage';
import { parsePrometheusText } from '../../../cli/status/prometheus';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { silentLogger } from '../../../core/logger';
import { readArchive } from '../../support/archive-fixture';
import { freePort, isolatedRunEnv, spawnCli } from '../../support/cli-process';
import { Collector } from '../../support/pipeline-harness';
import { motoEndpoint } from '../../support/ports';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { followedTable } from '../../support/followed-table';
import { Toxiproxy } from '../../support/toxiproxy';
import { waitFor } from '../../support/wait-for';

/**
 * The streams role against a real DynamoDB Streams server: moto's, which serves DynamoDB and its streams on one port.
 * moto never expires items by TTL (so no record carries DynamoDB's TTL identity) and keeps one shard per table, so
 * these runs take every REMOVE (`streams.removes: all`) of tables whose items the test deletes; the TTL filter is
 * tested on the record shape AWS documents (test/unit/streams/record.test.ts) and the shard lineage over random
 * split trees (test/unit/streams/lineage.test.ts). Each process is the real command, `ttlstream run`.
 */
describe('the streams role follows DynamoDB Streams (moto, real Kafka, file archive)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-streams-'));
  let moto: DynamoDBClient;
  let kafka: Kafka;
  const made: string[] = [];
  const running: Array<ReturnType<typeof spawnCli>> = [];

  beforeAll(() => {
    moto = createDynamoClient(testConfig({ dynamodb: { endpoint: motoEndpoint() } }));
    kafka = createKafka(testConfig(), silentLogger, 'streams-test');
  });
  afterAll(async () => {
    for (const p of running) p.kill('SIGKILL');
    for (const t of made) await moto.send(new DeleteTableCommand({ TableName: t })).catch(() => undefined);
    moto.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A table on moto with a stream of the view type given (none: no stream), followed for DynamoDB's TTL. */
  const followed = (control: string, prefix: string, view?: StreamViewType | null): Promise<string> =>
    followedTable(moto, control, prefix, made, view === undefined ? {} : { view });

  /** Items `from`..`to`-1 written, then deleted: one INSERT and one REMOVE record each on the table's stream. */
  async function writeAndDelete(table: string, from: number, to: number): Promise<void> {
    for (const op of ['put', 'delete'] as const)
      for (let i = from; i < to; i += 25) {
        const keys = Array.from({ length: Math.min(25, to - i) }, (_, j) => `item-${i + j}`);
        await moto.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [table]: keys.map((pk) =>
                op === 'put'
                  ? {
                      PutRequest: {
                        Item: { pk: { S: pk }, expiresAt: { N: '1000' }, body: { S: 'x'.repeat(100) } },
                      },
                    }
                  : { DeleteRequest: { Key: { pk: { S: pk } } } },
              ),
            },
          }),
        );
      }
  }

  function processEnv(
    names: { control: string; topic: string },
    extra: NodeJS.ProcessEnv = {},
  ): NodeJS.ProcessEnv {
    return {
      ...isolatedRunEnv({ ...names, marks: `${names.control}-marks` }, join(dir, names.topic)),
      TTLSTREAM_DYNAMODB_ENDPOINT: motoEndpoint(),
      TTLSTREAM_STREAMS_REMOVES: 'all',
      TTLSTREAM_STREAMS_LEASE_MS: '3000',
      TTLSTREAM_STREAMS_POLL_MS: '200',
      TTLSTREAM_STREAMS_DISCOVER_MS: '1000',
      ...extra,
    };
  }

  async function start(roles: string, env: NodeJS.ProcessEnv): Promise<ReturnType<typeof spawnCli>> {
    const p = spawnCli(['run', '--roles', roles], env);
    running.push(p);
    await waitFor(`ttlstream run --roles ${roles} to start`, () => {
      if (p.exitCode !== null) throw new Error(`exited ${p.exitCode}: ${p.output().slice(-2000)}`);
      return p.output().includes('ttlstream: running');
    });
    return p;
  }

  /** The stream topic, made as `ttlstream run` would (2 partitions here), read from its start. */
  async function collect(topic: string): Promise<Collector> {
    const admin = kafka.admin();
    await admin.connect();
    try {
      await createTestTopic(admin, topic, 2);
    } finally {
      await admin.disconnect();
    }
    const c = new Collector(kafka);
    await c.start(topic);
    return c;
  }

  /** The distinct item keys (pk) whose REMOVE reached the topic. */
  const keysOn = (c: Collector, table: string): Set<string> =>
    new Set(
      c.removes
        .filter((r) => r.eventSourceARN.includes(`table/${table}/`))
        .map((r) => r.dynamodb.Keys.pk?.S ?? ''),
    );

  /** Every archived REMOVE of the table, by eventID: each must be there once. */
  async function archived(topic: string, table: string): Promise<Map<string, number>> {
    const { rows, problems } = await readArchive(new FsArchiveStorage(join(dir, topic)), {
      allowWriting: true,
    });
    expect(problems).toEqual([]);
    const out = new Map<string, number>();
    for (const r of rows)
      if (r.table === table && r.kind === 'remove') out.set(r.eventID, (out.get(r.eventID) ?? 0) + 1);
    return out;
  }

  it('deletions from before it started (trim horizon) and while it runs reach the topic, and the archive once per eventID', async () => {
    const names = { control: uniqueName('st-ctl'), topic: uniqueName('st-topic') };
    const table = await followed(names.control, 'st-flow');
    await writeAndDelete(table, 0, 20);
    const topic = await collect(names.topic);
    const p = await start('streams,archiver', processEnv(names));
    await writeAndDelete(table, 20, 40);
    await waitFor('40 REMOVE records on the topic', () => keysOn(topic, table).size === 40, 60_000);
    // INSERTs are never published; each REMOVE is DynamoDB's own (its eventID, its stream's ARN), without an identity.
    expect(
      topic.removes.every((r) => r.userIdentity === undefined && r.eventSourceARN.includes('/stream/')),
    ).toBe(true);
    const ids = await waitFor('40 archived REMOVE records', async () => {
      const a = await archived(names.topic, table);
      return a.size === 40 ? a : undefined;
    });
    expect([...ids.values()].every((n) => n === 1)).toBe(true);
    expect(new Set(topic.removes.map((r) => r.eventID))).toEqual(new Set(ids.keys()));
    p.kill('SIGTERM');
    expect((await p.result).code).toBe(0);
    await topic.stop();
  });

  it('kill -9 mid-shard, then a restart: nothing is lost, and the archive holds each eventID once', async () => {
    const names = { control: uniqueName('st-ctl'), topic: uniqueName('st-topic') };
    const table = await followed(names.control, 'st-kill');
    await writeAndDelete(table, 0, 150);
    const topic = await collect(names.topic);
    // Five records a page: the shard takes many pages, so the kill lands in the middle of it.
    // A short group session: the restarted archiver does not wait 30 s for the killed one's to end.
    const env = processEnv(names, {
      TTLSTREAM_STREAMS_MAX_RECORDS: '5',
      TTLSTREAM_ARCHIVE_SESSION_TIMEOUT_MS: '6000',
      TTLSTREAM_ARCHIVE_REBALANCE_TIMEOUT_MS: '6000',
    });
    const first = await start('streams,archiver', env);
    await waitFor('some REMOVE records on the topic', () => keysOn(topic, table).size >= 10, 60_000, 20);
    first.kill('SIGKILL');
    await first.result;
    const seenAtKill = keysOn(topic, table).size;
    expect(seenAtKill).toBeLessThan(150);
    const second = await start('streams,archiver', env);
    await waitFor('every REMOVE record on the topic', () => keysOn(topic, table).size === 150, 90_000);
    const ids = await waitFor('150 archived REMOVE records', async () => {
      const a = await archived(names.topic, table);
      return a.size === 150 ? a : undefined;
    });
    expect([...ids.values()].every((n) => n === 1)).toBe(true);
    second.kill('SIGTERM');
    await second.result;
    await topic.stop();
  });

  it("two instances share the tables, and a killed one's shard is taken over", async () => {
    const names = { control: uniqueName('st-ctl'), topic: uniqueName('st-topic') };
    const tables = [await followed(names.control, 'st-two-a'), await followed(names.control, 'st-two-b')];
    const topic = await collect(names.topic);
    const ports = [await freePort(), await freePort()];
    const procs = [
      await start('streams', processEnv(names, { TTLSTREAM_METRICS_PORT: String(ports[0]) })),
      await start('streams', processEnv(names, { TTLSTREAM_METRICS_PORT: String(ports[1]) })),
    ];
    const held = async (port: number | undefined): Promise<number> =>
      (await scrape(port, 'ttlstream_streams_shards_held')).reduce((a, s) => a + s.value, 0);
    // One shard per table here (moto): each instance reads one.
    await waitFor(
      'each instance to hold one shard',
      async () => (await held(ports[0])) === 1 && (await held(ports[1])) === 1,
      30_000,
    );
    procs[0]!.kill('SIGKILL');
    await procs[0]!.result;
    await waitFor('the survivor to hold both shards', async () => (await held(ports[1])) === 2, 30_000);
    for (const t of tables) await writeAndDelete(t, 0, 10);
    await waitFor(
      'every REMOVE of both tables on the topic',
      () => tables.every((t) => keysOn(topic, t).size === 10),
      60_000,
    );
    procs[1]!.kill('SIGTERM');
    await procs[1]!.result;
    await topic.stop();
  });

  it.each([
    ['keeps no old images (KEYS_ONLY)', 'KEYS_ONLY' as const, /stream keeps no old images/],
    ['is off', null, /stream is off: turn it on with old images/],
  ])(
    'a followed table whose stream %s stops the start: one line naming the table and the fix, exit 2',
    async (_what, view, fix) => {
      const names = { control: uniqueName('st-ctl'), topic: uniqueName('st-topic') };
      const table = await followed(names.control, 'st-bad', view);
      const p = spawnCli(['run', '--roles', 'streams'], processEnv(names));
      const r = await p.result;
      expect(r.code).toBe(2);
      const lines = r.stderr.split('\n').filter((l) => l.startsWith('ttlstream:'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(`table ${table}`);
      expect(lines[0]).toMatch(fix);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    },
  );

  it('the lag metric grows while Kafka cannot be reached, and falls back to 0 once it can', async () => {
    const release = await Toxiproxy.lock();
    const proxy = Toxiproxy.ofStack();
    try {
      const names = { control: uniqueName('st-ctl'), topic: uniqueName('st-topic') };
      const table = await followed(names.control, 'st-lag');
      const port = await freePort();
      const p = await start(
        'streams',
        processEnv(names, {
          TTLSTREAM_METRICS_PORT: String(port),
          TTLSTREAM_KAFKA_BROKERS: Toxiproxy.stackAddresses().kafkaBroker,
          TTLSTREAM_KAFKA_REQUEST_TIMEOUT_MS: '2000',
        }),
      );
      const lag = async (): Promise<number> =>
        (await scrape(port, 'ttlstream_streams_lag_seconds')).find((s) => s.labels.table === table)?.value ??
        -1;
      await waitFor('the table read and caught up', async () => (await lag()) === 0, 30_000);
      await proxy.setEnabled('kafka', false);
      await writeAndDelete(table, 0, 5);
      await waitFor('the lag to pass 3 s', async () => (await lag()) > 3, 60_000);
      await proxy.setEnabled('kafka', true);
      await waitFor('the lag back at 0', async () => (await lag()) === 0, 60_000);
      // The five records held back are published once Kafka answers (the dashboard's rate panel reads this).
      const published = await scrape(port, 'ttlstream_streams_records_published_total');
      expect(published.filter((s) => s.labels.table === table).reduce((a, s) => a + s.value, 0)).toBe(5);
      p.kill('SIGTERM');
      await p.result;
    } finally {
      await proxy.reset();
      release();
    }
  });

  /** The samples of one metric a process serves on its metrics port (none when it does not answer). */
  async function scrape(
    port: number | undefined,
    name: string,
  ): Promise<Array<{ labels: Record<string, string>; value: number }>> {
    // Not answering yet is "no samples"; a page that does not parse fails the test.
    const text = await fetch(`http://127.0.0.1:${port}/metrics`).then(
      (r) => r.text(),
      () => '',
    );
    return parsePrometheusText(text).filter((s) => s.name === name);
  }
});
