import type { Admin, Consumer, Producer } from 'kafkajs';
import { createKafka } from '../../../core/clients';
import { createTestTopic, testConfig, uniqueName } from '../../support/stack';

/**
 * The Kafka features ttlstream relies on, against the real broker: an idempotent producer with
 * acks=all, and a consumer group that reads every record once, in order within a partition.
 */
describe('smoke: Kafka', () => {
  const config = testConfig();
  const kafka = createKafka(config, undefined, 'smoke');
  let admin: Admin;
  let producer: Producer | undefined;
  let consumer: Consumer | undefined;
  let topic: string;

  beforeAll(async () => {
    admin = kafka.admin();
    await admin.connect();
  });

  afterEach(async () => {
    await producer?.disconnect();
    await consumer?.disconnect();
    if (topic) await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
  });

  afterAll(async () => {
    await admin.disconnect();
  });

  it('round-trips keyed records through an idempotent producer and a consumer group', async () => {
    topic = await createTestTopic(admin, uniqueName('smoke-kafka'), 3);
    producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();

    const keys = Array.from({ length: 20 }, (_, i) => `item-${i}`);
    const sent = keys.flatMap((key) =>
      [1, 2, 3].map((seq) => ({ key, value: JSON.stringify({ key, seq }) })),
    );
    const acks = await producer.send({ topic, acks: -1, messages: sent });
    expect(acks.every((a) => a.errorCode === 0)).toBe(true);

    const received: Array<{ partition: number; key: string; seq: number }> = [];
    const groupId = uniqueName('smoke-group');
    const group = kafka.consumer({ groupId });
    consumer = group;
    await group.connect();
    await group.subscribe({ topic, fromBeginning: true });
    const done = new Promise<void>((resolve) => {
      void group.run({
        eachMessage: async ({ partition, message }) => {
          const body = JSON.parse(message.value!.toString()) as { key: string; seq: number };
          expect(message.key?.toString()).toBe(body.key);
          received.push({ partition, ...body });
          if (received.length >= sent.length) resolve();
        },
      });
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`only ${received.length}/${sent.length} records consumed in 60 s`)),
        60_000,
      );
    });
    await Promise.race([done, timeout]).finally(() => clearTimeout(timer));

    expect(received).toHaveLength(sent.length);
    // Exactly once each, and a key's records arrive in the order sent (one key, one partition).
    expect(new Set(received.map((r) => `${r.key}/${r.seq}`)).size).toBe(sent.length);
    for (const key of keys) {
      const mine = received.filter((r) => r.key === key);
      expect(mine.map((r) => r.seq)).toEqual([1, 2, 3]);
      expect(new Set(mine.map((r) => r.partition)).size).toBe(1);
    }
    // Records spread over the partitions (the default partitioner hashes the key).
    expect(new Set(received.map((r) => r.partition)).size).toBeGreaterThan(1);

    // The group committed its offsets: the end of every partition.
    await group.stop();
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    for (const p of committed[0]!.partitions) {
      expect(p.offset).toBe(ends.find((e) => e.partition === p.partition)!.high);
    }
  });
});
