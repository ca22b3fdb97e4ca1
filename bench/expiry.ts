/**
 * Expiry-index benchmark (not a test): `bash bench/run.sh expiry [--items N] [...]` (issue 13).
 *
 * One run, one table of N items of ~1 KB created with the expiry index, every item written through the stamp.
 * The pipeline (scanner + producer, in this process) runs twice on that same table: in index mode, then in scan
 * mode. Before each phase the same 1 % of the items get TTLs spread over the phase's first `--spread` seconds (default 2), and
 * after it a trickle (`--steady`) expires over 10 s; everything else expires in a day. Measured per phase:
 * - items read: every item the pipeline read from the bench table, counted from the responses by an SDK
 *   middleware (Scan and Query ScannedCount, GetItem, BatchGetItem) — measured, not estimated;
 * - lag: Kafka message timestamp − the item's expiry, for every item that expired in the phase;
 * - deletions/s, steady: the same set's records between its 10th and 90th percentile (bench/pipeline.ts's
 *   "deletions 10%..90%"), so a fixed start-up latency (index poll, mark gathering, doorbell, producer poll: a few
 *   seconds in all) does not weigh on a small burst;
 * - deletions/s: the 1 % set, from its first expiry to its last record (bounded by how fast it expires as well as by
 *   the pipeline; with the default spread of 2 s, 1 % of 100k items expires at 500/s and of 1M at 5,000/s, so only the 1M run is bound by the pipeline);
 * - the raw conditional DeleteItem rate of the same run (a separate table, the producer's condition and concurrency);
 * - CPU ms per deletion of this process (the pipeline) plus the DynamoDB server.
 * Prints a table and one JSON line. Everything it creates is deleted at the end.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteItemCommand,
  DeleteTableCommand,
  type AttributeValue,
  type DynamoDBClient,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { createDynamoClient, createKafka } from '../core/clients';
import { loadConfig, type TtlstreamConfig } from '../core/config';
import { silentLogger } from '../core/logger';
import { isDynamoThrottleOrTransient, withRetry } from '../core/retry';
import { waitForActive } from '../core/tables';
import { applyTopics, declaredTopics } from '../core/topics';
import { recordBackfilled } from '../control/expiry-index';
import { TtlSettingsStore } from '../control/settings-store';
import {
  addLastWriteStamp,
  expiryIndexDefinition,
  expiryStampTables,
  relevantAttributes,
  stillExpiredCondition,
  type TableTtlSettings,
} from '../policy';
import { startProducer } from '../producer';
import { startScanner } from '../scanner';
import { messageKey } from '../schemas';
import { measureCpu, stackServicePid } from './proc-cpu';

process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const ROOT = resolve(__dirname, '..');
type Item = Record<string, AttributeValue>;
const SHARDS = 16;
const POLICY: TableTtlSettings['policy'] = { mode: 'dynamodb', attributeName: 'ttl' };
const INDEXED: TableTtlSettings = { policy: POLICY, expiryIndex: { shards: SHARDS } };
const SCANNED: TableTtlSettings = { policy: POLICY };
const retry = { retries: 10, initialDelayMs: 50, maxDelayMs: 5000, isRetryable: isDynamoThrottleOrTransient };

const { values } = parseArgs({
  options: {
    items: { type: 'string', default: '100000' },
    spread: { type: 'string', default: '2' },
    steady: { type: 'string', default: '200' },
    'raw-deletes': { type: 'string', default: '5000' },
    'item-bytes': { type: 'string', default: '1000' },
    timeout: { type: 'string', default: '900' },
  },
});
const N = Number(values.items);
const SPREAD_S = Number(values.spread);
const STEADY = Number(values.steady);
const RAW_DELETES = Number(values['raw-deletes']);
const ITEM_BYTES = Number(values['item-bytes']);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const EXPIRING = Math.max(1, Math.floor(N / 100));

const name = (p: string) => `${p}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const pk = (i: number) => ({ S: `item-${String(i).padStart(9, '0')}` });

interface Result {
  mode: 'index' | 'scan';
  items: number;
  itemsReadPerDeletion: number;
  lagP50Ms: number;
  lagP99Ms: number;
  deletionsPerSec: number;
  /** The 1 % set's deletions between its 10th and 90th percentile: the rate once the pipeline is working. */
  deletionsPerSecSteady: number;
  rawConditionalDeletesPerSec: number;
  cpuMsPerDeletion: number;
  deletions: number;
  itemsRead: number;
}

