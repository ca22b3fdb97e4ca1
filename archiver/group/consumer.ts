import type { Consumer, Kafka } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../../core/logger';
import type { AdminClient } from './admin';
import type { LeavingClients } from './leaving';
import type { BatchRunner } from './runner';
import type { PartitionSlots } from './slots';
import type { GroupState } from './state';
import { streamTopicFilter, type StreamTopics } from './topics';
import { TimedOutError } from '../../core/errors';
import { abortWhen, withRetry } from '../../core/retry';

/** The wait between two attempts at starting a replacement consumer: from 250 ms, doubling, up to 10 s. */
const RESTART_BACKOFF = { initialDelayMs: 250, maxDelayMs: 10_000 };

/** The consumer's slice of the archiver's options (archiver/options.ts). */
export interface ConsumerOptions {
  /** `archive.groupId`. */
  groupId: string;
  /** Which topics are stream topics (`topics.*`). */
  streamTopics: StreamTopics;
  maxBytesPerPartition: number;
  maxBytes: number;
  partitionsConsumedConcurrently: number;
  sessionTimeoutMs: number;
  rebalanceTimeoutMs: number;
  heartbeatIntervalMs: number;
  maxWaitTimeMs: number;
  /** Graceful stop gives up waiting for rolls after this long (their offsets stay uncommitted). */
  stopTimeoutMs: number;
}

export interface GroupConsumerDeps {
  kafka: Kafka;
  log: Logger;
  opts: ConsumerOptions;
  state: GroupState;
  admin: AdminClient;
  slots: PartitionSlots;
  runner: BatchRunner;
  leaving: LeavingClients;
}

/**
 * The consumer's lifecycle: subscribe to the stream topics (restarting for new ones), start, replace
 * after a request timeout or a crash kafkajs gave up on, and the graceful stop that drains the rolls.
 */
export class GroupConsumer {
  /** The stream topics subscribed to, sorted. */
  topics: string[] = [];
  private refreshing: Promise<void> | null = null;
  /** A consumer restart after a request timeout or a crash kafkajs gave up on (see restart). */
  private restarting: Promise<void> | null = null;
  private readonly isStreamTopic: (topic: string) => boolean;

  constructor(private readonly deps: GroupConsumerDeps) {
    this.isStreamTopic = streamTopicFilter(deps.opts.streamTopics);
  }

  /** Subscribe to the stream topics that exist; restart the consumer when new ones appear. */
  refreshTopics(): Promise<void> {
    const { state, log } = this.deps;
    if (this.refreshing || this.restarting || state.stopped) return this.refreshing ?? Promise.resolve();
    this.refreshing = (async () => {
      try {
        const found = (await this.deps.admin.with((a) => a.listTopics())).filter(this.isStreamTopic).sort();
        if (found.length === 0) {
          if (this.topics.length === 0) log.info('no stream topic exists yet; waiting');
          return;
        }
        // Unchanged topics need nothing, unless no consumer runs (its start failed): then this is the retry.
        const same = found.length === this.topics.length && found.every((t, i) => t === this.topics[i]);
        if (same && state.consumer) return;
        if (state.consumer) {
          log.info({ topics: found }, 'stream topics changed; restarting the consumer');
          await this.stopConsumer();
          state.closing = false;
        }
        this.topics = found;
        if (!state.stopped) await this.start();
      } catch (err) {
        log.warn({ err }, 'could not refresh the stream topics');
      }
    })().finally(() => {
      this.refreshing = null;
    });
    return this.refreshing;
  }

  /** The final stop: wait for a refresh or restart in progress, then stop the consumer gracefully. */
  async stop(): Promise<void> {
    await this.refreshing;
    await this.restarting;
    await this.stopConsumer();
  }

