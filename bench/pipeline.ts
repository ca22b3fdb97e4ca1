/**
 * Pipeline benchmark (not a test): `bash bench/run.sh pipeline [--items N] [...]`.
 *
 * In one run, against the local stack, it measures the raw limits and the pipeline beside them:
 *  1. seeds a table (default 200,000 items of ~1 KB, half expired, 2% expiring during the pipeline run);
 *  2. raw parallel Scan rate over that table (same segments, page size and projection as the scanner);
 *  3. raw conditional DeleteItem rate at the producer's concurrency, on a separate table of expired items
 *     (same condition and ReturnValues as the producer);
 *  4. raw kafkajs produce rate for REMOVE records of the same size (idempotent, acks -1, the producer's batch size);
 *  5. the pipeline: a scanner process and a producer process (this file re-run with --child), reporting their
 *     metrics and RSS every 250 ms, while this process reads the stream topic: scan rate of the first pass,
 *     end-to-end deletions/s, lag from expiry to the record on Kafka (message timestamp − TTL) for the items that
 *     expired during the run, peak RSS per process and RSS at 50k vs all items scanned.
 * It prints a table and one JSON line with every figure and the ratios to the raw limits (targets: deletions/s ≥
 * 0.70 × raw deletes/s, scan rate ≥ 0.80 × raw scan rate). Everything it creates is deleted at the end (--keep).
 */
