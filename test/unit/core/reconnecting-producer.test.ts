import type { Kafka, Producer, ProducerRecord } from 'kafkajs';
import { sendToDeadLetter } from '../../../archiver/dead-letter';
import { silentLogger } from '../../../core/logger';
import { KafkaRequestTimedOut, ReconnectingProducer } from '../../../core/reconnecting-producer';

const REQUEST_TIMEOUT = 'producer.network.request_timeout';

/** A kafkajs producer stand-in: `onSend` decides what each send does, `onConnect` what connect does. */
class FakeProducer {
  readonly events = { REQUEST_TIMEOUT };
  private readonly listeners: Array<(e: { payload: { apiName: string } }) => void> = [];
  disconnected = false;
  readonly sent: ProducerRecord[] = [];
  constructor(
    private readonly onSend: (p: FakeProducer) => Promise<void> = () => Promise.resolve(),
    private readonly onConnect: (p: FakeProducer) => Promise<void> = () => Promise.resolve(),
  ) {}
  on(event: string, fn: (e: { payload: { apiName: string } }) => void): void {
    if (event === REQUEST_TIMEOUT) this.listeners.push(fn);
  }
  /** What kafkajs does when a request got no answer within requestTimeout (it then retries on the same connection). */
  timeOut(apiName: string): void {
    for (const fn of this.listeners) fn({ payload: { apiName } });
  }
  connect(): Promise<void> {
    return this.onConnect(this);
  }
  disconnect(): Promise<void> {
    this.disconnected = true;
    return Promise.resolve();
  }
  send(record: ProducerRecord): Promise<void> {
    this.sent.push(record);
    return this.onSend(this);
  }
}

/** A silent connection: kafkajs reports the timeout and the request never completes. */
const silent = (apiName: string) => (p: FakeProducer) => {
  p.timeOut(apiName);
  return new Promise<void>(() => undefined);
};

function kafkaOf(producers: FakeProducer[]): { kafka: Kafka; made: () => number } {
  let made = 0;
  const kafka = {
    producer: () => {
      const p = producers[made++];
      if (!p) throw new Error('no more fake producers');
      return p;
    },
  } as unknown as Kafka;
  return { kafka, made: () => made };
}

const poison = {
  topic: 'stream',
  partition: 2,
  offset: '41',
  key: Buffer.from('k'),
  value: Buffer.from([0xde, 0xad]),
  headers: {},
  timestamp: '1700000000000',
};
const deadLetter = (p: Producer) => sendToDeadLetter(p, 'stream.dlq', poison, 'undecodable');

describe('ReconnectingProducer: a Kafka request timeout replaces the producer', () => {
  it('fails the operation at the first timeout (not after kafkajs retried on the dead connection) and the next run connects a new producer', async () => {
    const producers = [new FakeProducer(silent('Produce')), new FakeProducer()];
    const { kafka, made } = kafkaOf(producers);
    const dropped: Array<Promise<void>> = [];
    const producer = new ReconnectingProducer(kafka, silentLogger, {
      name: 'dead-letter',
      producer: { idempotent: true },
      onDropped: (p) => dropped.push(p),
    });
    await producer.connect();
    const failed = producer.run(deadLetter);
    await expect(failed).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    await expect(failed).rejects.toMatchObject({ apiName: 'Produce' });
    expect(producers[0]?.disconnected).toBe(true);
    expect(dropped).toHaveLength(1);
    await producer.run(deadLetter);
    expect(made()).toBe(2);
    expect(producers[1]?.sent.map((r) => [r.topic, r.acks, r.messages[0]?.key])).toEqual([
      ['stream.dlq', -1, poison.key],
    ]);
    await producer.disconnect();
    expect(producers[1]?.disconnected).toBe(true);
  });

  it('keeps a producer whose requests are answered, and reconnects after a disconnect', async () => {
    const producers = [new FakeProducer(), new FakeProducer()];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, { name: 'p', producer: {} });
    for (let i = 0; i < 3; i++) await producer.run(deadLetter);
    expect(made()).toBe(1);
    await producer.disconnect();
    await producer.run(deadLetter);
    expect(made()).toBe(2);
    expect(producers.map((p) => p.sent.length)).toEqual([3, 1]);
  });

  it('fails a connect that timed out and connects a new producer for the next run', async () => {
    const producers = [
      new FakeProducer(undefined, silent('InitProducerId')),
      new FakeProducer(undefined, silent('Metadata')),
      new FakeProducer(),
    ];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, { name: 'p', producer: {} });
    await expect(producer.connect()).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    await expect(producer.run(deadLetter)).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    await producer.run(deadLetter);
    expect(made()).toBe(3);
    expect(producers.map((p) => p.disconnected)).toEqual([true, true, false]);
  });

  it('does not keep a producer that could not connect', async () => {
    const producers = [
      new FakeProducer(undefined, () => Promise.reject(new Error('connection refused'))),
      new FakeProducer(),
    ];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, { name: 'p', producer: {} });
    await expect(producer.run(deadLetter)).rejects.toThrow('connection refused');
    await producer.run(deadLetter);
    expect(made()).toBe(2);
    expect(producers[1]?.sent).toHaveLength(1);
  });

  it('gives concurrent runs after a timeout one new producer, not one each', async () => {
    const producers = [new FakeProducer(silent('Produce')), new FakeProducer(), new FakeProducer()];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, { name: 'p', producer: {} });
    await expect(producer.run(deadLetter)).rejects.toBeInstanceOf(KafkaRequestTimedOut);
    await Promise.all([producer.run(deadLetter), producer.run(deadLetter), producer.run(deadLetter)]);
    expect(made()).toBe(2);
    expect(producers[1]?.sent).toHaveLength(3);
  });
});

describe('ReconnectingProducer with replaceOnFailure', () => {
  it('drops a producer whose operation failed for any reason, so the retry gets a new one', async () => {
    const producers = [
      new FakeProducer(() => Promise.reject(new Error('Broker not connected'))),
      new FakeProducer(),
    ];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, {
      name: 'dead-letter',
      producer: {},
      replaceOnFailure: true,
    });
    await expect(producer.run(deadLetter)).rejects.toThrow('Broker not connected');
    expect(producers[0]?.disconnected).toBe(true);
    await producer.run(deadLetter);
    expect(made()).toBe(2);
  });

  it('keeps the producer after a failed operation without it', async () => {
    let fail = true;
    const producers = [
      new FakeProducer(() => (fail ? Promise.reject(new Error('Broker not connected')) : Promise.resolve())),
    ];
    const { kafka, made } = kafkaOf(producers);
    const producer = new ReconnectingProducer(kafka, silentLogger, { name: 'p', producer: {} });
    await expect(producer.run(deadLetter)).rejects.toThrow('Broker not connected');
    fail = false;
    await producer.run(deadLetter);
    expect(made()).toBe(1);
    expect(producers[0]?.disconnected).toBe(false);
  });
});
