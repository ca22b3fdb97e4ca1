import type { Kafka } from 'kafkajs';
import { loadConfig } from '../../../core/config';
import { silentLogger } from '../../../core/logger';
import {
  buildRemoveRecord,
  chunkByBytes,
  KafkaRequestTimedOut,
  Publisher,
  type Prepared,
} from '../../../pipeline/publisher';

function msg(i: number, bytes: number): Prepared {
  return {
    table: 't',
    kind: 'remove',
    topic: 'x',
    message: { key: `k${i}`, value: Buffer.alloc(bytes), headers: {} },
  };
}

describe('publish chunking by bytes', () => {
  it('keeps small messages in one request', () => {
    const all = Array.from({ length: 100 }, (_, i) => msg(i, 1000));
    expect(chunkByBytes(all, 900 * 1024)).toHaveLength(1);
  });

  it('splits large messages so no request exceeds the limit, keeping order', () => {
    const all = Array.from({ length: 10 }, (_, i) => msg(i, 380 * 1024));
    const chunks = chunkByBytes(all, 900 * 1024);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 2, 2, 2]);
    expect(chunks.flat().map((m) => m.message.key)).toEqual(all.map((m) => m.message.key));
  });

  it('sends a single message above the limit alone rather than dropping it', () => {
    const chunks = chunkByBytes([msg(0, 10), msg(1, 2_000_000), msg(2, 10)], 900 * 1024);
    expect(chunks.map((c) => c.length)).toEqual([1, 1, 1]);
  });
});

describe('a Kafka request timeout replaces the producer', () => {
  const REQUEST_TIMEOUT = 'producer.network.request_timeout';

  /** A kafkajs producer stand-in: `send` decides what each sendBatch does. */
  class FakeProducer {
    readonly events = { REQUEST_TIMEOUT };
    private readonly listeners: Array<(e: { payload: { apiName: string } }) => void> = [];
    disconnected = false;
    sent = 0;
    constructor(private readonly send: (p: FakeProducer) => Promise<void>) {}
    on(event: string, fn: (e: { payload: { apiName: string } }) => void): void {
      if (event === REQUEST_TIMEOUT) this.listeners.push(fn);
    }
    timeOut(): void {
      for (const fn of this.listeners) fn({ payload: { apiName: 'Produce' } });
    }
    connect(): Promise<void> {
      return Promise.resolve();
    }
    disconnect(): Promise<void> {
      this.disconnected = true;
      return Promise.resolve();
    }
    sendBatch(): Promise<void> {
      this.sent++;
      return this.send(this);
    }
  }

  const record = (i: number) =>
    buildRemoveRecord(config, {
      table: 'orders',
      keys: { pk: { S: `k${i}` } },
      image: { pk: { S: `k${i}` } },
      eventID: `e${i}`,
      sequenceNumber: String(i).padStart(21, '0'),
      decidedAtMs: 1_700_000_000_000,
      sizeBytes: 10,
    });
  const config = loadConfig({ env: {}, useStackEndpoints: false });

  const ADMIN_REQUEST_TIMEOUT = 'admin.network.request_timeout';

  /** An admin client stand-in that finds no topics and makes them; `silent` makes createTopics time out and hang. */
  class FakeAdmin {
    readonly events = { REQUEST_TIMEOUT: ADMIN_REQUEST_TIMEOUT };
    private readonly listeners: Array<(e: { payload: { apiName: string } }) => void> = [];
    disconnected = false;
    constructor(private readonly silent = false) {}
    on(event: string, fn: (e: { payload: { apiName: string } }) => void): void {
      if (event === ADMIN_REQUEST_TIMEOUT) this.listeners.push(fn);
    }
    connect(): Promise<void> {
      return Promise.resolve();
    }
    disconnect(): Promise<void> {
      this.disconnected = true;
      // A client on a silent connection may never finish disconnecting.
      return this.silent ? new Promise<void>(() => undefined) : Promise.resolve();
    }
    listTopics(): Promise<string[]> {
      return Promise.resolve([]);
    }
    createTopics(): Promise<boolean> {
      if (!this.silent) return Promise.resolve(true);
      for (const fn of this.listeners) fn({ payload: { apiName: 'CreateTopics' } });
      return new Promise<boolean>(() => undefined);
    }
  }

  /** A Kafka whose producer() and admin() hand out the given stand-ins in turn (admins: a working one by default). */
  function kafkaOf(
    producers: FakeProducer[],
    admins: FakeAdmin[] = [],
  ): { kafka: Kafka; made: () => number } {
    let made = 0;
    const kafka = {
      producer: () => producers[made++],
      admin: () => admins.shift() ?? new FakeAdmin(),
    } as unknown as Kafka;
    return { kafka, made: () => made };
  }

  it('fails the publish at the first timeout (not after kafkajs retried on the dead connection) and reconnects', async () => {
    const producers: FakeProducer[] = [
      // The first connection goes silent: its request never completes, kafkajs reports the timeout.
      new FakeProducer((p) => {
        p.timeOut();
        return new Promise<void>(() => undefined);
      }),
      new FakeProducer(() => Promise.resolve()),
    ];
    const { kafka, made } = kafkaOf(producers);
    const publisher = new Publisher(kafka, config, silentLogger);
    await publisher.connect();
    const out = { kind: 'remove' as const, table: 'orders', record: record(1) };
    await expect(publisher.publish([out])).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    expect(producers[0]?.disconnected).toBe(true);
    await publisher.publish([out]);
    expect(made()).toBe(2);
    expect(producers[1]?.sent).toBe(1);
    await publisher.disconnect();
    await expect(publisher.publish([out])).rejects.toThrow(/not connected/);
    expect(made()).toBe(2);
  });

  it('drops a producer whose publish failed for any other reason too (kafkajs stuck at "Broker not connected")', async () => {
    const producers: FakeProducer[] = [
      new FakeProducer(() => Promise.reject(new Error('Broker not connected'))),
      new FakeProducer(() => Promise.resolve()),
    ];
    const { kafka, made } = kafkaOf(producers);
    const publisher = new Publisher(kafka, config, silentLogger);
    await publisher.connect();
    const out = { kind: 'remove' as const, table: 'orders', record: record(2) };
    await expect(publisher.publish([out])).rejects.toThrow('Broker not connected');
    expect(producers[0]?.disconnected).toBe(true);
    await publisher.publish([out]);
    expect(made()).toBe(2);
    expect(producers[1]?.sent).toBe(1);
    await publisher.disconnect();
  });

  it("gives up creating stream topics at the admin client's first request timeout, and retries with a new client", async () => {
    const producers = [new FakeProducer(() => Promise.resolve())];
    const silent = new FakeAdmin(true);
    const { kafka } = kafkaOf(producers, [silent]);
    const publisher = new Publisher(kafka, config, silentLogger);
    await publisher.connect();
    const out = { kind: 'remove' as const, table: 'orders', record: record(3) };
    // Settles although createTopics and the disconnect never do (kafkajs would retry on the silent connection).
    await expect(publisher.publish([out])).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    expect(silent.disconnected).toBe(true);
    expect(producers[0]?.sent).toBe(0);
    await publisher.publish([out]);
    expect(producers[0]?.sent).toBe(1);
    await publisher.disconnect();
  });
});