import {
  BatchGetItemCommand,
  BatchWriteItemCommand,
  DeleteTableCommand,
  ScanCommand,
  UpdateItemCommand,
  type AttributeValue,
  type DynamoDBClient,
  type ScanCommandOutput,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { CompressionTypes, type Kafka, type Message } from 'kafkajs';
import { createDynamoClient, createKafka } from '../core/clients';
import { loadConfig, type ConfigInput, type TtlstreamConfig } from '../core/config';
import { createLogger, silentLogger } from '../core/logger';
import { metrics } from '../core/metrics';
import { backoffCeilingMs, isDynamoThrottleOrTransient, withRetry } from '../core/retry';
import { applyTopics, declaredTopics } from '../core/topics';
import { TtlSettingsStore } from '../control/settings-store';
import type { TableTtlSettings } from '../policy';
import { buildRemoveRecord, producerOptionsFrom, startProducer } from '../producer';
import { eventIdFor, sizeBytes } from '../pipeline/image';
import { projectionFor, scannerOptionsFrom, startScanner } from '../scanner';
import { CpuSeries, measureCpu, stackServicePid, type CpuSpan } from './proc-cpu';
import { conditionalDeletes, createPkTable } from './tables';
import { HEADERS, encodeRemove, messageKey, type MessageHeaders } from '../schemas';
import { exitAfterOutput } from '../core/exit';

process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';

const ROOT = resolve(__dirname, '..');
const TTL = 'ttl';
const SETTINGS: TableTtlSettings = { policy: { mode: 'dynamodb', attributeName: TTL } };
type Item = Record<string, AttributeValue>;

// ---------------------------------------------------------------------------------------------------------------
// Options.

interface Options {
  items: number;
  expiredFraction: number;
  soonFraction: number;
  soonSpreadS: number;
  itemBytes: number;
  deleteItems: number;
  produceRecords: number;
  concurrency: number;
  batchSize: number;
  shards: number;
  segments: number;
  pageSize: number;
  compression: 'none' | 'gzip';
  readRateLimit: number;
  passIntervalMs: number;
  scannerHeadStartS: number;
  tailS: number;
  steady: number;
  seedParallel: number;
  timeoutS: number;
  keep: boolean;
}

const USAGE = `usage: bash bench/run.sh pipeline [options]
  --items N             items in the main table (default 200000)
  --expired-fraction F  fraction already expired (default 0.5)
  --soon-fraction F     fraction expiring during the run, for the lag figures (default 0.02)
  --soon-spread S       those expire over the first S seconds of the run (default 20)
  --item-bytes B        approximate item size (default 1000)
  --delete-items N      items of the raw DeleteItem table (default 20000)
  --produce-records N   records of the raw produce run (default min(100000, expired items))
  --concurrency N       producer.concurrency, also the raw delete concurrency (default: config, 32)
  --batch-size N        producer.batchSize, also the raw produce batch (default: config, 250)
  --shards N            producer.shards (default: config, 16)
  --segments N          scanner.totalSegments, also the raw scan segments (default: config, 8)
  --page-size N         scanner.pageSize, also the raw scan page (default: config, 500)
  --compression C       none | gzip for the producer and the raw produce run (default none)
  --read-rate-limit N   scanner.readRateLimit, items/s (default 1e9: uncapped, to measure the scan)
  --pass-interval MS    scanner.passIntervalMs (default: config, 1000)
  --scanner-head-start S  start the producer after the scanner's first pass or S seconds (default 0: together)
  --tail S              after the last deletion, measure the scanner's later passes for S seconds (default 15)
  --steady N            then set N items to expire over 10 s and measure their lag with no backlog (default 1000)
  --seed-parallel N     BatchWriteItem requests in flight while seeding (default 8)
  --timeout S           give up on the pipeline after S seconds (default 1800)
  --keep                keep the tables and topics`;

/** The options, or undefined when --help asked for the usage (printed). */
function parseOptions(argv: string[], config: TtlstreamConfig): Options | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      items: { type: 'string' },
      'expired-fraction': { type: 'string' },
      'soon-fraction': { type: 'string' },
      'soon-spread': { type: 'string' },
      'item-bytes': { type: 'string' },
      'delete-items': { type: 'string' },
      'produce-records': { type: 'string' },
      concurrency: { type: 'string' },
      'batch-size': { type: 'string' },
      shards: { type: 'string' },
      segments: { type: 'string' },
      'page-size': { type: 'string' },
      compression: { type: 'string' },
      'read-rate-limit': { type: 'string' },
      'pass-interval': { type: 'string' },
      'scanner-head-start': { type: 'string' },
      tail: { type: 'string' },
      steady: { type: 'string' },
      'seed-parallel': { type: 'string' },
      timeout: { type: 'string' },
      keep: { type: 'boolean' },
      help: { type: 'boolean' },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return undefined;
  }
  const num = (
    name: string,
    raw: string | undefined,
    def: number,
    min: number,
    max: number,
    int = true,
  ): number => {
    if (raw === undefined) return def;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || n > max || (int && !Number.isInteger(n)))
      throw new Error(
        `--${name}: expected ${int ? 'an integer' : 'a number'} in [${min}, ${max}], got "${raw}"`,
      );
    return n;
  };
  const items = num('items', values.items, 200_000, 100, 10_000_000);
  const expiredFraction = num('expired-fraction', values['expired-fraction'], 0.5, 0.01, 0.98, false);
  const compression = values.compression ?? 'none';
  if (compression !== 'none' && compression !== 'gzip')
    throw new Error(`--compression: expected none or gzip, got "${compression}"`);
  return {
    items,
    expiredFraction,
    soonFraction: num('soon-fraction', values['soon-fraction'], 0.02, 0, 0.5, false),
    soonSpreadS: num('soon-spread', values['soon-spread'], 20, 1, 3600),
    itemBytes: num('item-bytes', values['item-bytes'], 1000, 100, 300_000),
    deleteItems: num('delete-items', values['delete-items'], 20_000, 100, 10_000_000),
    produceRecords: num(
      'produce-records',
      values['produce-records'],
      Math.min(100_000, Math.round(items * expiredFraction)),
      100,
      10_000_000,
    ),
    concurrency: num('concurrency', values.concurrency, config.producer.concurrency, 1, 1024),
    batchSize: num('batch-size', values['batch-size'], config.producer.batchSize, 1, 1000),
    shards: num('shards', values.shards, config.producer.shards, 1, 4096),
    segments: num('segments', values.segments, config.scanner.totalSegments, 1, 1_000_000),
    pageSize: num('page-size', values['page-size'], config.scanner.pageSize, 1, 10_000),
    compression,
    readRateLimit: num('read-rate-limit', values['read-rate-limit'], 1_000_000_000, 1, 1e12, false),
    tailS: num('tail', values.tail, 15, 1, 3600),
    steady: num('steady', values.steady, 1000, 0, 100_000),
    scannerHeadStartS: num('scanner-head-start', values['scanner-head-start'], 0, 0, 86_400),
    passIntervalMs: num(
      'pass-interval',
      values['pass-interval'],
      config.scanner.passIntervalMs,
      0,
      3_600_000,
    ),
    seedParallel: num('seed-parallel', values['seed-parallel'], 8, 1, 256),
    timeoutS: num('timeout', values.timeout, 1800, 10, 86_400),
    keep: values.keep ?? false,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Helpers.

const retry = { retries: 12, initialDelayMs: 50, maxDelayMs: 2000, isRetryable: isDynamoThrottleOrTransient };

function name(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
}

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

function percentile(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

function round(n: number | null | undefined, digits = 0): number | null {
  if (n === null || n === undefined || !Number.isFinite(n)) return null;
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function mib(bytes: number | null | undefined): number | null {
  return bytes === null || bytes === undefined ? null : round(bytes / 1024 / 1024, 1);
}

/** A ~`bytes` item with a string key and the TTL attribute. */
function makeItem(pk: string, ttlSeconds: number, bytes: number): Item {
  const filler = randomBytes(Math.max(8, Math.floor((bytes - 60) * 0.75))).toString('base64');
  return {
    pk: { S: pk },
    [TTL]: { N: String(ttlSeconds) },
    payload: { S: filler },
    n: { N: String(Math.floor(Math.random() * 1e9)) },
  };
}

async function deleteTable(ddb: DynamoDBClient, table: string): Promise<void> {
  await ddb.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined);
}

/** BatchWriteItem everything `next()` yields, `parallel` requests in flight. Returns items/s. */
async function seed(
  ddb: DynamoDBClient,
  table: string,
  count: number,
  make: (i: number) => Item,
  parallel: number,
): Promise<number> {
  const started = performance.now();
  let next = 0;
  let lastLog = started;
  const worker = async (): Promise<void> => {
    for (;;) {
      const from = next;
      if (from >= count) return;
      next = Math.min(count, from + 25);
      let pending: WriteRequest[] = [];
      for (let i = from; i < next; i++) pending.push({ PutRequest: { Item: make(i) } });
      for (let round = 0; pending.length > 0; round++) {
        if (round > 0) await sleep(backoffCeilingMs(round, { initialDelayMs: 20, maxDelayMs: 1000 }));
        const out = await withRetry(
          () => ddb.send(new BatchWriteItemCommand({ RequestItems: { [table]: pending } })),
          retry,
        );
        pending = out.UnprocessedItems?.[table] ?? [];
      }
      if (performance.now() - lastLog > 10_000) {
        lastLog = performance.now();
        log(`  seeded ${next} of ${count} into ${table}`);
      }
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return count / ((performance.now() - started) / 1000);
}

// ---------------------------------------------------------------------------------------------------------------
// Raw limits.

/** One parallel Scan pass (as the scanner reads: segments, page size, projection). Returns items/s. */
async function rawScan(
  ddb: DynamoDBClient,
  table: string,
  o: Options,
): Promise<{ rate: number; items: number }> {
  const projection = projectionFor(['pk'], SETTINGS);
  const started = performance.now();
  let items = 0;
  await Promise.all(
    Array.from({ length: o.segments }, async (_, segment) => {
      let start: Record<string, AttributeValue> | undefined;
      do {
        const page: ScanCommandOutput = await withRetry(
          () =>
            ddb.send(
              new ScanCommand({
                TableName: table,
                Segment: segment,
                TotalSegments: o.segments,
                ProjectionExpression: projection.expression,
                ExpressionAttributeNames: projection.names,
                Limit: o.pageSize,
                ...(start ? { ExclusiveStartKey: start } : {}),
              }),
            ),
          retry,
        );
        items += page.Items?.length ?? 0;
        start = page.LastEvaluatedKey;
      } while (start);
    }),
  );
  return { rate: items / ((performance.now() - started) / 1000), items };
}

/** Conditional DeleteItems at the producer's concurrency with the producer's condition. Returns items/s. */
async function rawDeletes(ddb: DynamoDBClient, table: string, items: Item[], o: Options): Promise<number> {
  const nowMs = Date.now();
  const started = performance.now();
  await conditionalDeletes(ddb, table, items, { settings: SETTINGS, nowMs, inFlight: o.concurrency, retry });
  return items.length / ((performance.now() - started) / 1000);
}

/**
 * Consistent BatchGetItem of every item, 100 keys per request, 8 requests in flight: the read of the current image
 * the producer makes before it publishes (docs/decisions/0001, step 1), alone. Returns items/s.
 */
async function rawReads(ddb: DynamoDBClient, table: string, items: Item[]): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (;;) {
        const chunk = items.slice(next, next + 100);
        next += 100;
        if (chunk.length === 0) return;
        let keys = chunk.map((item) => ({ pk: item.pk as AttributeValue }));
        while (keys.length > 0) {
          const out = await withRetry(
            () =>
              ddb.send(
                new BatchGetItemCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }),
              ),
            retry,
          );
          keys = (out.UnprocessedKeys?.[table]?.Keys ?? []) as typeof keys;
        }
      }
    }),
  );
  return items.length / ((performance.now() - started) / 1000);
}

