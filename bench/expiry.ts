/**
 * Expiry-index benchmark (not a test): `bash bench/run.sh expiry [--items N] [...]` (decision 0011).
 *
 * One run, one table of N items of ~1 KB created with the expiry index, every item written through the stamp.
 * The pipeline (scanner + producer, in this process) runs twice on that same table: in index mode, then in scan
 * mode. Each phase starts the pipeline, then gives the same items TTLs: 1 % of the table expiring over `--spread`
 * seconds (30), a `--burst` (10,000) expiring at one instant after it, and a trickle (`--steady`) over 10 s once the
 * burst is worked off; everything else expires in a day. Measured per phase (bench/README.md has the details):
 * - items read: every item the pipeline read from the bench table, counted from the responses by an SDK
 *   middleware (Scan and Query ScannedCount, GetItem, BatchGetItem) — measured, not estimated;
 * - lag: done − expiry over the 1 % and the trickle, where an item is done at the later of its record's Kafka
 *   timestamp and the end of its successful conditional DeleteItem;
 * - deletions/s: the burst's, between its 10th and 90th percentile done time (the pipeline's capacity);
 * - the raw conditional DeleteItem rate on the bench table itself (the producer's condition and concurrency),
 *   measured right before and right after the phase, with nothing else running; the ratio is against their mean
 *   (the shared machine's speed drifts by more than the ratio's margin between two measurements minutes apart),
 *   once the server is idle after the seeding (its store compacts for minutes after a large seeding);
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
import { createLogger, silentLogger } from '../core/logger';
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
import { producerOptionsFrom, startProducer } from '../producer';
import { scannerOptionsFrom, startScanner } from '../scanner';
import { messageKey } from '../schemas';
import { measureCpu, processCpuSeconds, processWrittenBytes, stackServicePid } from './proc-cpu';
import { startProfile } from './profile';
import { createPkTable } from './tables';

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
    spread: { type: 'string', default: '30' },
    burst: { type: 'string', default: '10000' },
    steady: { type: 'string', default: '200' },
    'raw-deletes': { type: 'string', default: '5000' },
    'item-bytes': { type: 'string', default: '1000' },
    timeout: { type: 'string', default: '900' },
    trace: { type: 'boolean', default: false },
    'expiring-fraction': { type: 'string', default: '0.01' },
    // Settings to try, merged over the bench's (e.g. '{"producer":{"concurrency":64}}').
    settings: { type: 'string', default: '{}' },
    modes: { type: 'string', default: 'index,scan' },
  },
});
const N = Number(values.items);
const SPREAD_S = Number(values.spread);
const BURST = Number(values.burst);
/** After the burst's expiry, before the trickle's: time to work it off first (scan mode takes longer still). */
const BURST_GAP_S = Math.max(15, BURST / 300);
const STEADY = Number(values.steady);
const RAW_DELETES = Number(values['raw-deletes']);
const ITEM_BYTES = Number(values['item-bytes']);
const TIMEOUT_MS = Number(values.timeout) * 1000;
const EXPIRING = Math.max(1, Math.floor(N * Number(values['expiring-fraction'])));
/**
 * Seconds from the start of a phase's writes to its first expiry, so that the writes end before anything expires (their
 * load on the one DynamoDB server is not part of any item's lag): twice as long as the seeding rate of this run says
 * they take (the pipeline polls meanwhile), plus 3 s.
 */
const writeLeadS = (itemsPerSec: number): number =>
  3 + (2 * (EXPIRING + BURST + Number(values.steady))) / Math.max(100, itemsPerSec);
const TRACE = values.trace === true;
const TRIED = JSON.parse(String(values.settings)) as {
  scanner?: Record<string, unknown>;
  producer?: Record<string, unknown>;
};
const MODES = String(values.modes)
  .split(',')
  .map((m) => m.trim())
  .filter((m): m is 'index' | 'scan' => m === 'index' || m === 'scan');

