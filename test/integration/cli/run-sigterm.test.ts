import {
  BatchWriteItemCommand,
  ResourceNotFoundException,
  type AttributeValue,
  type DynamoDBClient,
} from '@aws-sdk/client-dynamodb';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { openCatalog } from '../../../archive/catalog';
import { FsArchiveStorage } from '../../../archive/storage';
import { createDynamoClient, createKafka } from '../../../core/clients';
import { mergeJournalRows } from '../../../producer/journal';
import { parseMarkRow } from '../../../pipeline/marks';
import { canonicalJson, decodeMessage, type Retraction, type StreamRecord } from '../../../schemas';
import {
  createTestTable,
  createTestTopic,
  deleteTestTable,
  scanTable,
  testConfig,
  uniqueName,
} from '../../support/stack';
import { freePort, humanLines, runCli, spawnCli } from '../../support/cli-process';

type Item = Record<string, AttributeValue>;

const EXPIRED = 1500;
const FUTURE = 20;

/** Every record on the topic, read from the beginning up to the high watermarks. */
async function readTopic(
  kafka: Kafka,
  topic: string,
): Promise<{ removes: StreamRecord[]; retractions: Retraction[] }> {
  const admin = kafka.admin();
  await admin.connect();
  if (!(await admin.listTopics()).includes(topic)) {
    await admin.disconnect();
    return { removes: [], retractions: [] };
  }
  const high = new Map((await admin.fetchTopicOffsets(topic)).map((o) => [o.partition, Number(o.high)]));
  await admin.disconnect();
  const removes: StreamRecord[] = [];
  const retractions: Retraction[] = [];
  const pending = new Set([...high].filter(([, h]) => h > 0).map(([p]) => p));
  if (pending.size === 0) return { removes, retractions };
  const consumer = kafka.consumer({ groupId: uniqueName('cli-read'), sessionTimeout: 10_000 });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  let done: () => void = () => undefined;
  const finished = new Promise<void>((r) => (done = r));
  await consumer.run({
    eachMessage: async ({ partition, message }) => {
      const headers: Record<string, Buffer | string | undefined> = {};
      for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = Array.isArray(v) ? v[0] : v;
      const d = decodeMessage(message.value, headers);
      if (d.kind === 'remove') removes.push(d.record);
      else retractions.push(d.retraction);
      if (Number(message.offset) + 1 >= (high.get(partition) ?? 0)) pending.delete(partition);
      if (pending.size === 0) done();
    },
  });
  await Promise.race([finished, sleep(60_000)]);
  await consumer.disconnect();
  if (pending.size > 0) throw new Error(`could not read ${topic} to its end`);
  return { removes, retractions };
}

/** Effective REMOVE records per item id: de-duplicated by eventID, retracted ones dropped. */
function effective(records: {
  removes: StreamRecord[];
  retractions: Retraction[];
}): Map<string, StreamRecord[]> {
  const retracted = new Set(records.retractions.map((r) => r.retractsEventID));
  const byId = new Map<string, StreamRecord>();
  for (const r of records.removes) if (!retracted.has(r.eventID)) byId.set(r.eventID, r);
  const byKey = new Map<string, StreamRecord[]>();
  for (const r of byId.values()) {
    const id = r.dynamodb.Keys.pk?.S as string;
    byKey.set(id, [...(byKey.get(id) ?? []), r]);
  }
  return byKey;
}

/** Every item of `table`, read consistently; none while it does not exist yet. */
async function scanItems(ddb: DynamoDBClient, table: string): Promise<Item[]> {
  return scanTable(ddb, table).catch((err: unknown) => {
    // The marks table appears when the pipeline first starts: until then nothing is marked.
    if (err instanceof ResourceNotFoundException) return [];
    throw err;
  });
}

async function scanIds(ddb: DynamoDBClient, table: string, attr: string): Promise<Set<string>> {
  return new Set((await scanItems(ddb, table)).map((item) => item[attr]?.S as string));
}