  /** Start a new consumer: connect, subscribe, and run until it has joined the group. */
  private async start(): Promise<void> {
    const { opts, state, runner, leaving } = this.deps;
    const consumer = this.newConsumer();
    this.follow(consumer);
    const timedOut = this.failOnRequestTimeout(consumer);
    try {
      await Promise.race([
        (async () => {
          await consumer.connect();
          await consumer.subscribe({ topics: this.topics, fromBeginning: true });
        })(),
        timedOut,
      ]);
    } catch (err) {
      leaving.add(consumer.disconnect());
      throw err;
    }
    state.consumer = consumer;
    try {
      // run resolves once the consumer has joined the group: until then a request timeout is this start's failure
      // (restart() ignores it while a restart is under way, and kafkajs would wait on the same connection).
      await Promise.race([
        consumer.run({
          autoCommit: false,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: opts.partitionsConsumedConcurrently,
          eachBatch: (payload) =>
            state.consumer === consumer ? runner.eachBatch(payload) : Promise.resolve(),
        }),
        timedOut,
      ]);
    } catch (err) {
      // Not left half-started: the caller retries with a new consumer.
      if (state.consumer === consumer) state.consumer = null;
      leaving.add(consumer.disconnect());
      throw err;
    }
  }

  private newConsumer(): Consumer {
    const { kafka, opts, state } = this.deps;
    const consumer: Consumer = kafka.consumer({
      groupId: opts.groupId,
      maxBytesPerPartition: opts.maxBytesPerPartition,
      maxBytes: opts.maxBytes,
      sessionTimeout: opts.sessionTimeoutMs,
      // Also how long kafkajs waits for a JoinGroup answer (this + 5 s): on a silent connection, the stall.
      rebalanceTimeout: opts.rebalanceTimeoutMs,
      heartbeatInterval: opts.heartbeatIntervalMs,
      maxWaitTimeInMs: opts.maxWaitTimeMs,
      allowAutoTopicCreation: false,
      retry: {
        // kafkajs's consumer default, kept.
        retries: 5,
        // After a retriable crash kafkajs restarts the consumer on its own, even one this member dropped while it
        // was joining (its JoinGroup fails when the drop closes its connections): that one would rejoin the group
        // as a second member, take partitions and never archive them. Only the running consumer may restart.
        restartOnFailure: () => Promise.resolve(state.consumer === consumer && !state.stopped),
      },
    });
    return consumer;
  }

  /** The consumer's group events: assignments and rebalances go to the slots, a crash it cannot recover restarts it. */
  private follow(consumer: Consumer): void {
    const { state, log, slots } = this.deps;
    // Events of a consumer that was dropped (restart) but is still disconnecting are not ours.
    let rejoining = false;
    consumer.on(consumer.events.GROUP_JOIN, (e) => {
      rejoining = false;
      if (state.consumer === consumer) slots.onAssignment(e.payload.memberAssignment);
    });
    // Emitted before kafkajs rejoins: from here on another member may get our partitions, so no
    // roll of ours may start another step (their recovery must see a settled archive).
    consumer.on(consumer.events.REBALANCING, () => {
      rejoining = true;
      if (state.consumer === consumer) slots.onRebalancing();
    });
    // A rejoin that fails with a retriable error (seen after a broker outage: the new coordinator still loading the
    // group) sends kafkajs back to fetching its old assignment, with no new one told. Those partitions' slots were
    // retired above, so their batches would be dropped for good, silently: a fetch before the next join means that,
    // and the consumer is replaced.
    consumer.on(consumer.events.FETCH_START, () => {
      if (rejoining && state.consumer === consumer)
        this.restart(consumer, 'kafkajs went back to its old assignment after a rejoin failed');
    });
    consumer.on(consumer.events.CRASH, (e) => {
      // A crash kafkajs restarts from (a retriable cause) needs no human: warn. Error is for the rest.
      const level = e.payload.restart ? 'warn' : 'error';
      log[level]({ err: e.payload.error, restart: e.payload.restart }, 'archive consumer crashed');
      // kafkajs restarts a consumer after a retriable crash only; after any other (seen: "Broker not
      // connected" when a connection closed under it) the consumer is gone and archiving would stop.
      if (!e.payload.restart) this.restart(consumer, 'crashed without restart');
    });
  }

