import type { Admin, Batch, Consumer, EachBatchPayload, Kafka, KafkaMessage } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TtlstreamConfig } from '../core/config';
import type { Logger } from '../core/logger';
import { metrics } from '../core/metrics';
import { ReconnectingProducer } from '../core/reconnecting-producer';
import { DEAD_LETTER_RETENTION_MS } from '../core/topics';
import {
  HEADERS,
  PoisonRecordError,
  checkCurrentAvro,
  decodeMessage,
  headerString,
  toArchived,
} from '../schemas';
import { RecentIds } from './dedup';
import { isReplayed, sendToDeadLetter } from './dead-letter';
import {
  ArchiveLineageError,
  claimBeyondTopic,
  committedOffsetOf,
  readPartitionHistory,
  recentDedupKeys,
  type ManifestEntry,
} from './history';
import { LossReporter } from './loss';
import { PartitionWorker } from './partition';
import { prepareCheckedRow, prepareRow, type PreparedRow } from './roll';
import type { ArchiveStorage } from './storage/types';
import { indexPathFor } from './storage/layout';

export interface ArchiverOptions {
  /** How often watermarks are read for the lag, age and loss checks. */
  monitorIntervalMs?: number;
  /** How often the topic list is read to pick up new per-table topics. */
  topicRefreshMs?: number;
  /** eventIDs remembered per partition for de-duplication. */
  dedupWindow?: number;
  /** At most this many complete rolls are read back to rebuild the de-duplication window. */
  dedupManifests?: number;
  /** Graceful stop gives up waiting for rolls after this long (their offsets stay uncommitted). */
  stopTimeoutMs?: number;
  /** Passed to the kafkajs consumer. */
  maxBytesPerPartition?: number;
  maxBytes?: number;
  partitionsConsumedConcurrently?: number;
  sessionTimeoutMs?: number;
  heartbeatIntervalMs?: number;
  /** Longest a fetch waits for data; also bounds how long a stop waits for the fetch in flight. */
  maxWaitTimeMs?: number;
  /** Rolls of one partition queued or being written before consuming it waits (memory: rollBytes each). */
  maxQueuedRolls?: number;
}

export interface ArchiverDeps {
  config: TtlstreamConfig;
  kafka: Kafka;
  storage: ArchiveStorage;
  logger: Logger;
  options?: ArchiverOptions;
}

interface Slot {
  topic: string;
  partition: number;
  ready: Promise<PartitionWorker | null>;
  worker: PartitionWorker | null;
  retired: boolean;
  /** Offset gaps seen in a row that retention does not explain (see onGap). */
  gapStrikes: number;
}

const slotKey = (topic: string, partition: number): string => `${topic}\u0000${partition}`;

/** `p`, or undefined after `ms` (the timer never holds the process open). */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  const abort = new AbortController();
  try {
    return await Promise.race([p, sleep(ms, undefined, { signal: abort.signal }).catch(() => undefined)]);
  } finally {
    abort.abort();
  }
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Stream topics the archiver reads: the shared topic and every per-table topic, never the dead-letter topic. */
export function streamTopicFilter(config: TtlstreamConfig): (topic: string) => boolean {
  const perTable = new RegExp(`^${escapeRegExp(config.topics.perTablePrefix)}`);
  return (topic) =>
    topic !== config.topics.deadLetter && (topic === config.topics.shared || perTable.test(topic));
}

export class Archiver {
  private readonly config: TtlstreamConfig;
  private readonly kafka: Kafka;
  private readonly storage: ArchiveStorage;
  private readonly log: Logger;
  private readonly opts: Required<ArchiverOptions>;
  private readonly loss: LossReporter;
  private readonly isStreamTopic: (topic: string) => boolean;
  private admin: Admin | null = null;
  private adminClosed = false;
  private adminCalls = 0;
  /** The dead-letter producer; replaced at its first request timeout, like the consumer and the admin client. */
  private deadLetters: ReconnectingProducer | null = null;
  private consumer: Consumer | null = null;
  private topics: string[] = [];
  private readonly slots = new Map<string, Slot>();
  private inFlightBatches = 0;
  private closing = false;
  private stopped = false;
  private timers: NodeJS.Timeout[] = [];
  private monitoring = false;
  private refreshing: Promise<void> | null = null;
  /** A consumer restart after a request timeout or a crash kafkajs gave up on (see restartConsumer). */
  private restarting: Promise<void> | null = null;
  /** Dropped consumers and admin clients still disconnecting (their silent connections may take a while). */
  private readonly leaving = new Set<Promise<void>>();
  private readonly lagAlertedAt = new Map<string, number>();