/** Counts every item the client read from `table`, from the responses. */
function countReads(ddb: DynamoDBClient, table: string): { read(): number } {
  let n = 0;
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const input = args.input as { TableName?: string };
      const o = out.output as {
        ScannedCount?: number;
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
      };
      switch (context.commandName) {
        case 'ScanCommand':
        case 'QueryCommand':
          if (input.TableName === table) n += o.ScannedCount ?? 0;
          break;
        case 'GetItemCommand':
          if (input.TableName === table && o.Item) n += 1;
          break;
        case 'BatchGetItemCommand':
          n += o.Responses?.[table]?.length ?? 0;
          break;
      }
      return out;
    },
    { step: 'initialize', name: 'benchCountReads' },
  );
  return { read: () => n };
}

async function batchWrite(ddb: DynamoDBClient, table: string, items: Item[]): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const chunk = items.slice(next, next + 25);
        next += 25;
        if (chunk.length === 0) return;
        let pending: WriteRequest[] = chunk.map((Item) => ({ PutRequest: { Item } }));
        while (pending.length > 0) {
          const out = await withRetry(
            () => ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } })),
            retry,
          );
          pending = out.UnprocessedItems?.[table] ?? [];
        }
      }
    }),
  );
}

const payload = randomBytes(ITEM_BYTES)
  .toString('base64')
  .slice(0, ITEM_BYTES - 60);

function item(i: number, ttlS: number): Item {
  return { pk: pk(i), ttl: { N: String(ttlS) }, payload: { S: payload } };
}

async function rawDeleteRate(ddb: DynamoDBClient, config: TtlstreamConfig): Promise<number> {
  const table = name('bench-raw-del');
  await ddb.send(
    new CreateTableCommand({
      TableName: table,
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  );
  await waitForActive(ddb, table);
  const past = Math.floor(Date.now() / 1000) - 60;
  const items = Array.from({ length: RAW_DELETES }, (_, i) => item(i, past));
  await batchWrite(ddb, table, items);
  const now = Date.now();
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: config.producer.concurrency }, async () => {
      for (;;) {
        const it = items[next++];
        if (!it) return;
        const cond = stillExpiredCondition(SCANNED, it, now);
        await withRetry(
          () =>
            ddb.send(
              new DeleteItemCommand({
                TableName: table,
                Key: { pk: it.pk as AttributeValue },
                ConditionExpression: cond.expression,
                ExpressionAttributeNames: cond.names,
                ExpressionAttributeValues: cond.values,
                ReturnValues: 'ALL_OLD',
              }),
            ),
          retry,
        );
      }
    }),
  );
  const rate = RAW_DELETES / ((performance.now() - started) / 1000);
  // A DeleteTable retried after a slow first answer (a loaded server after seeding 1 M items) finds the table gone.
  await ddb.send(new DeleteTableCommand({ TableName: table })).catch((err: unknown) => {
    if ((err as { name?: string }).name !== 'ResourceNotFoundException') throw err;
  });
  return rate;
}