const name = (p: string) => `${p}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
const pk = (i: number) => ({ S: `item-${String(i).padStart(9, '0')}` });

interface Result {
  mode: 'index' | 'scan';
  items: number;
  itemsReadPerDeletion: number;
  /** Expiry → deleted and published, for the 1 % spread over the run and the trickle (the pipeline keeps up). */
  lagP50Ms: number;
  lagP99Ms: number;
  /** The burst's deletions between its 10th and 90th percentile: the pipeline's capacity. */
  deletionsPerSec: number;
  /** Conditional DeleteItem on the bench table itself (each also removes an index entry): mean of before and after. */
  rawConditionalDeletesPerSec: number;
  /** The two measurements of it, right before and right after the phase. */
  rawBeforePerSec: number;
  rawAfterPerSec: number;
  ratio: number;
  /** The whole burst, from its expiry to its last deletion (start-up latency included). */
  burstDeletionsPerSecEndToEnd: number;
  burstLagP99Ms: number;
  /** The raw rate on a fresh table of the same items without an index. */
  rawPlainTableDeletesPerSec: number;
  cpuMsPerDeletion: number;
  rawCpuMsPerDelete: number;
  deletions: number;
  itemsRead: number;
}

/**
 * Counts every item the client read from `table`, from the responses, and times every conditional DeleteItem of
 * `table` that succeeded (the deletion itself, not its record's publish time). With `trace`, the requests of each
 * second by operation (and table: the bench table or ttlstream's own) go to stderr: where the pipeline's time goes.
 */
function countReads(
  ddb: DynamoDBClient,
  table: string,
  trace: boolean,
): { read(): number; byOperation: Record<string, number>; deletedAt: Map<string, number>; stop(): void } {
  let n = 0;
  const byOperation: Record<string, number> = {};
  const add = (op: string, k: number): void => {
    n += k;
    byOperation[op] = (byOperation[op] ?? 0) + k;
  };
  const deletedAt = new Map<string, number>();
  const perSecond = new Map<string, number>();
  let second = Math.floor(Date.now() / 1000);
  const t0 = second;
  const flush = (): void => {
    const now = Math.floor(Date.now() / 1000);
    if (now === second) return;
    if (trace && perSecond.size > 0) {
      const parts = [...perSecond].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`);
      process.stderr.write(`[trace +${second - t0}s] ${parts.join(' ')}\n`);
    }
    perSecond.clear();
    second = now;
  };
  const timer = setInterval(flush, 250);
  ddb.middlewareStack.add(
    (next, context) => async (args) => {
      const out = await next(args);
      const input = args.input as { TableName?: string };
      const o = out.output as {
        ScannedCount?: number;
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
      };
      const op = (context.commandName ?? '?').replace(/Command$/, '');
      if (trace) {
        flush();
        const where = input.TableName === undefined ? '' : input.TableName === table ? '' : '@ttl';
        perSecond.set(op + where, (perSecond.get(op + where) ?? 0) + 1);
      }
      switch (context.commandName) {
        case 'ScanCommand':
        case 'QueryCommand':
          if (input.TableName === table) add(op, o.ScannedCount ?? 0);
          break;
        case 'GetItemCommand':
          if (input.TableName === table && o.Item) add(op, 1);
          break;
        case 'BatchGetItemCommand':
          add(op, o.Responses?.[table]?.length ?? 0);
          break;
        case 'DeleteItemCommand':
          if (input.TableName === table) {
            const key = (args.input as { Key?: Item }).Key?.pk?.S;
            if (key !== undefined) deletedAt.set(key, Date.now());
          }
          break;
      }
      return out;
    },
    { step: 'initialize', name: 'benchCountReads' },
  );
  return { read: () => n, byOperation, deletedAt, stop: () => clearInterval(timer) };
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

/**
 * Conditional DeleteItem of RAW_DELETES expired items, with the producer's condition, `ReturnValues: ALL_OLD` and
 * concurrency. `into` absent: on a fresh table of the same items without an index (the raw limit of a plain
 * table). `into` given: on the bench table itself, items written through the stamp (so each delete also removes an
 * index entry, as every deletion of the pipeline does) and past the table's N items (deleted again here); `round`
 * picks new ones each time.
 */