  /**
   * kafkajs fails a request after kafka.requestTimeoutMs but keeps the connection and retries on it,
   * so a connection whose peer vanished silently (no reset, no close) would hold fetches, heartbeats
   * and commits until the OS gives up on it, many minutes: archiving stops and the 24-hour window
   * runs (test/integration/faults/network-archiver.test.ts). At the first timeout the consumer is
   * replaced; a timeout before it has joined the group (connect, subscribe, and JoinGroup and
   * SyncGroup inside run) fails the start (the promise returned rejects), which the caller retries
   * with a new consumer.
   */
  private failOnRequestTimeout(consumer: Consumer): Promise<never> {
    let failStart: (err: Error) => void = () => undefined;
    const timedOut = new Promise<never>((_, reject) => (failStart = reject));
    timedOut.catch(() => undefined);
    consumer.on(consumer.events.REQUEST_TIMEOUT, (e) => {
      const { apiName } = e.payload as { apiName?: string };
      // Retryable: the caller tries again with a new consumer on new connections.
      failStart(
        new TimedOutError(`Kafka request ${apiName ?? 'unknown'} timed out while starting the consumer`, {
          retryable: true,
        }),
      );
      this.restart(consumer, `a Kafka request (${apiName ?? 'unknown'}) timed out`);
    });
    return timedOut;
  }

  /**
   * Replace the consumer: stop it without draining (its commits would go down the same dead
   * connection), start a new one on new connections. The same as a crash of this member as far as
   * the archive goes, which recovery on every assignment is made for: rolls in flight stop at their
   * next step (a `writing` manifest is redone by the next owner, same file names), their offsets stay
   * uncommitted and are consumed again; duplicates of the redo are skipped by eventID.
   */
  private restart(from: Consumer, reason: string): void {
    const { state, log } = this.deps;
    // A consumer that is not the running one was dropped already, unless none runs (see below).
    if (state.stopped || this.restarting || (state.consumer !== from && state.consumer !== null)) return;
    log.warn({ reason }, 'restarting the archive consumer on new connections');
    this.restarting = (async () => {
      await this.refreshing;
      // No consumer at all: the one that timed out was starting (a refresh) and its start failed; start one now
      // rather than at the next topic refresh.
      if (state.stopped || (state.consumer !== from && state.consumer !== null)) return;
      this.drop();
      const { signal, stop } = abortWhen(() => state.stopped);
      try {
        const started = await withRetry(
          async () => {
            if (state.stopped) return false;
            await this.start();
            return true;
          },
          {
            retries: Infinity,
            ...RESTART_BACKOFF,
            signal,
            onRetry: (err, attempt, delayMs) =>
              log.warn({ err, attempt, delayMs }, 'archive consumer did not start; retrying'),
          },
        );
        if (started) log.info('archive consumer restarted');
      } catch (err) {
        // Not retryable: no consumer runs until the next topic refresh starts one (refreshTopics).
        if (!state.stopped) log.error({ err }, 'archive consumer restart failed');
      } finally {
        stop();
      }
    })().finally(() => {
      this.restarting = null;
    });
  }

  /**
   * Drop the consumer without draining: its commits and fences would go down the same dead
   * connection. As on a rebalance, rolls in flight stop at their next step and buffers are dropped;
   * the slots stay (retired), so the next assignment's recovery of a partition waits for its old
   * worker to settle before it reads the archive. The consumer disconnects in the background.
   */
  private drop(): void {
    const { state, slots, leaving } = this.deps;
    const consumer = state.consumer;
    if (!consumer) return;
    state.consumer = null;
    slots.onRebalancing();
    leaving.add(consumer.disconnect());
  }

  /** Graceful: no new batches, roll and write what is buffered (bounded by stopTimeoutMs), disconnect. */
  private async stopConsumer(): Promise<void> {
    const { state, opts, log, slots } = this.deps;
    const consumer = state.consumer;
    if (!consumer) return;
    state.closing = true;
    consumer.pause(this.topics.map((topic) => ({ topic })));
    const deadline = Date.now() + opts.stopTimeoutMs;
    // A batch in flight may wait for room in its partition's roll queue: give it the same time.
    while (state.inFlightBatches > 0 && Date.now() < deadline) await sleep(10);
    const workers = slots.workers();
    let finished = false;
    if (state.inFlightBatches === 0) {
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
      log.warn(
        { stopTimeoutMs: opts.stopTimeoutMs },
        'rolls still running at stop; their offsets stay uncommitted (consumed again after a restart)',
      );
      for (const w of workers) w.cancel();
      // Cancelled workers release waiting batches at once.
      for (let i = 0; state.inFlightBatches > 0 && i < 500; i++) await sleep(10);
    }
    slots.retireAll();
    state.consumer = null;
    await consumer.disconnect().catch((err: unknown) => log.warn({ err }, 'consumer disconnect failed'));
  }
}
