import type { Admin, Message, Producer } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import { openArchiveStorage } from '../../../archive/storage';
import { createKafka, createS3Client } from '../../../core/clients';
import type { TtlstreamConfig } from '../../../core/config';
import { PipelineProc } from '../../support/fault-env';
import { createTestBucket, createTestTopic, testConfig, uniqueName } from '../../support/stack';
import { Toxiproxy } from '../../support/toxiproxy';
import { stackHost, stackPort } from '../../support/ports';
import { useArchiverSuite } from '../../support/archiver-suite';
import {
  allCommitted,
  committedOffsets,
  countIds,
  makeRecord,
  produceAll,
  readArchive,
  removeMessage,
} from '../../support/archive-fixture';

/**
 * Invariant 4 (every record reaches the archive, once) when the archiver's own links go silent: a peer that vanished
 * without a reset or a close (a dropped NAT entry, a dead host), so nothing the archiver sends is answered and
 * nothing closes the connection. The archiver is a real process (test/support/pipeline-process.ts) that reaches
 * Kafka, or S3, only through the stack's Toxiproxy; the test produces and checks directly. Records are produced
 * throughout, and archiving must go on *while* the silent connection is still there: removing the toxic closes the
 * connection, which would rescue a client waiting on it and prove nothing.
 *
 * - Kafka: half the connections silent (drawn per connection), re-drawn until a request really timed out.
 * - Kafka with poison records: a share of the connections silent, re-drawn until a dead-letter send met a silent
 *   connection; that poison record must still be dead-lettered and its partition commit past it.
 * - S3: a proxy created by the test in front of the S3 server, a fifth of its connections silent upstream (the
 *   server answers every request with `Connection: close`, so that is a fifth of the requests: nearly every roll
 *   meets one).
 *
 * No discovery mode: no scanner or producer runs here (the test produces the records itself), so the index
 * mode has nothing to change in it.
 */

const BASE = Math.floor(Date.UTC(2024, 6, 1, 10, 0) / 1000);
// Shorter than the defaults (Kafka 30 s, S3 30 s) only so the test is quick (and archive.rebalanceTimeoutMs below).
const KAFKA_REQUEST_TIMEOUT_MS = 3000;
const S3_IDLE_TIMEOUT_MS = 3000;
/** Draws of silent connections until the dead-letter producer meets one (poison test). */
const ROUNDS = 24;
/**
 * How long archiving may pause under a silent link before the test calls it stopped (a stuck client waits for the OS
 * to give up on the connection: many minutes). Its budget, when a consumer is replaced while three in ten new
 * connections are silent: failed starts of 3 s each (a request timeout) with the restart's back-off between them
 * (0.25, 0.5, 1, 2, 4 s), a join on a silent connection of 15 s (rebalance timeout + 5 s), the dropped member's
 * session of 10 s. 45 s was exceeded by a JoinGroup stuck for 65 s before archive.rebalanceTimeoutMs was set here;
 * after it, the longest of 27 rounds in nine runs took 32.5 s: 60 s leaves room for a longer chain of bad draws.
 */
const PROGRESS_WITHIN_MS = 60_000;