/** REMOVE records of ~itemBytes items, encoded as the producer encodes them, sent in its batch size. */
async function rawProduce(
  kafka: Kafka,
  config: TtlstreamConfig,
  topic: string,
  o: Options,
): Promise<{ rate: number; bytesPerRecord: number }> {
  const table = 'bench-raw-produce';
  const messages: Message[] = [];
  const template = makeItem('x', 1, o.itemBytes);
  for (let i = 0; i < Math.min(o.produceRecords, 5000); i++) {
    const pk = `raw-${i}`;
    const image: Item = { ...template, pk: { S: pk }, n: { N: String(i) } };
    const keys = { pk: { S: pk } };
    const record = buildRemoveRecord(config, {
      table,
      keys,
      image,
      eventID: eventIdFor(table, keys, image, { kind: 'mark', row: `bench#${i}` }),
      sequenceNumber: String(i).padStart(21, '0'),
      decidedAtMs: Date.now(),
      sizeBytes: sizeBytes(keys, image),
    });
    const e = encodeRemove(record, config.topics.encoding);
    messages.push({ key: messageKey(table, keys), value: e.value, headers: e.headers });
  }
  const producer = kafka.producer({ idempotent: true, allowAutoTopicCreation: false });
  await producer.connect();
  try {
    // Warm-up: metadata and the producer id.
    await producer.sendBatch({ acks: -1, topicMessages: [{ topic, messages: messages.slice(0, 1) }] });
    const started = performance.now();
    for (let sent = 0; sent < o.produceRecords;) {
      const n = Math.min(o.batchSize, o.produceRecords - sent);
      const batch: Message[] = [];
      for (let i = 0; i < n; i++) batch.push(messages[(sent + i) % messages.length] as Message);
      await producer.sendBatch({
        acks: -1,
        compression: o.compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None,
        topicMessages: [{ topic, messages: batch }],
      });
      sent += n;
    }
    const bytes = messages.reduce((s, m) => s + (m.value as Buffer).length, 0) / messages.length;
    return { rate: o.produceRecords / ((performance.now() - started) / 1000), bytesPerRecord: bytes };
  } finally {
    await producer.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Child processes: one pipeline role each, reporting metrics and memory.

interface Progress {
  role: 'scanner' | 'producer';
  t: number;
  rss: number;
  heapUsed: number;
  scanned: number;
  /** Marks the scanner wrote (first marks and re-marks). */
  marked: number;
  deleted: number;
  published: number;
  /** DynamoDB requests sent so far, by operation. */
  requests: Record<string, number>;
}

async function counterTotal(c: { get(): Promise<{ values: Array<{ value: number }> }> }): Promise<number> {
  return (await c.get()).values.reduce((s, v) => s + v.value, 0);
}

async function requestsByOperation(): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const v of (await metrics.dynamodbRequests.get()).values) {
    const op = String(v.labels.operation);
    out[op] = (out[op] ?? 0) + v.value;
  }
  return out;
}

async function child(role: 'scanner' | 'producer', compression: 'none' | 'gzip'): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ level: config.log.level, name: `bench-${role}` });
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, logger);
  const settingsStore = new TtlSettingsStore(ddb, {
    controlTable: config.tables.control,
    propagationMs: config.api.ttlPropagationMs,
    internalTables: [config.tables.marks],
  });
  const deps = { ddb, settingsStore, logger };
  // A zero sample before the role starts: the scanner may be well into its first pass by the first timed report,
  // and the first-pass rate is timed from the last sample at zero.
  const zero: Progress = {
    role,
    t: Date.now(),
    rss: process.memoryUsage().rss,
    heapUsed: process.memoryUsage().heapUsed,
    scanned: 0,
    marked: 0,
    deleted: 0,
    published: 0,
    requests: {},
  };
  process.stdout.write(`${JSON.stringify(zero)}\n`);
  const running =
    role === 'scanner'
      ? await startScanner({ ...deps, options: scannerOptionsFrom(config) })
      : await startProducer({
          ...deps,
          kafka,
          options: producerOptionsFrom(config),
          publisher: { compression: compression === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None },
        });
  const report = async (): Promise<void> => {
    const mem = process.memoryUsage();
    const p: Progress = {
      role,
      t: Date.now(),
      rss: mem.rss,
      heapUsed: mem.heapUsed,
      scanned: await counterTotal(metrics.itemsScanned),
      marked: await counterTotal(metrics.expiredFound),
      deleted: await counterTotal(metrics.deletions),
      published: await counterTotal(metrics.recordsPublished),
      requests: await requestsByOperation(),
    };
    process.stdout.write(`${JSON.stringify(p)}\n`);
  };
  process.stdout.write(`${JSON.stringify({ ready: true, role })}\n`);
  const timer = setInterval(() => void report(), 250);
  const stop = (): void => {
    clearInterval(timer);
    void running
      .stop()
      .then(report)
      .then(() => exitAfterOutput(0))
      .catch(() => exitAfterOutput(1));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

interface ChildHandle {
  role: 'scanner' | 'producer';
  proc: ChildProcess;
  ready: Promise<void>;
  samples: Progress[];
  stderr: () => string;
  exited: Promise<number | null>;
}

function spawnChild(role: 'scanner' | 'producer', configFile: string, o: Options): ChildHandle {
  // BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof": extra Node flags for the scanner and producer.
  const nodeArgs = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '--import',
      'tsx',
      resolve(ROOT, 'bench', 'pipeline.ts'),
      '--child',
      role,
      '--compression',
      o.compression,
    ],
    { cwd: ROOT, env: { ...process.env, TTLSTREAM_CONFIG: configFile }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const samples: Progress[] = [];
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  // BENCH_CHILD_LOG_DIR=<dir>: keep the processes' logs (TTLSTREAM_LOG_LEVEL is not read; the config says warn).
  const logDir = process.env.BENCH_CHILD_LOG_DIR;
  if (logDir) proc.stderr?.pipe(createWriteStream(join(logDir, `${role}-${Date.now()}.log`)));
  const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
  const ready = new Promise<void>((res, rej) => {
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          const msg = JSON.parse(line) as Partial<Progress> & { ready?: boolean };
          if (msg.ready) res();
          else if (msg.role) samples.push(msg as Progress);
        } catch {
          // not ours
        }
      }
    });
    void exited.then((code) => rej(new Error(`${role} exited (${code}) before it was ready: ${err}`)));
  });
  ready.catch(() => undefined);
  return { role, proc, ready, samples, stderr: () => err, exited };
}