  constructor(deps: ArchiverDeps) {
    this.config = deps.config;
    this.kafka = deps.kafka;
    this.storage = deps.storage;
    this.log = deps.logger.child({ component: 'archiver' });
    const o = deps.options ?? {};
    this.opts = {
      monitorIntervalMs: o.monitorIntervalMs ?? 15_000,
      topicRefreshMs: o.topicRefreshMs ?? 30_000,
      dedupWindow: o.dedupWindow ?? 100_000,
      dedupManifests: o.dedupManifests ?? 64,
      stopTimeoutMs: o.stopTimeoutMs ?? 60_000,
      maxBytesPerPartition: o.maxBytesPerPartition ?? 4 * 1024 * 1024,
      maxBytes: o.maxBytes ?? 32 * 1024 * 1024,
      partitionsConsumedConcurrently: o.partitionsConsumedConcurrently ?? 4,
      sessionTimeoutMs: o.sessionTimeoutMs ?? 30_000,
      heartbeatIntervalMs: o.heartbeatIntervalMs ?? 3_000,
      maxWaitTimeMs: o.maxWaitTimeMs ?? 1_000,
      maxQueuedRolls: o.maxQueuedRolls ?? 2,
    };
    this.loss = new LossReporter(this.storage, this.log);
    this.isStreamTopic = streamTopicFilter(this.config);
  }