describe('network faults between the archiver and Kafka / S3 (Toxiproxy)', () => {
  const suite = useArchiverSuite();
  const toxi = Toxiproxy.ofStack();
  let admin: Admin;
  let producer: Producer;
  const procs: PipelineProc[] = [];
  /** Clients a test opened (run after the test, pass or fail). */
  const cleanups: Array<() => Promise<void>> = [];
  let unlock: (() => void) | undefined;

  beforeAll(async () => {
    // Toxiproxy's state is shared: network.test.ts must not run its faults meanwhile, nor this its faults under it.
    unlock = await Toxiproxy.lock();
    admin = suite.admin();
    producer = suite.producer();
    // A broker started before the PROXIED listener existed would send clients around the proxy: refuse to run then.
    await toxi.reset();
    const { kafkaBroker } = Toxiproxy.stackAddresses();
    const probe = createKafka(testConfig({ kafka: { brokers: [kafkaBroker] } })).admin();
    await probe.connect();
    try {
      const advertised = (await probe.describeCluster()).brokers.map((b) => `${b.host}:${b.port}`);
      if (advertised.join() !== kafkaBroker)
        throw new Error(
          `Kafka advertises ${advertised.join()} to clients of the proxy, not ${kafkaBroker}: restart it (bash infra/ctl.sh restart kafka)`,
        );
    } finally {
      await probe.disconnect();
    }
  }, 660_000);

  afterEach(async () => {
    await toxi.reset();
    for (const p of procs.splice(0)) await p.stop(5000);
    for (const c of cleanups.splice(0)) await c().catch(() => undefined);
  });

  afterAll(() => unlock?.());

  /** Committed offsets of the group summed over the topic's partitions (read direct). */
  async function committedSum(config: TtlstreamConfig, topic: string): Promise<number> {
    const c = await committedOffsets(admin, config.archive.groupId, topic);
    return [...c.values()].reduce((n, o) => n + Math.max(0, Number(o)), 0);
  }

  async function pollWhileAlive(what: string, fn: () => Promise<boolean>, ms: number, proc: PipelineProc) {
    const deadline = Date.now() + ms;
    while (!(await fn())) {
      if (!proc.alive) throw new Error(`the archiver exited while waiting for ${what}:\n${proc.stderr()}`);
      if (Date.now() > deadline) throw new Error(`${what} not within ${ms} ms:\n${proc.stderr(8000)}`);
      await sleep(250);
    }
  }

  /** Produces a few records every 200 ms (direct, not through the proxy) until stopped; returns all produced. */
  function keepProducing(topic: string): { stop(): Promise<ReturnType<typeof makeRecord>[]> } {
    const produced: ReturnType<typeof makeRecord>[] = [];
    let running = true;
    const loop = (async () => {
      while (running) {
        const batch = Array.from({ length: 10 }, (_, k) => {
          const i = produced.length + k;
          return makeRecord('orders', i, BASE + i, 600);
        });
        await produceAll(
          producer,
          topic,
          batch.map((r) => removeMessage(r, 'orders')),
        );
        produced.push(...batch);
        await sleep(200);
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        return produced;
      },
    };
  }

  /** Every produced record archived exactly once, and nothing else; the archive's structure sound. */
  async function checkArchive(config: TtlstreamConfig, produced: ReturnType<typeof makeRecord>[]) {
    const archive = await readArchive(openArchiveStorage(testConfig({ archive: config.archive })));
    expect(archive.problems).toEqual([]);
    const ids = countIds(archive.rows);
    expect(produced.filter((r) => ids.get(r.eventID) !== 1).map((r) => r.eventID)).toEqual([]);
    expect(ids.size).toBe(produced.length);
    return archive;
  }

  /**
   * A topic of 3 partitions and the archiver as a process whose Kafka links go through the stack's Toxiproxy, with
   * its whole log (PipelineProc keeps only the tail), to tell what happened after a point.
   */
  async function archiverBehindKafkaProxy(prefix: string) {
    const name = uniqueName(prefix);
    const { kafkaBroker } = Toxiproxy.stackAddresses();
    const config = suite.configFor(name, { partitions: 3, archive: { rollBytes: 16 * 1024 } });
    const topic = await createTestTopic(admin, config.topics.shared, 3);
    const archiverConfig = testConfig({
      ...config,
      kafka: { ...config.kafka, brokers: [kafkaBroker], requestTimeoutMs: KAFKA_REQUEST_TIMEOUT_MS },
      archive: {
        ...config.archive,
        monitorIntervalMs: 2000,
        sessionTimeoutMs: 10_000,
        // A join on a silent connection stalls for the rebalance timeout + 5 s (kafkajs's JoinGroup timeout) before
        // the consumer is replaced: 60 s by default, more than PROGRESS_WITHIN_MS; shorter, like the others, here.
        rebalanceTimeoutMs: 10_000,
      },
    });
    const proc = new PipelineProc('archiver-1', ['archiver'], archiverConfig);
    procs.push(proc);
    let log = '';
    proc.child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
    await proc.ready;
    return { name, config, topic, proc, log: () => log };
  }

  it('silent kafka links: a share of the archiver connections never answer and are never closed, archiving goes on', async () => {
    const { config, topic, proc, log } = await archiverBehindKafkaProxy('fna-kafka');
    const producing = keepProducing(topic);
    let produced: ReturnType<typeof makeRecord>[] = [];
    try {
      await pollWhileAlive(
        'first records archived',
        async () => (await committedSum(config, topic)) > 0,
        60_000,
        proc,
      );
      const silence = () =>
        toxi.addToxic(
          'kafka',
          { type: 'timeout', attributes: { timeout: 0 } },
          { name: 'silent', stream: 'downstream', toxicity: 0.3 },
        );
      // Twice: the archiver holds several Kafka connections (consumer, admin, dead-letter producer) and a timed-out
      // request may have been another client's; two draws make it likely that the consumer's was silent once.
      for (const phase of [1, 2]) {
        // A draw per connection (three in ten silent) may spare them all and prove nothing. kafkajs logs a request
        // that timed out: until one did, draw again (removing the toxic closes the connections it silenced, which
        // nothing waited on). Three in ten, not half: the toxic stays, so every connection a replaced consumer opens
        // (two per broker in kafkajs 2, plus the group's) is drawn too, and at one half a new consumer that works
        // took too many tries for any bound worth waiting.
        let errFrom = log().length;
        await silence();
        for (let round = 1; ; round++) {
          await sleep(KAFKA_REQUEST_TIMEOUT_MS + 2500);
          if (log().slice(errFrom).includes('timed out')) break;
          if (round === 8)
            throw new Error(`no Kafka request timed out in 8 rounds of silent links:\n${proc.stderr()}`);
          await toxi.removeToxic('kafka', 'silent');
          errFrom = log().length;
          await silence();
        }
        // Archiving must go on while the silenced connection is still there: a clear step (what is produced in
        // about 2 s), within a bound that leaves room for a consumer that had to be replaced (its old member leaves
        // or its session expires before the group has it back) while half of the new connections are silent too.
        const before = await committedSum(config, topic);
        const started = Date.now();
        let after = before;
        while (after - before < 100 && Date.now() - started < PROGRESS_WITHIN_MS) {
          await sleep(500);
          after = await committedSum(config, topic);
        }
        process.stdout.write(
          `[fault] silent kafka link, phase ${phase}: ${after - before} offsets committed in the ${Date.now() - started} ms after a request timed out\n`,
        );
        if (after - before < 100)
          throw new Error(
            `only ${after - before} offsets archived in ${PROGRESS_WITHIN_MS} ms while a Kafka connection was silent (phase ${phase}):\n${proc.stderr()}`,
          );
        await toxi.removeToxic('kafka', 'silent');
      }
    } finally {
      produced = await producing.stop();
    }
    await pollWhileAlive(
      'everything archived',
      () => allCommitted(admin, config.archive.groupId, topic),
      60_000,
      proc,
    );
    const exit = await proc.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    await checkArchive(config, produced);
  }, 240_000);

  it('silent kafka links and poison records: every dead letter goes out and its partition moves on while the links are silent', async () => {
    const { name, config, topic, proc, log } = await archiverBehindKafkaProxy('fna-dlq');
    // The dead letters, read direct (the archiver created the topic before it was ready).
    const dead = new Set<string>();
    const reader = suite.kafka.consumer({ groupId: `${name}-dlq-reader`, maxWaitTimeInMs: 250 });
    cleanups.push(() => reader.disconnect());
    await reader.connect();
    await reader.subscribe({ topics: [config.topics.deadLetter], fromBeginning: true });
    await reader.run({ eachMessage: async ({ message }) => void dead.add(message.key?.toString() ?? '') });
    // Undecodable values with a stream record's headers: what the archiver must dead-letter, never archive.
    const valid = removeMessage(makeRecord('orders', -1, BASE), 'orders');
    const poisons: Array<{ key: string; partition: number; offset: bigint }> = [];
    const sendPoison = async (n: number) => {
      const partition = n % 3;
      const message: Message = {
        key: `poison-${n}`,
        value: Buffer.from([0xde, 0xad, 0xbe, 0xef, n & 0xff]),
        headers: { ...valid.headers },
        partition,
      };
      const [meta] = await producer.send({ topic, acks: -1, messages: [message] });
      if (meta?.baseOffset === undefined) throw new Error(`no offset for poison-${n}`);
      const poison = { key: `poison-${n}`, partition, offset: BigInt(meta.baseOffset) };
      poisons.push(poison);
      return poison;
    };
    /** Dead-lettered, and the partition's committed offset past it (the archiver moved on). */
    const settled = async (p: { key: string; partition: number; offset: bigint }) => {
      if (!dead.has(p.key)) return false;
      const committed = (await committedOffsets(admin, config.archive.groupId, topic)).get(p.partition);
      return committed !== undefined && BigInt(committed) > p.offset;
    };
    // The dead-letter producer (the archiver's only producer) met the silent link: kafkajs's message for a Produce
    // request that timed out (it then retries on the same connection), or a dead-letter send that failed (a request
    // timeout, or a reconnect whose first request, ApiVersions, went unanswered). A downstream silence lets the record
    // reach the topic while its acknowledgement is lost: a dead letter on the topic is not yet a dead letter settled.
    const disturbed = /Request Produce\(key: \d+, version: \d+\) timed out|dead-letter publish failed/;
    const producing = keepProducing(topic);
    let produced: ReturnType<typeof makeRecord>[] = [];
    try {
      await pollWhileAlive(
        'first records archived',
        async () => (await committedSum(config, topic)) > 0,
        60_000,
        proc,
      );
      // One poison record before any fault: the dead-letter producer's connections are open when the toxic comes,
      // so they are among those drawn.
      const first = await sendPoison(0);
      await pollWhileAlive('the first poison record dead-lettered', () => settled(first), 60_000, proc);
      const silence = () =>
        toxi.addToxic(
          'kafka',
          { type: 'timeout', attributes: { timeout: 0 } },
          { name: 'silent', stream: 'downstream', toxicity: 0.3 },
        );
      // Three in ten connections silent, as in the first test; a draw that spared the dead-letter producer's
      // connection proves nothing about it, so draw again (with a new poison record) until its send was disturbed.
      // A round hit about one time in four in eight runs here (8 of 32); at one in five, 24 rounds miss in 0.5 % of runs.
      let hit: { key: string; partition: number; offset: bigint } | undefined;
      for (let round = 1; round <= ROUNDS && !hit; round++) {
        const errFrom = log().length;
        await silence();
        const poison = await sendPoison(round);
        const started = Date.now();
        let healed = false;
        for (;;) {
          if (!proc.alive) throw new Error(`the archiver exited:\n${proc.stderr()}`);
          const done = await settled(poison);
          // The log after the settled check: a dead letter the replacement producer settled is still a hit.
          if (disturbed.test(log().slice(errFrom))) {
            hit = poison;
            break;
          }
          if (done) break;
          // The silence fell on the consumer's own connections, round after round of restarts, and the record never
          // reached a dead-letter send: the round proves nothing about that send. Healthy links must settle it.
          if (
            Date.now() - started > PROGRESS_WITHIN_MS &&
            !dead.has(poison.key) &&
            log().slice(errFrom).includes('restarting the archive consumer on new connections')
          ) {
            await toxi.removeToxic('kafka', 'silent');
            healed = true;
            await pollWhileAlive(
              `${poison.key} settled once the links healed`,
              () => settled(poison),
              60_000,
              proc,
            );
            break;
          }
          if (Date.now() - started > PROGRESS_WITHIN_MS)
            throw new Error(
              `${poison.key} (partition ${poison.partition}, offset ${poison.offset}) not dead-lettered and committed past in ${PROGRESS_WITHIN_MS} ms, and no dead-letter send failed or timed out (round ${round}; on the topic: ${dead.has(poison.key)}):\n${proc.stderr()}`,
            );
          await sleep(100);
        }
        process.stdout.write(
          `[fault] silent kafka links, poison round ${round}: ${hit ? 'the dead-letter send met the silent link' : healed ? "the consumer's links were silent; settled once healed, drawing again" : 'settled undisturbed, drawing again'} (${Date.now() - started} ms)\n`,
        );
        if (!hit && !healed) await toxi.removeToxic('kafka', 'silent');
      }
      if (!hit)
        throw new Error(
          `the dead-letter producer met no silent connection in ${ROUNDS} rounds:\n${proc.stderr()}`,
        );
      // While the silent connection is still there (removing the toxic would close it and rescue a client stuck on
      // it), the poison record must reach the dead-letter topic and the partition commit past it; then one more,
      // through whatever producer the archiver has now (its new connections are drawn too).
      // (The next one is produced once the first settled, so each time below is its own.)
      for (const next of [async () => hit, () => sendPoison(ROUNDS + 1)]) {
        const p = await next();
        const started = Date.now();
        while (!(await settled(p)) && Date.now() - started < PROGRESS_WITHIN_MS) {
          if (!proc.alive) throw new Error(`the archiver exited:\n${proc.stderr()}`);
          await sleep(250);
        }
        const ok = await settled(p);
        process.stdout.write(
          `[fault] silent kafka links: ${p.key} (partition ${p.partition}, offset ${p.offset}) ${ok ? 'dead-lettered and committed past' : 'NOT dead-lettered and committed past'} in ${Date.now() - started} ms\n`,
        );
        if (!ok)
          throw new Error(
            `${p.key} (partition ${p.partition}, offset ${p.offset}): dead-lettered ${dead.has(p.key)}, committed ${(await committedOffsets(admin, config.archive.groupId, topic)).get(p.partition)}, after ${PROGRESS_WITHIN_MS} ms with the dead-letter producer's connection silent:\n${proc.stderr()}`,
          );
      }
      await toxi.removeToxic('kafka', 'silent');
    } finally {
      produced = await producing.stop();
    }
    await pollWhileAlive(
      'everything archived',
      () => allCommitted(admin, config.archive.groupId, topic),
      60_000,
      proc,
    );
    await pollWhileAlive(
      'every poison record dead-lettered',
      async () => poisons.every((p) => dead.has(p.key)),
      30_000,
      proc,
    );
    const exit = await proc.stop();
    expect(exit).toEqual({ code: 0, signal: null });
    expect(poisons.filter((p) => !dead.has(p.key)).map((p) => p.key)).toEqual([]);
    // Poison is never archived; every good record is, exactly once.
    await checkArchive(config, produced);
  }, 600_000);

  it('silent S3 link: a share of the archiver S3 connections never answer and are never closed, archiving goes on', async () => {
    const name = uniqueName('fna-s3');
    const bucket = await createTestBucket(createS3Client(testConfig()), name);
    // A proxy of this test's own in front of the S3 server (the stack has none): a port the kernel picks.
    const host = stackHost();
    const proxy = await toxi.createProxy({
      name,
      listen: `${host}:0`,
      upstream: `${host}:${stackPort('s3')}`,
    });
    try {
      const config = suite.configFor(name, {
        partitions: 3,
        archive: { url: `s3://${bucket}/a`, rollBytes: 16 * 1024 },
      });
      const topic = await createTestTopic(admin, config.topics.shared, 3);
      const archiverConfig = testConfig({
        ...config,
        archive: {
          ...config.archive,
          s3Endpoint: `http://${proxy.listen}`,
          s3IdleTimeoutMs: S3_IDLE_TIMEOUT_MS,
          monitorIntervalMs: 2000,
          sessionTimeoutMs: 10_000,
        },
      });
      const proc = new PipelineProc('archiver-1', ['archiver'], archiverConfig);
      procs.push(proc);
      await proc.ready;
      const producing = keepProducing(topic);
      let produced: ReturnType<typeof makeRecord>[] = [];
      try {
        const committed = () => committedOffsets(admin, config.archive.groupId, topic);
        await pollWhileAlive(
          'every partition archiving',
          async () => [...(await committed()).values()].filter((o) => Number(o) > 0).length === 3,
          60_000,
          proc,
        );
        // The S3 server here answers every request with `Connection: close`, so each request has a connection of its
        // own and a share of connections is a share of requests: a fifth, upstream (the request is swallowed, the
        // server never answers and never closes). A roll is a dozen puts: nearly every roll meets a silent one.
        // Without a timeout that put never settles and its partition stops for good (only the toxic's removal,
        // which closes the connection, would end it).
        await toxi.addToxic(
          name,
          { type: 'timeout', attributes: { timeout: 0 } },
          { name: 'silent', stream: 'upstream', toxicity: 0.2 },
        );
        // Every partition must go on completing rolls while the toxic is there: its committed offset moves on twice
        // (a roll in flight when the toxic came may finish once either way).
        const last = await committed();
        const moves = new Map([...last.keys()].map((p) => [p, 0]));
        const started = Date.now();
        const least = () => Math.min(...moves.values());
        while (least() < 2 && Date.now() - started < PROGRESS_WITHIN_MS) {
          await sleep(250);
          for (const [p, o] of await committed()) {
            if (o !== last.get(p)) moves.set(p, (moves.get(p) ?? 0) + 1);
            last.set(p, o);
          }
        }
        const seen = [...moves].map(([p, n]) => `partition ${p}: ${n}`).join(', ');
        process.stdout.write(
          `[fault] silent S3 connections: rolls committed in ${Date.now() - started} ms: ${seen}\n`,
        );
        if (least() < 2)
          throw new Error(
            `a partition stopped archiving for ${PROGRESS_WITHIN_MS} ms while S3 connections were silent (${seen}):\n${proc.stderr()}`,
          );
        await toxi.removeToxic(name, 'silent');
      } finally {
        produced = await producing.stop();
      }
      await pollWhileAlive(
        'everything archived',
        () => allCommitted(admin, config.archive.groupId, topic),
        60_000,
        proc,
      );
      const exit = await proc.stop();
      expect(exit).toEqual({ code: 0, signal: null });
      await checkArchive(config, produced);
    } finally {
      await toxi.deleteProxy(name);
    }
  }, 240_000);
});