/** The first sample time at which `pick` reached `target`, and the last sample time before it left 0. */
function crossing(samples: readonly Progress[], pick: (p: Progress) => number, target: number) {
  let start: number | undefined;
  for (const s of samples) {
    if (pick(s) === 0) start = s.t;
    if (pick(s) >= target) return { start, at: s.t, sample: s };
  }
  return { start, at: undefined, sample: undefined };
}

// ---------------------------------------------------------------------------------------------------------------
// The run.

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const ci = argv.indexOf('--child');
  if (ci >= 0) {
    const role = argv[ci + 1];
    const cp = argv.indexOf('--compression');
    const compression = cp >= 0 && argv[cp + 1] === 'gzip' ? 'gzip' : 'none';
    if (role !== 'scanner' && role !== 'producer') throw new Error(`--child scanner|producer, got ${role}`);
    return child(role, compression);
  }

  const base = loadConfig({ overrides: { log: { level: 'warn' } } });
  const o = parseOptions(argv, base);
  if (o === undefined) return;
  const overrides: ConfigInput = {
    tables: { control: name('bench-ctl'), marks: name('bench-marks') },
    topics: { shared: name('bench-rm'), deadLetter: name('bench-dlq') },
    api: { ttlPropagationMs: 0 },
    // The guard would (rightly) pause a table that is half expired; the benchmark measures deletion capacity.
    guard: { maxExpiredFraction: 1, minItemsForFraction: 1_000_000_000, maxDeletesPerMinute: 1_000_000_000 },
    scanner: {
      totalSegments: o.segments,
      pageSize: o.pageSize,
      readRateLimit: o.readRateLimit,
      passIntervalMs: o.passIntervalMs,
    },
    producer: { concurrency: o.concurrency, batchSize: o.batchSize, shards: o.shards },
    log: { level: 'warn' },
  };
  const config = loadConfig({ overrides });
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, silentLogger);
  const mainTable = name('bench-main');
  const deleteTable_ = name('bench-del');
  const rawTopic = name('bench-raw');
  const created: string[] = [];
  const load0 = loadavg();
  const startedAt = new Date().toISOString();
  log(`options ${JSON.stringify(o)}; load average ${load0.map((l) => l.toFixed(1)).join(' ')}`);

  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-bench-'));
  const children: ChildHandle[] = [];
  const admin = kafka.admin();
  await admin.connect();
  try {
    // Topics: the stream topic of the pipeline, and one for the raw produce run with the same settings.
    await applyTopics(admin, declaredTopics(config));
    await applyTopics(
      admin,
      declaredTopics({ ...config, topics: { ...config.topics, shared: rawTopic } }).slice(0, 1),
    );

    // 1. Seed.
    const nowS = Math.floor(Date.now() / 1000);
    const expired = Math.round(o.items * o.expiredFraction);
    const soon = Math.round(o.items * o.soonFraction);
    await createPkTable(ddb, mainTable);
    created.push(mainTable);
    // The seeded TTLs of the expired items, for the lag figures (the soon ones are in soonExpiry below).
    const expiredTtl = new Float64Array(expired);
    log(`seeding ${o.items} items (${expired} expired, ${soon} to expire during the run) into ${mainTable}`);
    // Order: expired first, then the soon ones (seeded far ahead; set to expire just before the pipeline starts).
    const seedRate = await seed(
      ddb,
      mainTable,
      o.items,
      (i) =>
        makeItem(
          `k${i}`,
          i < expired
            ? (expiredTtl[i] = nowS - 1 - Math.floor(Math.random() * 3600))
            : nowS + 86_400 + Math.floor(Math.random() * 86_400),
          o.itemBytes,
        ),
      o.seedParallel,
    );
    log(`seeded at ${Math.round(seedRate)} items/s`);

    // 2. Raw scan.
    log('raw parallel scan');
    const dynamoPid = stackServicePid('dynamodb');
    const kafkaPid = stackServicePid('kafka');
    const rawScanCpuDone = measureCpu(() => ({ dynamodb: dynamoPid, bench: process.pid }));
    const scan = await rawScan(ddb, mainTable, o);
    const rawScanCpu = rawScanCpuDone();
    log(`raw scan: ${Math.round(scan.rate)} items/s over ${scan.items} items`);

    // 3. Raw conditional deletes on a copy of expired items.
    await createPkTable(ddb, deleteTable_);
    created.push(deleteTable_);
    const delItems: Item[] = [];
    for (let i = 0; i < o.deleteItems; i++)
      delItems.push(makeItem(`d${i}`, nowS - 1 - (i % 3600), o.itemBytes));
    log(`seeding ${o.deleteItems} expired items into ${deleteTable_}`);
    await seed(ddb, deleteTable_, o.deleteItems, (i) => delItems[i] as Item, o.seedParallel);
    log('raw consistent reads of the same items (BatchGetItem)');
    const rawReadCpuDone = measureCpu(() => ({ dynamodb: dynamoPid, bench: process.pid }));
    const readRate = await rawReads(ddb, deleteTable_, delItems);
    const rawReadCpu = rawReadCpuDone();
    log(`raw reads: ${Math.round(readRate)} items/s`);
    log(`raw conditional deletes at concurrency ${o.concurrency}`);
    const rawCpuDone = measureCpu(() => ({ dynamodb: dynamoPid, bench: process.pid }));
    const deleteRate = await rawDeletes(ddb, deleteTable_, delItems, o);
    const rawDeleteCpu = rawCpuDone();
    log(`raw deletes: ${Math.round(deleteRate)} items/s`);
    // The same again after the pipeline (step 6), on the same table re-seeded: the server then carries everything
    // the run left behind (a larger store, compaction of the deleted rows), like the pipeline did at its end.
    const rawDeletesAfter = async (): Promise<number> => {
      await seed(ddb, deleteTable_, o.deleteItems, (i) => delItems[i] as Item, o.seedParallel);
      return rawDeletes(ddb, deleteTable_, delItems, o);
    };

    // 4. Raw produce.
    log(`raw produce of ${o.produceRecords} records in batches of ${o.batchSize}`);
    const rawProduceCpuDone = measureCpu(() => ({ kafka: kafkaPid, bench: process.pid }));
    const produce = await rawProduce(kafka, config, rawTopic, o);
    const rawProduceCpu = rawProduceCpuDone();
    log(
      `raw produce: ${Math.round(produce.rate)} records/s (${Math.round(produce.bytesPerRecord)} bytes each)`,
    );

    // 5. The pipeline.
    const store = new TtlSettingsStore(ddb, {
      controlTable: config.tables.control,
      propagationMs: 0,
      internalTables: [config.tables.marks],
    });
    await store.update(mainTable, { enabled: true, settings: SETTINGS }, 'bench');
    const configFile = join(dir, 'config.json');
    writeFileSync(configFile, JSON.stringify(config));

    // Read the stream topic: every REMOVE's lag from its item's expiry to its Kafka timestamp.
    const lagByPk = new Map<string, number>();
    const publishedAtByPk = new Map<string, number>();
    const seen = new Map<string, number>();
    const wantDeleted = expired + soon;
    // Expiry (ms) of the items set to expire during the run, by pk; and of those set to expire after it (no backlog).
    const soonExpiry = new Map<string, number>();
    const steadyExpiry = new Map<string, number>();
    // SET the TTL of [pk, epoch seconds] pairs, 16 updates in flight.
    const setTtls = async (ttls: ReadonlyArray<readonly [string, number]>): Promise<void> => {
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < ttls.length; i = next++) {
            const [pk, at] = ttls[i] as readonly [string, number];
            await withRetry(
              () =>
                ddb.send(
                  new UpdateItemCommand({
                    TableName: mainTable,
                    Key: { pk: { S: pk } },
                    UpdateExpression: 'SET #t = :t',
                    ExpressionAttributeNames: { '#t': TTL },
                    ExpressionAttributeValues: { ':t': { N: String(at) } },
                  }),
                ),
              retry,
            );
          }
        }),
      );
    };
    // The stream topic is read once the pipeline is done, not while it runs: the bench shares the two vCPUs with
    // the pipeline, and a consumer reading along cost ≈ 0.03 ms of the bench's CPU and ≈ 0.025 ms of the broker's per
    // deletion (≈ 3.5 % of the pipeline's CPU), the measuring, not the system measured. The figures need only
    // each record's Kafka timestamp (set when the producer sent it), which reading later gives the same. Only the
    // key and headers are read; the item's TTL is the one the bench wrote.
    const readStream = async (): Promise<void> => {
      const consumer = kafka.consumer({ groupId: name('bench-lag') });
      await consumer.connect();
      await consumer.subscribe({ topic: config.topics.shared, fromBeginning: true });
      const keyPrefix = `${mainTable}/`;
      await consumer.run({
        partitionsConsumedConcurrently: 8,
        eachMessage: async ({ message }) => {
          const headers = (message.headers ?? {}) as MessageHeaders;
          if (String(headers[HEADERS.kind]) !== 'remove') return;
          const eventId = String(headers[HEADERS.eventId]);
          if (seen.has(eventId)) return;
          const key = message.key?.toString() ?? '';
          if (!key.startsWith(keyPrefix)) return;
          const pk = (JSON.parse(key.slice(keyPrefix.length)) as { pk?: { S?: string } }).pk?.S ?? '';
          const i = Number(pk.slice(1));
          const ttlMs =
            i < expired ? (expiredTtl[i] ?? NaN) * 1000 : (soonExpiry.get(pk) ?? steadyExpiry.get(pk) ?? NaN);
          const lag = Number(message.timestamp) - ttlMs;
          seen.set(eventId, lag);
          if (!lagByPk.has(pk)) {
            lagByPk.set(pk, lag);
            publishedAtByPk.set(pk, Number(message.timestamp));
          }
        },
      });
      const until = Date.now() + 120_000;
      const want = wantDeleted + steadyExpiry.size;
      while (seen.size < want) {
        if (Date.now() > until) throw new Error(`only ${seen.size} of ${want} records on the stream topic`);
        await sleep(100);
      }
      await consumer.disconnect();
    };

    log('starting the scanner and producer processes');
    const pidOf = (role: string): number | null => children.find((c) => c.role === role)?.proc.pid ?? null;
    const cpuSeries = new CpuSeries(() => ({
      dynamodb: dynamoPid,
      kafka: kafkaPid,
      scanner: pidOf('scanner'),
      producer: pidOf('producer'),
      bench: process.pid,
    }));
    const scanner = spawnChild('scanner', configFile, o);
    children.push(scanner);
    await scanner.ready;
    if (o.scannerHeadStartS > 0) {
      // The first pass without the producer's load, when asked: it shows the scanner's own cost (marks included).
      const until = Date.now() + o.scannerHeadStartS * 1000;
      while (Date.now() < until && (scanner.samples[scanner.samples.length - 1]?.scanned ?? 0) < o.items)
        await sleep(100);
    }
    const producer = spawnChild('producer', configFile, o);
    children.push(producer);
    await producer.ready;
    const pipelineCpuDone = measureCpu(() => ({
      dynamodb: dynamoPid,
      kafka: kafkaPid,
      producer: producer.proc.pid ?? null,
      scanner: scanner.proc.pid ?? null,
      bench: process.pid,
    }));
    // The soon items expire over the next soonSpreadS seconds, starting now.
    const soonFrom = Date.now();
    await setTtls(
      Array.from({ length: soon }, (_, i) => {
        const at = Math.ceil((soonFrom + 2000 + (i / Math.max(1, soon)) * o.soonSpreadS * 1000) / 1000);
        soonExpiry.set(`k${expired + i}`, at * 1000);
        return [`k${expired + i}`, at] as const;
      }),
    );
    const pipelineStart = Date.now();
    log(`pipeline running; waiting for ${wantDeleted} deletions and their records`);
    const deadline = pipelineStart + o.timeoutS * 1000;
    let lastLog = Date.now();
    for (;;) {
      const pLast = producer.samples[producer.samples.length - 1];
      const sLast = scanner.samples[scanner.samples.length - 1];
      // Records are published before their deletes (docs/decisions/0001), so all deleted means all published.
      if ((pLast?.deleted ?? 0) >= wantDeleted && (pLast?.published ?? 0) >= wantDeleted) break;
      if (Date.now() > deadline)
        throw new Error(`pipeline not done after ${o.timeoutS} s: ${pLast?.deleted ?? 0} deleted`);
      for (const c of children)
        if (c.proc.exitCode !== null)
          throw new Error(`a pipeline process exited: ${c.stderr().slice(-3000)}`);
      if (Date.now() - lastLog > 10_000) {
        lastLog = Date.now();
        log(
          `  scanned ${sLast?.scanned ?? 0}, deleted ${pLast?.deleted ?? 0}, published ${pLast?.published ?? 0}`,
        );
      }
      await sleep(250);
    }
    const doneAt = Date.now();
    const pipelineCpu = pipelineCpuDone();
    cpuSeries.stop();
    // The scanner's rate once nothing is left to mark (later passes over the remaining items, 1 s pauses included).
    log(`done; measuring the scanner's later passes for ${o.tailS} s`);
    const tail0 = scanner.samples[scanner.samples.length - 1];
    await sleep(o.tailS * 1000);
    const tail1 = scanner.samples[scanner.samples.length - 1];
    const laterPassRate =
      tail0 && tail1 && tail1.t > tail0.t
        ? (tail1.scanned - tail0.scanned) / ((tail1.t - tail0.t) / 1000)
        : null;
    // Lag with no backlog: how long an item that expires on a table the pipeline keeps up with waits for its record.
    if (o.steady > 0) {
      log(`setting ${o.steady} items to expire over the next 10 s; waiting for their deletions`);
      const steadyFrom = Date.now();
      const first = expired + soon;
      await setTtls(
        Array.from({ length: Math.min(o.steady, o.items - first) }, (_, i) => {
          const at = Math.ceil((steadyFrom + 2000 + (i / o.steady) * 10_000) / 1000);
          steadyExpiry.set(`k${first + i}`, at * 1000);
          return [`k${first + i}`, at] as const;
        }),
      );
      const until = Date.now() + 120_000;
      while (
        (producer.samples[producer.samples.length - 1]?.deleted ?? 0) <
        wantDeleted + steadyExpiry.size
      ) {
        if (Date.now() > until) throw new Error('the steady items were not deleted within 120 s');
        await sleep(250);
      }
    }
    await Promise.all(children.map(async (c) => (c.proc.kill('SIGTERM'), await c.exited)));
    log('reading the stream topic');
    await readStream();
    // The same raw scan over what is left: tells a slower server (after 100k deletes) from a slower scanner.
    const scanAfter = await rawScan(ddb, mainTable, o);
    log(`raw scan after the deletions: ${Math.round(scanAfter.rate)} items/s over ${scanAfter.items} items`);
    const deleteRateAfter = await rawDeletesAfter();
    delItems.length = 0;
    log(`raw deletes after the pipeline: ${Math.round(deleteRateAfter)} items/s`);

    // Figures.
    const scanPass = crossing(scanner.samples, (p) => p.scanned, o.items);
    const scan50k = crossing(scanner.samples, (p) => p.scanned, Math.min(50_000, o.items));
    const del10 = crossing(producer.samples, (p) => p.deleted, Math.round(expired * 0.1));
    const del90 = crossing(producer.samples, (p) => p.deleted, Math.round(expired * 0.9));
    const scanStart = scanPass.start ?? pipelineStart;
    const pipelineScanRate = scanPass.at ? o.items / ((scanPass.at - scanStart) / 1000) : null;
    // The same pass from its first page on: the time before it (process start-up, taking the segment leases) is
    // not scanning. From the first sample with items scanned (its items excluded) to the crossing.
    const firstPage = scanner.samples.find((p) => p.scanned > 0);
    const inPassScanRate =
      scanPass.at && firstPage && scanPass.at > firstPage.t
        ? (o.items - firstPage.scanned) / ((scanPass.at - firstPage.t) / 1000)
        : null;
    const scanStartupMs = firstPage ? firstPage.t - scanStart : null;
    // CPU of every process over the first pass from its first page (the producer's deletes included, when it runs).
    const firstPassCpu = firstPage && scanPass.at ? cpuSeries.between(firstPage.t, scanPass.at) : null;
    // End to end over the bulk: from the producer's first deletion to the record of the last item that was already
    // expired at the start (the items expiring during the run are paced by their TTLs, not by the pipeline).
    const delStart = crossing(producer.samples, (p) => p.deleted, 1).start ?? pipelineStart;
    let bulkDone = 0;
    for (let i = 0; i < expired; i++) bulkDone = Math.max(bulkDone, publishedAtByPk.get(`k${i}`) ?? 0);
    const bulkCount = [...publishedAtByPk.values()].filter((t) => t <= bulkDone).length;
    const deletionRate = bulkDone > delStart ? bulkCount / ((bulkDone - delStart) / 1000) : null;
    const steadyRate =
      del10.at && del90.at && del90.at > del10.at
        ? (Math.round(expired * 0.9) - Math.round(expired * 0.1)) / ((del90.at - del10.at) / 1000)
        : null;
    // Lag (Kafka message timestamp − expiry) of the items that expired while the pipeline ran, and of all.
    const lagSteady = [...steadyExpiry.keys()]
      .map((pk) => lagByPk.get(pk))
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    const lagSoon = [...soonExpiry.keys()]
      .map((pk) => lagByPk.get(pk))
      .filter((x): x is number => x !== undefined)
      .sort((a, b) => a - b);
    const lagAll: number[] = [...seen.values()].sort((a, b) => a - b);
    const at = (h: ChildHandle, t: number | undefined, pick: (p: Progress) => number): number | null => {
      if (t === undefined) return null;
      const s = h.samples.find((x) => x.t >= t);
      return s ? pick(s) : null;
    };
    const rssAt = (h: ChildHandle, t: number | undefined) => at(h, t, (p) => p.rss);
    const heapAt = (h: ChildHandle, t: number | undefined) => at(h, t, (p) => p.heapUsed);
    const last = (h: ChildHandle) => h.samples[h.samples.length - 1];
    const peak = (h: ChildHandle): number => Math.max(0, ...h.samples.map((s) => s.rss));
    // What each process asked of the server, per TTL deletion: where the server's time goes besides the deletes.
    const perDeletion = (h: ChildHandle): Record<string, number | null> => {
      const deleted = last(producer)?.deleted ?? 0;
      const req = last(h)?.requests ?? {};
      return Object.fromEntries(
        Object.entries(req)
          .sort(([a], [b]) => a.localeCompare(b))
          .map(([op, n]) => [op, deleted > 0 ? round(n / deleted, 3) : null]),
      );
    };
    // CPU milliseconds per unit of work (a deletion, a record, 1,000 items scanned), per process and in all: the
    // machine has two vCPUs, so a ratio to raw is bounded by how much more CPU the same work costs us.
    const cpuMsPer = (m: CpuSpan, n: number) => {
      const ms = (s: number | null | undefined): number | null =>
        s === null || s === undefined ? null : round((s * 1000) / n, 3);
      const known = Object.values(m.seconds).filter((x): x is number => x !== null);
      return {
        ...Object.fromEntries(Object.entries(m.seconds).map(([k, v]) => [k, ms(v)])),
        measuredTotal: ms(known.reduce((a, b) => a + b, 0)),
        machine: ms(m.machineBusySeconds),
      };
    };
    const perDeletionOf = (n: number | undefined): number | null =>
      n !== undefined && wantDeleted > 0 ? round(n / wantDeleted, 2) : null;
    const result = {
      bench: 'pipeline',
      startedAt,
      options: o,
      loadAverage: { start: load0.map((l) => round(l, 2)), end: loadavg().map((l) => round(l, 2)) },
      seed: { itemsPerSec: round(seedRate) },
      raw: {
        scanItemsPerSec: round(scan.rate),
        scanAfterDeletionsItemsPerSec: round(scanAfter.rate),
        conditionalDeletesPerSec: round(deleteRate),
        conditionalDeletesAfterPipelinePerSec: round(deleteRateAfter),
        produceRecordsPerSec: round(produce.rate),
        recordBytes: round(produce.bytesPerRecord),
      },
      pipeline: {
        scanItemsPerSec: round(pipelineScanRate),
        scanInPassItemsPerSec: round(inPassScanRate),
        scanStartupSeconds: scanStartupMs === null ? null : round(scanStartupMs / 1000, 2),
        scanLaterPassesItemsPerSec: round(laterPassRate),
        deletionsPerSec: round(deletionRate),
        bulkSeconds: round((bulkDone - delStart) / 1000, 1),
        deletionsPerSecSteady10to90: round(steadyRate),
        deleted: wantDeleted,
        records: seen.size,
        secondsToDone: round((doneAt - pipelineStart) / 1000, 1),
        lagMs: {
          expiredDuringRun: {
            count: lagSoon.length,
            p50: round(percentile(lagSoon, 50)),
            p99: round(percentile(lagSoon, 99)),
          },
          // Items set to expire after the bulk was done: the lag of a table the pipeline keeps up with.
          noBacklog: {
            count: lagSteady.length,
            p50: round(percentile(lagSteady, 50)),
            p99: round(percentile(lagSteady, 99)),
          },
          all: {
            count: lagAll.length,
            p50: round(percentile(lagAll, 50)),
            p99: round(percentile(lagAll, 99)),
          },
        },
        dynamodbRequestsPerDeletion: { scanner: perDeletion(scanner), producer: perDeletion(producer) },
        // The scanner's own work over the whole run (tail included): items read and marks written, per deletion.
        // Until the last deletion's record was seen (the tail's passes over what is left are not counted).
        scannerItemsScanned: tail0?.scanned ?? null,
        scannerMarksWritten: tail0?.marked ?? null,
        itemsScannedPerDeletion: perDeletionOf(tail0?.scanned),
        marksWrittenPerDeletion: perDeletionOf(tail0?.marked),
        rssMiB: {
          scannerPeak: mib(peak(scanner)),
          producerPeak: mib(peak(producer)),
          scannerAt50kScanned: mib(rssAt(scanner, scan50k.at)),
          scannerAtAllScanned: mib(rssAt(scanner, scanPass.at)),
          producerAt50kScanned: mib(rssAt(producer, scan50k.at)),
          producerAtAllScanned: mib(rssAt(producer, scanPass.at)),
          scannerAtEnd: mib(last(scanner)?.rss),
          producerAtEnd: mib(last(producer)?.rss),
        },
        cpuMsPer1000ItemsScanned: {
          rawScan: cpuMsPer(rawScanCpu, scan.items / 1000),
          firstPassFromFirstPage:
            firstPassCpu && firstPage ? cpuMsPer(firstPassCpu, (o.items - firstPage.scanned) / 1000) : null,
        },
        cpuMsPerDeletion: {
          rawDeletes: cpuMsPer(rawDeleteCpu, o.deleteItems),
          rawReads: cpuMsPer(rawReadCpu, o.deleteItems),
          rawProduce: cpuMsPer(rawProduceCpu, o.produceRecords),
          pipeline: cpuMsPer(pipelineCpu, wantDeleted),
        },
        // V8 heap in use at the same moments: RSS alone hides whether growth is garbage not yet collected.
        heapUsedMiB: {
          scannerAt50kScanned: mib(heapAt(scanner, scan50k.at)),
          scannerAtAllScanned: mib(heapAt(scanner, scanPass.at)),
          producerAt50kScanned: mib(heapAt(producer, scan50k.at)),
          producerAtAllScanned: mib(heapAt(producer, scanPass.at)),
          scannerAtEnd: mib(last(scanner)?.heapUsed),
          producerAtEnd: mib(last(producer)?.heapUsed),
        },
      },
      ratios: {
        // On a machine whose CPUs are full, a rate ratio follows the ratio of CPU per item. The floor: any design
        // that reads an item's image, publishes it and deletes it pays at least the three raw operations.
        cpuRawDeletesVsPipeline: cpuRatio(rawDeleteCpu, o.deleteItems, pipelineCpu, wantDeleted),
        cpuRawDeletesVsReadPublishDelete: floorRatio([
          [rawDeleteCpu, o.deleteItems],
          [rawReadCpu, o.deleteItems],
          [rawProduceCpu, o.produceRecords],
        ]),
        deletionsVsRawDeletes: deletionRate ? round(deletionRate / deleteRate, 3) : null,
        deletionsSteadyVsRawDeletes: steadyRate ? round(steadyRate / deleteRate, 3) : null,
        deletionsVsRawDeletesMean: deletionRate
          ? round(deletionRate / ((deleteRate + deleteRateAfter) / 2), 3)
          : null,
        scanVsRawScan: pipelineScanRate ? round(pipelineScanRate / scan.rate, 3) : null,
        scanInPassVsRawScan: inPassScanRate ? round(inPassScanRate / scan.rate, 3) : null,
        scanLaterPassesVsRawScan: laterPassRate ? round(laterPassRate / scan.rate, 3) : null,
        scanLaterPassesVsRawScanAfter: laterPassRate ? round(laterPassRate / scanAfter.rate, 3) : null,
        targets: { deletionsVsRawDeletes: 0.7, scanVsRawScan: 0.8 },
      },
    };
    printTable(result);
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    if (!o.keep) {
      for (const t of [...created, config.tables.control, config.tables.marks]) await deleteTable(ddb, t);
      await admin
        .deleteTopics({ topics: [config.topics.shared, config.topics.deadLetter, rawTopic], timeout: 10_000 })
        .catch(() => undefined);
    }
    await admin.disconnect().catch(() => undefined);
    ddb.destroy();
  }
}

