/**
 * Expiry benchmark (not a test): `bash bench/run.sh expiry [--items N] [--ddb-latency MS] [--producers 1,2,4] [...]`.
 *
 * One run, one table of N items of ~1 KB created with the expiry index, every item written through the stamp.
 * The pipeline runs as separate processes (this file re-run with `--child scanner|producer`): one scanner and
 * `--producers` producers, so each one's CPU is its own. Each phase (a mode, index or scan, and a producer count)
 * starts the pipeline, then gives the same items TTLs: 1 % of the table expiring over `--spread` seconds (30), a
 * `--burst` (10,000) expiring at one instant after it, and a trickle (`--steady`) over 10 s once the burst is worked
 * off. Measured per phase (bench/README.md has the details):
 * - items read: every item the pipeline read from the bench table, counted from the responses by an SDK
 *   middleware in each process (Scan and Query ScannedCount, GetItem, BatchGetItem);
 * - lag: done − expiry over the 1 % and the trickle, where an item is done at the later of its record's Kafka
 *   timestamp and the end of its successful conditional DeleteItem;
 * - deletions/s: the burst's, between its 10th and 90th percentile done time (the pipeline's capacity);
 * - the raw limit: a loop of conditional DeleteItems on the bench table itself (the producer's condition,
 *   `ReturnValues: ALL_OLD`, as many in flight as the producers have), with a plain AWS SDK client, measured right
 *   before and right after the phase with nothing else running; the ratio is against their mean;
 * - CPU per deletion of each pipeline process (scanner, producers), of the DynamoDB server and of Toxiproxy, over
 *   the burst (the pipeline at capacity) and over the whole phase (idle polling included); beside it the raw
 *   client's own CPU per conditional delete and the server's.
 * `--ddb-latency MS` puts MS of round-trip latency (half each way, ± a quarter as jitter) on every DynamoDB request
 * of the pipeline and of the raw loop, through the stack's Toxiproxy: a real DynamoDB answers in 5–10 ms, the local
 * server in well under 1.
 * Prints a table and one JSON line. Everything it creates is deleted at the end.
 */
import {
  BatchWriteItemCommand,
  CreateTableCommand,
  DeleteTableCommand,
  DynamoDBClient,
  type AttributeValue,
  type WriteRequest,
} from '@aws-sdk/client-dynamodb';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
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
  type TableTtlSettings,
} from '../policy';
import { producerOptionsFrom, startProducer } from '../producer';
import { scannerOptionsFrom, startScanner } from '../scanner';
import { messageKey } from '../schemas';
import { Toxiproxy } from '../test/support/toxiproxy';
import {
  CpuSeries,
  measureCpu,
  processCpuSeconds,
  processWrittenBytes,
  stackServicePid,
  type CpuSpan,
} from './proc-cpu';
import { startProfile, startServerProfile } from './profile';
import { conditionalDeletes, createPkTable } from './tables';
import { exitAfterOutput } from '../core/exit';

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
    // Round-trip latency added to every DynamoDB request of the pipeline and of the raw loop (Toxiproxy).
    'ddb-latency': { type: 'string', default: '0' },
    // Producer processes, one phase per count (e.g. 1,2,4).
    producers: { type: 'string', default: '1' },
    // Skip the raw deletes on a fresh table without the index (measured last).
    'skip-plain': { type: 'boolean', default: false },
    // Internal: run one role of the pipeline (the parent passes its configuration in TTLSTREAM_CONFIG).
    child: { type: 'string' },
    table: { type: 'string' },
    'profile-name': { type: 'string' },
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
const LATENCY_MS = Number(values['ddb-latency']);
const PRODUCER_COUNTS = String(values.producers)
  .split(',')
  .map((p) => Number(p.trim()))
  .filter((p) => Number.isInteger(p) && p > 0);
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
const log = (line: string): void => void process.stderr.write(`${line}\n`);
const round2 = (x: number): number => Number(x.toFixed(2));
const load1 = (): number => round2(loadavg()[0] ?? 0);

// ---------------------------------------------------------------------------------------------------------------
// A pipeline process (`--child scanner|producer`).