  /**
   * Every admin call goes through here: after stop() none may start (kafkajs would quietly
   * reconnect a disconnected admin and keep the process alive), and stop() waits for those in flight.
   */
  private async withAdmin<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = this.admin;
    if (!admin || this.adminClosed) throw new Error('archiver is stopped');
    this.adminCalls += 1;
    try {
      return await fn(admin);
    } finally {
      this.adminCalls -= 1;
    }
  }

  /**
   * An admin client that is replaced at its first request timeout. kafkajs fails a request after
   * kafka.requestTimeoutMs but keeps the connection and sends every retry down it, so a connection
   * whose peer vanished silently (no reset, no close) would fail every recovery (committed offsets,
   * watermarks) and topic listing until the OS gives up on it, which can take many minutes
   * (test/integration/faults/network-archiver.test.ts). Calls in flight on the old client fail and
   * are retried by their callers; the next call goes through the new client's new connections.
   */
  private newAdmin(): Admin {
    const admin = this.kafka.admin();
    admin.on(admin.events.REQUEST_TIMEOUT, (e) => {
      if (this.admin !== admin || this.adminClosed) return;
      this.log.warn(
        { apiName: (e.payload as { apiName?: string }).apiName },
        'a Kafka request of the archiver admin timed out; replacing the admin client',
      );
      this.admin = this.newAdmin();
      // Connected here so the next call does not pay for it; a failure shows in that call.
      this.admin.connect().catch(() => undefined);
      this.dropClient(admin.disconnect());
    });
    return admin;
  }

  /** Let a dropped client disconnect in the background; stop() waits for it (bounded). */
  private dropClient(disconnecting: Promise<void>): void {
    const p = disconnecting.catch(() => undefined);
    this.leaving.add(p);
    void p.then(() => this.leaving.delete(p));
  }

  async start(): Promise<void> {
    this.admin = this.newAdmin();
    await this.admin.connect();
    this.deadLetters = new ReconnectingProducer(this.kafka, this.log, {
      name: 'dead-letter',
      producer: { idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false },
      replaceOnFailure: true,
      onDropped: (disconnecting) => this.dropClient(disconnecting),
    });
    await this.deadLetters.connect();
    await this.ensureDeadLetterTopic();
    await this.refreshTopics();
    const rollTick = Math.max(50, Math.min(1000, Math.floor(this.config.archive.rollMs / 4)));
    this.timers.push(setInterval(() => this.rollDue(), rollTick));
    this.timers.push(setInterval(() => void this.monitor(), this.opts.monitorIntervalMs));
    this.timers.push(setInterval(() => void this.refreshTopics(), this.opts.topicRefreshMs));
    for (const t of this.timers) t.unref();
    this.log.info(
      { archive: this.storage.root, topics: this.topics, groupId: this.config.archive.groupId },
      'archiver started',
    );
  }

  /** Graceful stop: no new fetches, roll and write what is buffered, commit, leave the group. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await this.refreshing;
    await this.restarting;
    await this.stopConsumer();
    await this.deadLetters?.disconnect().catch(() => undefined);
    this.adminClosed = true;
    for (let i = 0; this.adminCalls > 0 && i < 3000; i++) await sleep(10);
    await this.admin?.disconnect().catch(() => undefined);
    await within(Promise.all(this.leaving), this.opts.stopTimeoutMs);
    this.log.info('archiver stopped');
  }

  /** Run one watermark check now (tests and the CLI's status use it; the timer calls it too). */
  async monitor(): Promise<void> {
    if (this.monitoring || this.stopped || !this.admin) return;
    this.monitoring = true;
    try {
      const byTopic = new Map<string, Slot[]>();
      for (const slot of this.slots.values()) {
        if (!slot.worker || slot.retired) continue;
        const list = byTopic.get(slot.topic) ?? [];
        list.push(slot);
        byTopic.set(slot.topic, list);
      }
      const now = Date.now();
      for (const [topic, slots] of byTopic) {
        const offsets = await this.withAdmin((a) => a.fetchTopicOffsets(topic));
        for (const slot of slots) {
          const worker = slot.worker;
          const wm = offsets.find((o) => o.partition === slot.partition);
          if (!worker || !wm) continue;
          const low = BigInt(wm.low);
          const high = BigInt(wm.high);
          const labels = { topic, partition: String(slot.partition) };
          if (worker.archived >= high) worker.caughtUpAtMs = now;
          const behind = high > worker.archived ? high - worker.archived : 0n;
          metrics.recordsBehind.set(labels, Number(behind));
          const oldest = worker.oldestPendingTimestampMs;
          // Unfetched records are younger than fetched ones; when none is held here the age is
          // bounded by the time since the partition was last fully archived (an upper bound).
          const ageMs = oldest !== null ? now - oldest : behind > 0n ? now - worker.caughtUpAtMs : 0;
          metrics.oldestUnarchivedSeconds.set(labels, Math.max(0, ageMs) / 1000);
          if (ageMs > this.config.archive.lagAlertMs) this.alertLag(topic, slot.partition, ageMs, behind);
          // Offsets this process never fetched and Kafka no longer has are lost; fetched ones
          // are still here (buffered or being written) but exist nowhere else any more.
          if (worker.next < low)
            await this.loss.report(topic, slot.partition, worker.next, low - 1n, 'monitor');
          else if (worker.archived < low) this.alertAtRisk(topic, slot.partition, worker.archived, low);
        }
      }
    } catch (err) {
      this.log.warn({ err }, 'archive monitor could not read watermarks');
    } finally {
      this.monitoring = false;
    }
  }

  private alertAtRisk(topic: string, partition: number, archived: bigint, low: bigint): void {
    const key = `risk\u0000${slotKey(topic, partition)}`;
    if (Date.now() - (this.lagAlertedAt.get(key) ?? 0) < 60_000) return;
    this.lagAlertedAt.set(key, Date.now());
    this.log.error(
      { topic, partition, archived: archived.toString(), low: low.toString() },
      'ARCHIVE AT RISK: records held only by this process have aged out of Kafka; a crash now would lose them',
    );
  }

  private alertLag(topic: string, partition: number, ageMs: number, behind: bigint): void {
    const key = slotKey(topic, partition);
    const last = this.lagAlertedAt.get(key) ?? 0;
    if (Date.now() - last < 60_000) return;
    this.lagAlertedAt.set(key, Date.now());
    this.log.error(
      {
        topic,
        partition,
        oldestUnarchivedMs: ageMs,
        recordsBehind: behind.toString(),
        lagAlertMs: this.config.archive.lagAlertMs,
      },
      'ARCHIVE LAG: the oldest unarchived record is older than archive.lagAlertMs',
    );
  }

  private async ensureDeadLetterTopic(): Promise<void> {
    const topic = this.config.topics.deadLetter;
    if ((await this.withAdmin((a) => a.listTopics())).includes(topic)) return;
    await this.withAdmin((admin) =>
      admin.createTopics({
        waitForLeaders: true,
        topics: [
          {
            topic,
            numPartitions: this.config.topics.partitions,
            replicationFactor: this.config.topics.replicationFactor,
            configEntries: [
              { name: 'retention.ms', value: String(DEAD_LETTER_RETENTION_MS) },
              { name: 'min.insync.replicas', value: String(this.config.topics.minInsyncReplicas) },
            ],
          },
        ],
      }),
    );
  }

  /** Subscribe to the stream topics that exist; restart the consumer when new ones appear. */
  private refreshTopics(): Promise<void> {
    if (this.refreshing || this.restarting || this.stopped) return this.refreshing ?? Promise.resolve();
    this.refreshing = (async () => {
      try {
        const found = (await this.withAdmin((a) => a.listTopics())).filter(this.isStreamTopic).sort();
        if (found.length === 0) {
          if (this.topics.length === 0) this.log.info('no stream topic exists yet; waiting');
          return;
        }
        // Unchanged topics need nothing, unless no consumer runs (its start failed): then this is the retry.
        const same = found.length === this.topics.length && found.every((t, i) => t === this.topics[i]);
        if (same && this.consumer) return;
        if (this.consumer) {
          this.log.info({ topics: found }, 'stream topics changed; restarting the consumer');
          await this.stopConsumer();
          this.closing = false;
        }
        this.topics = found;
        if (!this.stopped) await this.startConsumer();
      } catch (err) {
        this.log.warn({ err }, 'could not refresh the stream topics');
      }
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  private async startConsumer(): Promise<void> {
    const consumer = this.kafka.consumer({
      groupId: this.config.archive.groupId,
      maxBytesPerPartition: this.opts.maxBytesPerPartition,
      maxBytes: this.opts.maxBytes,
      sessionTimeout: this.opts.sessionTimeoutMs,
      heartbeatInterval: this.opts.heartbeatIntervalMs,
      maxWaitTimeInMs: this.opts.maxWaitTimeMs,
      allowAutoTopicCreation: false,
    });
    // Events of a consumer that was dropped (restartConsumer) but is still disconnecting are not ours.
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      if (this.consumer === consumer) this.onAssignment(e.payload.memberAssignment);
    });
    // Emitted before kafkajs rejoins: from here on another member may get our partitions, so no
    // roll of ours may start another step (their recovery must see a settled archive).
    consumer.on(consumer.events.REBALANCING, () => {
      if (this.consumer === consumer) this.onRebalancing();
    });
    consumer.on(consumer.events.CRASH, (e) => {
      // A crash kafkajs restarts from (a retriable cause) needs no human: warn. Error is for the rest.
      const level = e.payload.restart ? 'warn' : 'error';
      this.log[level]({ err: e.payload.error, restart: e.payload.restart }, 'archive consumer crashed');
      // kafkajs restarts a consumer after a retriable crash only; after any other (seen: "Broker not
      // connected" when a connection closed under it) the consumer is gone and archiving would stop.
      if (!e.payload.restart) this.restartConsumer(consumer, 'crashed without restart');
    });
    // kafkajs fails a request after kafka.requestTimeoutMs but keeps the connection and retries on it,
    // so a connection whose peer vanished silently (no reset, no close) would hold fetches, heartbeats
    // and commits until the OS gives up on it, many minutes: archiving stops and the 24-hour window
    // runs (test/integration/faults/network-archiver.test.ts). At the first timeout the consumer is
    // replaced; a timeout before it runs fails the start.
    let failStart: (err: Error) => void = () => undefined;
    const timedOut = new Promise<never>((_, reject) => (failStart = reject));
    timedOut.catch(() => undefined);
    consumer.on(consumer.events.REQUEST_TIMEOUT, (e) => {
      const { apiName } = e.payload as { apiName?: string };
      failStart(new Error(`Kafka request ${apiName ?? 'unknown'} timed out while starting the consumer`));
      this.restartConsumer(consumer, `a Kafka request (${apiName ?? 'unknown'}) timed out`);
    });
    try {
      await Promise.race([
        (async () => {
          await consumer.connect();
          await consumer.subscribe({ topics: this.topics, fromBeginning: true });
        })(),
        timedOut,
      ]);
    } catch (err) {
      this.dropClient(consumer.disconnect());
      throw err;
    }
    this.consumer = consumer;
    try {
      await consumer.run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: this.opts.partitionsConsumedConcurrently,
        eachBatch: (payload) => (this.consumer === consumer ? this.eachBatch(payload) : Promise.resolve()),
      });
    } catch (err) {
      // Not left half-started: the caller retries with a new consumer.
      if (this.consumer === consumer) this.consumer = null;
      this.dropClient(consumer.disconnect());
      throw err;
    }
  }

  /**
   * Replace the consumer: stop it without draining (its commits would go down the same dead
   * connection), start a new one on new connections. The same as a crash of this member as far as
   * the archive goes, which recovery on every assignment is made for: rolls in flight stop at their
   * next step (a `writing` manifest is redone by the next owner, same file names), their offsets stay
   * uncommitted and are consumed again; duplicates of the redo are skipped by eventID.
   */
  private restartConsumer(from: Consumer, reason: string): void {
    if (this.stopped || this.restarting || this.consumer !== from) return;
    this.log.warn({ reason }, 'restarting the archive consumer on new connections');
    this.restarting = (async () => {
      await this.refreshing;
      if (this.stopped || this.consumer !== from) return;
      this.dropConsumer();
      for (let attempt = 0; !this.stopped; attempt++) {
        try {
          await this.startConsumer();
          this.log.info('archive consumer restarted');
          return;
        } catch (err) {
          const delay = Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
          this.log.warn({ err, attempt, delayMs: delay }, 'archive consumer did not start; retrying');
          for (const until = Date.now() + delay; !this.stopped && Date.now() < until;)
            await sleep(Math.min(500, until - Date.now()));
        }
      }
    })()
      .catch((err: unknown) => this.log.error({ err }, 'archive consumer restart failed'))
      .finally(() => {
        this.restarting = null;
      });
  }

  /**
   * Drop the consumer without draining: its commits and fences would go down the same dead
   * connection. As on a rebalance, rolls in flight stop at their next step and buffers are dropped;
   * the slots stay (retired), so the next assignment's recovery of a partition waits for its old
   * worker to settle before it reads the archive. The consumer disconnects in the background.
   */
  private dropConsumer(): void {
    const consumer = this.consumer;
    if (!consumer) return;
    this.consumer = null;
    this.onRebalancing();
    this.dropClient(consumer.disconnect());
  }

  private async stopConsumer(): Promise<void> {
    const consumer = this.consumer;
    if (!consumer) return;
    this.closing = true;
    consumer.pause(this.topics.map((topic) => ({ topic })));
    const deadline = Date.now() + this.opts.stopTimeoutMs;
    // A batch in flight may wait for room in its partition's roll queue: give it the same time.
    while (this.inFlightBatches > 0 && Date.now() < deadline) await sleep(10);
    const workers = [...this.slots.values()]
      .map((s) => s.worker)
      .filter((w): w is PartitionWorker => w !== null);
    let finished = false;
    if (this.inFlightBatches === 0) {
      for (const w of workers) w.flush();
      const drained = Promise.all(workers.map((w) => w.drain())).then(() => true);
      const abort = new AbortController();
      const timedOut = sleep(Math.max(0, deadline - Date.now()), false, { signal: abort.signal }).catch(
        () => false,
      );
      finished = await Promise.race([drained, timedOut]);
      abort.abort();
    }
    if (!finished) {
      this.log.warn(
        { stopTimeoutMs: this.opts.stopTimeoutMs },
        'rolls still running at stop; their offsets stay uncommitted (consumed again after a restart)',
      );
      for (const w of workers) w.cancel();
      // Cancelled workers release waiting batches at once.
      for (let i = 0; this.inFlightBatches > 0 && i < 500; i++) await sleep(10);
    }
    for (const s of this.slots.values()) s.retired = true;
    this.slots.clear();
    this.consumer = null;
    await consumer.disconnect().catch((err: unknown) => this.log.warn({ err }, 'consumer disconnect failed'));
  }

  private rollDue(): void {
    const now = Date.now();
    for (const slot of this.slots.values()) if (!slot.retired) slot.worker?.rollIfDue(now);
  }

  private onRebalancing(): void {
    for (const slot of this.slots.values()) {
      slot.retired = true;
      slot.ready.then(
        (w) => w?.cancel(),
        () => undefined,
      );
    }
    this.log.info('group rebalancing: rolls in progress stop at their next step');
  }

  /**
   * A new generation of the group: kafkajs resumes every assigned partition from its committed
   * offset, so every partition is recovered afresh. Workers of partitions we keep finish their
   * queued rolls first (recovery waits for them); workers of revoked partitions stop at once.
   */
  private onAssignment(assignment: Record<string, number[]>): void {
    const assigned = new Set<string>();
    for (const [topic, partitions] of Object.entries(assignment))
      for (const p of partitions) assigned.add(slotKey(topic, p));
    const previous = new Map(this.slots);
    for (const [key, slot] of previous) {
      slot.retired = true;
      if (!assigned.has(key)) {
        slot.ready.then(
          (w) => w?.cancel(),
          () => undefined,
        );
        this.slots.delete(key);
        // Another member reports this partition now.
        const labels = { topic: slot.topic, partition: String(slot.partition) };
        metrics.recordsBehind.remove(labels);
        metrics.oldestUnarchivedSeconds.remove(labels);
      }
    }
    for (const [topic, partitions] of Object.entries(assignment)) {
      for (const partition of partitions) {
        const key = slotKey(topic, partition);
        const before = previous.get(key);
        const slot: Slot = {
          topic,
          partition,
          ready: Promise.resolve(null),
          worker: null,
          retired: false,
          gapStrikes: 0,
        };
        slot.ready = this.recoverWithRetry(slot, before);
        this.slots.set(key, slot);
      }
    }
    this.log.info({ assignment }, 'partitions assigned');
  }

  /**
   * Recovery reads Kafka and the archive, either of which may be briefly away (a broker restart):
   * keep trying while the partition is ours, since nothing of it is consumed until it succeeds.
   */
  private async recoverWithRetry(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    let lineageLoggedAt = -Infinity;
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.recover(slot, before);
      } catch (err) {
        if (slot.retired || this.closing) return null;
        // A lineage mismatch is checked again as often as any failure (a broker that just restarted
        // may briefly report a lower high watermark), but said loudly only once a minute.
        const delay = Math.min(10_000, 250 * 2 ** Math.min(attempt, 6));
        const context = { err, topic: slot.topic, partition: slot.partition, attempt, delayMs: delay };
        if (!(err instanceof ArchiveLineageError))
          this.log.error(context, 'partition recovery failed; retrying');
        else if (Date.now() - lineageLoggedAt >= 60_000) {
          lineageLoggedAt = Date.now();
          this.log.error(context, err.message);
        }
        // In short steps: a rebalance or a stop must not wait for the whole delay.
        for (const until = Date.now() + delay; Date.now() < until;) {
          if (slot.retired || this.closing) return null;
          await sleep(Math.min(500, until - Date.now()));
        }
        if (slot.retired || this.closing) return null;
      }
    }
  }

  private async recover(slot: Slot, before: Slot | undefined): Promise<PartitionWorker | null> {
    const { topic, partition } = slot;
    if (before) {
      const old = await before.ready;
      if (old) {
        old.retire();
        await old.drain();
      }
    }
    const committed = await this.committedOffset(topic, partition);
    const history = await readPartitionHistory(this.storage, topic, partition, committed, this.log);
    const wm = (await this.withAdmin((a) => a.fetchTopicOffsets(topic))).find(
      (o) => o.partition === partition,
    );
    const low = BigInt(wm?.low ?? '0');
    const high = BigInt(wm?.high ?? '0');
    const lineage = { topic, partition: String(partition) };
    const claimed = claimBeyondTopic(committed, history, high);
    if (claimed !== null) {
      metrics.archiveLineageMismatch.set(lineage, 1);
      throw new ArchiveLineageError(topic, partition, claimed, high);
    }
    metrics.archiveLineageMismatch.set(lineage, 0);

    // Normally at most one roll is left `writing`; redo only a contiguous chain of them.
    const redo: ManifestEntry[] = [];
    for (const e of history.pending) {
      const prev = redo[redo.length - 1];
      if (prev && e.first !== prev.last + 1n) {
        this.log.warn(
          { topic, partition, manifest: e.path },
          'a writing manifest not adjacent to the one before; not redone',
        );
        continue;
      }
      redo.push(e);
    }
    let start: bigint;
    if (redo[0]) start = redo[0].first;
    else if (committed === null && history.completeEnd === null) start = low;
    else {
      const c = committed ?? 0n;
      const e = history.completeEnd ?? 0n;
      start = c > e ? c : e;
    }
    if (start < low) {
      await this.loss.report(topic, partition, start, low - 1n, redo.length > 0 ? 'redo' : 'assignment');
      while (redo[0] && redo[0].last < low) redo.shift();
      // Consume from what Kafka still has. A redo that lost its beginning still covers its
      // exact range (same file names).
      start = low;
    }
    for (const e of history.stale) await this.removeStale(topic, partition, e);
    const dedup = new RecentIds(this.opts.dedupWindow);
    for (const k of await recentDedupKeys(
      this.storage,
      history,
      this.opts.dedupWindow,
      this.opts.dedupManifests,
      this.log,
    )) {
      dedup.add(k);
    }
    if (slot.retired || this.closing) return null;
    // Bound to this consumer: a worker of a consumer since replaced must not fence or commit with
    // the new one (its own fails once it is disconnected, as a fence should).
    const consumer = this.consumer;
    const worker = new PartitionWorker(
      {
        topic,
        partition,
        storage: this.storage,
        logger: this.log,
        rollBytes: this.config.archive.rollBytes,
        rollMs: this.config.archive.rollMs,
        commit: (offset) => this.commit(topic, partition, offset, consumer),
        fence: (offset) => this.commit(topic, partition, offset, consumer),
        maxQueuedRolls: this.opts.maxQueuedRolls,
      },
      { start: redo[0] ? redo[0].first : start, redo, dedup },
    );
    if (redo[0] && start > redo[0].first) worker.next = start;
    slot.worker = worker;
    const seekTo = worker.next;
    if (redo.length === 0 && committed !== seekTo)
      await this.commit(topic, partition, seekTo, consumer).catch(() => undefined);
    consumer?.seek({ topic, partition, offset: seekTo.toString() });
    this.log.info(
      {
        topic,
        partition,
        committed: committed?.toString() ?? null,
        completeEnd: history.completeEnd?.toString() ?? null,
        redo: redo.map((e) => `${e.first}-${e.last}`),
        start: seekTo.toString(),
        dedupKnown: dedup.size,
      },
      'partition recovered',
    );
    return worker;
  }

  /** Remove a `writing` roll that complete rolls already cover (see PartitionHistory.stale). */
  private async removeStale(topic: string, partition: number, e: ManifestEntry): Promise<void> {
    this.log.warn(
      { topic, partition, manifest: e.path },
      'removing an abandoned roll already covered by complete rolls',
    );
    for (const f of e.manifest.files) {
      await this.storage.delete(indexPathFor(f));
      await this.storage.delete(f);
    }
    await this.storage.delete(e.path);
  }

  private async committedOffset(topic: string, partition: number): Promise<bigint | null> {
    const groupId = this.config.archive.groupId;
    const res = await this.withAdmin((a) => a.fetchOffsets({ groupId, topics: [topic] }));
    const p = res.find((t) => t.topic === topic)?.partitions.find((x) => x.partition === partition);
    return committedOffsetOf(p?.offset);
  }

  private async commit(
    topic: string,
    partition: number,
    offset: bigint,
    consumer: Consumer | null,
  ): Promise<void> {
    if (!consumer || consumer !== this.consumer) throw new Error('no consumer to commit with');
    await consumer.commitOffsets([{ topic, partition, offset: offset.toString() }]);
  }

  private async eachBatch(payload: EachBatchPayload): Promise<void> {
    const { batch, resolveOffset, heartbeat, isRunning, isStale } = payload;
    if (this.closing) return;
    this.inFlightBatches += 1;
    try {
      const slot = this.slots.get(slotKey(batch.topic, batch.partition));
      if (!slot || slot.retired) return;
      const worker = await this.heartbeating(slot.ready, heartbeat);
      if (!worker || slot.retired || worker.isCancelled || isStale()) return;
      const highWatermark = /^\d+$/.test(batch.highWatermark) ? BigInt(batch.highWatermark) : undefined;
      // kafkajs's isRunning/isStale/resolveOffset allocate on every call (measured: ~4% of the
      // archiver's garbage). Their answers can only change while this loop awaits (a rebalance, a
      // seek, a stop all happen in other tasks), so ask after each await rather than per message,
      // and resolve the offset reached before each await and when leaving.
      let unresolved: string | null = null;
      const resolve = (): void => {
        if (unresolved !== null) resolveOffset(unresolved);
        unresolved = null;
      };
      let awaited = true; // slot.ready was awaited
      try {
        for (const message of batch.messages) {
          if (this.closing || slot.retired || worker.isCancelled) return;
          if (awaited && (!isRunning() || isStale())) return;
          awaited = false;
          const offset = BigInt(message.offset);
          if (offset < worker.next) {
            unresolved = message.offset;
            continue;
          }
          if (offset > worker.next) {
            resolve();
            awaited = true;
          }
          if (offset > worker.next && !(await this.onGap(slot, worker, offset))) {
            this.consumer?.seek({
              topic: batch.topic,
              partition: batch.partition,
              offset: worker.next.toString(),
            });
            return;
          }
          slot.gapStrikes = 0;
          // Synchronous for every message but poison (which awaits its dead letter).
          let row = this.classify(batch, message, worker);
          if (row instanceof Promise) {
            resolve();
            awaited = true;
            // Heartbeating: a dead letter retried after a request timeout may take longer than the session.
            const sent = await this.heartbeating(row, heartbeat);
            // Not sent: the partition is no longer ours; its offset stays unaccepted (the next owner sends it).
            if (!sent || this.closing || slot.retired) return;
            row = null;
          }
          const mustWait = worker.accept(offset, row, Number(message.timestamp), highWatermark);
          unresolved = message.offset;
          if (mustWait) {
            resolve();
            awaited = true;
            await this.heartbeating(worker.room(), heartbeat);
          }
        }
      } finally {
        resolve();
      }
      await heartbeat();
    } finally {
      this.inFlightBatches -= 1;
    }
  }

  /**
   * Offsets on our topics are contiguous (no compaction, no transactions), so a jump means either
   * retention deleted what we had not archived (loss: report it and go on) or a batch fetched
   * before our seek (seek again). A gap that persists without retention explaining it is taken
   * as a real gap after three tries rather than stalling the partition.
   */
  private async onGap(slot: Slot, worker: PartitionWorker, offset: bigint): Promise<boolean> {
    const wm = (await this.withAdmin((a) => a.fetchTopicOffsets(slot.topic))).find(
      (o) => o.partition === slot.partition,
    );
    const low = BigInt(wm?.low ?? '0');
    if (low > worker.next) {
      await this.loss.report(slot.topic, slot.partition, worker.next, low - 1n, 'monitor');
      return true;
    }
    slot.gapStrikes += 1;
    if (slot.gapStrikes < 3) return false;
    this.log.warn(
      {
        topic: slot.topic,
        partition: slot.partition,
        expected: worker.next.toString(),
        got: offset.toString(),
      },
      'offset gap not explained by retention; going on',
    );
    return true;
  }

  /**
   * A row to archive, or null for a message that is only counted (replayed, duplicate). A promise only
   * for poison (whether its dead letter went out, see deadLetter), so the common message costs no await.
   */
  private classify(
    batch: Batch,
    message: KafkaMessage,
    worker: PartitionWorker,
  ): PreparedRow | null | Promise<boolean> {
    const { topic, partition } = batch;
    if (isReplayed(message.headers)) {
      metrics.archiveSkipped.inc({ topic, reason: 'replay' });
      return null;
    }
    let row: PreparedRow;
    try {
      const headers = message.headers ?? {};
      const coordinates = { topic, partition, offset: message.offset, timestamp: message.timestamp };
      // Current-schema Avro (the common case) is checked on the Avro value and its bytes copied;
      // anything the fast check cannot vouch for takes the full path, which also names the error.
      const checked = checkCurrentAvro(message.value, headers);
      const fast = checked && message.value ? prepareCheckedRow(checked, coordinates, message.value) : null;
      if (fast) row = fast;
      else {
        const decoded = decodeMessage(message.value, headers);
        const fingerprint = headerString(headers, HEADERS.fingerprint);
        // decodeMessage accepted these exact bytes as Avro of that schema: prepareRow may copy them.
        const wire =
          message.value && fingerprint !== undefined && headerString(headers, HEADERS.encoding) === 'avro'
            ? { value: message.value, fingerprint }
            : undefined;
        row = prepareRow(toArchived(decoded, coordinates), wire);
      }
    } catch (err) {
      const reason = err instanceof PoisonRecordError ? err.reason : 'unarchivable';
      return this.deadLetter(batch, message, reason, err, worker);
    }
    if (!worker.dedup.add(row.dedupKey)) {
      metrics.archiveSkipped.inc({ topic, reason: 'duplicate' });
      this.log.debug(
        { topic, partition, offset: message.offset, id: row.dedupKey },
        'duplicate eventID skipped',
      );
      return null;
    }
    return row;
  }

  /**
   * True once the dead letter is acknowledged by all in-sync replicas; false when the partition stopped
   * being ours (a stop, a rebalance, a replaced consumer) before that: its offset must then not be
   * accepted, and the next owner sends the dead letter again. Never rejects.
   */
  private async deadLetter(
    batch: Batch,
    message: KafkaMessage,
    reason: string,
    err: unknown,
    worker: PartitionWorker,
  ): Promise<boolean> {
    const { topic, partition } = batch;
    this.log.warn(
      { topic, partition, offset: message.offset, reason, err },
      'poison record sent to the dead-letter topic',
    );
    const poison = {
      topic,
      partition,
      offset: message.offset,
      key: message.key ?? null,
      value: message.value ?? null,
      headers: message.headers,
      timestamp: message.timestamp,
    };
    const abandoned = (): boolean => this.closing || this.stopped || worker.isCancelled;
    // The offset counts as processed only once the dead letter is on Kafka: keep trying. A request
    // timeout fails an attempt at once, and after any failed attempt the next one goes through a new
    // producer: a silent connection, or a producer kafkajs left "not connected", would otherwise hold
    // this partition for ever (test/integration/faults/network-archiver.test.ts).
    for (let attempt = 0; !abandoned(); attempt++) {
      try {
        const producer = this.deadLetters;
        if (!producer) throw new Error('archiver is not started');
        await producer.run((p) => sendToDeadLetter(p, this.config.topics.deadLetter, poison, reason));
        metrics.deadLettered.inc({ topic, reason });
        return true;
      } catch (sendErr) {
        if (abandoned()) break;
        this.log.error(
          { err: sendErr, topic, partition, offset: message.offset, attempt },
          'dead-letter publish failed; retrying',
        );
        const until = Date.now() + Math.min(10_000, 200 * 2 ** Math.min(attempt, 6));
        // In short steps: a rebalance or a stop must not wait for the whole delay.
        while (!abandoned() && Date.now() < until) await sleep(Math.min(500, until - Date.now()));
      }
    }
    return false;
  }

  /** Await `p` while keeping the group membership alive (long rolls must not cost the session). */
  private async heartbeating<T>(p: Promise<T>, heartbeat: () => Promise<void>): Promise<T> {
    let done = false;
    const tracked = p.finally(() => {
      done = true;
    });
    while (!done) {
      let timer: NodeJS.Timeout | undefined;
      const tick = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1000);
      });
      await Promise.race([tracked, tick]);
      clearTimeout(timer);
      if (!done) await heartbeat();
    }
    return tracked;
  }
}