const cpuTotal = (c: CpuSpan): number | null => {
  const known = Object.values(c.seconds);
  return known.some((x) => x === null) ? null : known.reduce<number>((a, b) => a + (b ?? 0), 0);
};

/** Measured CPU per item of `a` ÷ that of `b` (the processes named in each). */
function cpuRatio(a: CpuSpan, aItems: number, b: CpuSpan, bItems: number): number | null {
  const ca = cpuTotal(a);
  const cb = cpuTotal(b);
  return ca === null || cb === null || cb === 0 ? null : round(ca / aItems / (cb / bItems), 3);
}

/** CPU per item of the first span ÷ the sum of all spans' CPU per item. */
function floorRatio(spans: Array<[CpuSpan, number]>): number | null {
  const per = spans.map(([c, n]) => {
    const t = cpuTotal(c);
    return t === null ? null : t / n;
  });
  if (per.some((x) => x === null)) return null;
  const sum = (per as number[]).reduce((a, b) => a + b, 0);
  return sum === 0 ? null : round((per[0] as number) / sum, 3);
}

/** `dynamodb 0.41 + bench 0.30 = 0.71 (machine 0.80)` */
function cpuLine(c: Record<string, number | null>): string {
  const { measuredTotal, machine, ...parts } = c;
  const named = Object.entries(parts).map(([k, v]) => `${k} ${v ?? '?'}`);
  return `${named.join(' + ')} = ${measuredTotal ?? '?'} (machine ${machine ?? '?'})`;
}