/** What a pipeline process reports on stdout, one JSON line every 250 ms and one when it stops. */
interface ChildReport {
  role: 'scanner' | 'producer';
  /** Items read from the bench table, by operation (cumulative). */
  reads: Record<string, number>;
  /** DynamoDB requests sent, by operation (`@ttl`: to ttlstream's own tables), cumulative. */
  requests: Record<string, number>;
  /** Successful conditional DeleteItems of the bench table since the previous report: [pk, Date.now()]. */
  deleted: Array<[string, number]>;
  final?: boolean;
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
): {
  reads: Record<string, number>;
  requests: Record<string, number>;
  deleted: Array<[string, number]>;
  stop(): void;
} {
  const reads: Record<string, number> = {};
  const requests: Record<string, number> = {};
  const add = (op: string, k: number): void => void (reads[op] = (reads[op] ?? 0) + k);
  const deleted: Array<[string, number]> = [];
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
      const input = args.input as { TableName?: string; Key?: Item; RequestItems?: Record<string, unknown> };
      const o = out.output as {
        ScannedCount?: number;
        Item?: unknown;
        Responses?: Record<string, unknown[]>;
      };
      const op = (context.commandName ?? '?').replace(/Command$/, '');
      const tables =
        input.TableName !== undefined ? [input.TableName] : Object.keys(input.RequestItems ?? {});
      const where = tables.includes(table) ? '' : '@ttl';
      requests[op + where] = (requests[op + where] ?? 0) + 1;
      if (trace) {
        flush();
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
        case 'DeleteItemCommand': {
          const key = input.Key?.pk?.S;
          if (input.TableName === table && key !== undefined) deleted.push([key, Date.now()]);
          break;
        }
      }
      return out;
    },
    { step: 'initialize', name: 'benchCountReads' },
  );
  return { reads, requests, deleted, stop: () => clearInterval(timer) };
}

