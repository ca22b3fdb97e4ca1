import { PutItemCommand, type AttributeValue, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { Consumer, Kafka } from 'kafkajs';
import pino from 'pino';
import { createDynamoClient, createKafka } from '../../core/clients';
import type { ConfigInput, TtlstreamConfig } from '../../core/config';
import { createLogger, silentLogger, type Logger } from '../../core/logger';
import { applyTopics, declaredTopics, streamTopicFor } from '../../core/topics';
import { TtlSettingsStore } from '../../control/settings-store';
import type { TableTtlSettings } from '../../policy/settings';
import { imageHash } from '../../pipeline/image';
import { producerOptionsFrom, startProducer } from '../../producer';
import { scannerOptionsFrom, startScanner } from '../../scanner';
import { decodeMessage, messageKey, type Retraction, type StreamRecord } from '../../schemas';
import { createTestTable, deleteTestTable, scanTable, testConfig, uniqueName } from './stack';
import type { DiscoveryMode } from './discovery-mode';
import { createIndexedTtlTable, stampExpiryIndex } from './expiry-index';
import { deepMerge } from './deep-merge';
import { settingsStoreOf } from './settings-store';
import { nodeArgsFor } from './entrypoints';

export type Item = Record<string, AttributeValue>;

/** Fast timings and names of our own, so concurrent test runs never share a control table, marks or topic. */
export function pipelineConfig(overrides: ConfigInput = {}): TtlstreamConfig {
  const base: ConfigInput = {
    tables: { control: uniqueName('ctl'), marks: uniqueName('marks') },
    topics: { shared: uniqueName('rm'), partitions: 3 },
    api: { ttlPropagationMs: 0 },
    scanner: { totalSegments: 4, leaseMs: 1000, passIntervalMs: 100, pageSize: 100, readRateLimit: 100_000 },
    producer: { shards: 4, leaseMs: 1000, pollMs: 50, batchSize: 50, concurrency: 16 },
    guard: { maxExpiredFraction: 1, minItemsForFraction: 1_000_000, maxDeletesPerMinute: 1_000_000 },
  };
  return testConfig(deepMerge(base, overrides));
}

export interface Env {
  config: TtlstreamConfig;
  ddb: DynamoDBClient;
  kafka: Kafka;
  store: TtlSettingsStore;
  tables: string[];
  /** Further clients of the test (a stamped writer), destroyed with the environment. */
  clients: DynamoDBClient[];
  cleanup(): Promise<void>;
}

export async function createEnv(config: TtlstreamConfig): Promise<Env> {
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, silentLogger);
  const store = settingsStoreOf(ddb, config);
  const tables: string[] = [];
  const clients: DynamoDBClient[] = [];
  return {
    config,
    ddb,
    kafka,
    store,
    tables,
    clients,
    async cleanup() {
      for (const t of [...tables, config.tables.control, config.tables.marks]) await deleteTestTable(ddb, t);
      for (const c of clients) c.destroy();
      ddb.destroy();
    },
  };
}

export async function createTable(env: Env, prefix: string, settings: TableTtlSettings): Promise<string> {
  const table = await createTestTable(env.ddb, uniqueName(prefix), { hashKey: 'pk' });
  env.tables.push(table);
  await env.store.update(table, { enabled: true, settings }, 'test');
  const d = await env.store.describe(table);
  if (d.status !== 'ENABLED') throw new Error(`TTL on ${table} is ${d.status}, expected ENABLED`);
  return table;
}

/**
 * A TTL-enabled table for `mode`, and the client the application writes it with: in index mode the table is
 * created with the expiry index (`shards` shards) and backfilled, and the writer goes through the stamp.
 */
export async function createTableIn(
  env: Env,
  mode: DiscoveryMode,
  prefix: string,
  settings: TableTtlSettings,
  shards = 4,
): Promise<{ table: string; writer: DynamoDBClient }> {
  if (mode === 'scan') return { table: await createTable(env, prefix, settings), writer: env.ddb };
  const indexed: TableTtlSettings = { ...settings, expiryIndex: { shards } };
  const name = uniqueName(prefix);
  env.tables.push(name);
  const table = await createIndexedTtlTable(env.ddb, env.store, env.config.tables.control, name, indexed);
  const writer = createDynamoClient(env.config);
  env.clients.push(writer);
  stampExpiryIndex(writer, { [table]: indexed });
  return { table, writer };
}

/**
 * `expired` items (keys x0, x1, ...) whose TTL `attribute`, in epoch seconds, passed `expiredForS` (default 100)
 * before `nowS`, then `alive` items (keys a0, a1, ...) due `aliveForS` (default 3600) after it.
 */
export function expiredAndAlive(
  attribute: string,
  expired: number,
  alive: number,
  options: { nowS?: number; expiredForS?: number; aliveForS?: number } = {},
): Item[] {
  const nowS = options.nowS ?? Math.floor(Date.now() / 1000);
  const at = (s: number): Item[string] => ({ N: String(s) });
  return [
    ...Array.from({ length: expired }, (_, i) => ({
      pk: { S: `x${i}` },
      [attribute]: at(nowS - (options.expiredForS ?? 100)),
    })),
    ...Array.from({ length: alive }, (_, i) => ({
      pk: { S: `a${i}` },
      [attribute]: at(nowS + (options.aliveForS ?? 3600)),
    })),
  ];
}

export async function putItems(ddb: DynamoDBClient, table: string, items: Item[]): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    await Promise.all(
      items.slice(i, i + 25).map((Item) => ddb.send(new PutItemCommand({ TableName: table, Item }))),
    );
  }
}

/** Every item of `table` by its `pk` string (consistent Scans). */
export async function scanAll(ddb: DynamoDBClient, table: string): Promise<Map<string, Item>> {
  return new Map((await scanTable(ddb, table)).map((item) => [item.pk?.S ?? '', item]));
}

