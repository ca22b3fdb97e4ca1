import type { Admin, Kafka } from 'kafkajs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { TopicsSettings } from '../../core/config';
import type { Logger } from '../../core/logger';
import { createTopic, DEAD_LETTER_RETENTION_MS, NO_UNCLEAN_LEADER_ELECTION } from '../../core/topics';
import type { LeavingClients } from './leaving';
import { NotRunningError } from '../../core/errors';

/** The dead-letter topic and how it is created: as the stream topics are (`topics.*`), with its own retention. */
export type DeadLetterTopic = Pick<
  TopicsSettings,
  'deadLetter' | 'partitions' | 'replicationFactor' | 'minInsyncReplicas'
>;

/** The archiver's admin client (recovery, the monitor, topic listing), replaced at its first request timeout. */
export class AdminClient {
  private admin: Admin | null = null;
  private closed = false;
  private calls = 0;

  constructor(
    private readonly kafka: Kafka,
    private readonly log: Logger,
    private readonly leaving: LeavingClients,
  ) {}

  /** False until start(): the monitor has nothing to read with. */
  get started(): boolean {
    return this.admin !== null;
  }

  async connect(): Promise<void> {
    this.admin = this.newAdmin();
    await this.admin.connect();
  }

  /**
   * Every admin call goes through here: after close() none may start (kafkajs would quietly
   * reconnect a disconnected admin and keep the process alive), and close() waits for those in flight.
   */
  async with<T>(fn: (admin: Admin) => Promise<T>): Promise<T> {
    const admin = this.admin;
    if (!admin || this.closed) throw new NotRunningError('archiver is stopped');
    this.calls += 1;
    try {
      return await fn(admin);
    } finally {
      this.calls -= 1;
    }
  }

  /** Low and high watermark of one partition (0 for a partition the broker did not list). */
  async watermarks(topic: string, partition: number): Promise<{ low: bigint; high: bigint }> {
    const wm = (await this.with((a) => a.fetchTopicOffsets(topic))).find((o) => o.partition === partition);
    return { low: BigInt(wm?.low ?? '0'), high: BigInt(wm?.high ?? '0') };
  }

  async ensureDeadLetterTopic(topics: DeadLetterTopic): Promise<void> {
    const topic = topics.deadLetter;
    if ((await this.with((a) => a.listTopics())).includes(topic)) return;
    // createTopic, not admin.createTopics: on a busy broker the leader wait reads metadata that does not know the
    // new topic yet, and kafkajs gives up on that instead of waiting for it.
    await this.with((admin) =>
      createTopic(admin, {
        topic,
        numPartitions: topics.partitions,
        replicationFactor: topics.replicationFactor,
        configEntries: [
          { name: 'retention.ms', value: String(DEAD_LETTER_RETENTION_MS) },
          { name: 'min.insync.replicas', value: String(topics.minInsyncReplicas) },
          { ...NO_UNCLEAN_LEADER_ELECTION },
        ],
      }),
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (let i = 0; this.calls > 0 && i < 3000; i++) await sleep(10);
    await this.admin?.disconnect().catch(() => undefined);
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
      if (this.admin !== admin || this.closed) return;
      this.log.warn(
        { apiName: (e.payload as { apiName?: string }).apiName },
        'a Kafka request of the archiver admin timed out; replacing the admin client',
      );
      this.admin = this.newAdmin();
      // Connected here so the next call does not pay for it; a failure shows in that call.
      this.admin.connect().catch(() => undefined);
      this.leaving.add(admin.disconnect());
    });
    return admin;
  }
}