/** What the marks table holds: items marked, and items with a journaled intent (by their sk). */
async function markState(
  ddb: DynamoDBClient,
  table: string,
): Promise<{ marked: Set<string>; intents: Set<string> }> {
  const marked = new Set<string>();
  const journals = new Map<string, Item[]>();
  for (const item of await scanItems(ddb, table)) {
    const pk = item.pk?.S ?? '';
    if (pk.startsWith('shard#')) for (const m of parseMarkRow(item)) marked.add(m.address.sk);
    if (pk.startsWith('journal#')) journals.set(pk, [...(journals.get(pk) ?? []), item]);
  }
  const intents = new Set<string>();
  for (const [pk, rows] of journals) {
    for (const sk of mergeJournalRows(Number(pk.slice('journal#'.length)), rows).intents.keys())
      intents.add(sk);
  }
  return { marked, intents };
}

/**
 * `ttlstream run` as a real child process, stopped by SIGTERM while it is deleting: it must exit 0
 * within the bound, and nothing may be lost: every expired item is either deleted with its REMOVE
 * record, or still present and marked (so the next run deletes it). A second run finishes the job
 * and every record reaches the archive.
 */
describe('ttlstream run: SIGTERM mid-work', () => {
  const table = uniqueName('cli-run');
  const control = uniqueName('cli-run-ctl');
  const marks = uniqueName('cli-run-marks');
  const topic = uniqueName('cli-run-rm');
  const archiveDir = mkdtempSync(join(tmpdir(), 'ttlstream-cli-run-'));
  let env: NodeJS.ProcessEnv;
  let ddb: DynamoDBClient;
  let kafka: Kafka;
  const children: Array<ReturnType<typeof spawnCli>> = [];
  /** Every `run` this file starts; a failed assertion must not leave one running. */
  const start = (args: string[], extra: NodeJS.ProcessEnv = {}): ReturnType<typeof spawnCli> => {
    const child = spawnCli(args, { ...env, ...extra });
    children.push(child);
    return child;
  };

  afterEach(async () => {
    for (const child of children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await child.result;
      }
    }
  });

  beforeAll(async () => {
    const config = testConfig();
    ddb = createDynamoClient(config);
    kafka = createKafka(config);
    env = {
      TTLSTREAM_TABLES_CONTROL: control,
      TTLSTREAM_TABLES_MARKS: marks,
      TTLSTREAM_TOPICS_SHARED: topic,
      TTLSTREAM_TOPICS_DEAD_LETTER: `${topic}-dlq`,
      TTLSTREAM_TOPICS_PARTITIONS: '3',
      TTLSTREAM_ARCHIVE_URL: `file://${archiveDir}`,
      TTLSTREAM_ARCHIVE_GROUP_ID: `${topic}-archiver`,
      TTLSTREAM_ARCHIVE_ROLL_MS: '1000',
      TTLSTREAM_API_TTL_PROPAGATION_MS: '0',
      TTLSTREAM_SCANNER_TOTAL_SEGMENTS: '2',
      TTLSTREAM_SCANNER_LEASE_MS: '2000',
      TTLSTREAM_SCANNER_PASS_INTERVAL_MS: '200',
      TTLSTREAM_SCANNER_PAGE_SIZE: '500',
      TTLSTREAM_SCANNER_READ_RATE_LIMIT: '100000',
      // Slow, small batches: the SIGTERM must land while deletions are in flight.
      TTLSTREAM_PRODUCER_SHARDS: '4',
      TTLSTREAM_PRODUCER_LEASE_MS: '2000',
      TTLSTREAM_PRODUCER_POLL_MS: '50',
      TTLSTREAM_PRODUCER_BATCH_SIZE: '10',
      TTLSTREAM_PRODUCER_CONCURRENCY: '2',
      TTLSTREAM_GUARD_MAX_EXPIRED_FRACTION: '1',
      TTLSTREAM_GUARD_MIN_ITEMS_FOR_FRACTION: '1000000',
    };
    await createTestTable(ddb, table);
    const now = Math.floor(Date.now() / 1000);
    const items: Item[] = [];
    for (let i = 0; i < EXPIRED; i++)
      items.push({ pk: { S: `x${i}` }, exp: { N: String(now - 60) }, n: { N: String(i) } });
    for (let i = 0; i < FUTURE; i++) items.push({ pk: { S: `f${i}` }, exp: { N: String(now + 86_400) } });
    for (let i = 0; i < items.length; i += 25) {
      let request: Record<string, Array<{ PutRequest: { Item: Item } }>> = {
        [table]: items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } })),
      };
      while (Object.keys(request).length > 0) {
        const out = await ddb.send(new BatchWriteItemCommand({ RequestItems: request }));
        request = (out.UnprocessedItems ?? {}) as typeof request;
      }
    }
    const enable = await runCli(['ttl', 'update', '--table', table, '--enable', '--attribute', 'exp'], env);
    expect(enable.code).toBe(0);
  });

  afterAll(async () => {
    for (const t of [table, control, marks]) await deleteTestTable(ddb, t);
    ddb.destroy();
    rmSync(archiveDir, { recursive: true, force: true });
  });

  it('exits 0 within the bound and loses nothing; a second run completes every deletion and archives every record', async () => {
    const metricsPort = await freePort();
    const first = start(['run', '--roles', 'scanner,producer,archiver', '--shutdown-timeout', '20s'], {
      TTLSTREAM_METRICS_PORT: String(metricsPort),
    });
    // Mid-work: some expired items deleted, most still to go.
    const deadline = Date.now() + 90_000;
    let remaining = EXPIRED;
    for (;;) {
      remaining = [...(await scanIds(ddb, table, 'pk'))].filter((id) => id.startsWith('x')).length;
      if (remaining < EXPIRED - 20) break;
      if (Date.now() > deadline || first.exitCode !== null)
        throw new Error(`no deletions seen:\n${first.output()}`);
      await sleep(100);
    }
    // /metrics is served on its own port when the API role is off.
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toContain('ttlstream_producer_deletions_total');

    const signalledAt = Date.now();
    first.kill('SIGTERM');
    const stopped = await first.result;
    const stopMs = Date.now() - signalledAt;
    expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
    expect(stopMs).toBeLessThan(20_000);
    expect(humanLines(stopped.stderr)).toContain(
      'ttlstream: SIGTERM received, shutting down gracefully (at most 20s; send it again to force)',
    );

    const present = await scanIds(ddb, table, 'pk');
    const expiredPresent = [...present].filter((id) => id.startsWith('x'));
    expect(expiredPresent.length).toBeGreaterThan(0); // the stop really came mid-work
    expect(expiredPresent.length).toBeLessThan(EXPIRED);
    const records = effective(await readTopic(kafka, topic));
    const markRows = await markState(ddb, marks);
    for (let i = 0; i < EXPIRED; i++) {
      const id = `x${i}`;
      const sk = `${table}#${canonicalJson({ pk: { S: id } })}`;
      if (present.has(id)) {
        // Still there: marked for the next run. If its REMOVE was already published, the producer handed
        // the deletion back in its journal, which the next run completes with the same eventID (or retracts).
        const intent = markRows.intents.has(sk);
        expect({ id, marked: markRows.marked.has(sk) || intent }).toEqual({ id, marked: true });
        if (!intent) expect({ id, records: records.get(id)?.length ?? 0 }).toEqual({ id, records: 0 });
      } else {
        expect({ id, records: records.get(id)?.length ?? 0 }).toEqual({ id, records: 1 });
      }
    }
    for (let i = 0; i < FUTURE; i++) expect(present.has(`f${i}`)).toBe(true);

    // A second run finishes the job.
    const second = start(['run', '--roles', 'scanner,producer,archiver']);
    const deadline2 = Date.now() + 120_000;
    for (;;) {
      const left = [...(await scanIds(ddb, table, 'pk'))].filter((id) => id.startsWith('x')).length;
      if (left === 0) break;
      if (Date.now() > deadline2 || second.exitCode !== null)
        throw new Error(`second run stalled (${left} left):\n${second.output()}`);
      await sleep(250);
    }
    await sleep(2500); // let the archiver take the last records before the graceful stop flushes
    second.kill('SIGTERM');
    const secondStopped = await second.result;
    expect(secondStopped.code).toBe(0);

    const all = effective(await readTopic(kafka, topic));
    const eventIds = new Set<string>();
    for (let i = 0; i < EXPIRED; i++) {
      const list = all.get(`x${i}`) ?? [];
      expect({ id: `x${i}`, records: list.length }).toEqual({ id: `x${i}`, records: 1 });
      const record = list[0] as StreamRecord;
      expect(record.userIdentity).toEqual({ type: 'Service', principalId: 'dynamodb.amazonaws.com' });
      expect(record.dynamodb.OldImage?.n).toEqual({ N: String(i) });
      eventIds.add(record.eventID);
    }
    for (let i = 0; i < FUTURE; i++) expect(all.has(`f${i}`)).toBe(false);
    expect((await scanIds(ddb, table, 'pk')).size).toBe(FUTURE);

    // Every effective record is in the archive.
    const archived = new Set<string>();
    for await (const row of openCatalog(new FsArchiveStorage(archiveDir)).scan(table)) {
      if (row.kind === 'remove') archived.add(row.eventID);
    }
    const missing = [...eventIds].filter((id) => !archived.has(id));
    expect(missing).toEqual([]);
  }, 360_000);

  it('archive ls, restore and replay work on what the runs above archived', async () => {
    // Uses the archive the first test filled (tests in a file run in order).
    const ls = await runCli(['archive', 'ls', '--table', table, '--json'], env);
    expect(ls.code).toBe(0);
    const files = JSON.parse(ls.stdout) as Array<{ removes: number | null }>;
    expect(files.reduce((n, f) => n + (f.removes ?? 0), 0)).toBe(EXPIRED);

    const one = await runCli(['restore', '--table', table, '--key', '{"pk":{"S":"x7"}}', '--json'], env);
    expect(one.code).toBe(0);
    expect(JSON.parse(one.stdout)).toMatchObject({ restored: 1, skippedPresent: 0, failed: [] });
    expect(await scanIds(ddb, table, 'pk')).toContain('x7');
    const again = await runCli(['restore', '--table', table, '--key', '{"pk":{"S":"x7"}}', '--json'], env);
    expect(JSON.parse(again.stdout)).toMatchObject({ restored: 0, skippedPresent: 1 });

    // x1, x10..x19, x100..x199, x1000..x1499: 611 keys; a dry run writes none of them.
    const dry = await runCli(['restore', '--table', table, '--key-prefix', 'x1', '--dry-run', '--json'], env);
    expect(dry.code).toBe(0);
    expect((JSON.parse(dry.stdout) as { wouldWrite: unknown[] }).wouldWrite).toHaveLength(611);
    expect([...(await scanIds(ddb, table, 'pk'))].filter((id) => id.startsWith('x1'))).toEqual([]);

    const admin = kafka.admin();
    await admin.connect();
    const target = `${topic}-replay`;
    await createTestTopic(admin, target, 2);
    await admin.disconnect();
    const from = new Date(Date.now() - 3_600_000).toISOString();
    const to = new Date(Date.now() + 60_000).toISOString();
    const replayed = await runCli(
      [
        'replay',
        '--table',
        table,
        '--from',
        from,
        '--to',
        to,
        '--topic',
        target,
        '--encoding',
        'json',
        '--json',
      ],
      env,
    );
    expect(replayed.code).toBe(0);
    expect(JSON.parse(replayed.stdout)).toMatchObject({ published: EXPIRED });
    const onTarget = effective(await readTopic(kafka, target));
    expect(onTarget.size).toBe(EXPIRED);
  });

  it('--dry-run: the pipeline runs (marks are written) but nothing is deleted or published', async () => {
    const dryTable = await createTestTable(ddb, uniqueName('cli-dry'));
    try {
      const now = Math.floor(Date.now() / 1000);
      for (let i = 0; i < 30; i += 10) {
        await ddb.send(
          new BatchWriteItemCommand({
            RequestItems: {
              [dryTable]: Array.from({ length: 10 }, (_, j) => ({
                PutRequest: { Item: { pk: { S: `d${i + j}` }, exp: { N: String(now - 60) } } },
              })),
            },
          }),
        );
      }
      expect(
        (await runCli(['ttl', 'update', '--table', dryTable, '--enable', '--attribute', 'exp'], env)).code,
      ).toBe(0);
      const before = await readTopic(kafka, topic);
      const child = start(['run', '--roles', 'scanner,producer', '--dry-run']);
      const deadline = Date.now() + 60_000;
      for (;;) {
        const marked = [...(await scanIds(ddb, marks, 'sk'))].filter((sk) => sk.startsWith(`${dryTable}#`));
        if (marked.length > 0) break;
        if (Date.now() > deadline || child.exitCode !== null)
          throw new Error(`no marks written:\n${child.output()}`);
        await sleep(200);
      }
      await sleep(3000); // several producer polls over the marked shard
      child.kill('SIGTERM');
      expect((await child.result).code).toBe(0);
      expect((await scanIds(ddb, dryTable, 'pk')).size).toBe(30);
      const after = await readTopic(kafka, topic);
      expect(after.removes.length).toBe(before.removes.length);
    } finally {
      await runCli(['ttl', 'update', '--table', dryTable, '--disable'], env);
      await deleteTestTable(ddb, dryTable);
    }
  });

  it('the api role serves the control plane and /metrics, and stops cleanly', async () => {
    const port = await freePort();
    const token = 'run-api-token-0123456789';
    const child = start(['run', '--roles', 'api'], {
      TTLSTREAM_API_PORT: String(port),
      TTLSTREAM_API_TOKENS: token,
    });
    const deadline = Date.now() + 60_000;
    while (!child.output().includes('ttlstream: running api')) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`did not start:\n${child.output()}`);
      await sleep(100);
    }
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    const read = { headers: { authorization: `Bearer ${token}` } };
    const ttl = (await (await fetch(`http://127.0.0.1:${port}/tables/${table}/ttl`, read)).json()) as {
      status: string;
    };
    expect(ttl.status).toBe('ENABLED');
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    expect(metrics).toContain('ttlstream_api_requests_total');
    expect(metrics).toContain('ttlstream_process_'); // process metrics are collected by `run`
    child.kill('SIGINT');
    const r = await child.result;
    expect(r.code).toBe(0);
    expect(humanLines(r.stderr)).toContain(
      'ttlstream: SIGINT received, shutting down gracefully (at most 30s; send it again to force)',
    );
  });

  it('exits 1 with a clear message when the graceful stop overruns its bound', async () => {
    // The producer's stop releases its leases with conditional writes: network round trips, never within 1 ms.
    const child = start(['run', '--roles', 'producer', '--shutdown-timeout', '1ms']);
    const deadline = Date.now() + 60_000;
    while (!child.output().includes('ttlstream: running producer')) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`did not start:\n${child.output()}`);
      await sleep(100);
    }
    child.kill('SIGTERM');
    const r = await child.result;
    expect(r.code).toBe(1);
    expect(humanLines(r.stderr)).toContainEqual(
      expect.stringMatching(
        /^ttlstream: shutdown did not finish within 1ms \(still stopping: producer.*\); exiting with code 1$/,
      ),
    );
  });
});