export async function ensureStreamTopic(env: Env): Promise<string> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    await applyTopics(admin, declaredTopics(env.config, env.tables));
  } finally {
    await admin.disconnect();
  }
  return streamTopicFor(env.config, env.tables[0] ?? 'any');
}

export async function topicMessageCount(env: Env, topic: string): Promise<number> {
  const admin = env.kafka.admin();
  await admin.connect();
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    return offsets.reduce((n, o) => n + Number(o.high) - Number(o.low), 0);
  } finally {
    await admin.disconnect();
  }
}

/** Everything published on the stream topic, decoded, with the effective-record view consumers are told to use. */
export class Collector {
  readonly removes: StreamRecord[] = [];
  readonly retractions: Retraction[] = [];
  private consumer?: Consumer;

  constructor(private readonly kafka: Kafka) {}

  async start(topic: string): Promise<void> {
    this.consumer = this.kafka.consumer({
      groupId: uniqueName('collect'),
      sessionTimeout: 10_000,
      // A stop waits for the fetch in flight: kafkajs's default 5 s long poll cost every suite 4.4 s per collector.
      maxWaitTimeInMs: 500,
    });
    await this.consumer.connect();
    await this.consumer.subscribe({ topic, fromBeginning: true });
    await this.consumer.run({
      eachMessage: async ({ message }) => {
        const headers: Record<string, Buffer | string | undefined> = {};
        for (const [k, v] of Object.entries(message.headers ?? {})) headers[k] = Array.isArray(v) ? v[0] : v;
        const d = decodeMessage(message.value, headers);
        if (d.kind === 'remove') this.removes.push(d.record);
        else this.retractions.push(d.retraction);
      },
    });
  }

  async stop(): Promise<void> {
    await this.consumer?.disconnect();
  }

  /** Effective REMOVE records by message key: de-duplicated by eventID, retracted eventIDs dropped. */
  effectiveByKey(): Map<string, StreamRecord[]> {
    const retracted = new Set(this.retractions.map((r) => r.retractsEventID));
    const byId = new Map<string, StreamRecord>();
    for (const r of this.removes) if (!retracted.has(r.eventID)) byId.set(r.eventID, r);
    const byKey = new Map<string, StreamRecord[]>();
    for (const r of byId.values()) {
      const table = r.eventSourceARN.split('/')[1] as string;
      const k = messageKey(table, r.dynamodb.Keys);
      byKey.set(k, [...(byKey.get(k) ?? []), r]);
    }
    return byKey;
  }
}

export function sameImage(a: Item, b: Item): boolean {
  return imageHash(a) === imageHash(b);
}

export interface InProcess {
  stop(): Promise<void>;
}

/**
 * The in-process pipeline's log: silent, unless TTLSTREAM_TEST_LOG names a file to append JSON lines to (for
 * diagnosing a test that failed; level from TTLSTREAM_LOG_LEVEL, default debug).
 */
function pipelineLogger(): Logger {
  const file = process.env.TTLSTREAM_TEST_LOG;
  if (!file) return silentLogger;
  return createLogger({
    level: process.env.TTLSTREAM_LOG_LEVEL ?? 'debug',
    name: 'pipeline',
    destination: pino.destination({ dest: file, append: true, sync: true }),
  });
}

export async function startInProcess(
  env: Env,
  roles: Array<'scanner' | 'producer'>,
  ownerId?: string,
): Promise<InProcess> {
  const deps = {
    ddb: env.ddb,
    settingsStore: env.store,
    logger: pipelineLogger(),
    ...(ownerId ? { ownerId } : {}),
  };
  const running: Array<{ stop(): Promise<void> }> = [];
  for (const role of roles)
    running.push(
      role === 'scanner'
        ? await startScanner({ ...deps, options: scannerOptionsFrom(env.config) })
        : await startProducer({ ...deps, kafka: env.kafka, options: producerOptionsFrom(env.config) }),
    );
  return {
    async stop() {
      for (const r of running.reverse()) await r.stop();
    },
  };
}

const ROOT = resolve(__dirname, '..', '..');

export interface Spawned {
  child: ChildProcess;
  ready: Promise<void>;
  exited: Promise<number | null>;
  stderr(): string;
  /** SIGTERM and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** A real pipeline process (test/support/pipeline-process.ts) with this config, as the fault-injection tests use. */
export function spawnPipeline(
  config: TtlstreamConfig,
  roles: Array<'scanner' | 'producer'>,
  env: Record<string, string> = {},
): Spawned {
  const dir = mkdtempSync(join(tmpdir(), 'ttlstream-pipeline-'));
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({ ...config, log: { level: process.env.PIPELINE_LOG_LEVEL ?? 'warn' } }),
  );
  // `node` itself, never the tsx CLI (entrypoints.ts): the CLI relays SIGTERM and SIGKILLs a child that does not acknowledge
  // the signal within 30 ms, which a busy process misses, turning graceful-stop tests into crash tests.
  const child = spawn(process.execPath, [...nodeArgsFor('pipeline'), ...roles], {
    cwd: ROOT,
    env: { ...process.env, TTLSTREAM_CONFIG: file, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr?.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-20_000)));
  const exited = new Promise<number | null>((res) => child.on('exit', (code) => res(code)));
  const ready = new Promise<void>((res, rej) => {
    let out = '';
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes('"ready":true')) res();
    });
    void exited.then((code) => rej(new Error(`pipeline process exited (${code}) before ready: ${err}`)));
  });
  // A process told to crash may die before it is ready; that is only an error for callers who await `ready`.
  ready.catch(() => undefined);
  return {
    child,
    ready,
    exited,
    stderr: () => err,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}