async function child(role: 'scanner' | 'producer', table: string): Promise<void> {
  const config = loadConfig();
  // BENCH_LOG_LEVEL=info|warn|debug: the pipeline's own log on stderr (silent otherwise).
  const level = process.env.BENCH_LOG_LEVEL;
  const logger = level ? createLogger({ level, name: `bench-${role}` }) : silentLogger;
  const ddb = createDynamoClient(config);
  const counted = countReads(ddb, table, TRACE);
  const settingsStore = new TtlSettingsStore(ddb, {
    controlTable: config.tables.control,
    propagationMs: 0,
    internalTables: [config.tables.marks],
  });
  const deps = { ddb, settingsStore, logger };
  const running =
    role === 'scanner'
      ? await startScanner({ ...deps, options: scannerOptionsFrom(config) })
      : await startProducer({
          ...deps,
          kafka: createKafka(config, logger),
          options: producerOptionsFrom(config),
        });
  const profiler = await startProfile();
  const report = (final: boolean): void => {
    const r: ChildReport = {
      role,
      reads: counted.reads,
      requests: counted.requests,
      deleted: counted.deleted.splice(0),
      final,
    };
    process.stdout.write(`${JSON.stringify(r)}\n`);
  };
  process.stdout.write(`${JSON.stringify({ ready: true })}\n`);
  const timer = setInterval(() => report(false), 250);
  const stop = (): void => {
    clearInterval(timer);
    void running
      .stop()
      .then(async () => {
        await profiler?.stop(String(values['profile-name'] ?? role));
        counted.stop();
        report(true);
        exitAfterOutput(0);
      })
      .catch((err: unknown) => {
        process.stderr.write(`${role} stop failed: ${String(err)}\n`);
        exitAfterOutput(1);
      });
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

interface ChildHandle {
  label: string;
  proc: ChildProcess;
  ready: Promise<void>;
  /** Resolves with the last report once the process has exited. */
  final: Promise<void>;
  reads: Record<string, number>;
  /** The process's cumulative request counts as reported, with the time of each report. */
  requests: Array<{ t: number; requests: Record<string, number> }>;
  deletedAt: Map<string, number>;
}

function spawnChild(
  role: 'scanner' | 'producer',
  label: string,
  configFile: string,
  table: string,
): ChildHandle {
  // BENCH_CHILD_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>": extra Node flags for the pipeline's processes.
  const nodeArgs = (process.env.BENCH_CHILD_NODE_ARGS ?? '').split(' ').filter(Boolean);
  const proc = spawn(
    process.execPath,
    [
      ...nodeArgs,
      '--import',
      'tsx',
      resolve(ROOT, 'bench', 'expiry.ts'),
      '--child',
      role,
      '--table',
      table,
      '--profile-name',
      label,
      ...(TRACE ? ['--trace'] : []),
    ],
    { cwd: ROOT, env: { ...process.env, TTLSTREAM_CONFIG: configFile }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const handle: ChildHandle = {
    label,
    proc,
    ready: Promise.resolve(),
    final: Promise.resolve(),
    reads: {},
    requests: [],
    deletedAt: new Map(),
  };
  let err = '';
  proc.stderr?.on('data', (d: Buffer) => {
    err = (err + d.toString()).slice(-20_000);
    if (TRACE || process.env.BENCH_LOG_LEVEL) process.stderr.write(`[${label}] ${d.toString()}`);
  });
  const exited = new Promise<number | null>((res) => proc.on('exit', (code) => res(code)));
  handle.ready = new Promise<void>((res, rej) => {
    let buf = '';
    proc.stdout?.on('data', (d: Buffer) => {
      buf += d.toString();
      let nl: number;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let msg: Partial<ChildReport> & { ready?: boolean };
        try {
          msg = JSON.parse(line) as Partial<ChildReport> & { ready?: boolean };
        } catch {
          continue; // not ours
        }
        if (msg.ready) res();
        if (msg.reads) handle.reads = msg.reads;
        if (msg.requests) handle.requests.push({ t: Date.now(), requests: msg.requests });
        for (const [key, t] of msg.deleted ?? [])
          if (!handle.deletedAt.has(key)) handle.deletedAt.set(key, t);
      }
    });
    void exited.then((code) => rej(new Error(`${label} exited (${code}) before it was ready: ${err}`)));
  });
  handle.ready.catch(() => undefined);
  handle.final = exited.then((code) => {
    if (code !== 0) throw new Error(`${label} exited with ${code}: ${err}`);
  });
  handle.final.catch(() => undefined);
  return handle;
}

// ---------------------------------------------------------------------------------------------------------------
// The parent: seeding, raw limits, phases.

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
 * The raw client: the AWS SDK's DynamoDB client with its defaults, as a hand-written loop would make it, with
 * enough sockets for the requests it keeps in flight (the SDK's default is 50).
 */
function rawClient(config: TtlstreamConfig, endpoint: string, inFlight: number): DynamoDBClient {
  return new DynamoDBClient({
    region: config.region,
    endpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    ...(inFlight > 50 ? { requestHandler: { httpAgent: { maxSockets: inFlight } } } : {}),
  });
}

interface RawRate {
  rate: number;
  /** CPU of this process (the raw client) per conditional delete. */
  clientCpuMs: number;
  /** CPU of the DynamoDB server (and of Toxiproxy, with latency) per conditional delete. */
  serverCpuMs: number;
  proxyCpuMs: number;
  /** Busy CPUs of other processes meanwhile (othersBusyCpus). */
  othersBusyCpus: number;
  load: number;
}

interface RawTarget {
  client: DynamoDBClient;
  /** Writes the items to delete (directly, not through the proxy: not timed). */
  writer: DynamoDBClient;
  inFlight: number;
  pids: { dynamodb: number | null; toxiproxy: number | null };
}

/**
 * Conditional DeleteItem of RAW_DELETES expired items, with the producer's condition and `ReturnValues: ALL_OLD`,
 * `target.inFlight` at a time. `into` absent: on a fresh table of the same items without an index (the raw limit of
 * a plain table). `into` given: on the bench table itself, items written through the stamp (so each delete also
 * removes an index entry, as every deletion of the pipeline does) and past the table's N items; `round` picks new
 * ones each time.
 */
async function rawDeleteRate(target: RawTarget, into?: { table: string; round: number }): Promise<RawRate> {
  const table = into?.table ?? name('bench-raw-del');
  if (!into) await createPkTable(target.writer, table);
  const past = Math.floor(Date.now() / 1000) - 60;
  const first = into ? N + 1_000_000 + into.round * RAW_DELETES : 0;
  const items = Array.from({ length: RAW_DELETES }, (_, i) => item(first + i, past));
  await batchWrite(target.writer, table, items);
  const now = Date.now();
  const cpuDone = measureCpu(() => ({ client: process.pid, kafka: KAFKA_PID, ...target.pids }));
  const load = load1();
  const started = performance.now();
  await conditionalDeletes(target.client, table, items, {
    settings: SCANNED,
    nowMs: now,
    inFlight: target.inFlight,
    retry,
  });
  const seconds = (performance.now() - started) / 1000;
  const rate = RAW_DELETES / seconds;
  const span = cpuDone();
  const cpu = span.seconds;
  const perDelete = (s: number | null | undefined): number => ((s ?? 0) * 1000) / RAW_DELETES;
  const result = {
    rate,
    clientCpuMs: perDelete(cpu.client),
    serverCpuMs: perDelete(cpu.dynamodb),
    proxyCpuMs: perDelete(cpu.toxiproxy),
    othersBusyCpus: othersBusyCpus(span, seconds),
    load,
  };
  if (!into) {
    // A DeleteTable retried after a slow first answer (a loaded server after seeding 1 M items) finds the table gone.
    await target.writer.send(new DeleteTableCommand({ TableName: table })).catch((err: unknown) => {
      if ((err as { name?: string }).name !== 'ResourceNotFoundException') throw err;
    });
  }
  return result;
}

/** The local stack's broker: measured beside the pipeline so that others' CPU leaves it out. */
const KAFKA_PID = stackServicePid('kafka');

/**
 * Busy CPUs of everything on the machine but the measured processes over a span (the machine is shared): a
 * rate measured while others' work took CPU is lower for it, so each rate is printed with this beside it.
 */
function othersBusyCpus(span: CpuSpan | null, seconds: number): number {
  if (!span || span.machineBusySeconds === null || seconds <= 0) return NaN;
  const ours = Object.values(span.seconds).reduce<number>((a, s) => a + (s ?? 0), 0);
  return round2(Math.max(0, span.machineBusySeconds - ours) / seconds);
}

const describeRaw = (r: RawRate): string =>
  `${r.rate.toFixed(0)}/s, CPU per delete: client ${r.clientCpuMs.toFixed(3)} ms, server ` +
  `${r.serverCpuMs.toFixed(3)} ms${LATENCY_MS > 0 ? `, Toxiproxy ${r.proxyCpuMs.toFixed(3)} ms` : ''} ` +
  `(others' busy CPUs ${r.othersBusyCpus}, load ${r.load})`;

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
  log(`DynamoDB server idle after ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/** The 10th and 90th percentile of the times, and the deletions per second between them (null with fewer than 10). */
function steadySpan(times: number[]): { from: number; to: number; count: number; rate: number } | null {
  if (times.length < 10) return null;
  const sorted = [...times].sort((a, b) => a - b);
  const lo = Math.floor(sorted.length * 0.1);
  const hi = Math.floor(sorted.length * 0.9);
  const from = sorted[lo] as number;
  const to = sorted[hi] as number;
  return { from, to, count: hi - lo, rate: Math.round((hi - lo) / Math.max(0.001, (to - from) / 1000)) };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

interface Result {
  mode: 'index' | 'scan';
  producers: number;
  items: number;
  ddbLatencyMs: number;
  itemsReadPerDeletion: number;
  /** Expiry → deleted and published, for the 1 % spread over the run and the trickle (the pipeline keeps up). */
  lagP50Ms: number;
  lagP99Ms: number;
  /** The burst's deletions between its 10th and 90th percentile: the pipeline's capacity. */
  deletionsPerSec: number;
  /** The raw conditional-delete loop on the bench table: mean of before and after. */
  rawConditionalDeletesPerSec: number;
  rawBeforePerSec: number;
  rawAfterPerSec: number;
  ratio: number;
  /** The whole burst, from its expiry to its last deletion (start-up latency included). */
  burstDeletionsPerSecEndToEnd: number;
  burstLagP99Ms: number;
  /** The raw rate on a fresh table of the same items without an index (0: skipped). */
  rawPlainTableDeletesPerSec: number;
  /** CPU ms per deletion over the burst's 10–90 % span: the pipeline at capacity. */
  scannerCpuMs: number;
  producerCpuMs: number;
  pipelineCpuMs: number;
  serverCpuMs: number;
  proxyCpuMs: number;
  /** The same over the whole phase (first expiry to last deletion, idle polling included). */
  phaseScannerCpuMs: number;
  phaseProducerCpuMs: number;
  phasePipelineCpuMs: number;
  /** The raw client's own CPU per conditional delete, and the server's (mean of before and after). */
  rawClientCpuMs: number;
  rawServerCpuMs: number;
  /** pipelineCpuMs ÷ rawClientCpuMs (target ≤ 2 at 8 ms). */
  cpuRatio: number;
  /** Machine busy CPUs (of 2) over the burst span, and the 1-minute load average at the phase's start and end. */
  machineBusyCpus: number;
  /**
   * Busy CPUs of other processes than the measured ones (pipeline, server, Toxiproxy, broker, bench) over the burst,
   * and over the raw loops before and after it: a ratio measured while others took CPU is off by their share.
   */
  othersBusyCpus: number;
  rawOthersBusyCpus: number;
  loadStart: number;
  loadEnd: number;
  deletions: number;
  itemsRead: number;
  /**
   * DynamoDB requests per deletion by process kind and operation (`@ttl`: ttlstream's own tables), over the burst's
   * 10–90 % span and over the whole phase.
   */
  requestsPerDeletion: Record<
    'scanner' | 'producer' | 'phaseScanner' | 'phaseProducer',
    Record<string, number>
  >;
}

interface Setup {
  config: TtlstreamConfig;
  table: string;
  writer: DynamoDBClient;
  store: TtlSettingsStore;
  /** The pipeline's configuration file (with the proxied endpoint when there is latency). */
  configFile: string;
  writeLead: number;
  raw: (producers: number) => RawTarget;
  dynamoPid: number | null;
  proxyPid: number | null;
  kafkaPid: number | null;
  /** Kafka timestamps of the phase's records, by message key. */
  published: Map<string, number>;
  /** Expiry (ms) of the phase's items, by message key. */
  expiries: Map<string, number>;
}

/** The same items each phase: 1 % of the table spread over the run, then the burst at one instant, then the trickle. */
function phaseItems(s: Setup): { set: Item[]; burst: Item[]; trickle: Item[]; burstS: number } {
  const startS = Date.now() / 1000 + s.writeLead;
  const taken = new Set<number>();
  const expiring = (i: number, ttlS: number, into: Item[]): void => {
    if (taken.has(i) || i >= N) return;
    taken.add(i);
    const rounded = Math.round(ttlS * 1000) / 1000;
    into.push(item(i, rounded));
    s.expiries.set(messageKey(s.table, { pk: pk(i) }), rounded * 1000);
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
  return { set, burst, trickle, burstS };
}

async function runPhase(
  s: Setup,
  mode: 'index' | 'scan',
  producers: number,
  rawBefore: RawRate,
  rawRound: () => number,
): Promise<{ result: Result; rawAfter: RawRate }> {
  await s.store.update(s.table, { enabled: true, settings: mode === 'index' ? INDEXED : SCANNED }, 'bench');
  s.expiries.clear();
  s.published.clear();
  const loadStart = load1();
  const label = `expiry-${mode}-${producers}p-${N}`;
  // The pipeline starts first (leases, connections): its start-up is not part of any item's lag.
  const children = [
    spawnChild('scanner', `${label}-scanner`, s.configFile, s.table),
    ...Array.from({ length: producers }, (_, i) =>
      spawnChild('producer', `${label}-producer${i}`, s.configFile, s.table),
    ),
  ];
  const scannerPid = children[0]?.proc.pid ?? null;
  const producerPids = children.slice(1).map((c) => c.proc.pid ?? null);
  try {
    await Promise.all(children.map((c) => c.ready));
    await sleep(3000);
    const { set, burst, trickle, burstS } = phaseItems(s);
    await batchWrite(s.writer, s.table, [...set, ...burst, ...trickle]);
    const margin = (set.length > 0 ? Number(set[0]?.ttl?.N) : burstS) - Date.now() / 1000;
    if (margin < 1)
      log(`${mode}: writing the expiring items ended only ${margin.toFixed(1)} s before the first expiry`);

    const series = new CpuSeries(() => ({
      scanner: scannerPid,
      ...Object.fromEntries(producerPids.map((p, i) => [`producer${i}`, p])),
      dynamodb: s.dynamoPid,
      toxiproxy: s.proxyPid,
      kafka: KAFKA_PID,
      bench: process.pid,
    }));
    const serverProfile = await startServerProfile(s.dynamoPid);
    const phaseStart = Date.now();
    const deadline = phaseStart + TIMEOUT_MS;
    const wantPks = [...set, ...burst, ...trickle].map((it) => it.pk?.S ?? '');
    const deletedAt = (key: string): number | undefined => {
      for (const c of children) {
        const t = c.deletedAt.get(key);
        if (t !== undefined) return t;
      }
      return undefined;
    };
    const allDone = (): boolean =>
      s.published.size >= s.expiries.size && wantPks.every((k) => deletedAt(k) !== undefined);
    while (!allDone() && Date.now() < deadline) await sleep(250);
    const phaseEnd = Date.now();
    series.stop();
    await serverProfile?.stop(`${label}-dynamodb`);
    for (const c of children) c.proc.kill('SIGTERM');
    await Promise.all(children.map((c) => c.final));

    // An item is done when its record is published and it is deleted (the delete follows the publish; a batch's
    // records go out together before its deletes, so the later of the two times is the deletion's end).
    const doneAt = (it: Item): number | undefined => {
      const published = s.published.get(messageKey(s.table, { pk: it.pk as AttributeValue }));
      const deleted = deletedAt(it.pk?.S ?? '');
      return published === undefined || deleted === undefined ? undefined : Math.max(published, deleted);
    };
    const lagsOf = (items: Item[]): number[] =>
      items
        .flatMap((it) => {
          const done = doneAt(it);
          const exp = s.expiries.get(messageKey(s.table, { pk: it.pk as AttributeValue }));
          return done === undefined || exp === undefined ? [] : [done - exp];
        })
        .sort((x, y) => x - y);
    const burstDone = burst.map(doneAt).filter((t): t is number => t !== undefined);
    // The burst's deletions per second from its expiry: a stall shows as a gap.
    const perSecond = new Map<number, number>();
    for (const t of burstDone) {
      const sec = Math.floor((t - burstS * 1000) / 1000);
      perSecond.set(sec, (perSecond.get(sec) ?? 0) + 1);
    }
    log(
      `${mode}: burst deletions per second from its expiry: ${[...perSecond]
        .sort(([a], [b]) => a - b)
        .map(([sec, n]) => `${sec}:${n}`)
        .join(' ')}`,
    );
    const deletions = s.published.size;
    const lags = lagsOf([...set, ...trickle]);
    const span = steadySpan(burstDone);
    const firstExpiry = Number(set[0]?.ttl?.N ?? burstS) * 1000;
    const burstCpu = span ? series.between(span.from, span.to) : null;
    const phaseCpu = series.between(Math.min(firstExpiry, phaseEnd), phaseEnd);
    const perDeletion = (cpu: typeof burstCpu, n: number, names: string[]): number =>
      cpu ? round2((names.reduce((a, k) => a + (cpu.seconds[k] ?? 0), 0) * 1000) / Math.max(1, n)) : NaN;
    const producerNames = producerPids.map((_, i) => `producer${i}`);
    const burstN = span?.count ?? 0;

    // The raw limit again, now that the pipeline has stopped: the ratio is against the mean of before and after.
    const rawAfter = await rawDeleteRate(s.raw(producers), { table: s.table, round: rawRound() });
    const raw = (rawBefore.rate + rawAfter.rate) / 2;
    log(
      `${mode}, ${producers} producer(s): raw before ${describeRaw(rawBefore)}; after ${describeRaw(rawAfter)}`,
    );
    /** Requests per deletion of the role's processes between two times (by the reports around them). */
    const requestsPerDeletion = (
      role: 'scanner' | 'producer',
      from: number,
      to: number,
      n: number,
    ): Record<string, number> => {
      const sum: Record<string, number> = {};
      children.forEach((c, i) => {
        if ((i === 0 ? 'scanner' : 'producer') !== role) return;
        const a = [...c.requests].reverse().find((r) => r.t <= from)?.requests ?? {};
        const b = c.requests.find((r) => r.t >= to)?.requests ?? c.requests.at(-1)?.requests ?? {};
        for (const [op, k] of Object.entries(b)) sum[op] = (sum[op] ?? 0) + k - (a[op] ?? 0);
      });
      return Object.fromEntries(
        Object.entries(sum)
          .filter(([, k]) => k > 0)
          .sort(([, x], [, y]) => y - x)
          .map(([op, k]) => [op, Number((k / Math.max(1, n)).toFixed(3))]),
      );
    };
    const itemsRead = children.reduce((a, c) => a + Object.values(c.reads).reduce((x, y) => x + y, 0), 0);
    log(`${mode}: items read by operation ${JSON.stringify(children.map((c) => c.reads))}`);
    const pipelineCpuMs = perDeletion(burstCpu, burstN, ['scanner', ...producerNames]);
    const rawClientCpuMs = (rawBefore.clientCpuMs + rawAfter.clientCpuMs) / 2;
    const result: Result = {
      mode,
      producers,
      items: N,
      ddbLatencyMs: LATENCY_MS,
      itemsReadPerDeletion: round2(itemsRead / Math.max(1, deletions)),
      lagP50Ms: Math.round(percentile(lags, 50)),
      lagP99Ms: Math.round(percentile(lags, 99)),
      deletionsPerSec: span?.rate ?? 0,
      rawConditionalDeletesPerSec: Math.round(raw),
      rawBeforePerSec: Math.round(rawBefore.rate),
      rawAfterPerSec: Math.round(rawAfter.rate),
      ratio: round2((span?.rate ?? 0) / raw),
      burstDeletionsPerSecEndToEnd: Math.round(
        burstDone.length / Math.max(0.001, (Math.max(...burstDone) - burstS * 1000) / 1000),
      ),
      burstLagP99Ms: Math.round(percentile(lagsOf(burst), 99)),
      rawPlainTableDeletesPerSec: 0,
      scannerCpuMs: perDeletion(burstCpu, burstN, ['scanner']),
      producerCpuMs: perDeletion(burstCpu, burstN, producerNames),
      pipelineCpuMs,
      serverCpuMs: perDeletion(burstCpu, burstN, ['dynamodb']),
      proxyCpuMs: perDeletion(burstCpu, burstN, ['toxiproxy']),
      phaseScannerCpuMs: perDeletion(phaseCpu, deletions, ['scanner']),
      phaseProducerCpuMs: perDeletion(phaseCpu, deletions, producerNames),
      phasePipelineCpuMs: perDeletion(phaseCpu, deletions, ['scanner', ...producerNames]),
      rawClientCpuMs: round2(rawClientCpuMs),
      rawServerCpuMs: round2((rawBefore.serverCpuMs + rawAfter.serverCpuMs) / 2),
      cpuRatio: round2(pipelineCpuMs / rawClientCpuMs),
      machineBusyCpus:
        burstCpu?.machineBusySeconds != null && span
          ? round2(burstCpu.machineBusySeconds / ((span.to - span.from) / 1000))
          : NaN,
      othersBusyCpus: span ? othersBusyCpus(burstCpu, (span.to - span.from) / 1000) : NaN,
      rawOthersBusyCpus: round2(Math.max(rawBefore.othersBusyCpus, rawAfter.othersBusyCpus)),
      loadStart,
      loadEnd: load1(),
      deletions,
      itemsRead,
      requestsPerDeletion: {
        scanner: requestsPerDeletion('scanner', span?.from ?? 0, span?.to ?? 0, burstN),
        producer: requestsPerDeletion('producer', span?.from ?? 0, span?.to ?? 0, burstN),
        phaseScanner: requestsPerDeletion('scanner', phaseStart, phaseEnd, deletions),
        phaseProducer: requestsPerDeletion('producer', phaseStart, phaseEnd, deletions),
      },
    };
    if (deletions < s.expiries.size)
      log(`${mode}: only ${deletions} of ${s.expiries.size} deletions seen before the timeout`);
    return { result, rawAfter };
  } finally {
    for (const c of children) if (c.proc.exitCode === null) c.proc.kill('SIGKILL');
  }
}

/** Latency on every DynamoDB request through the stack's Toxiproxy: half each way, ± a quarter of that as jitter. */
async function addLatency(proxy: Toxiproxy, ms: number): Promise<void> {
  await proxy.reset();
  const half = ms / 2;
  const attributes = { latency: Math.round(half), jitter: Math.round(half / 4) };
  for (const stream of ['upstream', 'downstream'] as const)
    await proxy.addToxic(
      'dynamodb',
      { type: 'latency', attributes },
      { stream, name: `bench-latency-${stream}` },
    );
}

function printResults(results: Result[]): void {
  const cols = (Object.keys(results[0] as object) as Array<keyof Result>).filter(
    (c) => c !== 'requestsPerDeletion',
  );
  process.stdout.write(cols.join('\t') + '\n');
  for (const r of results) process.stdout.write(cols.map((c) => String(r[c])).join('\t') + '\n');
  process.stdout.write(
    JSON.stringify({
      bench: 'expiry',
      options: {
        items: N,
        ddbLatencyMs: LATENCY_MS,
        producers: PRODUCER_COUNTS,
        modes: MODES,
        settings: TRIED,
      },
      results,
    }) + '\n',
  );
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
  const direct = config.dynamodb.endpoint;
  if (!direct)
    throw new Error('bench expiry: no DynamoDB endpoint: run it on the local stack (bash bench/run.sh)');
  const proxied = LATENCY_MS > 0 ? Toxiproxy.stackAddresses().dynamodbEndpoint : direct;
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, silentLogger);
  const store = new TtlSettingsStore(ddb, {
    controlTable: config.tables.control,
    propagationMs: 0,
    internalTables: [config.tables.marks],
  });
  const table = name('bench-expiry');
  const dir = mkdtempSync(join(tmpdir(), 'bench-expiry-'));
  const admin = kafka.admin();
  await admin.connect();
  await applyTopics(admin, declaredTopics(config));
  const consumer = kafka.consumer({ groupId: name('bench-expiry') });
  const proxy = LATENCY_MS > 0 ? Toxiproxy.ofStack() : undefined;
  const unlock = proxy ? await Toxiproxy.lock() : undefined;
  const rawClients = new Map<number, DynamoDBClient>();
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
    log(`seeded ${N} items in ${seedS.toFixed(1)} s`);
    const dynamoPid = stackServicePid('dynamodb');
    await settle(dynamoPid);
    // Every item went through the stamp: nothing to backfill, so the completion is recorded directly.
    await recordBackfilled(ddb, config.tables.control, table, Date.now());
    if (proxy) {
      await addLatency(proxy, LATENCY_MS);
      log(
        `DynamoDB behind Toxiproxy (${proxied}): ${LATENCY_MS} ms round trip added, ± ${LATENCY_MS / 4} ms`,
      );
    }
    const configFile = join(dir, 'config.json');
    writeFileSync(
      configFile,
      JSON.stringify({ ...config, dynamodb: { ...config.dynamodb, endpoint: proxied } }),
    );
    const proxyPid = proxy ? stackServicePid('toxiproxy') : null;
    const s: Setup = {
      config,
      table,
      writer,
      store,
      configFile,
      writeLead: writeLeadS(N / seedS),
      raw: (producers) => {
        const inFlight = producers * config.producer.concurrency;
        const client = rawClients.get(inFlight) ?? rawClient(config, proxied, inFlight);
        rawClients.set(inFlight, client);
        return { client, writer, inFlight, pids: { dynamodb: dynamoPid, toxiproxy: proxyPid } };
      },
      dynamoPid,
      proxyPid,
      kafkaPid: stackServicePid('kafka'),
      published: new Map(),
      expiries: new Map(),
    };
    let round = 0;
    const rawRound = (): number => round++;

    // The consumer reads along the whole run: the Kafka timestamp of every record of the phase's items.
    await consumer.connect();
    await consumer.subscribe({ topic: config.topics.shared, fromBeginning: false });
    await consumer.run({
      eachMessage: async ({ message }) => {
        const key = message.key?.toString() ?? '';
        if (!s.expiries.has(key) || s.published.has(key)) return;
        s.published.set(key, Number(message.timestamp));
      },
    });
    await sleep(2000);

    const results: Result[] = [];
    for (const producers of PRODUCER_COUNTS) {
      // A warm-up, not reported: the first deletes of a fresh server (or on new connections) ran slower than later
      // ones (774–798/s, then 1,000–1,030/s, at 100 k), a cold start no later figure has.
      const warm = await rawDeleteRate(s.raw(producers), { table, round: rawRound() });
      log(
        `raw conditional DeleteItem, ${s.raw(producers).inFlight} in flight, warm-up: ${describeRaw(warm)} (not reported)`,
      );
      let rawBefore = await rawDeleteRate(s.raw(producers), { table, round: rawRound() });
      for (const mode of MODES) {
        const { result, rawAfter } = await runPhase(s, mode, producers, rawBefore, rawRound);
        results.push(result);
        rawBefore = rawAfter;
        log(JSON.stringify(result));
      }
    }
    if (!values['skip-plain']) {
      // Last: creating, filling and dropping another table keeps dynalite busy for a while after (at 1 M, the bench
      // table's raw rate measured right after it was 451–677/s against 958–1,001/s later).
      const plain = await rawDeleteRate(s.raw(1));
      log(`raw conditional DeleteItem on a fresh table without index: ${describeRaw(plain)}`);
      for (const r of results) r.rawPlainTableDeletesPerSec = Math.round(plain.rate);
    }
    printResults(results);
    writer.destroy();
  } finally {
    if (proxy) await proxy.reset().catch(() => undefined);
    unlock?.();
    for (const c of rawClients.values()) c.destroy();
    await consumer.disconnect().catch(() => undefined);
    for (const t of [table, config.tables.control, config.tables.marks])
      await ddb.send(new DeleteTableCommand({ TableName: t })).catch(() => undefined);
    await admin
      .deleteTopics({ topics: [config.topics.shared, config.topics.deadLetter] })
      .catch(() => undefined);
    await admin.disconnect();
    ddb.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

const role = values.child;
if (role !== undefined) {
  if (role !== 'scanner' && role !== 'producer') throw new Error(`--child scanner|producer, got ${role}`);
  child(role, String(values.table)).catch((err: unknown) => {
    process.stderr.write(
      `bench expiry ${role} failed: ${String(err instanceof Error ? (err.stack ?? err.message) : err)}\n`,
    );
    exitAfterOutput(1);
  });
} else {
  main().then(
    () => exitAfterOutput(0),
    (err: unknown) => {
      process.stderr.write(
        `bench expiry failed: ${String(err instanceof Error ? (err.stack ?? err.message) : err)}\n`,
      );
      exitAfterOutput(1);
    },
  );
}