function printTable(r: {
  raw: Record<string, number | null>;
  pipeline: {
    scanItemsPerSec: number | null;
    scanInPassItemsPerSec: number | null;
    scanStartupSeconds: number | null;
    scanLaterPassesItemsPerSec: number | null;
    deletionsPerSec: number | null;
    deletionsPerSecSteady10to90: number | null;
    lagMs: {
      expiredDuringRun: { p50: number | null; p99: number | null };
      noBacklog: { count: number; p50: number | null; p99: number | null };
      all: { p50: number | null; p99: number | null };
    };
    rssMiB: Record<string, number | null>;
    cpuMsPer1000ItemsScanned: {
      rawScan: Record<string, number | null>;
      firstPassFromFirstPage: Record<string, number | null> | null;
    };
    cpuMsPerDeletion: Record<
      'rawDeletes' | 'rawReads' | 'rawProduce' | 'pipeline',
      Record<string, number | null>
    >;
    itemsScannedPerDeletion: number | null;
    marksWrittenPerDeletion: number | null;
  };
  ratios: Record<string, unknown>;
}): void {
  const rows: Array<[string, string]> = [
    ['raw parallel scan (items/s)', String(r.raw.scanItemsPerSec)],
    ['raw parallel scan after the deletions (items/s)', String(r.raw.scanAfterDeletionsItemsPerSec)],
    ['raw conditional deletes (items/s)', String(r.raw.conditionalDeletesPerSec)],
    [
      'raw conditional deletes after the pipeline (items/s)',
      String(r.raw.conditionalDeletesAfterPipelinePerSec),
    ],
    ['raw kafkajs produce (records/s)', String(r.raw.produceRecordsPerSec)],
    ['pipeline scan, first pass (items/s)', String(r.pipeline.scanItemsPerSec)],
    [
      'pipeline scan, first pass from its first page (items/s; start-up s)',
      `${r.pipeline.scanInPassItemsPerSec} (${r.pipeline.scanStartupSeconds} s before it)`,
    ],
    ['pipeline scan, later passes, nothing to mark (items/s)', String(r.pipeline.scanLaterPassesItemsPerSec)],
    ['pipeline TTL deletions, end to end (items/s)', String(r.pipeline.deletionsPerSec)],
    ['pipeline deletions, 10%..90% (items/s)', String(r.pipeline.deletionsPerSecSteady10to90)],
    [
      'scanner items scanned / marks written until done, per deletion',
      `${r.pipeline.itemsScannedPerDeletion} / ${r.pipeline.marksWrittenPerDeletion}`,
    ],
    [
      'lag expiry→Kafka, expired during run p50/p99 (ms)',
      `${r.pipeline.lagMs.expiredDuringRun.p50} / ${r.pipeline.lagMs.expiredDuringRun.p99}`,
    ],
    [
      'lag expiry→Kafka, no backlog (items expiring after the bulk) p50/p99 (ms)',
      `${r.pipeline.lagMs.noBacklog.p50} / ${r.pipeline.lagMs.noBacklog.p99} (${r.pipeline.lagMs.noBacklog.count} items)`,
    ],
    [
      'lag expiry→Kafka, all (incl. expired up to 1 h before) p50/p99 (ms)',
      `${r.pipeline.lagMs.all.p50} / ${r.pipeline.lagMs.all.p99}`,
    ],
    [
      'scanner RSS peak / at 50k / at all scanned (MiB)',
      `${r.pipeline.rssMiB.scannerPeak} / ${r.pipeline.rssMiB.scannerAt50kScanned} / ${r.pipeline.rssMiB.scannerAtAllScanned}`,
    ],
    [
      'producer RSS peak / at 50k / at all scanned (MiB)',
      `${r.pipeline.rssMiB.producerPeak} / ${r.pipeline.rssMiB.producerAt50kScanned} / ${r.pipeline.rssMiB.producerAtAllScanned}`,
    ],
    ['CPU ms per 1000 items, raw scan', cpuLine(r.pipeline.cpuMsPer1000ItemsScanned.rawScan)],
    [
      'CPU ms per 1000 items, first pass from its first page (all work meanwhile)',
      r.pipeline.cpuMsPer1000ItemsScanned.firstPassFromFirstPage
        ? cpuLine(r.pipeline.cpuMsPer1000ItemsScanned.firstPassFromFirstPage)
        : '-',
    ],
    ['CPU ms per deletion, raw deletes', cpuLine(r.pipeline.cpuMsPerDeletion.rawDeletes)],
    ['CPU ms per item, raw consistent reads', cpuLine(r.pipeline.cpuMsPerDeletion.rawReads)],
    ['CPU ms per record, raw produce', cpuLine(r.pipeline.cpuMsPerDeletion.rawProduce)],
    ['CPU ms per deletion, pipeline', cpuLine(r.pipeline.cpuMsPerDeletion.pipeline)],
    ['CPU per deletion, raw deletes ÷ pipeline', String(r.ratios.cpuRawDeletesVsPipeline)],
    [
      'CPU per deletion, raw deletes ÷ (raw read + produce + delete)',
      String(r.ratios.cpuRawDeletesVsReadPublishDelete),
    ],
    ['deletions ÷ raw deletes (target ≥ 0.70)', String(r.ratios.deletionsVsRawDeletes)],
    ['deletions 10..90% ÷ raw deletes', String(r.ratios.deletionsSteadyVsRawDeletes)],
    ['deletions ÷ mean of raw deletes before and after', String(r.ratios.deletionsVsRawDeletesMean)],
    ['scan ÷ raw scan (target ≥ 0.80)', String(r.ratios.scanVsRawScan)],
    ['scan from the first page ÷ raw scan', String(r.ratios.scanInPassVsRawScan)],
    ['later passes ÷ raw scan', String(r.ratios.scanLaterPassesVsRawScan)],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  process.stdout.write(`\n${rows.map(([k, v]) => `${k.padEnd(w)}  ${v}`).join('\n')}\n\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `bench/pipeline.ts failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
  );
  exitAfterOutput(1);
});