/** Deletions per second between the 10th and the 90th percentile of their times (0 with fewer than 10). */
function steadyRate(times: number[]): number {
  if (times.length < 10) return 0;
  const sorted = [...times].sort((a, b) => a - b);
  const lo = Math.floor(sorted.length * 0.1);
  const hi = Math.floor(sorted.length * 0.9);
  const span = ((sorted[hi] as number) - (sorted[lo] as number)) / 1000;
  return Math.round((hi - lo) / Math.max(0.001, span));
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

async function main(): Promise<void> {
  const config = loadConfig({
    overrides: {
      log: { level: 'warn' },
      tables: { control: name('bench-ctl'), marks: name('bench-marks') },
      topics: { shared: name('bench-expiry-rm'), deadLetter: name('bench-dlq') },
      api: { ttlPropagationMs: 0 },
      guard: {
        maxExpiredFraction: 1,
        minItemsForFraction: 1_000_000_000,
        maxDeletesPerMinute: 1_000_000_000,
      },
      // The sweep is a day away: the index phase measures discovery by index alone.
      scanner: { sweepIntervalMs: 86_400_000 },
    },
  });
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, silentLogger);
  const store = new TtlSettingsStore(ddb, {
    controlTable: config.tables.control,
    propagationMs: 0,
    internalTables: [config.tables.marks],
  });
  const table = name('bench-expiry');
  const dynamoPid = stackServicePid(ROOT, 'dynamodb');
  const admin = kafka.admin();
  await admin.connect();
  await applyTopics(admin, declaredTopics(config));
  const consumer = kafka.consumer({ groupId: name('bench-expiry') });
  try {
    const def = expiryIndexDefinition(INDEXED, relevantAttributes(INDEXED));
    await ddb.send(
      new CreateTableCommand({
        TableName: table,
        KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
        AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }, ...def.attributeDefinitions],
        GlobalSecondaryIndexes: [def.index],
        BillingMode: 'PAY_PER_REQUEST',
      }),
    );
    await waitForActive(ddb, table);
    const writer = createDynamoClient(config);
    addLastWriteStamp(writer, {
      tables: {},
      expiryIndex: expiryStampTables({ [table]: INDEXED }, { [table]: ['pk'] }),
    });
    const later = Math.floor(Date.now() / 1000) + 86_400;
    const t0 = performance.now();
    for (let i = 0; i < N; i += 10_000)
      await batchWrite(
        writer,
        table,
        Array.from({ length: Math.min(10_000, N - i) }, (_, j) => item(i + j, later)),
      );
    process.stderr.write(`seeded ${N} items in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
    // Every item went through the stamp: nothing to backfill, so the completion is recorded directly.
    await recordBackfilled(ddb, config.tables.control, table, Date.now());
    const raw = await rawDeleteRate(ddb, config);
    process.stderr.write(`raw conditional DeleteItem: ${raw.toFixed(0)}/s\n`);

    // Expiry per message key, filled per phase; the consumer reads along the whole run.
    const expiries = new Map<string, number>();
    const lags: number[] = [];
    const deletedAt = new Map<string, number>();
    await consumer.connect();
    await consumer.subscribe({ topic: config.topics.shared, fromBeginning: false });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString() ?? '';
        const exp = expiries.get(key);
        if (exp === undefined || deletedAt.has(key)) return;
        const ts = Number(message.timestamp);
        deletedAt.set(key, ts);
        lags.push(ts - exp);
      },
    });
    await sleep(2000);

    const results: Result[] = [];
    for (const mode of ['index', 'scan'] as const) {
      await store.update(table, { enabled: true, settings: mode === 'index' ? INDEXED : SCANNED }, 'bench');
      expiries.clear();
      lags.length = 0;
      deletedAt.clear();
      // The same 1 % of the table each phase (re-created after the previous phase deleted it), plus a trickle.
      const startS = Date.now() / 1000 + 5;
      const set: Item[] = [];
      for (let j = 0; j < EXPIRING; j++) {
        const i = Math.floor((j * N) / EXPIRING);
        const ttlS = Math.round((startS + (SPREAD_S * j) / EXPIRING) * 1000) / 1000;
        set.push(item(i, ttlS));
        expiries.set(messageKey(table, { pk: pk(i) }), ttlS * 1000);
      }
      const trickle: Item[] = [];
      for (let j = 0; j < STEADY; j++) {
        const i = Math.floor((j * N) / STEADY) + 1;
        // A trickle item is never one of the 1 % (their expiries would collide).
        if (expiries.has(messageKey(table, { pk: pk(i) }))) continue;
        const ttlS = Math.round((startS + SPREAD_S + 5 + (10 * j) / STEADY) * 1000) / 1000;
        trickle.push(item(i, ttlS));
        expiries.set(messageKey(table, { pk: pk(i) }), ttlS * 1000);
      }
      await batchWrite(writer, table, [...set, ...trickle]);

      const pipelineDdb = createDynamoClient(config);
      const reads = countReads(pipelineDdb, table);
      const cpuDone = measureCpu(() => ({ pipeline: process.pid, dynamodb: dynamoPid }));
      const deps = { config, ddb: pipelineDdb, kafka, settingsStore: store, logger: silentLogger };
      const scanner = await startScanner(deps);
      const producer = await startProducer(deps);
      const deadline = Date.now() + TIMEOUT_MS;
      const want = expiries.size;
      while (deletedAt.size < want && Date.now() < deadline) await sleep(250);
      await producer.stop();
      await scanner.stop();
      const cpu = cpuDone();
      const itemsRead = reads.read();
      pipelineDdb.destroy();
      const setKeys = set.map((it) => messageKey(table, { pk: it.pk as AttributeValue }));
      const setDone = setKeys.map((k) => deletedAt.get(k)).filter((t): t is number => t !== undefined);
      const firstExpiry = startS * 1000;
      const deletions = deletedAt.size;
      const sorted = [...lags].sort((a, b) => a - b);
      const cpuS = (cpu.seconds.pipeline ?? 0) + (cpu.seconds.dynamodb ?? 0);
      results.push({
        mode,
        items: N,
        itemsReadPerDeletion: Number((itemsRead / Math.max(1, deletions)).toFixed(2)),
        lagP50Ms: Math.round(percentile(sorted, 50)),
        lagP99Ms: Math.round(percentile(sorted, 99)),
        deletionsPerSec: Math.round(
          setDone.length / Math.max(0.001, (Math.max(...setDone) - firstExpiry) / 1000),
        ),
        deletionsPerSecSteady: steadyRate(setDone),
        rawConditionalDeletesPerSec: Math.round(raw),
        cpuMsPerDeletion: Number(((cpuS * 1000) / Math.max(1, deletions)).toFixed(2)),
        deletions,
        itemsRead,
      });
      if (deletions < want)
        process.stderr.write(`${mode}: only ${deletions} of ${want} deletions seen before the timeout\n`);
    }

    const cols = Object.keys(results[0] as object) as Array<keyof Result>;
    process.stdout.write(cols.join('\t') + '\n');
    for (const r of results) process.stdout.write(cols.map((c) => String(r[c])).join('\t') + '\n');
    process.stdout.write(
      JSON.stringify({
        bench: 'expiry',
        results: results.map((r) => ({
          mode: r.mode,
          items: r.items,
          itemsReadPerDeletion: r.itemsReadPerDeletion,
          lagP50Ms: r.lagP50Ms,
          lagP99Ms: r.lagP99Ms,
          deletionsPerSec: r.deletionsPerSec,
          deletionsPerSecSteady: r.deletionsPerSecSteady,
          rawConditionalDeletesPerSec: r.rawConditionalDeletesPerSec,
          cpuMsPerDeletion: r.cpuMsPerDeletion,
        })),
      }) + '\n',
    );
    writer.destroy();
  } finally {
    await consumer.disconnect().catch(() => undefined);
    for (const t of [table, config.tables.control, config.tables.marks])
      await ddb.send(new DeleteTableCommand({ TableName: t })).catch(() => undefined);
    await admin
      .deleteTopics({ topics: [config.topics.shared, config.topics.deadLetter] })
      .catch(() => undefined);
    await admin.disconnect();
    ddb.destroy();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench expiry failed: ${String(err instanceof Error ? (err.stack ?? err.message) : err)}\n`,
    );
    process.exit(1);
  },
);