async function rawDeleteRate(
  ddb: DynamoDBClient,
  config: TtlstreamConfig,
  into?: { table: string; writer: DynamoDBClient; round: number },
): Promise<{ rate: number; cpuMsPerDelete: number }> {
  const table = into?.table ?? name('bench-raw-del');
  if (!into) await createPkTable(ddb, table);
  const past = Math.floor(Date.now() / 1000) - 60;
  // Past the table's N items, new ones each round.
  const first = into ? N + 1_000_000 + into.round * RAW_DELETES : 0;
  const items = Array.from({ length: RAW_DELETES }, (_, i) => item(first + i, past));
  await batchWrite(into?.writer ?? ddb, table, items);
  const now = Date.now();
  let next = 0;
  const cpuDone = measureCpu(() => ({ client: process.pid, dynamodb: stackServicePid(ROOT, 'dynamodb') }));
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
  const cpu = cpuDone();
  const cpuMsPerDelete = (((cpu.seconds.client ?? 0) + (cpu.seconds.dynamodb ?? 0)) * 1000) / RAW_DELETES;
  if (into) return { rate, cpuMsPerDelete };
  // A DeleteTable retried after a slow first answer (a loaded server after seeding 1 M items) finds the table gone.
  await ddb.send(new DeleteTableCommand({ TableName: table })).catch((err: unknown) => {
    if ((err as { name?: string }).name !== 'ResourceNotFoundException') throw err;
  });
  return { rate, cpuMsPerDelete };
}

/**
 * Waits until the DynamoDB server is idle after the seeding (at most 5 minutes): dynalite's LevelDB compacts the
 * seeded data in the background for a while after the last write, and a raw rate or a phase measured meanwhile is
 * slowed by it. Idle: under a fifth of a CPU and under 1 MiB/s written to disk, for 5 s in a row.
 */
