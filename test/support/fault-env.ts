import { type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Kafka } from 'kafkajs';
import { createDynamoClient, createKafka } from '../../core/clients';
import type { ConfigInput, TtlstreamConfig } from '../../core/config';
import { silentLogger } from '../../core/logger';
import { applyTopics, declaredTopics } from '../../core/topics';
import { TtlSettingsStore } from '../../control/settings-store';
import {
  checkInvariants,
  snapshotTable,
  type CheckResult,
  type Item,
  type PublishProbe,
  type RunningWriter,
  type TableTruth,
  type TtlModel,
} from './ground-truth';
import { ROOT_DIR } from './ports';
import { createTestTable, deleteTestTable, testConfig, uniqueName } from './stack';
import { StreamLog } from './stream-log';
import { deepMerge } from './deep-merge';
import { marksOf } from './marks';
import { settingsStoreOf } from './settings-store';
import { nodeArgsFor } from './entrypoints';

/**
 * The fault-injection environment: a control table, a marks table, a stream topic and a dead-letter topic of its own
 * (so concurrent runs never share state), short leases and polls so a killed process's work is taken over within
 * seconds, the pipeline as real child processes, a stream log, publish-before-delete probes, and the final check.
 */

export type Role = 'scanner' | 'producer' | 'archiver';

/** Every crash point of the scanner and the producer (core/crash-points.ts callers). */
export const SCANNER_CRASH_POINTS = ['scanner.after-page', 'scanner.after-mark-write'] as const;
export const PRODUCER_CRASH_POINTS = [
  'producer.after-intent',
  'producer.after-publish',
  'producer.after-published-state',
  'producer.after-delete',
  'producer.after-witness',
  'producer.after-retracted-state',
  'producer.after-retract',
  'producer.before-cleanup',
] as const;

/** Fast timings (leases of 2 s), own names, the mass-deletion guard out of the way. */
export function faultConfig(overrides: ConfigInput = {}): TtlstreamConfig {
  const base: ConfigInput = {
    tables: { control: uniqueName('fctl'), marks: uniqueName('fmarks') },
    topics: { shared: uniqueName('frm'), deadLetter: uniqueName('fdlq'), partitions: 3 },
    api: { ttlPropagationMs: 0 },
    scanner: { totalSegments: 4, leaseMs: 2000, passIntervalMs: 300, pageSize: 50, readRateLimit: 100_000 },
    producer: { shards: 4, leaseMs: 2000, pollMs: 100, batchSize: 25, concurrency: 8 },
    guard: { maxExpiredFraction: 1, minItemsForFraction: 1_000_000_000, maxDeletesPerMinute: 1_000_000 },
  };
  return testConfig(deepMerge(base, overrides));
}

/** `promise`, or undefined after `ms`; the timer is cleared either way so it never holds the test process open. */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<undefined>((res) => (timer = setTimeout(() => res(undefined), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Pipeline processes.

export interface ProcExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One real pipeline process (test/support/pipeline-process.ts) with the given roles. */
export class PipelineProc {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  readonly exited: Promise<ProcExit>;
  private err = '';
  private exit?: ProcExit;
  /** Set when the test ends the process (or armed a crash point): its death is then not a failure. */
  endedOnPurpose: boolean;
  private readonly dir: string;

  constructor(
    readonly name: string,
    readonly roles: readonly Role[],
    config: TtlstreamConfig,
    readonly env: Record<string, string> = {},
  ) {
    this.endedOnPurpose = env.TTLSTREAM_CRASH_AT !== undefined;
    this.dir = mkdtempSync(join(tmpdir(), 'ttlstream-fault-'));
    const file = join(this.dir, 'config.json');
    writeFileSync(
      file,
      JSON.stringify({ ...config, log: { level: process.env.PIPELINE_LOG_LEVEL ?? 'warn' } }),
    );
    const childEnv: NodeJS.ProcessEnv = {
      ...process.env,
      TTLSTREAM_CONFIG: file,
      TTLSTREAM_OWNER_ID: name,
      ...env,
    };
    if (env.TTLSTREAM_CRASH_AT === undefined) delete childEnv.TTLSTREAM_CRASH_AT;
    // `node` itself, not the tsx CLI, so signals reach the pipeline process itself (entrypoints.ts).
    // FAULT_REPORT_DIR=<dir>: a process slow to stop writes a Node diagnostic report there (handles, sockets, stack).
    const reportDir = process.env.FAULT_REPORT_DIR;
    const nodeArgs = reportDir ? ['--report-on-signal', `--report-directory=${reportDir}`] : [];
    this.child = spawn(process.execPath, [...nodeArgs, ...nodeArgsFor('pipeline'), ...roles], {
      cwd: ROOT_DIR,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child.stderr?.on('data', (d: Buffer) => (this.err = (this.err + d.toString()).slice(-30_000)));
    // FAULT_LOG_DIR=<dir>: keep every process's whole log (set PIPELINE_LOG_LEVEL=info or debug to see more).
    const logDir = process.env.FAULT_LOG_DIR;
    if (logDir) this.child.stderr?.pipe(createWriteStream(join(logDir, `${name}-${Date.now()}.log`)));
    this.exited = new Promise<ProcExit>((res) =>
      this.child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        rmSync(this.dir, { recursive: true, force: true });
        res(this.exit);
      }),
    );
    this.ready = new Promise<void>((res, rej) => {
      let out = '';
      this.child.stdout?.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('"ready":true')) res();
      });
      void this.exited.then((e) =>
        rej(new Error(`${this.name} exited (${e.code ?? e.signal}) before it was ready: ${this.stderr()}`)),
      );
    });
    this.ready.catch(() => undefined);
  }

  get alive(): boolean {
    return this.exit === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  stderr(maxChars = 4000): string {
    return this.err.slice(-maxChars);
  }

  describe(): string {
    const state = this.exit ? `exited ${this.exit.code ?? this.exit.signal}` : 'running';
    return `${this.name} [${this.roles.join('+')}] pid ${this.pid} ${state}`;
  }

  kill(signal: NodeJS.Signals = 'SIGKILL'): void {
    this.endedOnPurpose = true;
    if (this.alive) this.child.kill(signal);
  }

  /** SIGSTOP: the process freezes (a long GC pause, a stalled VM) until `resume`. */
  pause(): void {
    if (this.alive) this.child.kill('SIGSTOP');
  }

  resume(): void {
    if (this.alive) this.child.kill('SIGCONT');
  }

  /** SIGKILL and wait until the process is gone. */
  async crash(): Promise<ProcExit> {
    this.kill('SIGKILL');
    return this.exited;
  }

  /** Wait for this process to SIGSTOP itself at `point` (`<point>:stop` in TTLSTREAM_CRASH_AT); `resume` goes on. */
  async stoppedAt(point: string, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!this.err.includes(`stop point ${point}`)) {
      if (!this.alive)
        throw new Error(`${this.describe()} exited before stop point ${point}: ${this.stderr()}`);
      if (Date.now() > deadline)
        throw new Error(
          `${this.describe()} did not reach stop point ${point} within ${timeoutMs} ms: ${this.stderr()}`,
        );
      await sleep(50);
    }
  }

  /** Wait for this process to SIGKILL itself at `point`; fails if it exits otherwise or never gets there. */
  async crashedAt(point: string, timeoutMs: number): Promise<void> {
    const exit = await within(this.exited, timeoutMs);
    if (!exit)
      throw new Error(
        `${this.describe()} did not reach crash point ${point} within ${timeoutMs} ms: ${this.stderr()}`,
      );
    if (exit.signal !== 'SIGKILL' || !this.err.includes(`crash point ${point}`))
      throw new Error(`${this.describe()} ended without crashing at ${point}: ${this.stderr()}`);
  }

  /** SIGTERM and wait for the exit (SIGKILL after `timeoutMs`). */
  async stop(timeoutMs = 75_000): Promise<ProcExit> {
    if (!this.alive) return this.exited;
    this.kill('SIGTERM');
    if (process.env.FAULT_REPORT_DIR && !(await within(this.exited, 15_000))) {
      if (this.alive) this.child.kill('SIGUSR2');
    }
    const exit = await within(this.exited, timeoutMs);
    if (exit) return exit;
    this.kill('SIGKILL');
    return this.exited;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The environment.

export interface FaultEnv {
  /** The test's own view of the stack (seeding, writers, probes, the check): always direct. */
  config: TtlstreamConfig;
  /** What the pipeline processes run with: `config`, or another route to the same services (a fault proxy). */
  pipelineConfig: TtlstreamConfig;
  ddb: DynamoDBClient;
  kafka: Kafka;
  store: TtlSettingsStore;
  topic: string;
  stream: StreamLog;
  truths: TableTruth[];
  writers: RunningWriter[];
  probes: PublishProbe[];
  procs: PipelineProc[];
  /** Free-form lines printed with a failure (what happened when). */
  timeline: string[];
  note(line: string): void;
  spawn(name: string, roles: readonly Role[], env?: Record<string, string>): PipelineProc;
  cleanup(): Promise<void>;
}

/**
 * `pipeline` is applied on top of the configuration for the pipeline processes only, e.g. endpoints through
 * Toxiproxy: the faults must hit the pipeline, never the test's ground truth.
 */
export async function createFaultEnv(
  overrides: ConfigInput = {},
  pipeline: ConfigInput = {},
): Promise<FaultEnv> {
  const config = faultConfig(overrides);
  const pipelineConfig = deepMerge(config, pipeline);
  const ddb = createDynamoClient(config);
  const kafka = createKafka(config, silentLogger);
  const store = settingsStoreOf(ddb, config);
  const admin = kafka.admin();
  await admin.connect();
  try {
    await applyTopics(admin, declaredTopics(config));
  } finally {
    await admin.disconnect();
  }
  const topic = config.topics.shared;
  const stream = await StreamLog.start(kafka, topic);
  const started = Date.now();
  const tables: string[] = [];
  const env: FaultEnv = {
    config,
    pipelineConfig,
    ddb,
    kafka,
    store,
    topic,
    stream,
    truths: [],
    writers: [],
    probes: [],
    procs: [],
    timeline: [],
    note(line) {
      env.timeline.push(`+${((Date.now() - started) / 1000).toFixed(1)}s ${line}`);
    },
    spawn(name, roles, extra = {}) {
      const p = new PipelineProc(name, roles, pipelineConfig, extra);
      env.procs.push(p);
      env.note(
        `spawned ${p.describe()}${extra.TTLSTREAM_CRASH_AT ? ` with TTLSTREAM_CRASH_AT=${extra.TTLSTREAM_CRASH_AT}` : ''}`,
      );
      return p;
    },
    async cleanup() {
      for (const p of env.procs) p.kill('SIGKILL');
      await Promise.all(env.procs.map((p) => p.exited));
      await stream.stop();
      for (const t of [
        ...tables,
        ...env.truths.map((t) => t.table),
        config.tables.control,
        config.tables.marks,
      ])
        await deleteTestTable(ddb, t).catch(() => undefined);
      const a = kafka.admin();
      try {
        await a.connect();
        await a.deleteTopics({ topics: [topic, config.topics.deadLetter], timeout: 10_000 });
      } catch {
        // Best effort: a leftover test topic harms nobody.
      } finally {
        await a.disconnect().catch(() => undefined);
      }
      ddb.destroy();
    },
  };
  return env;
}

/** A table with the model's TTL settings ENABLED. */
export async function createTtlTable(env: FaultEnv, prefix: string, model: TtlModel): Promise<string> {
  const table = await createTestTable(env.ddb, uniqueName(prefix), { hashKey: 'pk' });
  await env.store.update(table, { enabled: true, settings: model.settings }, 'fault-test');
  const d = await env.store.describe(table);
  if (d.status !== 'ENABLED') throw new Error(`TTL on ${table} is ${d.status}, expected ENABLED`);
  return table;
}

// ---------------------------------------------------------------------------------------------------------------
// Marks and intents.

/**
 * Resolves once the archiver group `groupId` has committed every non-empty partition of the stream topic up to
 * the end the stream log saw; fails, naming the partitions behind, after `ms`.
 */
export async function archiverCaughtUp(e: FaultEnv, groupId: string, ms = 60_000): Promise<void> {
  const admin = e.kafka.admin();
  await admin.connect();
  try {
    const deadline = Date.now() + ms;
    for (;;) {
      const high = await e.stream.endOffsets();
      const res = await admin.fetchOffsets({ groupId, topics: [e.topic] });
      const committed = new Map((res[0]?.partitions ?? []).map((p) => [p.partition, Number(p.offset)]));
      const behind = [...high].filter(([p, h]) => h > 0 && committed.get(p) !== h);
      if (behind.length === 0) return;
      if (Date.now() > deadline)
        throw new Error(
          `the archiver did not catch up within ${ms} ms: ${behind.map(([p, h]) => `partition ${p} committed ${committed.get(p)}, end ${h}`).join('; ')}`,
        );
      await sleep(300);
    }
  } finally {
    await admin.disconnect();
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Probes for invariant 3.

/** One probe per table: absent keys at a consistent scan, then the topic's end offsets. Undefined if a service is down. */
export async function takeProbe(env: FaultEnv, label: string): Promise<PublishProbe[] | undefined> {
  try {
    const out: PublishProbe[] = [];
    const scans: Array<{ truth: TableTruth; startedMs: number; present: Map<string, Item> }> = [];
    for (const truth of env.truths) {
      const startedMs = Date.now();
      scans.push({ truth, startedMs, present: await snapshotTable(env.ddb, truth.table) });
    }
    const highWater = await env.stream.endOffsets();
    for (const s of scans) {
      const absent = [...s.truth.keys.keys()].filter((id) => !s.present.has(id));
      out.push({ scanStartedMs: s.startedMs, table: s.truth.table, absent, highWater, label });
    }
    env.probes.push(...out);
    return out;
  } catch {
    return undefined;
  }
}

/** Probes every `everyMs` in the background until stopped; failures (a service restarting) are skipped. */
export function startProber(
  env: FaultEnv,
  everyMs = 1500,
): { stop(): Promise<{ taken: number; skipped: number }> } {
  let stopped = false;
  let taken = 0;
  let skipped = 0;
  const loop = (async () => {
    while (!stopped) {
      if ((await takeProbe(env, 'periodic probe')) === undefined) skipped++;
      else taken++;
      await sleep(everyMs);
    }
  })();
  return {
    async stop() {
      stopped = true;
      await loop;
      return { taken, skipped };
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Waiting and checking.

/**
 * Wait until the pipeline has done everything it should: the writers have finished, every seeded expiry has passed,
 * every key whose current version is expired is gone from its table, and no mark or intent of the tables is left.
 * Fails early with the stderr of a pipeline process that died on its own.
 */
export async function waitUntilSettled(env: FaultEnv, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const writersDone = await within(
    Promise.all(env.writers.map((w) => w.done)).then(() => true),
    timeoutMs,
  );
  if (!writersDone) throw new Error(`the concurrent writers did not finish within ${timeoutMs} ms`);
  const latest = Math.max(0, ...env.truths.map((t) => t.latestExpiryMs));
  let status = 'nothing checked yet';
  for (;;) {
    const dead = env.procs.filter((p) => !p.alive && !p.endedOnPurpose);
    if (dead.length > 0)
      throw new Error(
        `pipeline process died on its own: ${dead.map((p) => `${p.describe()}: ${p.stderr()}`).join('\n')}`,
      );
    const now = Date.now();
    if (now >= latest + 250) {
      try {
        const lines: string[] = [];
        for (const truth of env.truths) {
          const present = await snapshotTable(env.ddb, truth.table);
          const due = truth.dueForDeletion(now).filter((k) => present.has(k.id));
          const rows = await marksOf(env, truth.table);
          if (due.length > 0 || rows.length > 0) {
            const byShard: Record<string, number> = {};
            for (const r of rows) {
              const k = `shard ${r.shard} ${r.kind === 'mark' ? 'mark' : r.state}`;
              byShard[k] = (byShard[k] ?? 0) + 1;
            }
            lines.push(
              `${truth.table}: ${due.length} expired items still present (${due
                .slice(0, 5)
                .map((k) => `${k.pk} [${k.category}]`)
                .join(
                  ', ',
                )}${due.length > 5 ? ', ...' : ''}), ${rows.length} marks/intents left ${JSON.stringify(byShard)}`,
            );
          }
        }
        if (lines.length === 0) return;
        status = lines.join('; ');
      } catch (err) {
        status = `check failed: ${String(err)}`;
      }
    } else {
      status = `waiting for the last seeded expiry (${new Date(latest).toISOString()})`;
    }
    if (Date.now() > deadline) {
      throw new Error(
        `the pipeline did not finish within ${timeoutMs} ms: ${status}\nprocesses: ${env.procs.map((p) => p.describe()).join('; ')}\n` +
          env.procs
            .filter((p) => p.alive)
            .map((p) => `--- ${p.name} stderr ---\n${p.stderr(2000)}`)
            .join('\n'),
      );
    }
    await sleep(300);
  }
}

/** Final snapshot of every table, the whole stream read to its end, and the check. */
export async function finalCheck(env: FaultEnv): Promise<CheckResult> {
  const snapshots = new Map<string, Map<string, Item>>();
  for (const truth of env.truths) snapshots.set(truth.table, await snapshotTable(env.ddb, truth.table));
  await env.stream.catchUp(90_000);
  return checkInvariants({
    truths: env.truths,
    snapshots,
    messages: env.stream.messages(),
    probes: env.probes,
    region: env.config.region,
  });
}

/** A readable failure: the problems (first 40), the summary, the timeline and the seed to replay. */
export function report(result: CheckResult, env: FaultEnv, context: string): string {
  const seeds = env.truths.map((t) => `${t.table}: seed ${t.seed}`).join(', ');
  const shown = result.problems.slice(0, 40);
  return [
    `${context}: ${result.problems.length} invariant violations (${seeds}; replay with TTLSTREAM_FAULT_SEEDS where applicable)`,
    ...shown.map((p) => `  - ${p}`),
    ...(result.problems.length > shown.length
      ? [`  ... and ${result.problems.length - shown.length} more`]
      : []),
    `summary: ${JSON.stringify(result.summary)}`,
    ...env.truths.flatMap((t) => t.writerLog.slice(0, 20).map((l) => `writer: ${l}`)),
    'timeline:',
    ...env.timeline.map((l) => `  ${l}`),
  ].join('\n');
}

/** Stop every live process gracefully; returns the ones that did not exit 0. */
export async function stopAll(env: FaultEnv): Promise<string[]> {
  const bad: string[] = [];
  await Promise.all(
    env.procs
      .filter((p) => p.alive)
      .map(async (p) => {
        // A SIGTERM while the process is still loading its modules ends it by the signal (no handler yet): let it
        // come up first, so the graceful stop is what gets tested.
        await within(
          p.ready.catch(() => undefined),
          60_000,
        );
        const e = await p.stop();
        if (e.code !== 0) bad.push(`${p.describe()}: ${p.stderr(1500)}`);
      }),
  );
  env.note('stopped the remaining processes');
  return bad;
}