async function settle(pid: number | null): Promise<void> {
  if (pid === null) return;
  const started = Date.now();
  let quiet = 0;
  const sample = () => ({ cpu: processCpuSeconds(pid), written: processWrittenBytes(pid) });
  let last = sample();
  while (quiet < 5 && Date.now() - started < 300_000) {
    await sleep(1000);
    const now = sample();
    const idle =
      now.cpu !== null &&
      last.cpu !== null &&
      now.cpu - last.cpu < 0.2 &&
      // A compaction waiting on the disk shows as writes, not as CPU.
      (now.written === null || last.written === null || now.written - last.written < 1024 * 1024);
    quiet = idle ? quiet + 1 : 0;
    last = now;
  }
  process.stderr.write(`DynamoDB server idle after ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
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
      scanner: { sweepIntervalMs: 86_400_000, ...TRIED.scanner },
      ...(TRIED.producer ? { producer: TRIED.producer } : {}),
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
    const seedS = (performance.now() - t0) / 1000;
    process.stderr.write(`seeded ${N} items in ${seedS.toFixed(1)} s\n`);
    const writeLead = writeLeadS(N / seedS);
    await settle(dynamoPid);
    // Every item went through the stamp: nothing to backfill, so the completion is recorded directly.
    await recordBackfilled(ddb, config.tables.control, table, Date.now());
    let rawRound = 0;
    // A warm-up, not reported: the first deletes of a fresh server ran slower than later ones (774–798/s, then
    // 1,000–1,030/s, at 100 k), a cold start no later figure has.
    const warm = await rawDeleteRate(ddb, config, { table, writer, round: rawRound++ });
    process.stderr.write(`raw conditional DeleteItem, warm-up: ${warm.rate.toFixed(0)}/s (not reported)\n`);
    const indexed = await rawDeleteRate(ddb, config, { table, writer, round: rawRound++ });
    process.stderr.write(
      `raw conditional DeleteItem on the bench table with its expiry index: ${indexed.rate.toFixed(0)}/s ` +
        `(${indexed.cpuMsPerDelete.toFixed(2)} CPU ms each, client + server)\n`,
    );
    // The raw rate right before the phase: the first one before the first phase, then the one after the last.
    let rawBefore = indexed;

    // Expiry per message key, filled per phase; the consumer reads along the whole run.
    const expiries = new Map<string, number>();
    const deletedAt = new Map<string, number>();
    await consumer.connect();
    await consumer.subscribe({ topic: config.topics.shared, fromBeginning: false });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString() ?? '';
        if (!expiries.has(key) || deletedAt.has(key)) return;
        deletedAt.set(key, Number(message.timestamp));
      },
    });
    await sleep(2000);

    const results: Result[] = [];
    for (const mode of MODES) {
      await store.update(table, { enabled: true, settings: mode === 'index' ? INDEXED : SCANNED }, 'bench');
      expiries.clear();
      deletedAt.clear();
      const pipelineDdb = createDynamoClient(config);
      const reads = countReads(pipelineDdb, table, TRACE);
      // BENCH_LOG_LEVEL=info|warn|debug: the pipeline's own log on stderr (silent otherwise).
      const logger = process.env.BENCH_LOG_LEVEL
        ? createLogger({ level: process.env.BENCH_LOG_LEVEL, name: `bench-${mode}` })
        : silentLogger;
      const deps = { ddb: pipelineDdb, settingsStore: store, logger };
      // The pipeline starts first (leases, connections): its start-up is not part of any item's lag.
      const scanner = await startScanner({ ...deps, options: scannerOptionsFrom(config) });
      const producer = await startProducer({ ...deps, kafka, options: producerOptionsFrom(config) });
      await sleep(2000);

      // The same items each phase (re-created after the previous phase deleted them): 1 % of the table spread over
      // the run, then the burst at one instant, then the trickle.
      const startS = Date.now() / 1000 + writeLead;
      const taken = new Set<number>();
      const expiring = (i: number, ttlS: number, into: Item[]): void => {
        if (taken.has(i) || i >= N) return;
        taken.add(i);
        const rounded = Math.round(ttlS * 1000) / 1000;
        into.push(item(i, rounded));
        expiries.set(messageKey(table, { pk: pk(i) }), rounded * 1000);
      };
      const set: Item[] = [];
      for (let j = 0; j < EXPIRING; j++)
        expiring(Math.floor((j * N) / EXPIRING), startS + (SPREAD_S * j) / EXPIRING, set);
      const burstS = startS + SPREAD_S + 5;
      const burst: Item[] = [];
      for (let j = 0; j < BURST; j++) expiring(Math.floor((j * N) / BURST) + 2, burstS, burst);
      const trickleS = burstS + BURST_GAP_S;
      const trickle: Item[] = [];
      for (let j = 0; j < STEADY; j++)
        expiring(Math.floor((j * N) / STEADY) + 1, trickleS + (10 * j) / STEADY, trickle);
      await batchWrite(writer, table, [...set, ...burst, ...trickle]);
      const margin = startS - Date.now() / 1000;
      if (margin < 1)
        process.stderr.write(
          `${mode}: writing the expiring items ended only ${margin.toFixed(1)} s before the first expiry\n`,
        );

      const cpuDone = measureCpu(() => ({ pipeline: process.pid, dynamodb: dynamoPid }));
      const profiler = await startProfile();
      const deadline = Date.now() + TIMEOUT_MS;
      const want = expiries.size;
      const wantPks = [...set, ...burst, ...trickle].map((it) => it.pk?.S ?? '');
      const allDeleted = (): boolean => wantPks.every((k) => reads.deletedAt.has(k));
      while ((deletedAt.size < want || !allDeleted()) && Date.now() < deadline) await sleep(250);
      await producer.stop();
      await scanner.stop();
      const cpu = cpuDone();
      await profiler?.stop(`expiry-${mode}-${N}`);
      const itemsRead = reads.read();
      reads.stop();
      process.stderr.write(`${mode}: items read by operation ${JSON.stringify(reads.byOperation)}\n`);
      pipelineDdb.destroy();
      // An item is done when its record is published and it is deleted (the delete follows the publish; a batch's
      // records go out together before its deletes, so the later of the two times is the deletion's end).
      const doneAt = (it: Item): number | undefined => {
        const published = deletedAt.get(messageKey(table, { pk: it.pk as AttributeValue }));
        const deleted = reads.deletedAt.get(it.pk?.S ?? '');
        return published === undefined || deleted === undefined ? undefined : Math.max(published, deleted);
      };
      const lagsOf = (items: Item[]): number[] =>
        items
          .flatMap((it) => {
            const done = doneAt(it);
            const exp = expiries.get(messageKey(table, { pk: it.pk as AttributeValue }));
            return done === undefined || exp === undefined ? [] : [done - exp];
          })
          .sort((x, y) => x - y);
      const burstDone = burst.map(doneAt).filter((t): t is number => t !== undefined);
      const deletions = deletedAt.size;
      // Lag where the pipeline keeps up: the 1 % spread over the run and the trickle (not the burst).
      const lags = lagsOf([...set, ...trickle]);
      const burstLags = lagsOf(burst);
      const cpuS = (cpu.seconds.pipeline ?? 0) + (cpu.seconds.dynamodb ?? 0);
      const steady = steadyRate(burstDone);
      // The raw limit again, now that the pipeline has stopped: the ratio is against the mean of before and after.
      const rawAfter = await rawDeleteRate(ddb, config, { table, writer, round: rawRound++ });
      const rawIndexed = (rawBefore.rate + rawAfter.rate) / 2;
      process.stderr.write(
        `${mode}: raw conditional DeleteItem on the bench table ${rawBefore.rate.toFixed(0)}/s before, ` +
          `${rawAfter.rate.toFixed(0)}/s after\n`,
      );
      results.push({
        mode,
        items: N,
        itemsReadPerDeletion: Number((itemsRead / Math.max(1, deletions)).toFixed(2)),
        lagP50Ms: Math.round(percentile(lags, 50)),
        lagP99Ms: Math.round(percentile(lags, 99)),
        deletionsPerSec: steady,
        rawConditionalDeletesPerSec: Math.round(rawIndexed),
        rawBeforePerSec: Math.round(rawBefore.rate),
        rawAfterPerSec: Math.round(rawAfter.rate),
        ratio: Number((steady / rawIndexed).toFixed(2)),
        burstDeletionsPerSecEndToEnd: Math.round(
          burstDone.length / Math.max(0.001, (Math.max(...burstDone) - burstS * 1000) / 1000),
        ),
        burstLagP99Ms: Math.round(percentile(burstLags, 99)),
        rawPlainTableDeletesPerSec: 0, // measured after the phases, below
        cpuMsPerDeletion: Number(((cpuS * 1000) / Math.max(1, deletions)).toFixed(2)),
        rawCpuMsPerDelete: Number(((rawBefore.cpuMsPerDelete + rawAfter.cpuMsPerDelete) / 2).toFixed(2)),
        deletions,
        itemsRead,
      });
      rawBefore = rawAfter;
      if (deletions < want)
        process.stderr.write(`${mode}: only ${deletions} of ${want} deletions seen before the timeout\n`);
    }
    // Last: creating, filling and dropping another table keeps dynalite busy for a while after (at 1 M, the bench
    // table's raw rate measured right after it was 451–677/s against 958–1,001/s later, and the index phase that
    // followed was slowed too).
    const plain = await rawDeleteRate(ddb, config);
    process.stderr.write(
      `raw conditional DeleteItem on a fresh table without index: ${plain.rate.toFixed(0)}/s ` +
        `(${plain.cpuMsPerDelete.toFixed(2)} CPU ms each, client + server)\n`,
    );
    for (const r of results) r.rawPlainTableDeletesPerSec = Math.round(plain.rate);

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
          rawConditionalDeletesPerSec: r.rawConditionalDeletesPerSec,
          rawBeforePerSec: r.rawBeforePerSec,
          rawAfterPerSec: r.rawAfterPerSec,
          ratio: r.ratio,
          burstDeletionsPerSecEndToEnd: r.burstDeletionsPerSecEndToEnd,
          burstLagP99Ms: r.burstLagP99Ms,
          rawPlainTableDeletesPerSec: r.rawPlainTableDeletesPerSec,
          cpuMsPerDeletion: r.cpuMsPerDeletion,
          rawCpuMsPerDelete: r.rawCpuMsPerDelete,
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
